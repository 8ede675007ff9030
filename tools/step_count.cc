// moreau-step-count — the work of one environment's physics step, counted by callgrind: the
// instructions and data accesses of step_pure (forward) and step_adjoint (forward recompute and
// reverse sweeps) on one CPU thread, float32, one environment of ANYmal C standing on its feet.
// It steps with what one CUDA thread runs: kern::pure_step and kern::adj_pure_step with one tape
// (cuda/cuda_backend.cu), not the CPU backend's SIMD lanes. So these counts are the per-thread
// work of the CUDA kernels (docs/gpu.md: the throughput estimate).
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
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <valgrind/callgrind.h>

#include "host/host_memory.h"
#include "host/typed_backend.h"
#include "moreau/model.h"

using namespace moreau;

namespace {

// The CUDA backend's launches (cuda/cuda_backend.cu), one environment after another on this thread.
class PerThreadBackend final : public TypedBackend<float> {
 public:
  PerThreadBackend(const Model& model, const SimulatorOptions& options)
      : TypedBackend<float>(model, options, std::make_unique<HostMemory>()) {}

 protected:
  void launch_step(const kern::ModelView<float>& m, const kern::ContactSettings<float>& cfg,
                   const kern::Params<float>& p, const kern::Batch<float>& b, int k) override {
    kern::with_dims(m, rolling_rows(), [&](const auto& md) {
      for (int env = 0; env < b.n_env; ++env)
        for (int s = 0; s < k; ++s) kern::control_step(md, cfg, p, b, env);
    });
  }
  int max_adjoint_rows() const override { return 1; }
  void launch_pure(const kern::ModelView<float>& m, const kern::ContactSettings<float>& cfg,
                   const kern::Params<float>& p, const kern::PureStep<float>& io, bool adjoint) override {
    kern::with_dims(m, rolling_rows(), [&](const auto& md) {
      using D = typename std::decay_t<decltype(md)>::Dims;
      for (int env = 0; env < io.n_env; ++env) {
        if (!adjoint) {
          kern::pure_step(md, cfg, p, io, env);
        } else {
          kern::AdjTape<float, D> tape;  // one tape: the step recomputed from its checkpoints
          kern::adj_pure_step(md, cfg, p, io, env, &tape, 1);
        }
      }
    });
  }
  void launch_reset(const kern::ModelView<float>& m, const kern::Batch<float>& b, const int32_t* env_ids,
                    int count) override {
    for (int i = 0; i < count; ++i) kern::reset_env(m, b, env_ids[i]);
  }
  void launch_reset_where(const kern::ModelView<float>& m, const kern::Batch<float>& b, const uint8_t* mask) override {
    for (int env = 0; env < b.n_env; ++env)
      if (mask[env]) kern::reset_env(m, b, env);
  }
};

}  // namespace

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
    opt.contact.mode = contact_mode_from_name(contact);  // an unknown name throws, with the names it knows
    PerThreadBackend sim(model, opt);
    const int32_t env0 = 0;
    sim.reset(&env0, 1);
    sim.step(static_cast<int>(1.0 / (model.timestep * model.decimation)));  // settle on the feet
    std::vector<double> q(model.nq), v(model.nv);
    sim.get_state(q.data(), v.data());
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
      sim.step_adjoint(qf.data(), vf.data(), a.data(), 1, seed_q.data(), seed_v.data(), g, &status, false);
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
