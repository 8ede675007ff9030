// Gradients of whole control steps and rollouts (Simulator::step_adjoint, rollout_backward)
// against central finite differences in double precision, chained adjoints, translation
// invariance and robustness.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "moreau/simulator.h"
#include "support/test_util.h"

namespace moreau {
namespace {

using test::asset;
using test::central;
using Vec = std::vector<double>;

// Field-major (k * n + e) buffers of one batch, on the CPU in double.
struct Batch {
  int n, nq, nv, nu;
  Vec q, v, u;
  Batch(const Model& m, int n_env) : n(n_env), nq(m.nq), nv(m.nv), nu(m.nu), q(n * nq), v(n * nv), u(n * nu) {}
};

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// A batch of airborne random states (bases high above the ground), random actions around the
// default pose, random loss weights.
struct Problem {
  Model model;
  Simulator sim;
  Batch in, w;  // inputs and the loss weights on (q_out, v_out)
  // gravity_x tilts gravity (a box on the ground then slides).
  Problem(const std::string& robot, int n_env, ContactMode mode, unsigned seed, double lift = 50,
          double gravity_x = 0)
      : Problem(load_model(asset(robot)), n_env, mode, seed, lift, gravity_x) {}
  // condim 6: room for rolling friction's rows.
  Problem(const Model& robot, int n_env, ContactMode mode, unsigned seed, double lift = 50, double gravity_x = 0,
          int condim = 4)
      : model(with_gravity_x(robot, gravity_x)),
        sim(model, options(n_env, mode, condim)),
        in(model, n_env),
        w(model, n_env) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> normal(0, 1);
    Vec q(model.nq), v(model.nv);
    for (int e = 0; e < n_env; ++e) {
      test::random_state(model, rng, q.data(), v.data());
      if (model.jnt_type[0] == static_cast<int>(JointType::Free)) q[2] += lift;
      for (int k = 0; k < model.nq; ++k) in.q[k * n_env + e] = q[k];
      for (int k = 0; k < model.nv; ++k) in.v[k * n_env + e] = 0.5 * v[k];
      for (int a = 0; a < model.nu; ++a)
        in.u[a * n_env + e] = model.qpos0[model.actuator_qposadr[a]] + 0.3 * normal(rng);
    }
    for (double& x : w.q) x = normal(rng);
    for (double& x : w.v) x = normal(rng);
  }
  static Model with_gravity_x(Model m, double gx) {
    m.gravity[0] = gx;
    return m;
  }
  static SimulatorOptions options(int n_env, ContactMode mode, int condim = 4) {
    SimulatorOptions o;
    o.n_env = n_env;
    o.contact.condim = condim;
    o.dtype = DType::Float64;
    o.n_threads = 1;
    o.contact.mode = mode;
    o.contact.tolerance = 1e-13;  // finite differences need the solve converged far below ε
    o.contact.max_iterations = 20000;
    return o;
  }
  // A per-simulator parameter (Simulator::set_param, one value for every environment) of this
  // problem's simulator and of every one gradient32 and gradient_with make.
  void set_param(const std::string& name, double value) {
    params.emplace_back(name, value);
    sim.set_param(name, &value, 1, 1);
  }
  void apply_params(Simulator& other) const {
    for (const auto& [name, value] : params) other.set_param(name, &value, 1, 1);
  }
  std::vector<std::pair<std::string, double>> params;
  // L = ⟨w_q, q_out⟩ + ⟨w_v, v_out⟩ of one control step
  double loss(const Batch& x) {
    Batch out(model, x.n);
    std::vector<int32_t> status(x.n);
    sim.step_pure(x.q.data(), x.v.data(), x.u.data(), out.q.data(), out.v.data(), status.data());
    for (int32_t s : status) EXPECT_EQ(s, 0);
    return dot(w.q, out.q) + dot(w.v, out.v);
  }
  // The adjoint's gradients at `in`.
  Batch gradient(Simulator::Gradients* params = nullptr) {
    Batch g(model, in.n);
    Simulator::Gradients grads;
    grads.q = g.q.data();
    grads.v = g.v.data();
    grads.action = g.u.data();
    if (params) {
      grads.kp = params->kp;
      grads.kd = params->kd;
      grads.added_base_mass = params->added_base_mass;
      grads.friction = params->friction;
      grads.contact_kn = params->contact_kn;
      grads.smooth_k = params->smooth_k;
    }
    std::vector<int32_t> status(in.n);
    sim.step_adjoint(in.q.data(), in.v.data(), in.u.data(), w.q.data(), w.v.data(), grads, status.data());
    for (int32_t s : status) EXPECT_EQ(s, 0);
    return g;
  }
  // The state and action gradients at `in` (one environment) of a float32 simulator of this
  // model in `mode` (the solver at its float defaults); its status in *status.
  Batch gradient32(ContactMode mode, int32_t* status) {
    SimulatorOptions o = options(1, mode, sim.options().contact.condim);
    o.dtype = DType::Float32;
    o.contact.tolerance = 0;  // the float default
    o.contact.max_iterations = 500;
    Simulator sim32(model, o);
    apply_params(sim32);
    auto to_float = [](const Vec& x) { return std::vector<float>(x.begin(), x.end()); };
    const std::vector<float> q = to_float(in.q), v = to_float(in.v), u = to_float(in.u), wq = to_float(w.q),
                             wv = to_float(w.v);
    std::vector<float> gq(q.size()), gv(v.size()), gu(u.size());
    Simulator::Gradients g;
    g.q = gq.data();
    g.v = gv.data();
    g.action = gu.data();
    sim32.step_adjoint(q.data(), v.data(), u.data(), wq.data(), wv.data(), g, status);
    Batch out(model, 1);
    out.q.assign(gq.begin(), gq.end());
    out.v.assign(gv.begin(), gv.end());
    out.u.assign(gu.begin(), gu.end());
    return out;
  }
  // The state and action gradients at `in` (with q in place of in.q if given) of a simulator of
  // this model with options o (one environment).
  Batch gradient_with(const SimulatorOptions& o, const Vec* q = nullptr) {
    Simulator other(model, o);
    apply_params(other);
    Batch g(model, 1);
    Simulator::Gradients grads;
    grads.q = g.q.data();
    grads.v = g.v.data();
    grads.action = g.u.data();
    int32_t status = -1;
    other.step_adjoint((q ? *q : in.q).data(), in.v.data(), in.u.data(), w.q.data(), w.v.data(), grads, &status);
    EXPECT_EQ(status, 0);
    return g;
  }
};


// Relative error ≤ tol per entry, with an absolute floor of 1e-3 of the largest entry of the
// same gradient (central differences lose ~1e-10 absolute to round-off and solver tolerance).
void expect_matches_fd(Problem& P, double tol) {
  const Batch g = P.gradient();
  const double eps = 1e-6;
  auto check = [&](Vec& x, const Vec& gx, const char* what) {
    double norm = 0, largest = 0;
    for (double y : gx) largest = std::max(largest, std::abs(y));
    for (size_t i = 0; i < x.size(); ++i) {
      const double fd = central([&] { return P.loss(P.in); }, x[i], eps);
      const double scale = std::max({std::abs(fd), std::abs(gx[i]), 1e-3 * largest});
      EXPECT_LE(std::abs(fd - gx[i]), tol * scale) << what << "[" << i << "]: adjoint " << gx[i] << ", fd " << fd;
      norm += gx[i] * gx[i];
    }
    EXPECT_GT(norm, 0) << what << ": gradient is zero";
  };
  check(P.in.q, g.q, "dL/dq");
  check(P.in.v, g.v, "dL/dv");
  if (P.model.nu > 0) check(P.in.u, g.u, "dL/daction");
}

TEST(StepGradient, AnymalAirborneMatchesFiniteDifferences) {
  Problem P("anymal_c.json", 2, ContactMode::None, 1);
  expect_matches_fd(P, 1e-5);
}

TEST(StepGradient, DoublePendulumAndCartpoleMatchFiniteDifferences) {
  Problem a("double_pendulum.json", 2, ContactMode::None, 2);
  expect_matches_fd(a, 1e-5);
  Problem b("cartpole.json", 2, ContactMode::None, 3);
  expect_matches_fd(b, 1e-5);
}

// Joint springs on hinges (double pendulum) and a slide (the cart-pole's cart).
TEST(StepGradient, JointSpringsMatchFiniteDifferences) {
  Model a = load_model(asset("double_pendulum.json"));
  a.jnt_stiffness = {30.0, 5.0};
  a.jnt_springref = {0.4, -0.3};
  Problem pa(a, 2, ContactMode::None, 4);
  expect_matches_fd(pa, 1e-5);
  Model b = load_model(asset("cartpole.json"));
  b.jnt_stiffness[0] = 50.0;
  b.jnt_springref[0] = 0.2;
  Problem pb(b, 2, ContactMode::None, 5);
  expect_matches_fd(pb, 1e-5);
}

// Weakened motors (motor_strength 0.7 on every actuator, per environment): the adjoint scales
// the actuators' forces as the step does.
TEST(StepGradient, MotorStrengthMatchesFiniteDifferences) {
  Problem P("anymal_c.json", 2, ContactMode::None, 6);
  const std::vector<double> strength = {0.7, 1.3};  // one row per environment, every actuator alike
  std::vector<double> rows(2 * P.model.nu);
  for (int a = 0; a < P.model.nu; ++a)
    for (int e = 0; e < 2; ++e) rows[a * 2 + e] = strength[e];
  P.sim.set_param("motor_strength", rows.data(), 2, P.model.nu);
  expect_matches_fd(P, 1e-5);
}

// Joint damping and armature scaled per environment (damping_scale 0.5 and 2, armature_scale 2
// and 0.5) on ANYmal C given damping 1 N m s/rad and armature 0.02 on its leg joints: the adjoint
// uses the environment's scaled D in −D v and in the factorised H + hD.
TEST(StepGradient, DampingAndArmatureScalesMatchFiniteDifferences) {
  Model m = load_model(asset("anymal_c.json"));
  for (int d = 6; d < m.nv; ++d) {
    m.dof_damping[d] = 1.0;
    m.dof_armature[d] = 0.02;
  }
  Problem P(m, 2, ContactMode::None, 7);
  const std::vector<double> damping = {0.5, 2.0}, armature = {2.0, 0.5};
  P.sim.set_param("damping_scale", damping.data(), 2, 1);
  P.sim.set_param("armature_scale", armature.data(), 2, 1);
  expect_matches_fd(P, 1e-5);
}

// Quaternion perturbations on the manifold: q ⊕ ε δ, with ⊕ the exponential map.
TEST(StepGradient, ManifoldPerturbationOfTheBaseOrientation) {
  Problem P("anymal_c.json", 1, ContactMode::None, 4);
  const Batch g = P.gradient();
  const Vec q0 = P.in.q;
  std::mt19937 rng(9);
  std::normal_distribution<double> normal(0, 1);
  const double d[3] = {normal(rng), normal(rng), normal(rng)};
  auto rotated = [&](double eps) {  // quat ← quat ⊗ exp(ε δ / 2)
    const double th = eps * std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    const double s = th != 0 ? std::sin(th / 2) / th * eps : 0, c = std::cos(th / 2);
    const double e[4] = {c, s * d[0], s * d[1], s * d[2]};
    const double* a = &q0[3];
    Vec q = q0;
    q[3] = a[0] * e[0] - a[1] * e[1] - a[2] * e[2] - a[3] * e[3];
    q[4] = a[0] * e[1] + a[1] * e[0] + a[2] * e[3] - a[3] * e[2];
    q[5] = a[0] * e[2] - a[1] * e[3] + a[2] * e[0] + a[3] * e[1];
    q[6] = a[0] * e[3] + a[1] * e[2] - a[2] * e[1] + a[3] * e[0];
    return q;
  };
  const double eps = 1e-6;
  P.in.q = rotated(eps);
  const double lp = P.loss(P.in);
  P.in.q = rotated(-eps);
  const double lm = P.loss(P.in);
  P.in.q = q0;
  const double fd = (lp - lm) / (2 * eps);
  // chain rule: dq/dε at 0 = (quat ⊗ (0, δ/2)) on the quaternion coordinates
  const Vec dq = rotated(1e-7);
  double directional = 0;
  for (int k = 3; k < 7; ++k) directional += g.q[k] * (dq[k] - q0[k]) / 1e-7;
  EXPECT_NEAR(directional, fd, 1e-5 * std::max(1.0, std::abs(fd)));
  EXPECT_GT(std::abs(fd), 1e-6);
}

TEST(StepGradient, ParameterGradientsMatchFiniteDifferences) {
  Problem P("anymal_c.json", 1, ContactMode::None, 5);
  const int nu = P.model.nu;
  Vec gkp(nu), gkd(nu), gm(1);
  Simulator::Gradients params;
  params.kp = gkp.data();
  params.kd = gkd.data();
  params.added_base_mass = gm.data();
  P.gradient(&params);
  Vec kp = P.model.actuator_kp, kd = P.model.actuator_kd;
  double mass = 0;
  auto loss_with = [&] {
    P.sim.set_param("kp", kp.data(), 1, nu);
    P.sim.set_param("kd", kd.data(), 1, nu);
    P.sim.set_param("added_base_mass", &mass, 1, 1);
    return P.loss(P.in);
  };
  for (int a = 0; a < nu; ++a) {
    const double fkp = central(loss_with, kp[a], 1e-4), fkd = central(loss_with, kd[a], 1e-5);
    EXPECT_NEAR(gkp[a], fkp, 1e-5 * std::max(1e-3, std::abs(fkp))) << "kp " << a;
    EXPECT_NEAR(gkd[a], fkd, 1e-5 * std::max(1e-3, std::abs(fkd))) << "kd " << a;
  }
  const double fm = central(loss_with, mass, 1e-5);
  EXPECT_NEAR(gm[0], fm, 1e-5 * std::max(1e-3, std::abs(fm)));
  EXPECT_GT(std::abs(gm[0]), 0);
}

// Translating the robot by 100 m changes no gradient by more than 1e-6 relative: airborne, and
// standing on the ground in every contact mode (contact Jacobians use positions relative to
// the base).
TEST(StepGradient, TranslationByOneHundredMetresLeavesGradientsUnchanged) {
  for (ContactMode mode :
       {ContactMode::None, ContactMode::Hard, ContactMode::Soft, ContactMode::Smooth, ContactMode::HardSmoothGrad}) {
    SCOPED_TRACE(contact_mode_name(mode));
    Problem P("anymal_c.json", 1, mode, 6, mode == ContactMode::None ? 50 : 0);
    if (mode != ContactMode::None) {
      P.sim.step(50);  // standing
      P.sim.get_state(P.in.q.data(), P.in.v.data(), 1);
      P.in.q[2] -= 1e-3;
    }
    const Batch g0 = P.gradient();
    // float32 (7 digits: a world-frame lever arm would lose 100 m / 0.5 m of them)
    int32_t status = 0;
    const Batch f0 = P.gradient32(mode, &status);
    P.in.q[0] += 100;
    P.in.q[1] -= 100;
    const Batch g1 = P.gradient();
    EXPECT_NEAR_REL(g0.q, g1.q, 1e-6, 1e-9, "dL/dq");
    EXPECT_NEAR_REL(g0.v, g1.v, 1e-6, 1e-9, "dL/dv");
    EXPECT_NEAR_REL(g0.u, g1.u, 1e-6, 1e-9, "dL/daction");
    EXPECT_EQ(status & ~kStatusSolverNotConverged, 0);
    const Batch f1 = P.gradient32(mode, &status);
    EXPECT_EQ(status & ~kStatusSolverNotConverged, 0);
    for (auto [a, b] : {std::pair{&f0.q, &f1.q}, std::pair{&f0.v, &f1.v}, std::pair{&f0.u, &f1.u}}) {
      double big = 0;
      for (double x : *a) big = std::max(big, std::abs(x));
      EXPECT_GT(big, 0);
      EXPECT_NEAR_REL(*a, *b, 1e-6, 1e-6 * big, "float32 gradients");
    }
  }
}

// A 32-step rollout: the loss weighs the final base position and velocity. Backward equals
// chained single-step adjoints bit for bit, and matches finite differences (airborne, and
// standing on smooth contact through all 128 physics steps).
void expect_rollout_gradient(ContactMode mode) {
  const int H = 32, n = 2;
  Problem P("anymal_c.json", n, mode, 7, mode == ContactMode::None ? 50 : 0);
  if (mode != ContactMode::None) {  // standing on the ground
    P.sim.step(50);
    P.sim.get_state(P.in.q.data(), P.in.v.data(), n);
  }
  const Model& m = P.model;
  const size_t sq = n * m.nq, sv = n * m.nv, su = n * m.nu;
  std::mt19937 rng(8);
  std::normal_distribution<double> normal(0, 0.2);
  Vec actions(H * su);
  for (int t = 0; t < H; ++t)
    for (size_t i = 0; i < su; ++i) actions[t * su + i] = P.in.u[i] + normal(rng);
  // L = ⟨w_q, q_H⟩ on the base position (3) and ⟨w_v, v_H⟩ on the base velocity (6)
  Vec wq(sq, 0.0), wv(sv, 0.0);
  for (int k = 0; k < 3; ++k)
    for (int e = 0; e < n; ++e) wq[k * n + e] = 1.0 + k;
  for (int k = 0; k < 6; ++k)
    for (int e = 0; e < n; ++e) wv[k * n + e] = 0.5 - 0.1 * k;
  // the simulator's own state is field-major on the CPU: write it through the views
  auto set_state = [&](const Vec& q0, const Vec& v0) {
    std::memcpy(P.sim.q().data, q0.data(), sizeof(double) * sq);
    std::memcpy(P.sim.v().data, v0.data(), sizeof(double) * sv);
    std::memset(P.sim.status().data, 0, sizeof(int32_t) * n);
  };
  auto loss = [&](const Vec& q0, const Vec& v0, const Vec& acts) {
    set_state(q0, v0);
    P.sim.rollout(H, acts.data());
    const double* q = static_cast<const double*>(P.sim.q().data);
    const double* v = static_cast<const double*>(P.sim.v().data);
    double L = 0;
    for (size_t i = 0; i < sq; ++i) L += wq[i] * q[i];
    for (size_t i = 0; i < sv; ++i) L += wv[i] * v[i];
    return L;
  };
  const double L0 = loss(P.in.q, P.in.v, actions);
  ASSERT_TRUE(std::isfinite(L0));
  Vec aq((H + 1) * sq, 0.0), av((H + 1) * sv, 0.0), au(H * su);
  std::copy(wq.begin(), wq.end(), aq.begin() + H * sq);
  std::copy(wv.begin(), wv.end(), av.begin() + H * sv);
  P.sim.rollout_backward(aq.data(), av.data(), au.data(), Simulator::Gradients{});

  // chained single-step adjoints, bit for bit
  Vec states_q((H + 1) * sq), states_v((H + 1) * sv);
  std::copy(P.in.q.begin(), P.in.q.end(), states_q.begin());
  std::copy(P.in.v.begin(), P.in.v.end(), states_v.begin());
  std::vector<int32_t> status(n);
  for (int t = 0; t < H; ++t)
    P.sim.step_pure(&states_q[t * sq], &states_v[t * sv], &actions[t * su], &states_q[(t + 1) * sq],
                    &states_v[(t + 1) * sv], status.data());
  Vec cq = wq, cv = wv, cu(H * su);
  for (int t = H - 1; t >= 0; --t) {
    Vec nq(sq), nv(sv);
    Simulator::Gradients g;
    g.q = nq.data();
    g.v = nv.data();
    g.action = &cu[t * su];
    P.sim.step_adjoint(&states_q[t * sq], &states_v[t * sv], &actions[t * su], cq.data(), cv.data(), g,
                       status.data());
    cq = nq;
    cv = nv;
  }
  EXPECT_EQ(std::memcmp(cq.data(), aq.data(), sizeof(double) * sq), 0) << "dL/dq0 differs from chained adjoints";
  EXPECT_EQ(std::memcmp(cv.data(), av.data(), sizeof(double) * sv), 0) << "dL/dv0 differs from chained adjoints";
  EXPECT_EQ(std::memcmp(cu.data(), au.data(), sizeof(double) * H * su), 0) << "dL/dactions differ";

  // finite differences on the initial velocity and a few actions
  const double eps = 1e-6;
  Vec v0 = P.in.v, acts = actions;
  for (size_t i = 0; i < sv; i += 5) {
    const double fd = central([&] { return loss(P.in.q, v0, actions); }, v0[i], eps);
    EXPECT_NEAR(av[i], fd, 1e-5 * std::max(1.0, std::abs(fd))) << "dL/dv0[" << i << "]";
  }
  for (size_t i = 0; i < H * su; i += 97) {
    const double fd = central([&] { return loss(P.in.q, P.in.v, acts); }, acts[i], eps);
    EXPECT_NEAR(au[i], fd, 1e-5 * std::max(1.0, std::abs(fd))) << "dL/dactions[" << i << "]";
  }
}

TEST(RolloutGradient, ThirtyTwoStepsMatchChainedAdjointsAndFiniteDifferences) {
  for (ContactMode mode : {ContactMode::None, ContactMode::Smooth}) {  // airborne; standing on smooth contact
    SCOPED_TRACE(contact_mode_name(mode));
    expect_rollout_gradient(mode);
  }
}

// Random states (base heights 0.2–0.7 m: feet from well clear of the ground to 0.3 m into it;
// every fifth round spinning 30 times faster; wild actions) under per-environment parameters
// cycling through extremes (frictionless to μ = 3, k_n 1e2–1e4, smooth k 30–1e5 (gates
// saturated), zero and large gains, an added base mass), `rounds` adjoints of n environments
// of P's mode in `dtype`: no NaN or Inf in any gradient from a finite state (a non-finite one
// would set kStatusNanGradient).
template <class T>
void expect_finite_gradients(Problem& P, DType dtype, int rounds) {
  const int n = P.in.n, nu = P.model.nu;
  SimulatorOptions o = P.sim.options();
  o.dtype = dtype;
  o.contact.tolerance = 0;  // the solver's defaults, not the finite-difference tests' tight ones
  o.contact.max_iterations = 500;
  Simulator sim(P.model, o);
  const double friction[] = {0, 0.05, 1, 3}, kn[] = {1e2, 1e3, 1e4}, smooth_k[] = {30, 300, 3e3, 1e5},
               kp[] = {0, 80, 1e3}, kd[] = {0, 2, 50}, added[] = {0, 5, 40};
  Vec per_env(n), gains(n * nu);
  auto set = [&](const char* name, const double* values, int count) {
    for (int e = 0; e < n; ++e) per_env[e] = values[e % count];
    sim.set_param(name, per_env.data(), n, 1);
  };
  set("friction", friction, 4);
  set("contact_kn", kn, 3);
  set("smooth_k", smooth_k, 4);
  set("added_base_mass", added, 3);
  for (auto [name, values] : {std::pair{"kp", kp}, std::pair{"kd", kd}}) {
    for (int e = 0; e < n; ++e)
      for (int a = 0; a < nu; ++a) gains[e * nu + a] = values[(e / 3 + a) % 3];
    sim.set_param(name, gains.data(), n, nu);
  }
  std::mt19937 rng(13);
  std::normal_distribution<double> normal(0, 1);
  std::uniform_real_distribution<double> height(0.2, 0.7);
  auto as_T = [](const Vec& x) { return std::vector<T>(x.begin(), x.end()); };
  for (int r = 0; r < rounds; ++r) {
    const double scale = r % 5 == 0 ? 30.0 : 1.0;
    for (int e = 0; e < n; ++e) P.in.q[2 * n + e] = height(rng);
    for (double& x : P.in.v) x = scale * normal(rng);
    for (double& x : P.in.u) x = 5 * normal(rng);
    const std::vector<T> q = as_T(P.in.q), v = as_T(P.in.v), u = as_T(P.in.u), wq = as_T(P.w.q), wv = as_T(P.w.v);
    std::vector<T> gq(q.size()), gv(v.size()), gu(u.size());
    Simulator::Gradients grads;
    grads.q = gq.data();
    grads.v = gv.data();
    grads.action = gu.data();
    std::vector<int32_t> status(n);
    sim.step_adjoint(q.data(), v.data(), u.data(), wq.data(), wv.data(), grads, status.data());
    for (int e = 0; e < n; ++e) ASSERT_EQ(status[e] & kStatusNanGradient, 0) << "env " << e << " round " << r;
    for (const std::vector<T>* g : {&gq, &gv, &gu})
      for (T x : *g) ASSERT_TRUE(std::isfinite(x));
  }
}

// 100,000 random steps over all modes in float64 and 25,000 in float32 (above).
TEST(StepGradient, NoNonFiniteGradientsOverManyRandomSteps) {
  const int n = 1000;
  for (ContactMode mode :
       {ContactMode::None, ContactMode::Hard, ContactMode::Soft, ContactMode::Smooth, ContactMode::HardSmoothGrad}) {
    SCOPED_TRACE(contact_mode_name(mode));
    Problem P("anymal_c.json", n, mode, 12, 0.0);
    expect_finite_gradients<double>(P, DType::Float64, 20);
    expect_finite_gradients<float>(P, DType::Float32, 5);
  }
}

// float32 and float64 gradients of the same step agree: relative tol with a floor of tol times
// the largest gradient of the same input. tol = 2e-3: float32 carries ~7 digits through a step,
// a contact solve and its adjoint (measured: at most 1.1e-4 of the largest, soft contact). Soft
// contact also at k_n = 1e6 N/m, where a stiff penalty risks losing the float32 gradient to
// round-off (docs/contact.md, "Numerical safeguards"): pressed 1 mm in, the float32 gap
// resolves the penetration to ~1e-4 per step over 108 physics steps (measured 1.8e-3 of the
// largest); tol = 1e-2 there.
TEST(StepGradient, FloatAndDoubleGradientsAgree) {
  const struct {
    ContactMode mode;
    double kn, tol;
  } cases[] = {{ContactMode::None, 1e4, 2e-3},           {ContactMode::Hard, 1e4, 2e-3},
               {ContactMode::Smooth, 1e4, 2e-3},         {ContactMode::HardSmoothGrad, 1e4, 2e-3},
               {ContactMode::Soft, 1e4, 2e-3},           {ContactMode::Soft, 1e6, 1e-2}};
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(contact_mode_name(c.mode)) + ", k_n " + std::to_string(c.kn));
    Problem P("anymal_c.json", 1, c.mode, 71, 0.0);
    P.set_param("contact_kn", c.kn);
    P.sim.step(100);
    P.sim.get_state(P.in.q.data(), P.in.v.data(), 1);
    P.in.q[2] -= 1e-3;
    const Batch gd = P.gradient();
    int32_t status = 0;
    const Batch gf = P.gradient32(c.mode, &status);
    EXPECT_EQ(status & ~kStatusSolverNotConverged, 0);
    for (auto [f, d, what] : {std::tuple{&gf.q, &gd.q, "dL/dq float vs double"},
                              std::tuple{&gf.v, &gd.v, "dL/dv float vs double"},
                              std::tuple{&gf.u, &gd.u, "dL/daction float vs double"}}) {
      double big = 0;
      for (double x : *d) big = std::max(big, std::abs(x));
      EXPECT_GT(big, 0) << what;
      EXPECT_NEAR_REL(*f, *d, c.tol, c.tol * big, what);
    }
  }
}

// CUDA vs CPU gradients on 10,000 environments with distinct states, hard contact, in both
// CUDA layouts (one thread per environment; cuda_team, a team of lanes). The caller buffers of step_adjoint must live on the simulator's device: the state buffers of
// helper simulators on the same device serve (their get_state reads them back).
TEST(StepGradient, CudaMatchesCpuOnTenThousandEnvironments) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: moreau built without CUDA or no GPU present";
  const int n = 10000;
  const Model model = load_model(asset("anymal_c.json"));
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1, 1), height(0.3, 0.6);
  Vec q(n * model.nq), v(n * model.nv), act(n * model.nu), wq(q.size()), wv(v.size());  // row-major
  for (int e = 0; e < n; ++e) {
    Vec qe(model.nq), ve(model.nv);
    test::random_state(model, rng, qe.data(), ve.data());
    qe[2] = height(rng);
    for (int k = 0; k < model.nq; ++k) q[e * model.nq + k] = qe[k];
    for (int k = 0; k < model.nv; ++k) v[e * model.nv + k] = 0.5 * ve[k];
    for (int a = 0; a < model.nu; ++a) act[e * model.nu + a] = model.qpos0[model.actuator_qposadr[a]] + 0.3 * u(rng);
  }
  for (double& x : wq) x = u(rng);
  for (double& x : wv) x = u(rng);
  auto gradients = [&](Device device, int team, Vec& gq, Vec& gv, std::vector<int32_t>& status) {
    SimulatorOptions o;
    o.n_env = n;
    o.device = device;
    o.cuda_team = team;
    Simulator sim(model, o), weights(model, o), out(model, o);
    sim.set_state(q.data(), v.data(), n);
    sim.set_action(act.data(), n);
    weights.set_state(wq.data(), wv.data(), n);
    Simulator::Gradients g;
    g.q = out.q().data;
    g.v = out.v().data;
    g.action = out.action().data;
    sim.step_adjoint(sim.q().data, sim.v().data, sim.action().data, weights.q().data, weights.v().data, g,
                     static_cast<int32_t*>(out.status().data));
    out.get_state(gq.data(), gv.data(), n);
    out.get_status(status.data(), n);
  };
  Vec cq(q.size()), cv(v.size()), gq(q.size()), gv(v.size());
  std::vector<int32_t> sc(n, -1), sg(n, -1);
  gradients(Device::CPU, 0, cq, cv, sc);
  for (const int team : {0, kCudaTeamLanes}) {
    SCOPED_TRACE(team ? "team layout" : "one thread per environment");
    gradients(Device::CUDA, team, gq, gv, sg);
    ASSERT_TRUE(test::statuses_match(sg, sc, 0.01, "CUDA vs CPU adjoint status"));
    EXPECT_NEAR_REL(gq, cq, 1e-2, 1e-2, "dL/dq CUDA vs CPU");
    EXPECT_NEAR_REL(gv, cv, 1e-2, 1e-2, "dL/dv CUDA vs CPU");
  }
}

}  // namespace
}  // namespace moreau

namespace moreau {
namespace {

// A cube resting on the ground (corner contacts), optionally with tilted gravity so it
// slides, and a small velocity; random weights on the output state.
void expect_contact_gradient_matches_fd(ContactMode mode, double slide_accel, unsigned seed, double tol) {
  Problem P("cube.json", 1, mode, seed, 0.0, slide_accel);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  P.in.q = {0.1, -0.2, 0.05 - 1e-4, 1, 0, 0, 0};  // resting flat, slightly pressed in
  const double q3[4] = {1, 0.02 * u(rng), 0.02 * u(rng), 0};
  const double nrm = std::sqrt(q3[0] * q3[0] + q3[1] * q3[1] + q3[2] * q3[2]);
  for (int k = 0; k < 3; ++k) P.in.q[3 + k] = q3[k] / nrm;
  P.in.q[6] = 0;
  for (int k = 0; k < 6; ++k) P.in.v[k] = 0.05 * u(rng);
  expect_matches_fd(P, tol);
}

// A ball (one contact point, off its centre of mass) touching the ground: a well-posed
// single contact, sticking or (with tilted gravity) sliding.
Model ball_model() {
  RobotSpec spec;
  spec.name = "ball";
  BodySpec b;
  b.name = "ball";
  b.joint.type = JointType::Free;
  b.mass = 2;
  b.com = {0.01, -0.02, 0.015};
  b.inertia = {0.02, 0.025, 0.03, 0.001, 0, -0.002};
  ContactSpec c;
  c.radius = 0.1;
  b.contacts.push_back(c);
  spec.bodies.push_back(b);
  return compile(spec);
}

void expect_ball_gradient_matches_fd(ContactMode mode, double gravity_x, unsigned seed) {
  Problem P(ball_model(), 1, mode, seed, 0.0, gravity_x);
  P.in.q = {0.3, -0.1, 0.1 - 2e-4, 0.98, 0.1, -0.15, 0.05};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int k = 0; k < 6; ++k) P.in.v[k] = 0.1 * u(rng);
  P.in.v[2] = -0.05;
  expect_matches_fd(P, 1e-5);
}

TEST(ContactGradient, BallSingleContactMatchesFiniteDifferences) {
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Smooth, ContactMode::Soft}) {
    SCOPED_TRACE(contact_mode_name(mode));
    expect_ball_gradient_matches_fd(mode, 0.0, 31);
    expect_ball_gradient_matches_fd(mode, 9.0, 32);
  }
}

// Across touchdown: the ball starts 3 mm above the ground (inside g_max = 2 cm) falling at
// 0.5 m/s and is pressed in by the end of a control step of four physics steps. The smooth
// model's gradient is smooth there and carries the contact from the first step (w ≈ 0.4 at the
// first midpoint): it matches central differences and differs from the contact-free gradient.
TEST(ContactGradient, SmoothBallAcrossTouchdownMatchesFiniteDifferences) {
  Model ball = ball_model();
  ball.decimation = 4;
  Problem P(ball, 1, ContactMode::Smooth, 33, 0.0), free(ball, 1, ContactMode::None, 33, 0.0);
  P.in.q = free.in.q = {0.3, -0.1, 0.1 + 0.003, 0.98, 0.1, -0.15, 0.05};
  P.in.v = free.in.v = {0.05, -0.03, -0.5, 0.2, -0.1, 0.3};
  free.w = P.w;
  expect_matches_fd(P, 1e-5);
  Batch out(P.model, 1);
  std::vector<int32_t> status(1);
  P.sim.step_pure(P.in.q.data(), P.in.v.data(), P.in.u.data(), out.q.data(), out.v.data(), status.data());
  EXPECT_GT(out.v[2], -0.25) << "the ground should have stopped most of the fall";
  const Batch gs = P.gradient(), gf = free.gradient();
  double diff = 0;
  for (size_t i = 0; i < gs.v.size(); ++i) diff += std::abs(gs.v[i] - gf.v[i]);
  EXPECT_GT(diff, 1e-2);
}

// A cylinder (r 0.05 m, half-length 0.1 m) lying on its side, pressed 0.1 mm onto the two
// bottom points of its rims (rim0, rim8), moving a little: its contacts are ordinary points,
// and every mode's adjoint matches central differences.
TEST(ContactGradient, CylinderOnItsRimsMatchesFiniteDifferences) {
  const Model cylinder = test::cylinder_model();
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Smooth, ContactMode::Soft}) {
    SCOPED_TRACE(contact_mode_name(mode));
    Problem P(cylinder, 1, mode, 35, 0.0);
    const double h = std::sqrt(0.5);  // axis along world x: local x points down, rim0 and rim8 lowest
    P.in.q = {0.1, 0.2, 0.05 - 1e-4, h, 0, h, 0};
    P.in.v = {0.03, -0.02, -0.01, 0.1, 0.02, -0.03};
    expect_matches_fd(P, 1e-5);
  }
}

TEST(ContactGradient, HardStickingCubeMatchesFiniteDifferences) {
  expect_contact_gradient_matches_fd(ContactMode::Hard, 0.0, 21, 1e-5);
}

TEST(ContactGradient, HardSlidingCubeMatchesFiniteDifferences) {
  expect_contact_gradient_matches_fd(ContactMode::Hard, 8.0, 22, 1e-5);
}

// Flat on four pressed corners, every corner sticking: 12 contact rows on 6 dofs make the
// implicit system singular (the impulses are not unique, the velocities are); the adjoint
// takes its least-squares branch.
TEST(ContactGradient, FlatCubeOnFourCornersMatchesFiniteDifferences) {
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Smooth}) {
    Problem P("cube.json", 1, mode, 27, 0.0);
    P.in.q = {0.1, -0.2, 0.05 - 1e-4, 1, 0, 0, 0};
    P.in.v = {0.01, -0.02, -0.01, 0, 0, 0.02};
    expect_matches_fd(P, 1e-5);
  }
}

TEST(ContactGradient, SmoothCubeMatchesFiniteDifferences) {
  expect_contact_gradient_matches_fd(ContactMode::Smooth, 0.0, 23, 1e-5);
  expect_contact_gradient_matches_fd(ContactMode::Smooth, 8.0, 24, 1e-5);
}

TEST(ContactGradient, SoftCubeMatchesFiniteDifferences) {
  expect_contact_gradient_matches_fd(ContactMode::Soft, 0.0, 25, 1e-5);
  expect_contact_gradient_matches_fd(ContactMode::Soft, 8.0, 26, 1e-5);
}

// ∂L/∂(friction, smooth_k, contact_kn) against finite differences on the ball, sliding.
TEST(ContactGradient, ContactParameterGradientsMatchFiniteDifferences) {
  struct Case {
    ContactMode mode;
    const char* param;
    double value, eps;
  };
  for (const Case& c : {Case{ContactMode::Hard, "friction", 0.4, 1e-6}, Case{ContactMode::Smooth, "friction", 0.4, 1e-6},
                        Case{ContactMode::Smooth, "smooth_k", 300, 1e-3}, Case{ContactMode::Soft, "contact_kn", 1e4, 1e-2},
                        Case{ContactMode::Soft, "friction", 0.4, 1e-6}}) {
    SCOPED_TRACE(std::string(contact_mode_name(c.mode)) + " " + c.param);
    Problem P(ball_model(), 1, c.mode, 61, 0.0, 9.0);
    P.in.q = {0.3, -0.1, 0.1 - 2e-4, 0.98, 0.1, -0.15, 0.05};
    P.in.v = {0.2, -0.1, -0.05, 0.3, 0.2, -0.1};
    double value = c.value;
    P.sim.set_param(c.param, &value, 1, 1);
    Vec g(1, 0.0);
    Simulator::Gradients params;
    void* out = g.data();
    if (std::string(c.param) == "friction") params.friction = out;
    if (std::string(c.param) == "smooth_k") params.smooth_k = out;
    if (std::string(c.param) == "contact_kn") params.contact_kn = out;
    P.gradient(&params);
    const double fd = central(
        [&] {
          P.sim.set_param(c.param, &value, 1, 1);
          return P.loss(P.in);
        },
        value, c.eps);
    EXPECT_NEAR(g[0], fd, 1e-5 * std::max(1e-3, std::abs(fd)));
    EXPECT_GT(std::abs(g[0]), 0);
  }
}

}  // namespace
}  // namespace moreau

namespace moreau {
namespace {

// ANYmal C standing on its four feet (settled under PD on hard contact), then one control step
// differentiated in each mode with a solve converged far below ε.
TEST(ContactGradient, StandingQuadrupedMatchesFiniteDifferences) {
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Smooth, ContactMode::Soft}) {
    SCOPED_TRACE(contact_mode_name(mode));
    Problem P("anymal_c.json", 1, mode, 41, 0.0);
    P.sim.step(100);  // settle from the default pose
    P.sim.get_state(P.in.q.data(), P.in.v.data(), 1);
    std::vector<int32_t> status(1);
    P.sim.get_status(status.data(), 1);
    ASSERT_EQ(status[0], 0);
    const int32_t* active = static_cast<const int32_t*>(P.sim.contact_active().data);
    for (int k = 0; k < P.model.ncon; ++k) ASSERT_EQ(active[k], 1) << "foot " << k << " not on the ground";
    // Hard contact settles with the feet exactly at the speculative switch (gap 0 at the
    // midpoint, where c_n += max(g, 0)/h has a kink): press the base 1 mm in to test away from it.
    P.in.q[2] -= 1e-3;
    expect_matches_fd(P, 1e-5);
  }
}

// Sliding: with μ = 0.4, gravity tilted by atan(8 / 9.81) > atan(μ) drags the standing robot
// sideways on all four feet.
TEST(ContactGradient, SlidingQuadrupedMatchesFiniteDifferences) {
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Smooth}) {
    SCOPED_TRACE(contact_mode_name(mode));
    Problem P("anymal_c.json", 1, mode, 47, 0.0, 8.0);
    const double mu = 0.4;
    P.sim.set_param("friction", &mu, 1, 1);
    P.sim.step(20);
    P.sim.get_state(P.in.q.data(), P.in.v.data(), 1);
    const int32_t* active = static_cast<const int32_t*>(P.sim.contact_active().data);
    for (int k = 0; k < P.model.ncon; ++k) ASSERT_EQ(active[k], 1) << "foot " << k << " not on the ground";
    EXPECT_GT(P.in.v[0], 0.1) << "the base should be sliding along +x";
    P.in.q[2] -= 1e-3;
    // the splayed front hips rest exactly at their abduction limits (g = 0, the same kink as a
    // foot's): press them 0.1 mm in
    for (int j = 0; j < P.model.nbody; ++j) {
      if (!P.model.jnt_limited[j]) continue;
      double& x = P.in.q[P.model.jnt_qposadr[j]];
      const double lo = P.model.jnt_range[2 * j], hi = P.model.jnt_range[2 * j + 1];
      if (std::abs(x - lo) < 1e-9) x = lo - 1e-4;
      if (std::abs(x - hi) < 1e-9) x = hi + 1e-4;
    }
    expect_matches_fd(P, 1e-5);
  }
}

// By default the CPU adjoint keeps every physics step of a control step (one recompute); with
// fewer tapes it recomputes segments from checkpoints, as the CUDA backend does with one. With
// 9 substeps (36 physics steps, more than kCheckpoints = 16) the segments are 3 steps long and
// are run backward in blocks of 1 or 2 (2 + 1) steps. The arithmetic is the same, so are the bits.
TEST(StepGradient, FewerTapesGiveTheSameGradientsBitForBit) {
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Soft, ContactMode::HardSmoothGrad})
    for (int substeps : {0, 9}) {
      SCOPED_TRACE(std::string(contact_mode_name(mode)) + ", substeps " + std::to_string(substeps));
      Problem P("anymal_c.json", 1, mode, 43, 0.0);
      P.sim.step(30);  // feet on the ground
      P.sim.get_state(P.in.q.data(), P.in.v.data(), 1);
      auto gradient = [&](int tapes) {
        SimulatorOptions o = Problem::options(1, mode);
        o.contact.substeps = substeps;
        o.adjoint_tapes = tapes;
        return P.gradient_with(o);
      };
      const int n_steps = P.model.decimation * Simulator(P.model, [&] {
                            SimulatorOptions o = Problem::options(1, mode);
                            o.contact.substeps = substeps;
                            return o;
                          }()).substeps();
      const Batch all = gradient(n_steps);  // every step's tape, per environment
      double largest = 0;
      for (double x : all.u) largest = std::max(largest, std::abs(x));
      EXPECT_GT(largest, 0);
      const Batch lanes = gradient(0);  // the automatic tapes: the recompute in SIMD lanes, equal to rounding
      EXPECT_TRUE(test::near_rel(lanes.u, all.u, 1e-10, 1e-10 * largest, "adj_action, lanes"));
      for (int tapes : {1, 2, 3}) {
        SCOPED_TRACE("adjoint_tapes " + std::to_string(tapes));
        const Batch g = gradient(tapes);
        EXPECT_EQ(std::memcmp(g.q.data(), all.q.data(), sizeof(double) * g.q.size()), 0);
        EXPECT_EQ(std::memcmp(g.v.data(), all.v.data(), sizeof(double) * g.v.size()), 0);
        EXPECT_EQ(std::memcmp(g.u.data(), all.u.data(), sizeof(double) * g.u.size()), 0);
      }
    }
}

// step_adjoint_rows: 45 seeds at once (more than one pass takes, so in two blocks) give
// bit for bit what 45 step_adjoint calls give, with per-environment gains and friction (11
// environments: the CPU runs rows in groups of 8, so the second group starts at 8).
TEST(StepGradient, AdjointRowsEqualSeparateAdjoints) {
  const int n = 11, rows = 45;
  Problem P("anymal_c.json", n, ContactMode::Hard, 44, 0.0);
  Vec gains(n * P.model.nu), friction(n);  // row-major (n x width)
  for (int e = 0; e < n; ++e) {
    for (int a = 0; a < P.model.nu; ++a) gains[e * P.model.nu + a] = 60 + 3 * e + a;
    friction[e] = 0.4 + 0.05 * e;
  }
  P.sim.set_param("kp", gains.data(), n, P.model.nu);
  P.sim.set_param("friction", friction.data(), n, 1);
  P.sim.step(30);
  P.sim.get_state(P.in.q.data(), P.in.v.data(), n);
  const size_t sq = n * P.model.nq, sv = n * P.model.nv, su = n * P.model.nu;
  std::mt19937 rng(45);
  std::normal_distribution<double> normal(0, 1);
  Vec aq(rows * sq), av(rows * sv), gq(rows * sq), gv(rows * sv), gu(rows * su), kp(rows * su);
  for (double& x : aq) x = normal(rng);
  for (double& x : av) x = normal(rng);
  Simulator::Gradients all;
  all.q = gq.data();
  all.v = gv.data();
  all.action = gu.data();
  all.kp = kp.data();
  std::vector<int32_t> status(n, -1);
  P.sim.step_adjoint_rows(P.in.q.data(), P.in.v.data(), P.in.u.data(), rows, aq.data(), av.data(), all,
                          status.data());
  for (int32_t st : status) EXPECT_EQ(st, 0);
  for (int r : {0, 39, 40, 44}) {
    SCOPED_TRACE("row " + std::to_string(r));
    Vec q1(sq), v1(sv), u1(su), kp1(su);
    Simulator::Gradients one;
    one.q = q1.data();
    one.v = v1.data();
    one.action = u1.data();
    one.kp = kp1.data();
    P.sim.step_adjoint(P.in.q.data(), P.in.v.data(), P.in.u.data(), aq.data() + r * sq, av.data() + r * sv, one,
                       status.data());
    EXPECT_EQ(std::memcmp(q1.data(), gq.data() + r * sq, sizeof(double) * sq), 0);
    EXPECT_EQ(std::memcmp(v1.data(), gv.data() + r * sv, sizeof(double) * sv), 0);
    EXPECT_EQ(std::memcmp(u1.data(), gu.data() + r * su, sizeof(double) * su), 0);
    EXPECT_EQ(std::memcmp(kp1.data(), kp.data() + r * su, sizeof(double) * su), 0);
    EXPECT_GT(std::abs(u1[0]), 0);
  }
}

// The state gradients of a float32 simulator agree with P's float64 ones to 1e-3 of the largest
// entry.
void expect_float_agrees(Problem& P, ContactMode mode) {
  const Batch gd = P.gradient();
  int32_t status = 0;
  const Batch gf = P.gradient32(mode, &status);
  EXPECT_EQ(status, 0);
  for (auto [f, d, what] : {std::tuple{&gf.q, &gd.q, "dL/dq float vs double"},
                            std::tuple{&gf.v, &gd.v, "dL/dv float vs double"}}) {
    double big = 0;
    for (double x : *d) big = std::max(big, std::abs(x));
    EXPECT_GT(big, 0) << what;
    EXPECT_NEAR_REL(*f, *d, 1e-3, 1e-3 * big, what);
  }
}

// Joint rows (kernels/contact.h): a double pendulum whose first hinge presses 0.1 mm into its
// lower limit at 1 rad/s and whose second hinge has friction loss 0.4 N m, sliding (2 rad/s) or
// sticking (at rest, the gravity torque on it 0.2 N m inside the bound).
Model jointed_double_pendulum() {
  Model m = load_model(asset("double_pendulum.json"));
  m.jnt_limited = {1, 1};
  m.jnt_range = {0.3, 2.0, -2.5, 2.5};
  m.dof_frictionloss = {0.0, 0.4};
  return m;
}

void set_jointed_state(Problem& P, double v2) {
  P.in.q = {0.3 - 1e-4, v2 != 0 ? 0.4 : -0.3};
  P.in.v = {-1.0, v2};
}

TEST(JointRowGradient, LimitAndFrictionLossMatchFiniteDifferences) {
  for (ContactMode mode : {ContactMode::None, ContactMode::Hard, ContactMode::Soft, ContactMode::Smooth}) {
    for (double v2 : {2.0, 0.0}) {
      SCOPED_TRACE(std::string(contact_mode_name(mode)) + (v2 != 0 ? ", sliding" : ", sticking"));
      Problem P(jointed_double_pendulum(), 1, mode, 81);
      set_jointed_state(P, v2);
      expect_matches_fd(P, 1e-5);
    }
  }
}

// The same states: float32 gradients agree with float64 to 1e-3 of the largest entry.
TEST(JointRowGradient, FloatAndDoubleGradientsAgree) {
  for (ContactMode mode : {ContactMode::None, ContactMode::Hard, ContactMode::Soft, ContactMode::Smooth,
                           ContactMode::HardSmoothGrad}) {
    for (double v2 : {2.0, 0.0}) {
      SCOPED_TRACE(std::string(contact_mode_name(mode)) + (v2 != 0 ? ", sliding" : ", sticking"));
      Problem P(jointed_double_pendulum(), 1, mode, 82);
      set_jointed_state(P, v2);
      expect_float_agrees(P, mode);
    }
  }
}

// ANYmal C in the air, its hip abduction servos commanded past the upper limit with the joints
// pressed 0.1 mm into it, friction loss 0.1 N m on every leg joint (the Menagerie's value).
TEST(JointRowGradient, AnymalHipsAtTheirLimitsMatchFiniteDifferences) {
  Model m = load_model(asset("anymal_c.json"));
  for (int d = 6; d < m.nv; ++d) m.dof_frictionloss[d] = 0.1;
  for (ContactMode mode : {ContactMode::None, ContactMode::Smooth}) {
    SCOPED_TRACE(contact_mode_name(mode));
    Problem P(m, 1, mode, 83);
    for (int a = 0; a < m.nu; ++a) {
      const int j = m.dof_body[m.actuator_dof[a]];
      if (m.jnt_name[j].find("HAA") == std::string::npos) continue;
      P.in.q[m.jnt_qposadr[j]] = m.jnt_range[2 * j + 1] + 1e-4;
      P.in.v[m.actuator_dof[a]] = 0.5;
      P.in.u[a] = m.jnt_range[2 * j + 1] + 0.5;
    }
    expect_matches_fd(P, 1e-5);
  }
}

// Spin friction (kernels/contact.h's spin rows): the ball of the contact tests pressed onto the
// ground and turning about z, its spin sliding (3 rad/s against μ_spin = 0.01 m) or sticking
// (5 mrad/s against 0.05 m), with and without tilted gravity dragging it sideways.
void set_spinning_ball(Problem& P, double mu_spin, double wz) {
  P.set_param("spin_friction", mu_spin);
  P.in.q = {0.3, -0.1, 0.1 - 2e-4, 0.98, 0.1, -0.15, 0.05};
  P.in.v = {0.02, -0.01, -0.05, 0.01, -0.02, wz};
}

TEST(SpinFrictionGradient, BallSpinningOrStuckMatchesFiniteDifferences) {
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Smooth, ContactMode::Soft}) {
    for (double gx : {0.0, 9.0}) {
      for (auto [mu_spin, wz] : {std::pair{0.01, 3.0}, std::pair{0.05, 0.005}}) {
        SCOPED_TRACE(std::string(contact_mode_name(mode)) + (wz > 1 ? ", spin sliding" : ", spin sticking") +
                     (gx != 0 ? ", dragged" : ""));
        Problem P(ball_model(), 1, mode, 91, 0.0, gx);
        set_spinning_ball(P, mu_spin, wz);
        expect_matches_fd(P, 1e-5);
      }
    }
  }
}

// ANYmal C standing (as above) and turning its base at 1 rad/s on its feet, the Menagerie's
// torsional friction 0.02 m: four spin rows, most at their bound.
TEST(SpinFrictionGradient, TurningQuadrupedMatchesFiniteDifferences) {
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Smooth}) {
    SCOPED_TRACE(contact_mode_name(mode));
    Problem P("anymal_c.json", 1, mode, 43, 0.0);
    P.set_param("spin_friction", 0.02);
    P.sim.step(100);
    P.sim.get_state(P.in.q.data(), P.in.v.data(), 1);
    P.in.q[2] -= 1e-3;
    P.in.v[5] = 1.0;
    expect_matches_fd(P, 1e-5);
  }
}

// Float32 gradients agree with float64 to 1e-3 of the largest entry on the spinning ball.
TEST(SpinFrictionGradient, FloatAndDoubleGradientsAgree) {
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Smooth, ContactMode::Soft, ContactMode::HardSmoothGrad}) {
    for (auto [mu_spin, wz] : {std::pair{0.01, 3.0}, std::pair{0.05, 0.005}}) {
      SCOPED_TRACE(std::string(contact_mode_name(mode)) + (wz > 1 ? ", spin sliding" : ", spin sticking"));
      Problem P(ball_model(), 1, mode, 92, 0.0);
      set_spinning_ball(P, mu_spin, wz);
      expect_float_agrees(P, mode);
    }
  }
}

// Rolling friction (the torque rows about the tangents): the same ball pressed onto the ground,
// rolling with its rolling rows at their bound (ω_y 3 rad/s against μ_roll = 0.01 m) or holding
// it (5 mrad/s against 0.05 m), spin friction 0.01 m beside them, with and without tilted
// gravity dragging it; and ANYmal C turning on its feet (as above) with the Menagerie's rolling
// friction 0.01 m beside its spin friction: twelve torque rows.
void set_rolling_ball(Problem& P, double mu_roll, double wy) {
  P.set_param("spin_friction", 0.01);
  P.set_param("rolling_friction", mu_roll);
  P.in.q = {0.3, -0.1, 0.1 - 2e-4, 0.98, 0.1, -0.15, 0.05};
  P.in.v = {0.1 * wy, -0.01, -0.05, 0.01, wy, 0.5};
}

TEST(RollingFrictionGradient, BallRollingOrHeldMatchesFiniteDifferences) {
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Smooth, ContactMode::Soft}) {
    for (double gx : {0.0, 9.0}) {
      for (auto [mu_roll, wy] : {std::pair{0.01, 3.0}, std::pair{0.05, 0.005}}) {
        SCOPED_TRACE(std::string(contact_mode_name(mode)) + (wy > 1 ? ", rolling" : ", held") +
                     (gx != 0 ? ", dragged" : ""));
        Problem P(ball_model(), 1, mode, 93, 0.0, gx, 6);
        set_rolling_ball(P, mu_roll, wy);
        expect_matches_fd(P, 1e-5);
      }
    }
  }
}

TEST(RollingFrictionGradient, TurningQuadrupedMatchesFiniteDifferences) {
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Smooth}) {
    SCOPED_TRACE(contact_mode_name(mode));
    Problem P(load_model(asset("anymal_c.json")), 1, mode, 44, 0.0, 0.0, 6);
    P.set_param("spin_friction", 0.02);
    P.set_param("rolling_friction", 0.01);
    P.sim.step(100);
    P.sim.get_state(P.in.q.data(), P.in.v.data(), 1);
    P.in.q[2] -= 1e-3;
    P.in.v[0] = 0.3;
    P.in.v[5] = 1.0;
    expect_matches_fd(P, 1e-5);
  }
}

// Float32 gradients agree with float64 to 1e-3 of the largest entry on the rolling ball.
TEST(RollingFrictionGradient, FloatAndDoubleGradientsAgree) {
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Smooth, ContactMode::Soft, ContactMode::HardSmoothGrad}) {
    for (auto [mu_roll, wy] : {std::pair{0.01, 3.0}, std::pair{0.05, 0.005}}) {
      SCOPED_TRACE(std::string(contact_mode_name(mode)) + (wy > 1 ? ", rolling" : ", held"));
      Problem P(ball_model(), 1, mode, 94, 0.0, 0.0, 6);
      set_rolling_ball(P, mu_roll, wy);
      expect_float_agrees(P, mode);
    }
  }
}

// Contact between two bodies of the robot (pairs, sphere against sphere; no gravity, away from
// the ground): two free balls pressed 0.2 mm into each other, closing and sliding across one
// another; and a free base with two arms whose tip spheres touch, the pair's two halves sharing
// the base's dofs, the tips sticking or sliding along each other.
// test::sphere_body with an off-centre mass and a full inertia tensor.
BodySpec pair_body(const std::string& name, const std::string& parent, JointType type, std::array<double, 3> pos,
                   double mass, std::array<double, 3> com, std::array<double, 3> sphere) {
  BodySpec b = test::sphere_body(name, parent, type, pos, mass, sphere);
  b.com = com;
  b.inertia = {0.02 * mass, 0.025 * mass, 0.015 * mass, 0.001 * mass, 0, -0.002 * mass};
  return b;
}

Model two_balls_model() {
  RobotSpec spec;
  spec.name = "two_balls";
  spec.gravity = {0, 0, 0};
  spec.bodies = {pair_body("a", "", JointType::Free, {0, 0, 0}, 1, {0.01, -0.02, 0.005}, {0, 0, 0}),
                 pair_body("b", "", JointType::Free, {0, 0, 0}, 2, {-0.01, 0.01, 0.02}, {0, 0, 0})};
  return with_self_collisions(compile(spec), {{"a", "b"}});
}

Model two_arms_model() {
  RobotSpec spec;
  spec.name = "two_arms";
  spec.gravity = {0, 0, 0};
  spec.bodies = {pair_body("base", "", JointType::Free, {0, 0, 0}, 5, {0.01, 0, 0.02}, {0, 0, 0.3}),
                 pair_body("left", "base", JointType::Revolute, {0, 0.15, 0}, 1, {0, 0, -0.2}, {0, 0, -0.4}),
                 pair_body("right", "base", JointType::Revolute, {0, -0.15, 0}, 1, {0, 0, -0.2}, {0, 0, -0.4})};
  return with_self_collisions(compile(spec), {{"left", "right"}});
}

// Ball b's centre 0.1 m − 0.2 mm from a's along a tilted direction, closing at 0.3 m/s, sliding
// across at 0.2 m/s and spinning.
void place_two_balls(Problem& P) {
  const double d = 0.1 - 2e-4, n[3] = {0.8, 0.36, 0.48};
  P.in.q = {0.1, -0.2, 1, 0.98, 0.1, -0.15, 0.05, 0.1 + d * n[0], -0.2 + d * n[1], 1 + d * n[2], 0.9, 0.3, 0.1, -0.3};
  double norm = 0;
  for (int k : {3, 10}) {
    norm = std::sqrt(P.in.q[k] * P.in.q[k] + P.in.q[k + 1] * P.in.q[k + 1] + P.in.q[k + 2] * P.in.q[k + 2] +
                     P.in.q[k + 3] * P.in.q[k + 3]);
    for (int a = 0; a < 4; ++a) P.in.q[k + a] /= norm;
  }
  P.in.v = {0.3 * n[0], 0.3 * n[1] + 0.1, 0.3 * n[2], 0.5, -0.2, 1.0, 0, -0.1, 0, 0.1, 0.3, -0.4};
}

// The tips 0.1 m − 0.2 mm apart at the same height, the left arm turning in at 0.5 rad/s, the
// right one at `right` rad/s (0.5: the tips move alike along z; 1.5: they slide along z).
void place_two_arms(Problem& P, double right) {
  const double th = std::asin((0.1 + 1e-4) / 0.4);
  P.in.q = {0.02, -0.01, 1, 0.995, 0.05, -0.05, 0.06, -th, th};
  double norm = 0;
  for (int a = 3; a < 7; ++a) norm += P.in.q[a] * P.in.q[a];
  for (int a = 3; a < 7; ++a) P.in.q[a] /= std::sqrt(norm);
  P.in.v = {0.05, -0.1, 0.02, 0.2, -0.1, 0.3, -0.5, right};
}

TEST(PairContactGradient, TwoBallsMatchFiniteDifferences) {
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Smooth, ContactMode::Soft})
    for (double mu : {0.3, 3.0}) {
      SCOPED_TRACE(std::string(contact_mode_name(mode)) + (mu < 1 ? ", sliding" : ", sticking"));
      Problem P(two_balls_model(), 1, mode, 93, 0.0);
      P.set_param("friction", mu);
      place_two_balls(P);
      expect_matches_fd(P, 1e-5);
    }
}

TEST(PairContactGradient, ArmsOnACommonBaseMatchFiniteDifferences) {
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Smooth, ContactMode::Soft})
    for (double right : {0.5, 1.5}) {
      SCOPED_TRACE(std::string(contact_mode_name(mode)) + (right > 1 ? ", sliding" : ", sticking"));
      Problem P(two_arms_model(), 1, mode, 94, 0.0);
      P.set_param("friction", 0.5);
      place_two_arms(P, right);
      expect_matches_fd(P, 1e-5);
    }
}

TEST(PairContactGradient, FloatAndDoubleGradientsAgree) {
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Smooth, ContactMode::Soft, ContactMode::HardSmoothGrad}) {
    SCOPED_TRACE(contact_mode_name(mode));
    Problem P(two_arms_model(), 1, mode, 95, 0.0);
    P.set_param("friction", 0.5);
    place_two_arms(P, 1.5);
    expect_float_agrees(P, mode);
  }
}

// Hard forward, smooth backward: the state is exactly the hard model's, the gradient the smooth
// model's; where no contact is near both equal the contact-free gradient.
// Terrain (a heightfield ground): the cube face down on a 25° slope sampled on a grid
// (z = −x tan θ, every facet the same plane), tipped by up to 0.02 rad so that it rests on one
// or two corners, pressed 0.1 mm in and moving a little, with μ 0.3 (sliding, tan θ = 0.47) or 1
// (sticking); the gap, the contact frame and the Jacobian come from the slope.
constexpr double kSlope = 25 * 3.14159265358979323846 / 180;

Model cube_on_slope_model() {
  Vec h(21 * 9);
  for (int j = 0; j < 9; ++j)
    for (int i = 0; i < 21; ++i) h[j * 21 + i] = -(-2.5 + 0.25 * i) * std::tan(kSlope);
  return with_heightfield(load_model(asset("cube.json")), h, 21, 9, 0.25, 0.25, -2.5, -1.0);
}

void place_cube_on_slope(Problem& P, double mu, unsigned seed) {
  const double s = std::sin(kSlope), c = std::cos(kSlope);
  P.set_param("friction", mu);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  // R_y(θ) ⊗ a small tilt (w, a, b, 0)
  const double a = 0.01 * u(rng), b = 0.01 * u(rng), w = std::sqrt(1 - a * a - b * b);
  const double cw = std::cos(kSlope / 2), sy = std::sin(kSlope / 2);
  P.in.q = {(0.05 - 1e-4) * s, 0.1, (0.05 - 1e-4) * c, cw * w - sy * b, cw * a, cw * b + sy * w, sy * a};
  for (int k = 0; k < 6; ++k) P.in.v[k] = 0.05 * u(rng);
}

TEST(TerrainGradient, CubeOnASlopeMatchesFiniteDifferences) {
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Smooth, ContactMode::Soft})
    for (double mu : {0.3, 1.0}) {
      SCOPED_TRACE(std::string(contact_mode_name(mode)) + (mu < 0.5 ? ", sliding" : ", sticking"));
      Problem P(cube_on_slope_model(), 1, mode, 91, 0.0);
      place_cube_on_slope(P, mu, 91);
      expect_matches_fd(P, 1e-5);
    }
}

TEST(TerrainGradient, FloatAndDoubleGradientsAgree) {
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Smooth, ContactMode::Soft, ContactMode::HardSmoothGrad}) {
    SCOPED_TRACE(contact_mode_name(mode));
    Problem P(cube_on_slope_model(), 1, mode, 92, 0.0);
    place_cube_on_slope(P, 0.3, 92);
    expect_float_agrees(P, mode);
  }
}

// A ridge: the roof z = −0.3 |x| sampled on a 0.1 m grid with its crest on the grid line x = 0,
// and the ball of the contact tests pressed 0.1 mm onto it, sliding a little (μ 0.5). With its
// centre 2 mm off the crest, on one facet, every coordinate's central difference stays on that
// facet and matches the adjoint, in hard, smooth and soft contact. With the centre on the crest
// (and no x velocity: the contact is looked up at the step's midpoint) the step has a kink in x:
// the adjoint is the derivative from the side of the larger grid index (x > 0, docs/terrain.md),
// which a forward difference gives and a backward one does not.
TEST(TerrainGradient, BallOnARidgeMatchesTheFacetUnderItsCentre) {
  Vec h(21 * 5);
  for (int j = 0; j < 5; ++j)
    for (int i = 0; i < 21; ++i) h[j * 21 + i] = -0.3 * std::abs(-1.0 + 0.1 * i);
  const Model ball = with_heightfield(ball_model(), h, 21, 5, 0.1, 0.1, -1.0, -0.2);
  const double nz = 1 / std::sqrt(1 + 0.09);
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Smooth, ContactMode::Soft}) {
    for (double x0 : {0.002, -0.002, 0.0}) {
      SCOPED_TRACE(std::string(contact_mode_name(mode)) + ", centre at x = " + std::to_string(x0));
      Problem P(ball, 1, mode, 95, 0.0);
      P.set_param("friction", 0.5);
      // pressed 0.1 mm along the normal of the facet under the centre
      P.in.q = {x0, 0.0, -0.3 * std::abs(x0) + (0.1 - 1e-4) / nz, 0.98, 0.1, -0.15, 0.05};
      const double n = std::sqrt(0.98 * 0.98 + 0.01 + 0.0225 + 0.0025);
      for (int k = 3; k < 7; ++k) P.in.q[k] /= n;
      P.in.v = {x0 != 0.0 ? 0.02 : 0.0, -0.01, -0.02, 0.05, -0.03, 0.04};  // (the contact is at q_M = q ⊕ h/2 v)
      if (x0 != 0.0) {
        expect_matches_fd(P, 1e-5);
        continue;
      }
      const Batch g = P.gradient();
      const double eps = 1e-7, base = P.loss(P.in);
      P.in.q[0] = eps;
      const double forward = (P.loss(P.in) - base) / eps;
      P.in.q[0] = -eps;
      const double backward = (base - P.loss(P.in)) / eps;
      P.in.q[0] = 0.0;
      EXPECT_NEAR(g.q[0], forward, 1e-4 * std::max(1.0, std::abs(forward))) << "the x > 0 facet's derivative";
      EXPECT_GT(std::abs(forward - backward), 1e-2 * std::max(1.0, std::abs(forward))) << "a kink at the crest";
    }
  }
}

// ANYmal C standing on rough ground (heights uniform in ±4 cm on a 0.2 m grid): each foot on a
// facet of its own slope; settled from the default pose, the base pressed 1 mm in.
TEST(TerrainGradient, QuadrupedOnRoughGroundMatchesFiniteDifferences) {
  std::mt19937 rng(93);
  std::uniform_real_distribution<double> uz(-0.04, 0.04);
  Vec h(21 * 21);
  for (double& z : h) z = uz(rng);
  const Model robot = with_heightfield(load_model(asset("anymal_c.json")), h, 21, 21, 0.2, 0.2, -2.0, -2.0);
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Smooth, ContactMode::Soft}) {
    SCOPED_TRACE(contact_mode_name(mode));
    Problem P(robot, 1, mode, 94, 0.0);
    P.sim.step(100);
    P.sim.get_state(P.in.q.data(), P.in.v.data(), 1);
    const int32_t* active = static_cast<const int32_t*>(P.sim.contact_active().data);
    for (int k = 0; k < P.model.ncon; ++k) ASSERT_EQ(active[k], 1) << "foot " << k << " not on the ground";
    P.in.q[2] -= 1e-3;
    expect_matches_fd(P, 1e-5);
  }
}

TEST(ContactGradient, HardSmoothGradForwardIsHardGradientIsSmooth) {
  Problem hard("cube.json", 1, ContactMode::Hard, 51, 0.0);
  Problem hsg("cube.json", 1, ContactMode::HardSmoothGrad, 51, 0.0);
  hard.in.q = hsg.in.q = {0.1, -0.2, 0.05 - 1e-4, 1, 0, 0, 0};
  hard.in.v = hsg.in.v = {0.1, 0.05, -0.2, 0.3, -0.2, 0.1};
  Batch a(hard.model, 1), b(hsg.model, 1);
  std::vector<int32_t> status(1);
  hard.sim.step_pure(hard.in.q.data(), hard.in.v.data(), hard.in.u.data(), a.q.data(), a.v.data(), status.data());
  hsg.sim.step_pure(hsg.in.q.data(), hsg.in.v.data(), hsg.in.u.data(), b.q.data(), b.v.data(), status.data());
  EXPECT_EQ(std::memcmp(a.q.data(), b.q.data(), sizeof(double) * a.q.size()), 0);
  EXPECT_EQ(std::memcmp(a.v.data(), b.v.data(), sizeof(double) * a.v.size()), 0);
  const Batch gh = hard.gradient(), gs = hsg.gradient();
  double diff = 0, norm = 0;
  for (size_t i = 0; i < gs.v.size(); ++i) {
    ASSERT_TRUE(std::isfinite(gs.v[i]));
    diff += std::abs(gs.v[i] - gh.v[i]);
    norm += std::abs(gs.v[i]);
  }
  EXPECT_GT(norm, 0);
  EXPECT_GT(diff, 1e-6) << "the smooth gradient should differ from the hard one in contact";
  // A seed on v_out only meets the hard trajectory through nothing but the contact stage's
  // inputs (q_M, v_free), which hard and smooth share: there it is the smooth mode's gradient
  // (one physics step; the smooth model's own velocity change, not hard's, in every term).
  Problem smooth("cube.json", 1, ContactMode::Smooth, 51, 0.0);
  smooth.in = hsg.in;
  for (double& x : smooth.w.q) x = 0;
  smooth.w.v = hsg.w.v;
  hsg.w.q = smooth.w.q;
  const Batch gv_smooth = smooth.gradient(), gv_hsg = hsg.gradient();
  for (size_t i = 0; i < gv_smooth.v.size(); ++i)
    EXPECT_NEAR(gv_hsg.v[i], gv_smooth.v[i], 1e-9 * (1 + std::abs(gv_smooth.v[i]))) << i;
  for (size_t i = 0; i < gv_smooth.q.size(); ++i)
    EXPECT_NEAR(gv_hsg.q[i], gv_smooth.q[i], 1e-9 * (1 + std::abs(gv_smooth.q[i]))) << i;
  // The smooth re-solve starts from the hard solve's active set when that holds it (speculative
  // reach 10 h ≥ g_max); without speculative contact it starts from scratch. Same numbers, also
  // tilted on one edge with the raised edge's corners between g_max and 10 h.
  const double th = 0.3;
  for (const Vec& q : {hsg.in.q, Vec{0.1, -0.2, 0.05 * (std::cos(th) + std::sin(th)) - 1e-4, std::cos(th / 2), 0,
                                     std::sin(th / 2), 0}}) {
    auto gradient = [&](bool speculative) {
      SimulatorOptions o = Problem::options(1, ContactMode::HardSmoothGrad);
      o.contact.speculative = speculative;
      return hsg.gradient_with(o, &q);
    };
    const Batch reused = gradient(true), fresh = gradient(false);
    EXPECT_GT(dot(reused.v, reused.v), 0);
    EXPECT_EQ(std::memcmp(reused.q.data(), fresh.q.data(), sizeof(double) * fresh.q.size()), 0);
    EXPECT_EQ(std::memcmp(reused.v.data(), fresh.v.data(), sizeof(double) * fresh.v.size()), 0);
  }
  // airborne: identical to the contact-free gradient
  Problem high("cube.json", 1, ContactMode::HardSmoothGrad, 52, 5.0), free("cube.json", 1, ContactMode::None, 52, 5.0);
  const Batch g1 = high.gradient(), g0 = free.gradient();
  EXPECT_EQ(std::memcmp(g1.v.data(), g0.v.data(), sizeof(double) * g0.v.size()), 0);
}

}  // namespace
}  // namespace moreau
