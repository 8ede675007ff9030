// Heightfield ground (kernels/contact.h's Ground, Model::hfield_*, with_heightfield): the
// piecewise-planar surface against the planes it samples, a flat heightfield against the plane
// bit for bit, a cube on a slope against the analytic answer (sticking below tan θ = μ, sliding
// at g (sin θ − μ cos θ) above) in hard, soft and smooth contact, ANYmal C on a slope against
// ANYmal C on the plane under tilted gravity, ANYmal C resting on stairs, and the per-environment
// origin. The adjoints through the terrain are checked against finite differences in
// gradient_test.cc and contact_adjoint_test.cc; MuJoCo's heightfield in python/tests/test_terrain.py.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "host/backend.h"
#include "kernels/contact.h"
#include "moreau/dynamics.h"
#include "moreau/simulator.h"
#include "support/test_util.h"

namespace moreau {
namespace {

using test::asset;
using Vec = std::vector<double>;

constexpr double kPi = 3.14159265358979323846;

// Heights z(x, y) sampled on an nx x ny grid from (x0, y0) with spacing d.
template <class F>
Vec sample(int nx, int ny, double x0, double y0, double d, F&& z) {
  Vec h(static_cast<size_t>(nx) * ny);
  for (int j = 0; j < ny; ++j)
    for (int i = 0; i < nx; ++i) h[j * nx + i] = z(x0 + i * d, y0 + j * d);
  return h;
}

SimulatorOptions options(int n_env, ContactMode mode) {
  SimulatorOptions o;
  o.n_env = n_env;
  o.dtype = DType::Float64;
  o.n_threads = 1;
  o.contact.mode = mode;
  o.contact.tolerance = 1e-12;
  o.contact.max_iterations = 5000;
  return o;
}

// A plane sampled on the grid is reproduced exactly inside it (height and normal); outside,
// the edge's heights continue and the normal loses the slope across the edge. On random heights
// each facet's plane passes through its three samples and the surface is continuous across the
// diagonals and the cell edges.
TEST(Ground, PlanesAreReproducedAndTheSurfaceIsContinuous) {
  const double a = 0.3, b = -0.7, c = 0.2, d = 0.25, x0 = -1.0, y0 = -0.5;
  const int nx = 9, ny = 7;
  const Vec plane = sample(nx, ny, x0, y0, d, [&](double x, double y) { return a * x + b * y + c; });
  const kern::Ground<double> g{nx, ny, x0, y0, d, d, plane.data()};
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> ux(x0, x0 + (nx - 1) * d), uy(y0, y0 + (ny - 1) * d);
  const double s = 1 / std::sqrt(1 + a * a + b * b);
  for (int k = 0; k < 200; ++k) {
    const double x = ux(rng), y = uy(rng);
    double h;
    kern::Vec3<double> n;
    g.surface(x, y, h, n);
    EXPECT_NEAR(h, a * x + b * y + c, 1e-14);
    EXPECT_NEAR(n.x, -a * s, 1e-14);
    EXPECT_NEAR(n.y, -b * s, 1e-14);
    EXPECT_NEAR(n.z, s, 1e-14);
  }
  double h;
  kern::Vec3<double> n;
  g.surface(x0 - 3, y0 + 0.3, h, n);  // beyond the x edge: z(x0, y), sloped in y only
  EXPECT_NEAR(h, a * x0 + b * (y0 + 0.3) + c, 1e-14);
  EXPECT_NEAR(n.x, 0, 1e-15);
  EXPECT_NEAR(n.y, -b / std::sqrt(1 + b * b), 1e-14);
  g.surface(x0 + 100, y0 + 100, h, n);  // beyond the far corner: its height, flat
  EXPECT_NEAR(h, a * (x0 + (nx - 1) * d) + b * (y0 + (ny - 1) * d) + c, 1e-14);
  EXPECT_EQ(n.z, 1.0);

  std::uniform_real_distribution<double> uz(-0.2, 0.2);
  const Vec rough = sample(nx, ny, x0, y0, d, [&](double, double) { return uz(rng); });
  const kern::Ground<double> r{nx, ny, x0, y0, d, d, rough.data()};
  for (int j = 0; j < ny; ++j)  // at the samples
    for (int i = 0; i < nx; ++i) {
      r.surface(x0 + i * d, y0 + j * d, h, n);
      EXPECT_NEAR(h, rough[j * nx + i], 1e-14) << "sample " << i << ", " << j;
    }
  const double e = 1e-9;
  for (int k = 0; k < 200; ++k) {  // across a diagonal and across cell edges
    const int i = k % (nx - 1), j = k % (ny - 1);
    const double t = std::uniform_real_distribution<double>(0.05, 0.95)(rng);
    const double xd = x0 + (i + t) * d, yd = y0 + (j + t) * d, xe = x0 + (i + 1) * d, ye = y0 + (j + t) * d;
    double h1, h2;
    r.surface(xd + e, yd - e, h1, n);
    r.surface(xd - e, yd + e, h2, n);
    EXPECT_NEAR(h1, h2, 1e-8) << "diagonal of cell " << i << ", " << j;
    r.surface(xe - e, ye, h1, n);
    r.surface(xe + e, ye, h2, n);
    EXPECT_NEAR(h1, h2, 1e-8) << "edge x of cell " << i << ", " << j;
  }
}

// A heightfield of zeros is the plane z = 0: ANYmal C trotting on it for 100 control steps
// gives the plane's states bit for bit.
TEST(Terrain, FlatHeightfieldIsThePlaneBitForBit) {
  const Model robot = load_model(asset("anymal_c.json"));
  const Model flat = with_heightfield(robot, Vec(4 * 3, 0.0), 4, 3, 1.5, 2.0, -3.0, -2.0);
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Smooth, ContactMode::Soft}) {
    SCOPED_TRACE(contact_mode_name(mode));
    Simulator a(robot, options(2, mode)), b(flat, options(2, mode));
    std::mt19937 rng(9);
    std::normal_distribution<double> noise(0, 0.3);
    Vec u(2 * robot.nu);
    for (int t = 0; t < 100; ++t) {
      for (int k = 0; k < 2 * robot.nu; ++k) u[k] = robot.qpos0[7 + k % robot.nu] + noise(rng);
      a.set_action(u.data(), 2);
      b.set_action(u.data(), 2);
      a.step(1);
      b.step(1);
    }
    Vec qa(2 * robot.nq), va(2 * robot.nv), qb(qa.size()), vb(va.size());
    a.get_state(qa.data(), va.data(), 2);
    b.get_state(qb.data(), vb.data(), 2);
    EXPECT_TRUE(qa == qb && va == vb);
    EXPECT_GT(std::abs(qa[0]) + std::abs(qa[1]), 1e-3) << "the robot should have moved";
  }
}

// The 0.1 m cube resting face down on a slope of angle θ (z = −x tan θ, sampled on a grid), μ
// 0.5: below atan μ = 26.6° it sticks, above it slides down at a = g (sin θ − μ cos θ).
// Returns the distance slid in the first 0.3 s, the acceleration from 0.3 s to 0.6 s and the
// final speed down the slope.
struct Slide {
  double slid, accel, speed;
};
Slide cube_on_slope(ContactMode mode, double theta) {
  const Vec h = sample(25, 9, -3.0, -1.0, 0.25, [&](double x, double) { return -x * std::tan(theta); });
  const Model cube = with_heightfield(load_model(asset("cube.json")), h, 25, 9, 0.25, 0.25, -3.0, -1.0);
  SimulatorOptions o = options(1, mode);
  o.contact.tolerance = 0;  // the default (1e-6 m/s in double): four sticking corners converge slowly
  Simulator sim(cube, o);
  const double mu = 0.5, kn = 1e5;
  sim.set_param("friction", &mu, 1, 1);
  sim.set_param("contact_kn", &kn, 1, 1);
  // face down on the slope: the body's z axis along the normal (sin θ, 0, cos θ), rotated by θ
  // about y; its centre 0.05 m above the slope at x = 0
  const double s = std::sin(theta), c = std::cos(theta);
  Vec q = {0.05 * s, 0, 0.05 * c, std::cos(theta / 2), 0, std::sin(theta / 2), 0}, v(6, 0.0);
  sim.set_state(q.data(), v.data(), 1);
  const int steps = static_cast<int>(std::round(0.3 / cube.timestep));
  auto along = [&](const Vec& p) { return c * p[0] - s * p[2]; };  // down the slope
  const double x0 = along(q);
  sim.step(steps);
  sim.get_state(q.data(), v.data(), 1);
  const double slid = along(q) - x0, v1 = along(v);
  sim.step(steps);
  sim.get_state(q.data(), v.data(), 1);
  int32_t status = -1;
  sim.get_status(&status, 1);
  EXPECT_EQ(status, 0);
  return {slid, (along(v) - v1) / 0.3, along(v)};
}

TEST(Terrain, CubeOnASlopeSticksBelowTheFrictionAngleAndSlidesAbove) {
  const double g = 9.81, mu = 0.5;
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Soft, ContactMode::Smooth}) {
    SCOPED_TRACE(contact_mode_name(mode));
    // smooth contact creeps while the cube sinks towards the gate's full strength (3.6 mm in
    // 0.3 s, slowing: 3 mm/s at 0.6 s)
    const Slide stick = cube_on_slope(mode, 20 * kPi / 180);
    EXPECT_LT(std::abs(stick.slid), mode == ContactMode::Smooth ? 1e-2 : 1e-4) << "sticks at 20°";
    EXPECT_LT(std::abs(stick.speed), mode == ContactMode::Smooth ? 1e-2 : 1e-3) << "sticks at 20°";
    const double theta = 35 * kPi / 180, expected = g * (std::sin(theta) - mu * std::cos(theta));
    const Slide slide = cube_on_slope(mode, theta);
    EXPECT_GT(slide.slid, 0.05) << "slides at 35°";
    EXPECT_NEAR(slide.accel, expected, 0.01 * expected) << "slides at 35°";
  }
}

// Environment e sees the heightfield from its origin (terrain_x, terrain_y): a cube dropped at
// (0, 0) with origin (0.6, −0.4) lands as one dropped at (0.6, −0.4) with origin 0, its
// trajectory shifted by the origin.
TEST(Terrain, EnvironmentOriginShiftsTheGround) {
  std::mt19937 rng(13);
  std::uniform_real_distribution<double> uz(-0.05, 0.05);
  const Vec h = sample(13, 13, -1.5, -1.5, 0.25, [&](double, double) { return uz(rng); });
  const Model cube = with_heightfield(load_model(asset("cube.json")), h, 13, 13, 0.25, 0.25, -1.5, -1.5);
  Simulator sim(cube, options(2, ContactMode::Hard));
  const Vec tx = {0.6, 0.0}, ty = {-0.4, 0.0};
  sim.set_param("terrain_x", tx.data(), 2, 1);
  sim.set_param("terrain_y", ty.data(), 2, 1);
  const double qt[4] = {0.96, 0.1, -0.2, 0.15}, nq = std::sqrt(0.96 * 0.96 + 0.01 + 0.04 + 0.0225);
  Vec q = {0, 0, 0.2, qt[0] / nq, qt[1] / nq, qt[2] / nq, qt[3] / nq, 0.6, -0.4, 0.2, qt[0] / nq, qt[1] / nq,
           qt[2] / nq, qt[3] / nq};
  Vec v = {0.3, 0.1, 0, 0, 0, 1, 0.3, 0.1, 0, 0, 0, 1};
  sim.set_state(q.data(), v.data(), 2);
  sim.step(200);
  sim.get_state(q.data(), v.data(), 2);
  EXPECT_NEAR(q[0] + 0.6, q[7], 1e-9);
  EXPECT_NEAR(q[1] - 0.4, q[8], 1e-9);
  for (int k = 2; k < 7; ++k) EXPECT_NEAR(q[k], q[7 + k], 1e-9) << "q[" << k << "]";
  for (int k = 0; k < 6; ++k) EXPECT_NEAR(v[k], v[6 + k], 1e-9) << "v[" << k << "]";
  EXPECT_LT(q[2], 0.15) << "the cube should have landed";
}

// A 10° slope is the plane under gravity tilted by 10°: ANYmal C standing on the slope
// z = x tan θ (its default pose rotated by −θ about y, so that its feet stand on the slope as on
// the plane), its servos holding the pose, moves as ANYmal C on the plane z = 0 under gravity
// g (−sin θ, 0, −cos θ), rotated: after 1 s (it sways down the slope on its compliant legs, μ = 1
// > tan θ: the feet stick) the two states agree to 1e-6 (hard, soft) or 1e-5 (smooth) in
// position, orientation and velocity, in every contact mode.
TEST(Terrain, ASlopeIsThePlaneUnderTiltedGravity) {
  const double th = 10 * kPi / 180, c = std::cos(th), s = std::sin(th);
  Model flat = load_model(asset("anymal_c.json"));
  flat.gravity[0] = -9.81 * s;
  flat.gravity[2] = -9.81 * c;
  const Model robot = load_model(asset("anymal_c.json"));
  const Vec h = sample(61, 41, -3.0, -2.0, 0.1, [&](double x, double) { return x * std::tan(th); });
  const Model slope = with_heightfield(robot, h, 61, 41, 0.1, 0.1, -3.0, -2.0);
  // R = R_y(−θ): the plane's frame to the slope's; its quaternion (cos θ/2, 0, −sin θ/2, 0)
  auto rotate = [&](const double* p, double sign) {  // R p (sign 1) or Rᵀ p (sign −1)
    return Vec{c * p[0] - sign * s * p[2], p[1], sign * s * p[0] + c * p[2]};
  };
  const double qr[4] = {std::cos(th / 2), 0, -std::sin(th / 2), 0};
  auto qmul = [](const double* a, const double* b) {
    return Vec{a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3], a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
               a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1], a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]};
  };
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Soft, ContactMode::Smooth}) {
    SCOPED_TRACE(contact_mode_name(mode));
    Vec q(robot.qpos0), v(robot.nv, 0.0), u(robot.nu);
    q[2] -= lowest_gap(robot, q.data());  // the feet on the plane
    for (int a = 0; a < robot.nu; ++a) u[a] = robot.qpos0[robot.actuator_qposadr[a]];
    Vec qs = q;  // the same state on the slope
    const Vec p = rotate(q.data(), 1), o = qmul(qr, q.data() + 3);
    std::copy(p.begin(), p.end(), qs.begin());
    std::copy(o.begin(), o.end(), qs.begin() + 3);
    auto run = [&](const Model& m, Vec x) {
      Simulator sim(m, options(1, mode));
      sim.set_state(x.data(), v.data(), 1);
      sim.set_action(u.data(), 1);
      sim.step(50);
      Vec q1(robot.nq), v1(robot.nv);
      sim.get_state(q1.data(), v1.data(), 1);
      int32_t status = -1;
      sim.get_status(&status, 1);
      EXPECT_EQ(status, 0);
      q1.insert(q1.end(), v1.begin(), v1.end());
      return q1;
    };
    const Vec a = run(flat, q), b = run(slope, qs);
    // b in the plane's frame: Rᵀ positions and linear velocity, R⁻¹ ⊗ orientation
    const double qri[4] = {qr[0], 0, -qr[2], 0};
    const Vec pb = rotate(b.data(), -1), ob = qmul(qri, b.data() + 3), vb = rotate(b.data() + robot.nq, -1);
    Vec back = b;
    std::copy(pb.begin(), pb.end(), back.begin());
    std::copy(ob.begin(), ob.end(), back.begin() + 3);
    std::copy(vb.begin(), vb.end(), back.begin() + robot.nq);
    const double tol = mode == ContactMode::Smooth ? 1e-5 : 1e-6;
    for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(back[k], a[k], tol) << (k < size_t(robot.nq) ? "q[" : "v[") << k << "]";
    EXPECT_GT(std::abs(a[0] - q[0]), 0.01) << "the robot should sway down the slope";
  }
}

// World (x, y) of each contact point of the model at q.
Vec contact_xy(const Model& m, const Vec& q) {
  Vec pos(3 * m.nbody), quat(4 * m.nbody), out;
  body_poses(m, q.data(), pos.data(), quat.data());
  for (int k = 0; k < m.ncon; ++k) {
    const int b = m.con_body[k];
    const kern::Vec3<double> p = kern::quat_to_mat(kern::quat(quat.data() + 4 * b)) * kern::vec3(m.con_pos.data() + 3 * k);
    out.push_back(pos[3 * b] + p.x);
    out.push_back(pos[3 * b + 1] + p.y);
  }
  return out;
}

// ANYmal C dropped 5 cm above stairs of 5 cm steps, 0.31 m deep along x (its front feet two steps
// above its hind feet; the sampled step edges are ramps of 27°, below the friction angle), the
// servos holding the default pose: it settles on its compliant legs and rests, the base slower
// than 1 cm/s at 4 s (smooth 3 cm/s: its slow creep), the feet moving by less than 1 cm from 2 s
// to 4 s and on the ground (gap within 2 mm above, below by at most the mode's sink: hard 1 mm,
// soft 5 mm at k_n 5e4 N/m, smooth 4 cm).
TEST(Terrain, QuadrupedRestsOnStairs) {
  const Model robot = load_model(asset("anymal_c.json"));
  const Vec h = sample(81, 41, -4.0, -2.0, 0.1, [](double x, double) { return 0.05 * std::floor(x / 0.31 + 0.5); });
  const Model stairs = with_heightfield(robot, h, 81, 41, 0.1, 0.1, -4.0, -2.0);
  for (const auto& [mode, sink, rest] : {std::tuple{ContactMode::Hard, 1e-3, 0.01}, {ContactMode::Soft, 5e-3, 0.01},
                                         {ContactMode::Smooth, 4e-2, 0.03}}) {
    SCOPED_TRACE(contact_mode_name(mode));
    SimulatorOptions o = options(1, mode);
    o.contact.tolerance = 0;  // the default
    Simulator sim(stairs, o);
    const double kn = 5e4;
    sim.set_param("contact_kn", &kn, 1, 1);
    Vec q(robot.qpos0), v(robot.nv, 0.0), gaps(robot.ncon), u(robot.nu);
    q[2] -= lowest_gap(stairs, q.data()) - 0.05;
    for (int a = 0; a < robot.nu; ++a) u[a] = robot.qpos0[robot.actuator_qposadr[a]];
    sim.set_state(q.data(), v.data(), 1);
    sim.set_action(u.data(), 1);
    sim.step(100);  // 2 s
    sim.get_state(q.data(), v.data(), 1);
    const Vec feet = contact_xy(stairs, q);
    sim.step(100);
    sim.get_state(q.data(), v.data(), 1);
    int32_t status = -1;
    sim.get_status(&status, 1);
    EXPECT_EQ(status, 0);
    EXPECT_LT(std::hypot(v[0], v[1], v[2]), rest) << "at rest";
    const Vec feet2 = contact_xy(stairs, q);
    for (size_t k = 0; k < feet.size(); ++k) EXPECT_NEAR(feet2[k], feet[k], 0.01) << "foot coordinate " << k;
    contact_gaps(stairs, q.data(), gaps.data());
    for (int k = 0; k < robot.ncon; ++k) {
      EXPECT_LT(gaps[k], 2e-3) << "foot " << k << " on the ground";
      EXPECT_GT(gaps[k], -sink) << "foot " << k;
    }
  }
}

TEST(Terrain, BadHeightfieldsAreRefusedWithTheArgumentNamed) {
  const Model cube = load_model(asset("cube.json"));
  auto message = [&](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { with_heightfield(cube, Vec(3, 0.0), 1, 3, 0.1, 0.1); }).find("argument 'nx'"),
            std::string::npos);
  EXPECT_NE(message([&] { with_heightfield(cube, Vec(4, 0.0), 2, 2, 0.0, 0.1); }).find("argument 'dx'"),
            std::string::npos);
  EXPECT_NE(message([&] { with_heightfield(cube, Vec(5, 0.0), 2, 2, 0.1, 0.1); }).find("4 values, got 5"),
            std::string::npos);
  EXPECT_NE(message([&] { with_heightfield(cube, {0, 0, NAN, 0}, 2, 2, 0.1, 0.1); }).find("index 2"),
            std::string::npos);
  Model edited = with_heightfield(cube, Vec(4, 0.0), 2, 2, 0.1, 0.1);  // a Model's fields set by hand
  edited.hfield_nx = 1;
  EXPECT_NE(message([&] { Simulator sim(edited, options(1, ContactMode::Hard)); }).find("argument 'nx'"),
            std::string::npos);
}

}  // namespace
}  // namespace moreau
