// Joint position limits and friction loss (the joint rows of kernels/contact.h's solve) against
// MuJoCo 2.2.2 on a pendulum and on ANYmal C's hip joints, and against their analytic rest
// states. Their adjoints are checked against finite differences in gradient_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "moreau/simulator.h"
#include "support/mujoco_ref.h"
#include "support/test_util.h"

namespace moreau {
namespace {

using test::MjRef;
using Vec = std::vector<double>;

// A 1 kg point-like bob 0.5 m below a hinge about y (I = 0.01 + 0.25 kg m² about the hinge).
Model pendulum(bool limited, double frictionloss) {
  RobotSpec spec;
  spec.name = "pendulum";
  BodySpec b;
  b.name = "link";
  b.pos = {0, 0, 1};
  b.joint.name = "hinge";
  b.joint.type = JointType::Revolute;
  b.joint.axis = {0, 1, 0};
  b.joint.limited = limited;
  b.joint.range = {-0.6, 0.6};
  b.joint.frictionloss = frictionloss;
  b.mass = 1;
  b.com = {0, 0, -0.5};
  b.inertia = {0.01, 0.01, 0.01, 0, 0, 0};
  spec.bodies.push_back(b);
  return compile(spec);
}

// MuJoCo's constraints are soft: its limit and friction-loss rows are made as stiff as its
// solver allows (time constant 2 h, impedance 0.99), the limits overdamped (damping ratio 20:
// at ratio 1 a limit gives back part of the impact's energy, a rebound that moreau's inelastic
// impulse does not have) so that it approaches the hard constraint.
MjRef mujoco_of(const Model& model, double h) {
  MjRef ref(export_mjcf(model));
  ref.m->opt.timestep = h;
  for (int j = 0; j < ref.m->njnt; ++j) {
    ref.m->jnt_solref[mjNREF * j] = 2 * h;
    ref.m->jnt_solref[mjNREF * j + 1] = 20;
    ref.m->jnt_solimp[mjNIMP * j] = ref.m->jnt_solimp[mjNIMP * j + 1] = 0.99;
  }
  for (int d = 0; d < ref.m->nv; ++d) {
    ref.m->dof_solref[mjNREF * d] = 2 * h;
    ref.m->dof_solimp[mjNIMP * d] = ref.m->dof_solimp[mjNIMP * d + 1] = 0.99;
  }
  return ref;
}

SimulatorOptions one_env(ContactMode mode, double h) {
  SimulatorOptions o;
  o.dtype = DType::Float64;
  o.n_threads = 1;
  o.timestep = h;
  o.decimation = 1;
  o.contact.mode = mode;
  return o;
}

// `steps` physics steps of sim (no actuators) in place on (q, v), every environment's status 0.
void run_steps(Simulator& sim, Vec& q, Vec& v, int steps) {
  Vec qn(q.size()), vn(v.size());
  std::vector<int32_t> status(sim.n_env());
  for (int s = 0; s < steps; ++s) {
    sim.step_pure(q.data(), v.data(), nullptr, qn.data(), vn.data(), status.data());
    for (int32_t st : status) ASSERT_EQ(st, 0) << "step " << s;
    q.swap(qn);
    v.swap(vn);
  }
}

// n physics steps of moreau and of MuJoCo from (q0, v0) with the same controls; q of both at
// every step, (steps x nq) each.
struct Trajectories {
  Vec ours, theirs;
};
Trajectories run_both(const Model& model, ContactMode mode, double h, int steps, Vec q, Vec v, const Vec& ctrl) {
  Simulator sim(model, one_env(mode, h));
  MjRef ref = mujoco_of(model, h);
  EXPECT_EQ(ref.m->nq, model.nq);
  std::copy(q.begin(), q.end(), ref.d->qpos);
  std::copy(v.begin(), v.end(), ref.d->qvel);
  std::copy(ctrl.begin(), ctrl.end(), ref.d->ctrl);
  Trajectories t;
  Vec qn(model.nq), vn(model.nv);
  for (int s = 0; s < steps; ++s) {
    int32_t status = -1;
    sim.step_pure(q.data(), v.data(), ctrl.data(), qn.data(), vn.data(), &status);
    EXPECT_EQ(status, 0) << "step " << s;
    q = qn;
    v = vn;
    mj_step(ref.m, ref.d);
    t.ours.insert(t.ours.end(), q.begin(), q.end());
    t.theirs.insert(t.theirs.end(), ref.d->qpos, ref.d->qpos + model.nq);
  }
  return t;
}

// The largest |q_k − q_MuJoCo,k| over the first `steps` steps (all when 0).
double max_error(const Trajectories& t, int nq, int k, size_t steps = 0) {
  double e = 0;
  for (size_t s = 0; s < (steps ? steps : t.ours.size() / nq); ++s)
    e = std::max(e, std::abs(t.ours[s * nq + k] - t.theirs[s * nq + k]));
  return e;
}

// Swung at 5 rad/s into its upper limit (0.6 rad), the pendulum stops there without
// penetrating (inelastic: no bounce), swings back and reaches the lower limit at rest, as
// MuJoCo's: within 0.005 rad over the impact and the swing back (0.8 s). At the lower limit, a
// touch at zero speed, MuJoCo's soft limit (1e-4 rad penetrated) pushes the bob back out and
// moreau's does not: the two drift apart by 0.044 rad over the next 0.7 s (printed, bounded by
// 0.06). Contact off uses the hard model's rows.
TEST(JointLimit, PendulumSwingMatchesMuJoCo) {
  const Model model = pendulum(true, 0);
  const double h = 5e-4;
  for (ContactMode mode : {ContactMode::Hard, ContactMode::None}) {
    SCOPED_TRACE(contact_mode_name(mode));
    const Trajectories t = run_both(model, mode, h, 3000, {0.0}, {5.0}, {});
    double highest = -1, lowest = 1;
    for (double q : t.ours) {
      highest = std::max(highest, q);
      lowest = std::min(lowest, q);
    }
    const double err = max_error(t, 1, 0, 1600), err_all = max_error(t, 1, 0);
    std::printf("[ limit   ] %s: max |q - q_MuJoCo| = %.2e rad over 0.8 s, %.2e over 1.5 s; range reached "
                "[%.6f, %.6f]\n", contact_mode_name(mode), err, err_all, lowest, highest);
    EXPECT_LE(highest, 0.6 + 1e-9) << "passed the upper limit";
    EXPECT_GE(highest, 0.6 - 1e-6) << "never reached the upper limit";
    EXPECT_GE(lowest, -0.6 - 1e-9) << "passed the lower limit";
    EXPECT_LE(err, 0.005);
    EXPECT_LE(err_all, 0.06);
  }
}

// Without the limit the same swing goes over the top: the test above can fail.
TEST(JointLimit, UnlimitedPendulumPassesTheRange) {
  const Model model = pendulum(false, 0);
  const Trajectories t = run_both(model, ContactMode::Hard, 5e-4, 1000, {0.0}, {5.0}, {});
  EXPECT_GT(*std::max_element(t.ours.begin(), t.ours.end()), 1.0);
  EXPECT_LE(max_error(t, 1, 0), 0.02);
}

// Held against its lower limit by gravity (horizontal bob: torque 4.9 N m), the pendulum stays at
// the limit: hard within 1e-9 rad; soft sinks in by τ / k_n (k_n read in N m/rad); smooth sinks
// in slowly, as its feet do (the gate w(g) = σ(−k g) passes only part of the impulse until
// g ≪ −1/k: 0.008 rad after 2 s at k = 300).
TEST(JointLimit, GravityHoldsThePendulumAtItsLimitInEveryMode) {
  Model model = pendulum(true, 0);
  model.jnt_range = {1.5707963267948966, 3.0};  // lower limit at the horizontal
  const double tau = 9.81 * 0.5;
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Soft, ContactMode::Smooth}) {
    SCOPED_TRACE(contact_mode_name(mode));
    Simulator sim(model, one_env(mode, 1e-3));
    const double kn = 2e4;
    sim.set_param("contact_kn", &kn, 1, 1);
    Vec q = {1.5707963267948966}, v = {0.0};
    run_steps(sim, q, v, 2000);
    const double sink = model.jnt_range[0] - q[0];
    std::printf("[ limit   ] %s: at rest %.3e rad past the limit, v = %.1e\n", contact_mode_name(mode), sink, v[0]);
    EXPECT_LE(std::abs(v[0]), mode == ContactMode::Smooth ? 1e-2 : 1e-6);
    if (mode == ContactMode::Hard) EXPECT_NEAR(sink, 0, 1e-9);
    if (mode == ContactMode::Soft) EXPECT_NEAR(sink, tau / kn, 0.02 * tau / kn);
    if (mode == ContactMode::Smooth) EXPECT_TRUE(sink > 0 && sink < 0.03) << sink;
  }
}

// Friction loss F = 0.5 N m: released at 0.3 rad (gravity torque 1.45 N m > F) the pendulum swings
// with decaying amplitude as MuJoCo's does (within 0.02 rad over 2 s) and comes to rest where
// |m g l sin q| ≤ F; released at 0.05 rad (0.245 N m < F) it does not move at all.
TEST(FrictionLoss, PendulumSwingDecaysAsInMuJoCoAndStopsInsideTheBound) {
  const double F = 0.5, mgl = 9.81 * 0.5, h = 5e-4;
  const Model model = pendulum(false, F);
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Soft, ContactMode::Smooth}) {
    SCOPED_TRACE(contact_mode_name(mode));
    const Trajectories t = run_both(model, mode, h, 4000, {0.3}, {0.0}, {});
    const double err = max_error(t, 1, 0), rest = t.ours.back();
    std::printf("[ friction] %s: max |q - q_MuJoCo| = %.2e rad over 2 s; rest at %.4f rad (MuJoCo %.4f)\n",
                contact_mode_name(mode), err, rest, t.theirs.back());
    EXPECT_LE(err, 0.02);
    EXPECT_LE(mgl * std::abs(std::sin(rest)), F * (1 + 1e-6));
    EXPECT_NEAR(t.ours[t.ours.size() - 1], t.ours[t.ours.size() - 201], 1e-9) << "still moving at the end";
  }
  Simulator sim(model, one_env(ContactMode::Hard, h));
  Vec q = {0.05}, v = {0.0};
  run_steps(sim, q, v, 2000);
  EXPECT_NEAR(q[0], 0.05, 1e-12);
  EXPECT_NEAR(v[0], 0, 1e-12);
}

// Per environment: friction-loss scale 0 swings as without friction loss (bit for bit), scale 3
// holds the pendulum where scale 1 lets it fall; motor strength s scales a motor's push by s.
TEST(FrictionLoss, ScaleAndMotorStrengthArePerEnvironment) {
  const double h = 5e-4;
  Model model = pendulum(false, 0.5);
  SimulatorOptions o = one_env(ContactMode::Hard, h);
  o.n_env = 3;
  Simulator sim(model, o);
  const double scale[3] = {0, 1, 3};
  sim.set_param("frictionloss_scale", scale, 3, 1);
  Simulator plain(pendulum(false, 0), one_env(ContactMode::Hard, h));
  // released at 0.3 rad: gravity's 1.45 N m is past the bound 0.5 N m, inside 1.5 N m
  Vec q = {0.3, 0.3, 0.3}, v(3, 0.0), q1 = {0.3}, v1 = {0.0};
  run_steps(sim, q, v, 400);
  run_steps(plain, q1, v1, 400);
  EXPECT_EQ(q[0], q1[0]);
  EXPECT_LT(q[1], 0.25);
  EXPECT_EQ(q[2], 0.3);

  RobotSpec spec;
  spec.name = "slider";
  BodySpec b;
  b.name = "cart";
  b.joint.name = "x";
  b.joint.type = JointType::Prismatic;
  b.joint.axis = {1, 0, 0};
  b.mass = 2;
  b.inertia = {0.01, 0.01, 0.01, 0, 0, 0};
  spec.bodies.push_back(b);
  ActuatorSpec a;
  a.name = "push";
  a.joint = "x";
  a.type = ActuatorType::Motor;
  spec.actuators.push_back(a);
  Simulator cart(compile(spec), o);
  const double strength[3] = {1, 0.5, 0};
  cart.set_param("motor_strength", strength, 3, 1);
  const Vec x(3, 0.0), u(3, 4.0);
  Vec xn(3), un(3);
  std::vector<int32_t> status(3);
  cart.step_pure(x.data(), x.data(), u.data(), xn.data(), un.data(), status.data());
  EXPECT_NEAR(un[0], 4.0 / 2 * h, 1e-15);  // v = F h / m
  EXPECT_NEAR(un[1], 0.5 * un[0], 1e-15);
  EXPECT_EQ(un[2], 0);
}

// ANYmal C in the air (gravity off, contact off) with its hip abduction servos commanded
// 1 rad past their limits: every HAA joint stops at its limit and stays within 1e-6 rad of its
// range; the joints follow MuJoCo's, hips within 0.02 rad, over 1 s.
TEST(JointLimit, AnymalHipsStopAtTheirLimitsAsInMuJoCo) {
  Model model = load_model(test::asset("anymal_c.json"));
  model.gravity[0] = model.gravity[1] = model.gravity[2] = 0;
  const double h = 1e-3;
  Vec q = model.qpos0, v(model.nv, 0.0), ctrl(model.nu);
  std::vector<int> hips;
  for (int a = 0; a < model.nu; ++a) {
    const int j = model.dof_body[model.actuator_dof[a]];
    ctrl[a] = model.qpos0[model.actuator_qposadr[a]];
    if (model.jnt_name[j].find("HAA") != std::string::npos) {
      ASSERT_TRUE(model.jnt_limited[j]);
      ctrl[a] = hips.size() % 2 ? model.jnt_range[2 * j] - 1 : model.jnt_range[2 * j + 1] + 1;
      hips.push_back(j);
    }
  }
  ASSERT_EQ(hips.size(), 4u);
  const Trajectories t = run_both(model, ContactMode::None, h, 1000, q, v, ctrl);
  for (int j : hips) {
    const int k = model.jnt_qposadr[j];
    const double lo = model.jnt_range[2 * j], hi = model.jnt_range[2 * j + 1];
    bool reached = false;
    for (size_t s = 0; s < t.ours.size() / model.nq; ++s) {
      const double x = t.ours[s * model.nq + k];
      EXPECT_GE(x, lo - 1e-6) << model.jnt_name[j];
      EXPECT_LE(x, hi + 1e-6) << model.jnt_name[j];
      reached = reached || std::min(x - lo, hi - x) < 1e-6;
    }
    const double err = max_error(t, model.nq, k);
    std::printf("[ limit   ] %s: max |q - q_MuJoCo| = %.2e rad over 1 s\n", model.jnt_name[j].c_str(), err);
    EXPECT_TRUE(reached) << model.jnt_name[j] << " never reached its limit";
    EXPECT_LE(err, 0.02) << model.jnt_name[j];
  }
}

// ANYmal C standing under hard contact (float64, 5 ms steps) with its hip abduction servos
// commanded 1.5 rad past their limits, each of the 16 sign patterns: the hips swing onto their
// stops at more than 20 rad/s (0.1 rad in a step, past the 0.05 rad that a threshold of 10 rad/s
// reaches) and every limited joint stays within 1e-6 rad of its range after each control step
// whose solves converged. Speculative limit rows entered only within the threshold let the hips
// pass by up to 0.049 rad and stay there. The solves of these states also show Gauss–Seidel's
// sweeps alternating between a foot sticking and the same foot lifting (environment 4, third
// control step: a residual of 0.66 m/s for 20,000 sweeps) when a contact that separates without
// its own impulse could take a sticking step: 51 of the 400 control steps ended unconverged then,
// 5 with pgs_solve's rule (a contact without impulse keeps none while that solves its local
// problem), none with the subspace step's active set as well; at most 2 is asserted. A solve that
// stops on its cap may leave a hip past its stop, by 1e-3 rad at most here.
TEST(JointLimit, FastHipsStopAtTheirLimitsUnderHardContact) {
  const Model model = load_model(test::asset("anymal_c.json"));
  const int n = 16;
  SimulatorOptions o;
  o.n_env = n;
  o.dtype = DType::Float64;
  o.n_threads = 1;
  o.contact.mode = ContactMode::Hard;
  Simulator sim(model, o);
  Vec action(n * model.nu);
  std::vector<int> hips;
  for (int a = 0; a < model.nu; ++a) {
    const int j = model.dof_body[model.actuator_dof[a]];
    if (model.jnt_name[j].find("HAA") != std::string::npos) hips.push_back(a);
    for (int e = 0; e < n; ++e) action[e * model.nu + a] = model.qpos0[model.actuator_qposadr[a]];
  }
  ASSERT_EQ(hips.size(), 4u);
  sim.set_action(action.data(), n);
  sim.step(50);
  for (int e = 0; e < n; ++e)
    for (int k = 0; k < 4; ++k) action[e * model.nu + hips[k]] += (e >> k & 1) ? 1.5 : -1.5;
  sim.set_action(action.data(), n);
  Vec q(n * model.nq), v(n * model.nv);
  std::vector<int32_t> status(n);
  double fastest = 0, worst = 0, worst_converged = 0;
  int unconverged = 0;
  for (int s = 0; s < 25; ++s) {
    sim.step(1);
    sim.get_state(q.data(), v.data(), n);
    sim.get_status(status.data(), n);
    for (int e = 0; e < n; ++e) {
      const bool converged = !(status[e] & kStatusSolverNotConverged);
      unconverged += !converged;
      for (int j = 0; j < model.nbody; ++j) {
        if (!model.jnt_limited[j]) continue;
        const double x = q[e * model.nq + model.jnt_qposadr[j]];
        const double past = std::max(model.jnt_range[2 * j] - x, x - model.jnt_range[2 * j + 1]);
        worst = std::max(worst, past);
        if (converged) worst_converged = std::max(worst_converged, past);
        if (model.jnt_name[j].find("HAA") != std::string::npos)
          fastest = std::max(fastest, std::abs(v[e * model.nv + model.jnt_dofadr[j]]));
      }
    }
  }
  std::printf("[ limit   ] fastest hip %.1f rad/s; deepest past a limit %.2e rad (%.2e where the solves "
              "converged; %d of %d control steps did not)\n",
              fastest, worst, worst_converged, unconverged, 25 * n);
  EXPECT_GE(fastest, 20.0);
  EXPECT_LE(worst_converged, 1e-6);
  EXPECT_LE(worst, 1e-3);
  EXPECT_LE(unconverged, 2);
}

}  // namespace
}  // namespace moreau
