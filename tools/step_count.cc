// moreau-step-count — the work of one environment's physics step, counted by callgrind: the
// instructions and data accesses of step_pure (forward) and step_adjoint (forward recompute and
// reverse sweeps) on one CPU thread, float32, one environment of ANYmal C standing on its feet.
// The kernels/ source is the one the CUDA backend runs one thread per environment, so these
// counts are the per-thread work of its kernels (docs/gpu.md: the throughput estimate).
//
//   valgrind --tool=callgrind --collect-atstart=no moreau-step-count [--robot FILE] [--contact MODE]
//                                                                   [--steps N]
//   (scripts/gpu_estimate.sh runs it for every contact mode and prints the table.)
//
// Collection is switched on around N control steps of step_pure, then around N step_adjoint
// calls at the same inputs (one callgrind dump each: "forward", "adjoint"); the standing pose is
// reached first by 1 s of uncounted stepping. Per physics step: divide by N × decimation.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <valgrind/callgrind.h>

#include "moreau/model.h"
#include "moreau/simulator.h"

using namespace moreau;

int main(int argc, char** argv) {
  std::string robot = std::string(MOREAU_ASSETS_DIR) + "/robots/anymal_c.json";
  std::string contact = "hard";
  int steps = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--robot")) robot = argv[i + 1];
    else if (!std::strcmp(argv[i], "--contact")) contact = argv[i + 1];
    else if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "moreau-step-count: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (steps < 1) {
    std::fprintf(stderr, "moreau-step-count: --steps must be >= 1\n");
    return 2;
  }
  try {
    const Model model = load_model(robot);
    SimulatorOptions opt;
    opt.n_env = 1;
    opt.n_threads = 1;
    opt.adjoint_tapes = 1;  // the CUDA backend's schedule: one tape, the step recomputed in the adjoint
    opt.contact.mode = contact_mode_from_name(contact);  // an unknown name throws, with the names it knows
    Simulator sim(model, opt);
    sim.step(static_cast<int>(1.0 / (model.timestep * model.decimation)));  // settle on the feet
    std::vector<double> q(model.nq), v(model.nv);
    sim.get_state(q.data(), v.data(), 1);
    std::vector<float> qf(q.begin(), q.end()), vf(v.begin(), v.end()), a(model.nu, 0.0f);
    std::vector<float> q_out(model.nq), v_out(model.nv), gq(model.nq), gv(model.nv), ga(model.nu);
    std::vector<float> seed_q(model.nq, 1.0f), seed_v(model.nv, 1.0f);
    int32_t status = 0;
    Simulator::Gradients g;
    g.q = gq.data();
    g.v = gv.data();
    g.action = ga.data();

    CALLGRIND_TOGGLE_COLLECT;
    for (int s = 0; s < steps; ++s) sim.step_pure(qf.data(), vf.data(), a.data(), q_out.data(), v_out.data(), &status);
    CALLGRIND_TOGGLE_COLLECT;
    CALLGRIND_DUMP_STATS_AT("forward");
    CALLGRIND_TOGGLE_COLLECT;
    for (int s = 0; s < steps; ++s)
      sim.step_adjoint(qf.data(), vf.data(), a.data(), seed_q.data(), seed_v.data(), g, &status);
    CALLGRIND_TOGGLE_COLLECT;
    CALLGRIND_DUMP_STATS_AT("adjoint");
    std::printf("moreau-step-count: %s, contact %s, %d control steps of %d physics steps each, status %d\n",
                model.name.c_str(), contact.c_str(), steps, model.decimation, status);
    return status & kStatusFatal ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moreau-step-count: %s\n", e.what());
    return 1;
  }
}
