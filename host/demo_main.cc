// moreau-demo: loads a robot (ANYmal C by default), steps a batch of environments holding
// their default pose on the best available device, and prints throughput and a short
// physical summary.
//
//   moreau-demo [--robot FILE] [--n-env N] [--device cpu|cuda] [--dtype float32|float64]
//               [--seconds T] [--threads K]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "moreau/dynamics.h"
#include "moreau/simulator.h"

namespace {

void usage() {
  std::puts(
      "usage: moreau-demo [--robot FILE] [--n-env N] [--device cpu|cuda] [--dtype float32|float64]\n"
      "                   [--seconds T] [--threads K]");
}

}  // namespace

int main(int argc, char** argv) {
  std::string robot = std::string(MOREAU_ASSETS_DIR) + "/robots/anymal_c.json";
  moreau::SimulatorOptions opt;
  opt.device = moreau::cuda_available() ? moreau::Device::CUDA : moreau::Device::CPU;
  opt.n_env = -1;
  double seconds = 2.0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--robot" && has_value) {
      robot = argv[++i];
    } else if (a == "--n-env" && has_value) {
      opt.n_env = std::atoi(argv[++i]);
    } else if (a == "--device" && has_value) {
      const std::string d = argv[++i];
      opt.device = d == "cuda" ? moreau::Device::CUDA : moreau::Device::CPU;
    } else if (a == "--dtype" && has_value) {
      opt.dtype = std::strcmp(argv[++i], "float64") == 0 ? moreau::DType::Float64 : moreau::DType::Float32;
    } else if (a == "--seconds" && has_value) {
      seconds = std::atof(argv[++i]);
    } else if (a == "--threads" && has_value) {
      opt.n_threads = std::atoi(argv[++i]);
    } else {
      usage();
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  if (opt.n_env < 0) opt.n_env = opt.device == moreau::Device::CUDA ? 16384 : 1024;

  try {
    const moreau::Model model = moreau::load_model(robot);
    moreau::Simulator sim(model, opt);
    const double control_dt = model.timestep * model.decimation;
    std::printf("moreau-demo: %s (nq %d, nv %d, nu %d, %d bodies, %.3f kg) | %d environments on %s, %s | "
                "h = %g s, decimation %d\n",
                model.name.c_str(), model.nq, model.nv, model.nu, model.nbody, model.total_mass(), opt.n_env,
                moreau::device_name(opt.device), moreau::dtype_name(opt.dtype), model.timestep, model.decimation);
    for (const auto& w : model.warnings) std::printf("  warning: %s\n", w.c_str());

    // Run until `seconds` of wall time have passed, in chunks of control steps.
    const int chunk = std::max(1, static_cast<int>(0.5 / control_dt));  // 0.5 s of simulated time
    int control_steps = 0;
    const auto t0 = std::chrono::steady_clock::now();
    double wall = 0;
    while (wall < seconds) {
      sim.step(chunk);
      sim.synchronize();
      control_steps += chunk;
      wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    const double env_steps = static_cast<double>(control_steps) * model.decimation * opt.n_env;
    std::printf("throughput: %.3g environment-steps/s (physics steps of %g s), %.3g control steps/s; "
                "%.1f s simulated in %.2f s wall\n",
                env_steps / wall, model.timestep, control_steps * static_cast<double>(opt.n_env) / wall,
                control_steps * control_dt, wall);

    // Physical summary over the batch.
    std::vector<double> q(static_cast<size_t>(opt.n_env) * model.nq), v(static_cast<size_t>(opt.n_env) * model.nv);
    std::vector<int32_t> status(opt.n_env);
    sim.get_state(q.data(), v.data(), opt.n_env);
    sim.get_status(status.data(), opt.n_env);
    const int flagged = static_cast<int>(std::count_if(status.begin(), status.end(), [](int32_t s) { return s != 0; }));
    double com[3], com_z_min = 1e30, com_z_max = -1e30, ke_max = 0;
    for (int e = 0; e < opt.n_env; ++e) {
      moreau::center_of_mass(model, &q[static_cast<size_t>(e) * model.nq], com);
      com_z_min = std::min(com_z_min, com[2]);
      com_z_max = std::max(com_z_max, com[2]);
      ke_max = std::max(ke_max, moreau::kinetic_energy(model, &q[static_cast<size_t>(e) * model.nq],
                                                       &v[static_cast<size_t>(e) * model.nv]));
    }
    std::printf("state after %.1f s: centre-of-mass height %.4f .. %.4f m, max kinetic energy %.4g J, "
                "%d environment(s) flagged\n",
                control_steps * control_dt, com_z_min, com_z_max, ke_max, flagged);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moreau-demo: %s\n", e.what());
    return 1;
  }
  return 0;
}
