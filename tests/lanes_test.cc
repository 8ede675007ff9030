// The CPU's lock-step groups (host/simd.h Pack, host/cpu_group.h): a Pack computes lane by lane
// what the scalar computes; a group's control step equals the scalar kernels' per environment to
// rounding (not bit for bit: fused multiply-adds and GCC's auto-vectorisation of the scalar code,
// docs/cpu.md), statuses included; and an environment's numbers do not depend on the other
// environments of its group.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "host/backend.h"
#include "host/cpu_group.h"
#include "kernels/step.h"
#include "moreau/model.h"
#include "moreau/simulator.h"
#include "support/test_util.h"

namespace moreau {
namespace {

template <class S>
void expect_pack_is_the_scalar_lane_by_lane() {
  constexpr int W = kLanes<S>;
  using P = kern::Pack<S, W>;
  std::mt19937 rng(3);
  std::normal_distribution<double> n01;
  P a, b;
  for (int l = 0; l < W; ++l) {
    a.set(l, static_cast<S>(2 * n01(rng)));
    b.set(l, static_cast<S>(l == 1 ? a[l] : 2 * n01(rng)));  // one tie
  }
  const P c = mselect(a < b, a + b, a * b), d = a / b - S(3) * b, e = -clamp(a, P(S(-0.5)), P(S(0.5)));
  const P f = msqrt(mabs(a)), g = msin(a) + mcos(b) * mexp(b);
  const P h = mmin(a, b) - mmax(a, b);
  for (int l = 0; l < W; ++l) {
    const S x = a[l], y = b[l];
    EXPECT_EQ(c[l], x < y ? x + y : x * y) << l;
    EXPECT_EQ(d[l], x / y - S(3) * y) << l;
    EXPECT_EQ(e[l], -kern::clamp(x, S(-0.5), S(0.5))) << l;
    EXPECT_EQ(f[l], kern::msqrt(kern::mabs(x))) << l;
    EXPECT_EQ(g[l], kern::msin(x) + kern::mcos(y) * kern::mexp(y)) << l;
    EXPECT_EQ(h[l], kern::mmin(x, y) - kern::mmax(x, y)) << l;
    EXPECT_EQ((a <= b).lane(l), x <= y) << l;
    EXPECT_EQ((a == b).lane(l), x == y) << l;
    EXPECT_EQ((!(a > b) & (a != b)).lane(l), !(x > y) && x != y) << l;
  }
  EXPECT_TRUE(any_lane(a == b));  // lane 1
  EXPECT_FALSE(any_lane(a != a));
}

TEST(Lanes, APackIsTheScalarLaneByLane) {
  expect_pack_is_the_scalar_lane_by_lane<float>();
  expect_pack_is_the_scalar_lane_by_lane<double>();
}

// n_env environments of ANYmal after 1 s standing on hard ground, then random velocities and
// actions; environment `nan_env` gets a NaN velocity, `heavy_env` an added base mass that makes
// the mass matrix indefinite.
template <class S>
struct Batch {
  Model model = load_model(test::asset("anymal_c.json"));
  PackedModel<S> packed{model};
  PackedModel<kern::Pack<S, kLanes<S>>> lanes{model};
  kern::ModelView<S> m = packed.view(packed.reals.data(), packed.ints.data());
  kern::ModelView<kern::Pack<S, kLanes<S>>> mp = lanes.view(lanes.reals.data(), lanes.ints.data());
  int n;
  std::vector<S> q, v, u, kp, kd, added, ones;
  S mu = S(0.8), kn = S(2e4), kdn = S(-1), zeta = S(1), sk = S(300), gmax = S(0.02), spin = S(0), roll = S(0);
  S zero = S(0);  // the terrain origin
  kern::Params<S> p{};

  Batch(int n_env, int nan_env, int heavy_env) : n(n_env) {
    q.resize(static_cast<size_t>(n) * m.nq);
    v.assign(static_cast<size_t>(n) * m.nv, S(0));
    u.resize(static_cast<size_t>(n) * m.nu);
    kp.assign(model.actuator_kp.begin(), model.actuator_kp.end());
    kd.assign(model.actuator_kd.begin(), model.actuator_kd.end());
    added.assign(n, S(0));
    for (int e = 0; e < n; ++e) added[e] = e == heavy_env ? S(-1e3) : S(0.5 * (e % 3));
    ones.assign(m.nu + 1, S(1));  // motor strength; friction-loss, damping, armature scales
    p = {{kp.data(), 1},   {kd.data(), 1}, {added.data(), n},  {&mu, 1},   {&kn, 1},
         {&kdn, 1},        {&zeta, 1},     {&sk, 1},           {&gmax, 1}, {ones.data(), 1},
         {ones.data(), 1}, {&spin, 1},     {&roll, 1},       {ones.data(), 1},   {ones.data(), 1}, {&zero, 1}, {&zero, 1}};
    for (int e = 0; e < n; ++e) {
      for (int k = 0; k < m.nq; ++k) q[k * n + e] = static_cast<S>(model.qpos0[k]);
      for (int a = 0; a < m.nu; ++a) u[a * n + e] = static_cast<S>(model.qpos0[m.actuator_qposadr[a]]);
    }
    const kern::ContactSettings<S> hard{kern::kContactHard, 500, S(1e-6), 1, 1};
    for (int step = 0; step < 50; ++step) {
      std::vector<int> status(n, 0);
      const kern::PureStep<S> io = pure(status.data(), q.data(), v.data());
      for (int e = 0; e < n; ++e)
        if (e != heavy_env) kern::pure_step(m, hard, p, io, e);
    }
    std::mt19937 rng(11);
    std::normal_distribution<double> n01;
    for (auto& x : v) x = static_cast<S>(0.3 * n01(rng));
    for (auto& x : u) x += static_cast<S>(0.1 * n01(rng));
    if (nan_env >= 0) v[3 * n + nan_env] = std::numeric_limits<S>::quiet_NaN();
  }
  kern::PureStep<S> pure(int* status, S* q_out, S* v_out) const {
    kern::PureStep<S> io{};
    io.n_env = n;
    io.q_in = q.data();
    io.v_in = v.data();
    io.action = u.data();
    io.q_out = q_out;
    io.v_out = v_out;
    io.status = status;
    return io;
  }
};

template <class S>
void expect_groups_match_the_scalar(double rel) {
  constexpr int W = kLanes<S>;
  const int n = 2 * W + 3;  // two full groups and a padded one
  const Batch<S> b(n, 2, W + 1);
  for (int mode : {kern::kContactNone, kern::kContactHard, kern::kContactSoft, kern::kContactSmooth,
                   kern::kContactHardSmoothGrad}) {
    SCOPED_TRACE(kern::kContactNone == mode ? "none" : std::to_string(mode).c_str());
    const kern::ContactSettings<S> cfg{mode, 500, S(1e-6), 1, mode == kern::kContactSoft ? 4 : 1};
    std::vector<S> q1(b.q.size()), v1(b.v.size()), q2(b.q.size()), v2(b.v.size());
    std::vector<int> s1(n, 0), s2(n, 0);
    const kern::PureStep<S> scalar = b.pure(s1.data(), q1.data(), v1.data());
    const kern::PureStep<S> grouped = b.pure(s2.data(), q2.data(), v2.data());
    kern::with_dims(b.m, false, [&](const auto& md) {
      using D = typename std::decay_t<decltype(md)>::Dims;
      const kern::ModelView<kern::Pack<S, W>, D> mp{b.mp};
      for (int e = 0; e < n; ++e) kern::pure_step(md, cfg, b.p, scalar, e);
      for (int e0 = 0; e0 < n; e0 += W) pure_step_group<S, W, D>(md, mp, cfg, b.p, grouped, e0);
    });
    EXPECT_EQ(s1, s2);
    EXPECT_EQ(s2[2], kern::kStatusNanState);
    EXPECT_EQ(s2[W + 1], kern::kStatusSingularMass);
    for (int e = 0; e < n; ++e)
      if (e != 2 && e != W + 1) EXPECT_EQ(s2[e] & kern::kStatusFatal, 0) << e;
    std::vector<double> a, c;  // every environment but the NaN one
    for (int e = 0; e < n; ++e) {
      if (e == 2) continue;
      for (int k = 0; k < b.m.nq; ++k) a.push_back(q1[k * n + e]), c.push_back(q2[k * n + e]);
      for (int k = 0; k < b.m.nv; ++k) a.push_back(v1[k * n + e]), c.push_back(v2[k * n + e]);
    }
    EXPECT_TRUE(test::near_rel(a, c, rel, rel, "q, v"));
    // the failed environments keep their input state exactly
    for (int e : {2, W + 1})
      for (int k = 0; k < b.m.nq; ++k) EXPECT_EQ(q2[k * n + e], b.q[k * n + e]);
  }
}

TEST(Lanes, AGroupStepsAsTheScalarKernelsDoFloat64) { expect_groups_match_the_scalar<double>(1e-9); }
TEST(Lanes, AGroupStepsAsTheScalarKernelsDoFloat32) { expect_groups_match_the_scalar<float>(1e-4); }

// The adjoint with the lanes' recompute (adj_pure_step_group) against adj_pure_step per
// environment, for 1 and 3 seeds, every contact mode, with the NaN and the indefinite environment.
template <class S, int kRows>
void expect_group_adjoints_match_the_scalar(double rel) {
  constexpr int W = kLanes<S>;
  const int n = 2 * W + 3;
  const Batch<S> b(n, 2, W + 1);
  const int nq = b.m.nq, nv = b.m.nv, nu = b.m.nu;
  std::mt19937 rng(17);
  std::normal_distribution<double> n01;
  std::vector<S> seed_q(static_cast<size_t>(kRows) * nq * n), seed_v(static_cast<size_t>(kRows) * nv * n);
  for (auto& x : seed_q) x = static_cast<S>(n01(rng));
  for (auto& x : seed_v) x = static_cast<S>(n01(rng));
  for (int mode : {kern::kContactNone, kern::kContactHard, kern::kContactSoft, kern::kContactSmooth,
                   kern::kContactHardSmoothGrad}) {
    SCOPED_TRACE(mode);
    const kern::ContactSettings<S> cfg{mode, 500, S(1e-6), 1, mode == kern::kContactSoft ? 4 : 1};
    struct Out {
      std::vector<S> q, v, u, kp, mass;
      std::vector<int> status;
    } out[2];
    kern::PureStep<S> io[2];
    for (int i = 0; i < 2; ++i) {
      out[i] = {std::vector<S>(seed_q.size()), std::vector<S>(seed_v.size()),
                std::vector<S>(static_cast<size_t>(kRows) * nu * n), std::vector<S>(static_cast<size_t>(kRows) * nu * n),
                std::vector<S>(static_cast<size_t>(kRows) * n), std::vector<int>(n, 0)};
      io[i] = b.pure(out[i].status.data(), nullptr, nullptr);
      io[i].rows = kRows;
      io[i].adj_q_out = seed_q.data();
      io[i].adj_v_out = seed_v.data();
      io[i].adj_q_in = out[i].q.data();
      io[i].adj_v_in = out[i].v.data();
      io[i].adj_action = out[i].u.data();
      io[i].adj_kp = out[i].kp.data();
      io[i].adj_added_base_mass = out[i].mass.data();
    }
    kern::with_dims(b.m, false, [&](const auto& md) {
      using D = typename std::decay_t<decltype(md)>::Dims;
      const kern::ModelView<kern::Pack<S, W>, D> mp{b.mp};
      const int n_steps = md.decimation * cfg.substeps;
      std::vector<kern::AdjTape<S, D>> tapes(static_cast<size_t>(W) * n_steps);
      for (int e = 0; e < n; ++e) kern::adj_pure_step<S, D, kRows>(md, cfg, b.p, io[0], e, tapes.data(), n_steps);
      for (int e0 = 0; e0 < n; e0 += W)
        adj_pure_step_group<S, W, D, kRows>(md, mp, cfg, b.p, io[1], e0, std::min(W, n - e0), tapes.data());
    });
    EXPECT_EQ(out[0].status, out[1].status);
    EXPECT_EQ(out[1].status[2], kern::kStatusNanState);
    EXPECT_EQ(out[1].status[W + 1], kern::kStatusSingularMass);
    for (auto field : {&Out::q, &Out::v, &Out::u, &Out::kp, &Out::mass}) {
      const std::vector<double> a((out[0].*field).begin(), (out[0].*field).end());
      const std::vector<double> c((out[1].*field).begin(), (out[1].*field).end());
      EXPECT_TRUE(test::near_rel(a, c, rel, rel, "adjoint"));
      const int width = static_cast<int>(a.size()) / (kRows * n);
      for (int k = 0; k < kRows * width; ++k) EXPECT_EQ(c[static_cast<size_t>(k) * n + 2], 0.0);  // failed: zero
    }
  }
}

TEST(Lanes, AGroupsAdjointIsTheScalarsFloat64) {
  expect_group_adjoints_match_the_scalar<double, 1>(1e-8);
  expect_group_adjoints_match_the_scalar<double, 3>(1e-8);
}
TEST(Lanes, AGroupsAdjointIsTheScalarsFloat32) { expect_group_adjoints_match_the_scalar<float, 2>(1e-3); }

// The same environment in a batch of one and as environment 5 of a batch of 16 whose others
// differ (one of them NaN): the same bits, in float and double.
TEST(Lanes, AnEnvironmentsNumbersDoNotDependOnItsGroup) {
  const Model model = load_model(test::asset("anymal_c.json"));
  for (DType dtype : {DType::Float32, DType::Float64}) {
    SimulatorOptions o;
    o.device = Device::CPU;
    o.dtype = dtype;
    o.contact.mode = ContactMode::Hard;
    o.n_threads = 1;
    o.n_env = 1;
    Simulator one(model, o);
    o.n_env = 16;
    Simulator many(model, o);
    std::mt19937 rng(5);
    std::vector<double> q(16 * model.nq), v(16 * model.nv), a(16 * model.nu);
    for (int e = 0; e < 16; ++e) test::random_state(model, rng, &q[e * model.nq], &v[e * model.nv]);
    for (int e = 0; e < 16; ++e)
      for (int k = 0; k < model.nq; ++k) q[e * model.nq + k] = e == 5 ? model.qpos0[k] : q[e * model.nq + k];
    std::normal_distribution<double> n01;
    for (auto& x : a) x = 0.2 * n01(rng);
    v[9 * model.nv] = std::nan("");
    many.set_state(q.data(), v.data(), 16);
    many.set_action(a.data(), 16);
    one.set_state(&q[5 * model.nq], &v[5 * model.nv], 1);
    one.set_action(&a[5 * model.nu], 1);
    for (int step = 0; step < 20; ++step) {
      one.step();
      many.step();
    }
    std::vector<double> q1(model.nq), v1(model.nv), qn(16 * model.nq), vn(16 * model.nv);
    one.get_state(q1.data(), v1.data(), 1);
    many.get_state(qn.data(), vn.data(), 16);
    for (int k = 0; k < model.nq; ++k) EXPECT_EQ(q1[k], qn[5 * model.nq + k]) << k;
    for (int k = 0; k < model.nv; ++k) EXPECT_EQ(v1[k], vn[5 * model.nv + k]) << k;
    std::vector<int32_t> status(16);
    many.get_status(status.data(), 16);
    EXPECT_EQ(status[9], kStatusNanState);
    EXPECT_EQ(status[5], 0);
  }
}

}  // namespace
}  // namespace moreau
