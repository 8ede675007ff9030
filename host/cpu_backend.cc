// moreau host — CPU backend: kernels/ functions looped over environments on a thread pool.
#include <algorithm>
#include <new>
#include <type_traits>
#include <vector>

#include "host/cpu_group.h"
#include "host/host_memory.h"
#include "host/thread_pool.h"
#include "host/typed_backend.h"

namespace moreau {
namespace {

// The most physics steps of one control step whose intermediates the adjoint keeps (118 KB each
// in double); longer control steps are recomputed from checkpoints.
constexpr int kMaxTapes = 64;
// The most adjoint rows one pass takes (Simulator::step_adjoint_rows; on the thread's stack).
constexpr int kMaxRows = 40;
// Environments per group in the adjoint rows' copies (a cache line of float64).
constexpr int kGroup = 8;
// The most bytes of tapes a thread keeps for the lanes' recompute in the adjoint (host/cpu_group.h
// adj_pure_step_group); beyond them (large models, long control steps) the adjoint runs per environment.
constexpr size_t kLaneTapeBytes = size_t(16) << 20;

template <class S>
class CpuBackend : public TypedBackend<S> {
  static constexpr int W = kLanes<S>;
  using Lanes = kern::Pack<S, W>;
  static int groups(int n_env) { return (n_env + W - 1) / W; }

 public:
  CpuBackend(const Model& model, const SimulatorOptions& options)
      : TypedBackend<S>(model, options, std::make_unique<HostMemory>()),
        pool_(options.n_threads),
        lane_model_(without_ground(this->model())),
        lanes_(lane_model_),
        lanes_view_(lanes_.view(lanes_.reals.data(), lanes_.ints.data())) {}

 protected:
  // The forward steps groups of kLanes environments in lock-step (host/cpu_group.h); the threads
  // take whole groups, so an environment's numbers do not depend on the thread count.
  void launch_step(const kern::ModelView<S>& m, const kern::ContactSettings<S>& cfg, const kern::Params<S>& p,
                   const kern::Batch<S>& b, int k) override {
    kern::with_dims(m, this->rolling_rows(), [&](const auto& md) {
      using D = typename std::decay_t<decltype(md)>::Dims;
      const kern::ModelView<Lanes, D> mp{lanes_view_};
      pool_.parallel_for(groups(b.n_env), [&](int begin, int end) {
        for (int g = begin; g < end; ++g)
          for (int s = 0; s < k; ++s) control_step_group<S, W, D>(md, mp, cfg, p, b, g * W);
      });
    });
  }
  int max_adjoint_rows() const override { return kMaxRows; }
  void launch_pure(const kern::ModelView<S>& m, const kern::ContactSettings<S>& cfg, const kern::Params<S>& p,
                   const kern::PureStep<S>& io, bool adjoint) override {
    const int n_steps = m.decimation * cfg.substeps, chosen = this->options().adjoint_tapes;
    const int n_tapes = std::min(n_steps, chosen > 0 ? chosen : kMaxTapes);
    kern::with_dims(m, this->rolling_rows(), [&](const auto& md) {
      using D = typename std::decay_t<decltype(md)>::Dims;
      if (!adjoint) {
        const kern::ModelView<Lanes, D> mp{lanes_view_};
        pool_.parallel_for(groups(io.n_env), [&](int begin, int end) {
          for (int g = begin; g < end; ++g) pure_step_group<S, W, D>(md, mp, cfg, p, io, g * W);
        });
        return;
      }
      // With the automatic tapes (adjoint_tapes 0) the lanes recompute the control step for a group
      // at once when every lane's tapes (one per physics step) fit kLaneTapeBytes; otherwise each
      // environment runs adj_pure_step alone.
      const kern::ModelView<Lanes, D> mp{lanes_view_};
      const bool lanes =
          chosen == 0 && n_tapes == n_steps && sizeof(kern::AdjTape<S, D>) * W * n_steps <= kLaneTapeBytes;
      const int per = lanes ? W : kGroup;  // environments a thread takes at once
      pool_.parallel_for((io.n_env + per - 1) / per, [&](int begin, int end) {
        // the tapes, kept by each thread across calls
        thread_local std::vector<kern::AdjTape<S, D>> tapes;
        const size_t needed = lanes ? static_cast<size_t>(W) * n_steps : n_tapes;
        if (tapes.size() < needed) tapes.resize(needed);
        for (int e0 = begin * per; e0 < std::min(end * per, io.n_env); e0 += per) {
          const int g = std::min(per, io.n_env - e0);
          if (io.rows > 1) {
            rows_group(md, lanes ? &mp : nullptr, cfg, p, io, e0, g, tapes.data(), n_tapes);
          } else if (lanes) {
            adj_pure_step_group<S, W, D, 1>(md, mp, cfg, p, io, e0, g, tapes.data());
          } else {
            for (int env = e0; env < e0 + g; ++env) kern::adj_pure_step(md, cfg, p, io, env, tapes.data(), n_tapes);
          }
        }
      });
    });
  }
  // Adjoint rows (step_adjoint_rows) of environments e0 .. e0 + g − 1: the stacked buffers are
  // strided by n_env, so they are copied to and from a field-major batch of g ≤ kGroup
  // environments (one cache line per element) and the kernel runs on that.
  // With the lanes' model view mp (else null) the group's W lanes recompute together.
  template <class D>
  static void rows_group(const kern::ModelView<S, D>& m, const kern::ModelView<Lanes, D>* mp,
                         const kern::ContactSettings<S>& cfg, const kern::Params<S>& p, const kern::PureStep<S>& io,
                         int e0, int g, kern::AdjTape<S, D>* tapes, int n_tapes) {
    const int n = io.n_env, rows = io.rows, nq = m.nq, nv = m.nv, nu = m.nu;
    thread_local std::vector<S> buf;
    buf.resize(static_cast<size_t>(kGroup) * (nq + nv + nu + 2 * rows * (nq + nv) + rows * (3 * nu + 4)));
    S* next = buf.data();
    kern::PureStep<S> b = io;
    b.n_env = kGroup;
    // width elements per environment at src (stride n) <-> dst (stride kGroup)
    auto in = [&](const S* src, int width) -> const S* {
      S* dst = next;
      next += static_cast<size_t>(kGroup) * width;
      for (int k = 0; k < width; ++k)
        for (int e = 0; e < g; ++e) dst[k * kGroup + e] = src[static_cast<size_t>(k) * n + e0 + e];
      return dst;
    };
    auto out = [&](S* dst, int width) -> S* {
      if (!dst) return nullptr;
      S* local = next;
      next += static_cast<size_t>(kGroup) * width;
      return local;
    };
    b.q_in = in(io.q_in, nq);
    b.v_in = in(io.v_in, nv);
    b.action = in(io.action, nu);
    b.adj_q_out = in(io.adj_q_out, rows * nq);
    b.adj_v_out = in(io.adj_v_out, rows * nv);
    b.adj_q_in = out(io.adj_q_in, rows * nq);
    b.adj_v_in = out(io.adj_v_in, rows * nv);
    b.adj_action = out(io.adj_action, rows * nu);
    b.adj_kp = out(io.adj_kp, rows * nu);
    b.adj_kd = out(io.adj_kd, rows * nu);
    b.adj_added_base_mass = out(io.adj_added_base_mass, rows);
    b.adj_friction = out(io.adj_friction, rows);
    b.adj_contact_kn = out(io.adj_contact_kn, rows);
    b.adj_smooth_k = out(io.adj_smooth_k, rows);
    int status[kGroup];
    b.status = status;
    b.accumulate = 0;
    // per-environment parameters (len = n_env) start at e0
    kern::Params<S> pg = p;
    for (kern::Param<S>* x : {&pg.kp, &pg.kd, &pg.added_base_mass, &pg.friction, &pg.contact_kn, &pg.contact_kd,
                              &pg.contact_zeta, &pg.smooth_k, &pg.smooth_gmax, &pg.motor_strength,
                              &pg.frictionloss_scale, &pg.spin_friction, &pg.rolling_friction, &pg.damping_scale, &pg.armature_scale,
                              &pg.terrain_x, &pg.terrain_y})
      if (x->len > 1) x->data += e0;
    if (mp) {
      adj_pure_step_group<S, W, D, kMaxRows>(m, *mp, cfg, pg, b, 0, g, tapes);
    } else {
      for (int e = 0; e < g; ++e) kern::adj_pure_step<S, D, kMaxRows>(m, cfg, pg, b, e, tapes, n_tapes);
    }
    auto back = [&](S* dst, const S* local, int width) {
      if (!dst) return;
      for (int k = 0; k < width; ++k)
        for (int e = 0; e < g; ++e) dst[static_cast<size_t>(k) * n + e0 + e] = local[k * kGroup + e];
    };
    back(io.adj_q_in, b.adj_q_in, rows * nq);
    back(io.adj_v_in, b.adj_v_in, rows * nv);
    back(io.adj_action, b.adj_action, rows * nu);
    back(io.adj_kp, b.adj_kp, rows * nu);
    back(io.adj_kd, b.adj_kd, rows * nu);
    back(io.adj_added_base_mass, b.adj_added_base_mass, rows);
    back(io.adj_friction, b.adj_friction, rows);
    back(io.adj_contact_kn, b.adj_contact_kn, rows);
    back(io.adj_smooth_k, b.adj_smooth_k, rows);
    for (int e = 0; e < g; ++e) io.status[e0 + e] = status[e];
  }

  void launch_reset(const kern::ModelView<S>& m, const kern::Batch<S>& b, const int32_t* env_ids,
                    int count) override {
    for (int i = 0; i < count; ++i) kern::reset_env(m, b, env_ids[i]);
  }
  // The threads take whole groups of W environments, as the steps do (no two threads share a
  // group's cache lines).
  void launch_reset_where(const kern::ModelView<S>& m, const kern::Batch<S>& b, const uint8_t* mask) override {
    pool_.parallel_for(groups(b.n_env), [&](int begin, int end) {
      for (int env = begin * W; env < std::min(end * W, b.n_env); ++env)
        if (mask[env]) kern::reset_env(m, b, env);
    });
  }

 private:
  // The lanes compute the free velocity only, which never reads the ground: their model has none
  // (a heightfield's heights would be copied into every lane).
  static Model without_ground(Model m) {
    m.hfield_nx = m.hfield_ny = 0;
    m.hfield_height.clear();
    return m;
  }

  ThreadPool pool_;
  Model lane_model_;
  PackedModel<Lanes> lanes_;  // the model's reals in every lane
  kern::ModelView<Lanes> lanes_view_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const Model& model, const SimulatorOptions& options) {
  if (options.dtype == DType::Float64) return std::make_unique<CpuBackend<double>>(model, options);
  return std::make_unique<CpuBackend<float>>(model, options);
}

}  // namespace moreau
