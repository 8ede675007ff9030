// Torsional (spin) and rolling friction at point contacts (kernels/contact.h's torque rows, the
// `spin_friction` parameter μ_spin [m]: |τ_n| ≤ μ_spin f_n, and `rolling_friction` μ_roll [m]:
// |τ_t1|, |τ_t2| ≤ μ_roll f_n) against the analytic answer and against MuJoCo 2.2.2's condim-4
// and condim-6 contacts on a ball spinning or rolling on the ground. Their adjoints are checked
// against finite differences in gradient_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "moreau/simulator.h"
#include "support/mujoco_ref.h"

namespace moreau {
namespace {

using test::MjRef;
using Vec = std::vector<double>;

constexpr double kMass = 2, kRadius = 0.1, kIzz = 0.4 * kMass * kRadius * kRadius;  // a solid ball

// A solid 2 kg ball of radius 0.1 m on a free joint, its contact point its lowest point.
Model ball() {
  RobotSpec spec;
  spec.name = "ball";
  BodySpec b;
  b.name = "ball";
  b.joint.type = JointType::Free;
  b.mass = kMass;
  b.inertia = {kIzz, kIzz, kIzz, 0, 0, 0};
  ContactSpec c;
  c.radius = kRadius;
  b.contacts.push_back(c);
  spec.bodies.push_back(b);
  return compile(spec);
}

std::unique_ptr<Simulator> ball_sim(ContactMode mode, double h, double mu_spin, double mu_roll = 0) {
  SimulatorOptions o;
  o.dtype = DType::Float64;
  o.n_threads = 1;
  o.timestep = h;
  o.decimation = 1;
  o.contact.mode = mode;
  o.contact.tolerance = 1e-12;
  o.contact.max_iterations = 2000;
  o.contact.condim = mu_roll > 0 ? 6 : 4;  // room for the rolling rows
  auto sim = std::make_unique<Simulator>(ball(), o);
  sim->set_param("spin_friction", &mu_spin, 1, 1);
  sim->set_param("rolling_friction", &mu_roll, 1, 1);
  const double kn = 1e5;  // soft: stiff enough that the ball sinks 0.2 mm
  sim->set_param("contact_kn", &kn, 1, 1);
  return sim;
}

// The ball's velocity (v, ω) at each of `steps` physics steps, resting on the ground and given
// v_start on top of the velocity it settled with.
std::vector<Vec> ball_run(ContactMode mode, double h, double mu_spin, double mu_roll, const Vec& v_start, int steps) {
  const auto owner = ball_sim(mode, h, mu_spin, mu_roll);
  Simulator& sim = *owner;
  Vec q = {0, 0, kRadius, 1, 0, 0, 0}, v = v_start, qn(7), vn(6);
  std::vector<Vec> out;
  // settle onto the ground without moving first, so that the normal impulse is the weight's
  Vec v0 = {0, 0, 0, 0, 0, 0};
  int32_t status = 0;
  for (int s = 0; s < 200; ++s) {
    sim.step_pure(q.data(), v0.data(), nullptr, qn.data(), vn.data(), &status);
    EXPECT_EQ(status, 0);
    q = qn;
    v0 = vn;
  }
  for (int k = 0; k < 3; ++k) v[k] += v0[k];
  for (int s = 0; s < steps; ++s) {
    sim.step_pure(q.data(), v.data(), nullptr, qn.data(), vn.data(), &status);
    EXPECT_EQ(status, 0) << "step " << s;
    q = qn;
    v = vn;
    out.push_back(v);
  }
  return out;
}

// Component k of each velocity of a run.
Vec component(const std::vector<Vec>& run, int k) {
  Vec out;
  for (const Vec& v : run) out.push_back(v[k]);
  return out;
}

// ω_z of the ball at each of `steps` physics steps, resting on the ground and spinning at ω0.
Vec spin_down(ContactMode mode, double h, double mu_spin, double w0, int steps) {
  return component(ball_run(mode, h, mu_spin, 0, {0, 0, 0, 0, 0, w0}, steps), 5);
}

// MuJoCo's contact on the same ball (`condim`, friction "1 μ_spin μ_roll", elliptic cone), as
// stiff as its solver allows (solref 2h, damping ratio 1, impedance 0.99), settled on the ground
// and then given velocity v_start: component k of its velocity at each of `steps` steps.
Vec mujoco_ball_run(double h, int condim, double mu_spin, double mu_roll, const Vec& v_start, int k, int steps) {
  char xml[1024];
  const char* contact = "condim=\"%d\" friction=\"1 %g %g\" solref=\"%g 1\" solimp=\"0.99 0.99 0.001\"";
  char params[256];
  std::snprintf(params, sizeof params, contact, condim, mu_spin, mu_roll, 2 * h);
  std::snprintf(xml, sizeof xml,
                "<mujoco><option timestep=\"%g\" cone=\"elliptic\"/><worldbody>"
                "<geom type=\"plane\" size=\"5 5 0.1\" %s/><body pos=\"0 0 %g\"><freejoint/>"
                "<geom type=\"sphere\" size=\"%g\" mass=\"%g\" %s/></body></worldbody></mujoco>",
                h, params, kRadius, kRadius, kMass, params);
  MjRef ref{std::string(xml)};
  EXPECT_NEAR(ref.m->body_inertia[3 * 1 + 2], kIzz, 1e-12);
  for (int s = 0; s < 500; ++s) mj_step(ref.m, ref.d);  // settle
  for (int a = 0; a < 6; ++a) ref.d->qvel[a] = v_start[a];
  Vec out;
  for (int s = 0; s < steps; ++s) {
    mj_step(ref.m, ref.d);
    out.push_back(ref.d->qvel[k]);
  }
  return out;
}

// The end of the step at which |x| first falls below `below`.
double stop_time(const Vec& x, double h, double below) {
  size_t s = 0;
  while (s < x.size() && std::abs(x[s]) >= below) ++s;
  return (s + 1) * h;
}

// MuJoCo's run of a slowing ball against moreau's (hard contact): the rate at which it slows
// between the ends of steps a and b, and the time at which it first slows below 1e-3 (rad/s or
// m/s), each within 10 % of moreau's.
void expect_slows_as_mujoco(const char* what, const Vec& ours, const Vec& theirs, int a, int b, double h) {
  auto rate = [&](const Vec& x) { return (x[a] - x[b]) / ((b - a) * h); };
  std::printf("[ %s ] rate over %d-%d ms: moreau (hard) %.3f, MuJoCo %.3f; stopped at %.3f s and %.3f s\n", what,
              a + 1, b + 1, rate(ours), rate(theirs), stop_time(ours, h, 1e-3), stop_time(theirs, h, 1e-3));
  EXPECT_NEAR(rate(theirs), rate(ours), 0.1 * rate(ours));
  EXPECT_NEAR(stop_time(theirs, h, 1e-3), stop_time(ours, h, 1e-3), 0.1 * stop_time(ours, h, 1e-3));
}

// The ball resting on the ground in hard contact, then for 100 steps a torque τ about axis k of
// v (3: x, 4: y, 5: z), entering as the angular velocity it adds each step, h τ / I: its angular
// velocity about k after them.
double torqued(double h, double mu_spin, double mu_roll, int k, double tau) {
  const auto owner = ball_sim(ContactMode::Hard, h, mu_spin, mu_roll);
  Simulator& sim = *owner;
  Vec q = {0, 0, kRadius, 1, 0, 0, 0}, v(6, 0.0), qn(7), vn(6);
  int32_t status = 0;
  for (int s = 0; s < 200; ++s) {
    if (s >= 100) v[k] += h * tau / kIzz;
    sim.step_pure(q.data(), v.data(), nullptr, qn.data(), vn.data(), &status);
    EXPECT_EQ(status, 0);
    q = qn;
    v = vn;
  }
  return v[k];
}

// Spinning at 4 rad/s on the ground with μ_spin = 0.02 m, the ball slows at the constant rate
// μ_spin m g / I_zz (49 rad/s²) and stops at t* = ω0 I_zz / (μ_spin m g), 0.082 s: on the line to
// round-off in hard and soft contact and below 1e-12 rad/s after it; in smooth contact within a step's
// deceleration of the line (the gate scales the normal and the spin impulse alike, and each step
// leaves (1 − w) of the velocity its impulses would stop), below 1e-6 rad/s 50 ms after t*.
// Without spin friction it spins on.
TEST(SpinFriction, BallSpinsDownAtTheAnalyticRate) {
  const double h = 1e-3, mu = 0.02, w0 = 4, g = 9.81, rate = mu * kMass * g / kIzz, t_stop = w0 / rate;
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Soft, ContactMode::Smooth}) {
    SCOPED_TRACE(contact_mode_name(mode));
    const Vec w = spin_down(mode, h, mu, w0, 300);
    double err = 0;
    for (size_t s = 0; s < w.size(); ++s) {
      const double t = (s + 1) * h;
      err = std::max(err, std::abs(w[s] - std::max(w0 - rate * t, 0.0)));
      // stopped for good (smooth: the gate leaves (1 − w) of the spin each step, a geometric tail)
      if (t > t_stop + 2 * h && mode != ContactMode::Smooth) EXPECT_LE(std::abs(w[s]), 1e-12) << "still turning at t = " << t;
      if (t > t_stop + 50 * h) EXPECT_LE(std::abs(w[s]), 1e-6) << "still turning at t = " << t;
    }
    std::printf("[ spin    ] %s: max |w - w_analytic| = %.3e rad/s (a step's deceleration: %.3e)\n",
                contact_mode_name(mode), err, rate * h);
    EXPECT_LE(err, 1.5 * rate * h);
    const Vec free = spin_down(mode, h, 0.0, w0, 50);
    EXPECT_NEAR(free.back(), w0, 1e-9) << "spin friction off";
  }
}

// MuJoCo's condim-4 contact (friction "1 0.02 0.0001") on the same ball. MuJoCo's soft constraint
// takes a transient first (a 0.4 rad/s drop in the first step, then about 10 ms of little
// friction while the impedance builds); after it, its spin-down rate and its stopping time agree
// with moreau's (the analytic ones) to 10 %: the rate over 20–60 ms (MuJoCo 2.2.2: 45 rad/s²
// against 49), the time at which ω_z first falls below 1 mrad/s.
TEST(SpinFriction, BallSpinDownMatchesMuJoCo) {
  const double h = 1e-3, mu = 0.02, w0 = 4;
  const int steps = 300;
  const Vec ours = spin_down(ContactMode::Hard, h, mu, w0, steps);
  const Vec theirs = mujoco_ball_run(h, 4, mu, 0.0001, {0, 0, 0, 0, 0, w0}, 5, steps);
  expect_slows_as_mujoco("spin, condim 4", ours, theirs, 19, 59, h);
}

// Below the bound the spin sticks: a torque about z of 60 % of μ_spin m g on the resting ball
// leaves it still (|ω_z| ≤ 1e-12) in hard contact; 140 % turns it at (τ − μ_spin m g)/I_zz.
TEST(SpinFriction, TorqueBelowTheBoundSticks) {
  const double h = 1e-3, mu = 0.02, g = 9.81, bound = mu * kMass * g;
  EXPECT_LE(std::abs(torqued(h, mu, 0, 5, 0.6 * bound)), 1e-12);
  const double wz = torqued(h, mu, 0, 5, 1.4 * bound);
  EXPECT_NEAR(wz, 100 * h * 0.4 * bound / kIzz, 1e-3 * wz);
}

// Rolling along x at v0 without slipping (ω_y = v0/r), the ball meets the rolling bound τ_y =
// −μ_roll m g. About the contact point (I + m r²) dω/dt = −μ_roll m g: it slows at the constant
// rate a = μ_roll g r/(I/m + r²) = μ_roll g/(1.4 r) (0.70 m/s² for μ_roll = 0.01 m) and stops at
// t* = v0/a, still rolling without slipping (v_x = r ω_y): on the line to round-off in hard and
// soft contact and below 1e-12 m/s after it; in smooth contact within a step's deceleration of the
// line (slipping by up to two: 1.5 mm/s, the gate's (1 − w) of each step's change) and below
// 1e-6 m/s 50 ms after t*. Without rolling friction it rolls on.
TEST(RollingFriction, BallRollsToRestAtTheAnalyticRate) {
  const double h = 1e-3, mu = 0.01, v0 = 0.5, g = 9.81, rate = mu * g / (1.4 * kRadius), t_stop = v0 / rate;
  const Vec start = {v0, 0, 0, 0, v0 / kRadius, 0};
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Soft, ContactMode::Smooth}) {
    SCOPED_TRACE(contact_mode_name(mode));
    const std::vector<Vec> run = ball_run(mode, h, 0, mu, start, 800);
    double err = 0, slip = 0;
    for (size_t s = 0; s < run.size(); ++s) {
      const double t = (s + 1) * h, vx = run[s][0];
      err = std::max(err, std::abs(vx - std::max(v0 - rate * t, 0.0)));
      slip = std::max(slip, std::abs(vx - kRadius * run[s][4]));
      if (t > t_stop + 2 * h && mode != ContactMode::Smooth) EXPECT_LE(std::abs(vx), 1e-12) << "still rolling at t = " << t;
      if (t > t_stop + 50 * h) EXPECT_LE(std::abs(vx), 1e-6) << "still rolling at t = " << t;
    }
    std::printf("[ rolling ] %s: max |v - v_analytic| = %.3e m/s (a step's deceleration: %.3e), max slip %.3e m/s\n",
                contact_mode_name(mode), err, rate * h, slip);
    EXPECT_LE(err, 1.5 * rate * h);
    EXPECT_LE(slip, (mode == ContactMode::Smooth ? 3 : 1.5) * rate * h);
    const std::vector<Vec> free = ball_run(mode, h, 0, 0, start, 50);
    EXPECT_NEAR(free.back()[0], v0, 1e-9) << "rolling friction off";
  }
}

// MuJoCo's condim-6 contact (friction "1 0.0001 0.01") on the same ball rolling at 0.5 m/s: its
// rate over 100–500 ms and its stopping time (|v_x| < 1 mm/s) agree with moreau's (the analytic
// ones) to 10 % (MuJoCo 2.2.2: 0.709 m/s² against 0.701).
TEST(RollingFriction, BallRollDownMatchesMuJoCo) {
  const double h = 1e-3, mu = 0.01, v0 = 0.5;
  const int steps = 900;
  const Vec start = {v0, 0, 0, 0, v0 / kRadius, 0};
  const Vec ours = component(ball_run(ContactMode::Hard, h, 0, mu, start, steps), 0);
  const Vec theirs = mujoco_ball_run(h, 6, 0.0001, mu, start, 0, steps);
  expect_slows_as_mujoco("rolling, condim 6", ours, theirs, 99, 499, h);
}

// Below the bound the ball stays: a torque about x or y of 60 % of μ_roll m g on the resting ball
// leaves it still (|ω| ≤ 1e-12) in hard contact; 140 % rolls it at (τ − μ_roll m g)/(I + m r²)
// about its contact point. Each tangent's row bounds its own component.
TEST(RollingFriction, TorqueBelowTheBoundSticks) {
  const double h = 1e-3, mu = 0.01, g = 9.81, bound = mu * kMass * g;
  for (int k : {3, 4}) {
    SCOPED_TRACE(k == 3 ? "about x" : "about y");
    EXPECT_LE(std::abs(torqued(h, 0, mu, k, 0.6 * bound)), 1e-12);
    const double w = torqued(h, 0, mu, k, 1.4 * bound);
    EXPECT_NEAR(w, 100 * h * 0.4 * bound / (kIzz + kMass * kRadius * kRadius), 1e-3 * w);
  }
}

}  // namespace
}  // namespace moreau
