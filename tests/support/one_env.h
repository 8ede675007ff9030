// One environment for calling the kernels directly: a packed model's view, the parameters and
// the batch buffers.
#pragma once

#include <cstring>
#include <random>
#include <vector>

#include "host/backend.h"
#include "kernels/model_view.h"
#include "kernels/step.h"
#include "moreau/model.h"

namespace moreau::test {

template <class S>
kern::ModelView<S> view_of(const PackedModel<S>& packed) {
  return packed.view(packed.reals.data(), packed.ints.data());
}

// One environment's parameters, owned: the model's gains, μ 0.8, soft contact kn 2e4 (kd from
// ζ = 1), smooth k 300 and g_max 0.02, spin friction 0.02, rolling friction as given, every
// scale 1, the terrain origin at 0.
template <class S>
struct OneEnvParams {
  std::vector<S> kp, kd, ones;
  S zero = 0, mu = S(0.8), kn = S(2e4), kdn = S(-1), zeta = S(1), sk = S(300), gmax = S(0.02), spin = S(0.02), roll;
  OneEnvParams(const Model& model, S rolling)
      : kp(model.actuator_kp.begin(), model.actuator_kp.end()),
        kd(model.actuator_kd.begin(), model.actuator_kd.end()),
        ones(model.nu + 1, S(1)),  // motor strength; friction-loss, damping, armature scales
        roll(rolling) {}
  // Points into this object: keep it alive while the view is used.
  kern::Params<S> view() const {
    return {{kp.data(), 1},   {kd.data(), 1},   {&zero, 1}, {&mu, 1},   {&kn, 1},         {&kdn, 1},
            {&zeta, 1},       {&sk, 1},         {&gmax, 1}, {ones.data(), 1}, {ones.data(), 1}, {&spin, 1},
            {&roll, 1},       {ones.data(), 1}, {ones.data(), 1}, {&zero, 1}, {&zero, 1}};
  }
};

// The buffers of a batch of one environment, from a state (q, v, action); control_step steps it
// in place, pure_step from it into q_out, v_out, adj_pure_step from seeds drawn at random into
// the adjoint buffers.
template <class S>
struct OneEnvBatch {
  std::vector<S> q, v, action, time{0}, gap, impulse, residual{0}, q_out, v_out;
  std::vector<int> status{0}, active, iterations{0};
  // the adjoint: seeds, then the gradients of the input state, action and parameters
  std::vector<S> seed_q, seed_v, adj_q, adj_v, adj_u, adj_kp, adj_kd, adj_mass{0}, adj_mu{0}, adj_kn{0}, adj_k{0};
  OneEnvBatch(const kern::ModelArrays<S>& m, const S* q0, const S* v0, const S* u0)
      : q(q0, q0 + m.nq), v(v0, v0 + m.nv), action(u0, u0 + m.nu), gap(m.ncon), impulse(m.ncon),
        q_out(m.nq), v_out(m.nv), active(m.ncon), seed_q(m.nq), seed_v(m.nv), adj_q(m.nq), adj_v(m.nv),
        adj_u(m.nu), adj_kp(m.nu), adj_kd(m.nu) {
    std::mt19937 rng(5);
    std::normal_distribution<double> n01;
    for (S& y : seed_q) y = static_cast<S>(n01(rng));
    for (S& y : seed_v) y = static_cast<S>(n01(rng));
  }
  kern::Batch<S> view() {
    return {1, q.data(), v.data(), action.data(), status.data(), time.data(), gap.data(), impulse.data(),
            active.data(), iterations.data(), residual.data()};
  }
  kern::PureStep<S> pure() {
    kern::PureStep<S> io{};
    io.n_env = 1;
    io.rows = 1;
    io.q_in = q.data();
    io.v_in = v.data();
    io.action = action.data();
    io.q_out = q_out.data();
    io.v_out = v_out.data();
    io.status = status.data();
    io.adj_q_out = seed_q.data();
    io.adj_v_out = seed_v.data();
    io.adj_q_in = adj_q.data();
    io.adj_v_in = adj_v.data();
    io.adj_action = adj_u.data();
    io.adj_kp = adj_kp.data();
    io.adj_kd = adj_kd.data();
    io.adj_added_base_mass = adj_mass.data();
    io.adj_friction = adj_mu.data();
    io.adj_contact_kn = adj_kn.data();
    io.adj_smooth_k = adj_k.data();
    return io;
  }
  bool operator==(const OneEnvBatch& o) const {  // bit for bit
    auto same = [](const auto& a, const auto& b) {
      return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0);
    };
    return same(q, o.q) && same(v, o.v) && same(time, o.time) && same(gap, o.gap) && same(impulse, o.impulse) &&
           same(residual, o.residual) && same(q_out, o.q_out) && same(v_out, o.v_out) && same(status, o.status) &&
           same(active, o.active) && same(iterations, o.iterations) && same(adj_q, o.adj_q) &&
           same(adj_v, o.adj_v) && same(adj_u, o.adj_u) && same(adj_kp, o.adj_kp) && same(adj_kd, o.adj_kd) &&
           same(adj_mass, o.adj_mass) && same(adj_mu, o.adj_mu) && same(adj_kn, o.adj_kn) && same(adj_k, o.adj_k);
  }
};

}  // namespace moreau::test
