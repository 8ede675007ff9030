// Torsional (spin) friction at point contacts (kernels/contact.h's spin rows, the
// `spin_friction` parameter μ_spin [m]: |τ_n| ≤ μ_spin f_n) against the analytic answer and
// against MuJoCo 2.2.2's condim-4 contact on a ball spinning on the ground. Their adjoints are
// checked against finite differences in gradient_test.cc.
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

std::unique_ptr<Simulator> ball_sim(ContactMode mode, double h, double mu_spin) {
  SimulatorOptions o;
  o.dtype = DType::Float64;
  o.n_threads = 1;
  o.timestep = h;
  o.decimation = 1;
  o.contact.mode = mode;
  o.contact.tolerance = 1e-12;
  o.contact.max_iterations = 2000;
  auto sim = std::make_unique<Simulator>(ball(), o);
  sim->set_param("spin_friction", &mu_spin, 1, 1);
  const double kn = 1e5;  // soft: stiff enough that the ball sinks 0.2 mm
  sim->set_param("contact_kn", &kn, 1, 1);
  return sim;
}

// ω_z of the ball at each of `steps` physics steps, resting on the ground and spinning at ω0.
Vec spin_down(ContactMode mode, double h, double mu_spin, double w0, int steps) {
  const auto owner = ball_sim(mode, h, mu_spin);
  Simulator& sim = *owner;
  Vec q = {0, 0, kRadius, 1, 0, 0, 0}, v = {0, 0, 0, 0, 0, w0}, qn(7), vn(6), out;
  // settle onto the ground without spinning first, so that the normal impulse is the weight's
  Vec v0 = {0, 0, 0, 0, 0, 0};
  int32_t status = 0;
  for (int s = 0; s < 200; ++s) {
    sim.step_pure(q.data(), v0.data(), nullptr, qn.data(), vn.data(), &status);
    EXPECT_EQ(status, 0);
    q = qn;
    v0 = vn;
  }
  v[0] = v0[0];
  v[1] = v0[1];
  v[2] = v0[2];
  for (int s = 0; s < steps; ++s) {
    sim.step_pure(q.data(), v.data(), nullptr, qn.data(), vn.data(), &status);
    EXPECT_EQ(status, 0) << "step " << s;
    q = qn;
    v = vn;
    out.push_back(v[5]);
  }
  return out;
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

// MuJoCo's condim-4 contact (friction "1 0.02 0.0001", elliptic cone) on the same ball, as stiff
// as its solver allows (solref 2h, damping ratio 1, impedance 0.99). MuJoCo's soft constraint
// takes a transient first (a 0.4 rad/s drop in the first step, then about 10 ms of little
// friction while the impedance builds); after it, its spin-down rate and its stopping time agree
// with moreau's (the analytic ones) to 10 %: the rate over 20–60 ms (MuJoCo 2.2.2: 45 rad/s²
// against 49), the time at which ω_z first falls below 1 mrad/s.
TEST(SpinFriction, BallSpinDownMatchesMuJoCo) {
  const double h = 1e-3, mu = 0.02, w0 = 4;
  const int steps = 300;
  char xml[1024];
  std::snprintf(xml, sizeof xml,
                "<mujoco><option timestep=\"%g\" cone=\"elliptic\"/><worldbody>"
                "<geom type=\"plane\" size=\"5 5 0.1\" condim=\"4\" friction=\"1 %g 0.0001\" "
                "solref=\"%g 1\" solimp=\"0.99 0.99 0.001\"/>"
                "<body pos=\"0 0 %g\"><freejoint/><geom type=\"sphere\" size=\"%g\" mass=\"%g\" condim=\"4\" "
                "friction=\"1 %g 0.0001\" solref=\"%g 1\" solimp=\"0.99 0.99 0.001\"/></body></worldbody></mujoco>",
                h, mu, 2 * h, kRadius, kRadius, kMass, mu, 2 * h);
  MjRef ref{std::string(xml)};
  EXPECT_NEAR(ref.m->body_inertia[3 * 1 + 2], kIzz, 1e-12);
  for (int s = 0; s < 500; ++s) mj_step(ref.m, ref.d);  // settle
  for (int k = 0; k < 6; ++k) ref.d->qvel[k] = 0;
  ref.d->qvel[5] = w0;
  const Vec ours = spin_down(ContactMode::Hard, h, mu, w0, steps);
  Vec theirs;
  for (int s = 0; s < steps; ++s) {
    mj_step(ref.m, ref.d);
    theirs.push_back(ref.d->qvel[5]);
  }
  auto rate = [&](const Vec& w) { return (w[19] - w[59]) / (40 * h); };
  auto stop = [&](const Vec& w) {
    int s = 0;
    while (s < steps && std::abs(w[s]) >= 1e-3) ++s;
    return (s + 1) * h;
  };
  std::printf("[ spin    ] spin-down rate over 20-60 ms: moreau (hard) %.2f rad/s^2, MuJoCo condim 4 %.2f; "
              "stopped at %.3f s and %.3f s\n", rate(ours), rate(theirs), stop(ours), stop(theirs));
  EXPECT_NEAR(rate(theirs), rate(ours), 0.1 * rate(ours));
  EXPECT_NEAR(stop(theirs), stop(ours), 0.1 * stop(ours));
}

// Below the bound the spin sticks: a torque about z of 60 % of μ_spin m g on the resting ball
// leaves it still (|ω_z| ≤ 1e-12) in hard contact; 140 % turns it at (τ − μ_spin m g)/I_zz.
TEST(SpinFriction, TorqueBelowTheBoundSticks) {
  const double h = 1e-3, mu = 0.02, g = 9.81, bound = mu * kMass * g;
  for (double frac : {0.6, 1.4}) {
    SCOPED_TRACE(frac);
    const auto owner = ball_sim(ContactMode::Hard, h, mu);
    Simulator& sim = *owner;
    Vec q = {0, 0, kRadius, 1, 0, 0, 0}, v(6, 0.0), qn(7), vn(6);
    int32_t status = 0;
    for (int s = 0; s < 100; ++s) {
      sim.step_pure(q.data(), v.data(), nullptr, qn.data(), vn.data(), &status);
      q = qn;
      v = vn;
    }
    // the torque enters as a spin velocity it would add each step, h τ / I_zz
    v[5] = 0;
    double wz = 0;
    for (int s = 0; s < 100; ++s) {
      v[5] = wz + h * frac * bound / kIzz;
      sim.step_pure(q.data(), v.data(), nullptr, qn.data(), vn.data(), &status);
      EXPECT_EQ(status, 0);
      q = qn;
      v = vn;
      wz = v[5];
    }
    if (frac < 1)
      EXPECT_LE(std::abs(wz), 1e-12);
    else
      EXPECT_NEAR(wz, 100 * h * (frac - 1) * bound / kIzz, 1e-3 * wz);
  }
}

}  // namespace
}  // namespace moreau
