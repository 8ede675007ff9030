// moreau-mujoco-peer: MuJoCo alone on a moreau robot's exported model (bench_util.h's
// MujocoRunner: export_mjcf, the ground plane and contact settings, the settled state), built
// against a MuJoCo other than the one the benchmarks link (bench/CMakeLists.txt: the current
// release from PyPI's mujoco-core wheel). moreau-bench-forward and moreau-bench-gradient run
// it between their own trials (run_mujoco_peer), so that both MuJoCo versions are timed in the
// same run on the same model.
//
//   moreau-mujoco-peer --robot FILE --contact MODE --what step|transition_fd|settle
//                      [--seconds T] [--trials N] [--eps E] [--centered]
//
// step: mj_step physics steps per second (resets every 2 s simulated, as moreau-bench-forward);
// transition_fd: mjd_transitionFD calls per second at the reset state (as
// moreau-bench-gradient); settle: no timing. Each figure follows a warm-up of T / 4. Prints
// one line "JSON {...}" with the rates, MuJoCo's version and the settled state (base height,
// contacts). Exit status 2 on bad arguments or an error.
#include <cstdio>
#include <string>
#include <vector>

#include <mujoco/mujoco.h>
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "moreau/model.h"

int main(int argc, char** argv) {
  using namespace bench;
  CommonOptions o;
  std::string what;
  double eps = 1e-6;
  bool centered = false;
  try {
    for (int i = 1; i < argc; ++i) {
      if (parse_common_option(argc, argv, i, o)) continue;
      const std::string a = argv[i];
      if (a == "--what" && i + 1 < argc) {
        what = argv[++i];
      } else if (a == "--eps" && i + 1 < argc) {
        eps = std::atof(argv[++i]);
      } else if (a == "--centered") {
        centered = true;
      } else {
        throw moreau::Error("unknown argument '" + a + "'");
      }
    }
    if (what != "step" && what != "transition_fd" && what != "settle")
      throw moreau::Error("--what: expected step, transition_fd or settle, got '" + what + "'");
    if (o.contact.size() != 1) throw moreau::Error("--contact: expected one mode");
    const ContactMode mode = o.contact[0];

    const moreau::Model model = moreau::load_model(o.robot);
    MujocoRunner mj(model, mode);
    mj.reset();
    nlohmann::json out = {{"mujoco_version", mj_versionString()},
                          {"what", what},
                          {"contact", moreau::contact_mode_name(mode)},
                          {"settled", {{"base_height", mj.base_height()}, {"ncon", mj.contacts()}}},
                          {"rates", nlohmann::json::array()}};
    std::vector<double> rates;
    if (what == "step") {
      const int per_reset = std::max(1, static_cast<int>(kResetSimSeconds / (model.timestep * model.decimation)));
      out["unit"] = "physics steps per wall second";
      measure(mj, o.seconds / 4, per_reset);  // warm-up
      for (int t = 0; t < o.trials; ++t) rates.push_back(measure(mj, o.seconds, per_reset));
    } else if (what == "transition_fd") {
      const mjModel* m = mj.m();
      mjData* d = mj.d();
      const int nx = 2 * m->nv + m->na;
      std::vector<double> A(static_cast<size_t>(nx) * nx), B(static_cast<size_t>(nx) * m->nu);
      auto call = [&] { mjd_transitionFD(m, d, eps, centered ? 1 : 0, A.data(), B.data(), nullptr, nullptr); };
      auto none = [] {};
      out["unit"] = "mjd_transitionFD calls per wall second";
      out["eps"] = eps;
      out["centered"] = centered;
      calls_per_second(call, none, o.seconds / 4, 1);  // warm-up
      for (int t = 0; t < o.trials; ++t) rates.push_back(calls_per_second(call, none, o.seconds, 1));
    }
    out["rates"] = rates;
    std::printf("JSON %s\n", out.dump().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moreau-mujoco-peer: %s\n", e.what());
    return 2;
  }
}
