// Mass matrix and bias forces (kernels/dynamics.h through moreau/dynamics.h) against MuJoCo
// on the same models, and fixed-body merging against MuJoCo's handling of welded bodies.
#include "moreau/dynamics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "host/backend.h"
#include "kernels/dynamics.h"
#include "support/kernel_model.h"
#include "support/mujoco_ref.h"
#include "support/test_util.h"

namespace moreau {
namespace {

using test::asset;

// Our H(q) and b(q, v) equal MuJoCo's on `mjcf` at n random states (relative 1e-9).
void expect_dynamics_match_mujoco(const Model& model, const std::string& mjcf, int n, unsigned seed) {
  test::MjRef ref(mjcf);
  ASSERT_EQ(ref.nq(), model.nq);
  ASSERT_EQ(ref.nv(), model.nv);
  std::mt19937 rng(seed);
  std::vector<double> q(model.nq), v(model.nv), H(model.nv * model.nv), b(model.nv);
  for (int s = 0; s < n; ++s) {
    test::random_state(model, rng, q.data(), v.data());
    mass_matrix(model, q.data(), H.data());
    bias_forces(model, q.data(), v.data(), b.data());
    const std::string at = model.name + " state " + std::to_string(s);
    ASSERT_NEAR_REL(H, ref.mass_matrix(q.data()), 1e-9, 1e-12, "H " + at);
    ASSERT_NEAR_REL(b, ref.bias(q.data(), v.data()), 1e-9, 1e-12, "b " + at);
  }
}

class DynamicsVsMujoco : public ::testing::TestWithParam<std::string> {};

TEST_P(DynamicsVsMujoco, MassMatrixAndBiasAt100RandomStates) {
  const Model model = load_model(asset(GetParam()));
  expect_dynamics_match_mujoco(model, export_mjcf(model), 100, 7);
}

TEST(Dynamics, ZeroGravityBiasIsQuadraticInVelocity) {
  // With g = 0 and v = 0 the bias vanishes; with v ≠ 0 it is quadratic in v: b(2v) = 4 b(v).
  Model model = load_model(asset("anymal_c.json"));
  model.gravity[0] = model.gravity[1] = model.gravity[2] = 0;
  std::mt19937 rng(3);
  std::vector<double> q(model.nq), v(model.nv), v2(model.nv), b(model.nv), b2(model.nv), zero(model.nv, 0.0);
  test::random_state(model, rng, q.data(), v.data());
  for (int k = 0; k < model.nv; ++k) v2[k] = 2 * v[k];
  bias_forces(model, q.data(), zero.data(), b.data());
  for (int k = 0; k < model.nv; ++k) EXPECT_NEAR(b[k], 0.0, 1e-12) << "dof " << k;
  bias_forces(model, q.data(), v.data(), b.data());
  bias_forces(model, q.data(), v2.data(), b2.data());
  for (int k = 0; k < model.nv; ++k) b[k] *= 4;
  EXPECT_NEAR_REL(b2, b, 1e-10, 1e-12, "b(2v) vs 4 b(v)");
  double norm = 0;
  for (double x : b2) norm += x * x;
  EXPECT_GT(norm, 1e-6) << "Coriolis forces should not vanish at a random velocity";
}

INSTANTIATE_TEST_SUITE_P(Assets, DynamicsVsMujoco,
                         ::testing::Values("anymal_c.json", "pendulum.json", "double_pendulum.json",
                                           "cartpole.json", "cube.json", "planar_box.json"),
                         [](const auto& info) {
                           std::string n = info.param.substr(0, info.param.find('.'));
                           for (char& c : n)
                             if (c == '.') c = '_';
                           return n;
                         });

// A chain whose links carry welded (fixed) sub-bodies: merged by compile(); MuJoCo keeps them
// as bodies without joints. Same dynamics expected, including a ball joint and armature.
// Large off-diagonal `fullinertia` values are avoided: MuJoCo 2.2.2 diagonalises them only to
// about 1e-10 absolute; the rotated placements still give the merged inertias full tensors.
TEST(FixedBodyMerging, SameDynamicsAsUnmergedTreeInMujoco) {
  const std::string mjcf = R"(
<mujoco model="welded">
  <compiler angle="radian"/>
  <option gravity="0.3 -0.2 -9.81"/>
  <worldbody>
    <body name="base" pos="0.1 0 1" quat="0.9 0.1 0.3 0.2">
      <freejoint/>
      <inertial pos="0.01 0.02 -0.03" mass="3" fullinertia="0.05 0.06 0.07 0 0 0"/>
      <body name="payload" pos="0.2 -0.1 0.05" quat="0.7 0.7 0 0">
        <inertial pos="0.03 0 0.01" mass="1.5" fullinertia="0.01 0.02 0.015 0 0 0"/>
        <body name="sensor" pos="0 0.1 0" quat="0.9 0.2 0.1 0.3">
          <inertial pos="0 0 0.02" mass="0.2" diaginertia="0.001 0.002 0.0025"/>
        </body>
      </body>
      <body name="arm" pos="0.3 0 0" quat="0.95 0 0.3 0.1">
        <joint name="shoulder" type="hinge" axis="0.2 1 0.1" pos="0.01 0 0" armature="0.02"/>
        <inertial pos="0.15 0 0" mass="1" fullinertia="0.001 0.01 0.01 0 0 0"/>
        <body name="tool" pos="0.3 0 0" quat="0.8 0 0 0.6">
          <inertial pos="0.02 0.01 0" mass="0.5" diaginertia="0.002 0.001 0.002"/>
          <body name="wrist" pos="0.05 0 0">
            <joint name="wrist" type="ball" pos="0 0 0.01"/>
            <inertial pos="0.05 0.01 0" mass="0.4" fullinertia="0.001 0.002 0.0015 0.0001 0 0"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>)";
  // The same tree as a RobotSpec with explicit fixed joints.
  auto body = [](const char* name, const char* parent, std::array<double, 3> pos, std::array<double, 4> quat,
                 JointType type, double mass, std::array<double, 3> com, std::array<double, 6> inertia) {
    BodySpec b;
    b.name = name;
    b.parent = parent;
    b.pos = pos;
    b.quat = quat;
    b.joint.type = type;
    b.mass = mass;
    b.com = com;
    b.inertia = inertia;
    return b;
  };
  RobotSpec spec;
  spec.name = "welded";
  spec.gravity = {0.3, -0.2, -9.81};
  spec.bodies.push_back(body("base", "world", {0.1, 0, 1}, {0.9, 0.1, 0.3, 0.2}, JointType::Free, 3,
                             {0.01, 0.02, -0.03}, {0.05, 0.06, 0.07, 0, 0, 0}));
  spec.bodies.push_back(body("payload", "base", {0.2, -0.1, 0.05}, {0.7, 0.7, 0, 0}, JointType::Fixed, 1.5,
                             {0.03, 0, 0.01}, {0.01, 0.02, 0.015, 0, 0, 0}));
  spec.bodies.push_back(body("sensor", "payload", {0, 0.1, 0}, {0.9, 0.2, 0.1, 0.3},
                             JointType::Fixed, 0.2, {0, 0, 0.02}, {0.001, 0.002, 0.0025, 0, 0, 0}));
  spec.bodies.push_back(body("arm", "base", {0.3, 0, 0}, {0.95, 0, 0.3, 0.1}, JointType::Revolute, 1,
                             {0.15, 0, 0}, {0.001, 0.01, 0.01, 0, 0, 0}));
  spec.bodies.back().joint.name = "shoulder";
  spec.bodies.back().joint.axis = {0.2, 1, 0.1};
  spec.bodies.back().joint.pos = {0.01, 0, 0};
  spec.bodies.back().joint.armature = 0.02;
  spec.bodies.push_back(body("tool", "arm", {0.3, 0, 0}, {0.8, 0, 0, 0.6}, JointType::Fixed, 0.5, {0.02, 0.01, 0},
                             {0.002, 0.001, 0.002, 0, 0, 0}));
  spec.bodies.push_back(body("wrist", "tool", {0.05, 0, 0}, {1, 0, 0, 0}, JointType::Ball, 0.4, {0.05, 0.01, 0},
                             {0.001, 0.002, 0.0015, 0.0001, 0, 0}));
  spec.bodies.back().joint.pos = {0, 0, 0.01};
  const Model model = compile(spec);
  ASSERT_EQ(model.nbody, 3) << "payload, sensor and tool should be merged";
  expect_dynamics_match_mujoco(model, mjcf, 100, 11);
}

TEST(Kinematics, BodyPosesMatchMujoco) {
  const Model model = load_model(asset("anymal_c.json"));
  test::MjRef ref(export_mjcf(model));
  std::mt19937 rng(5);
  std::vector<double> q(model.nq), v(model.nv), pos(3 * model.nbody), quat(4 * model.nbody);
  for (int s = 0; s < 20; ++s) {
    test::random_state(model, rng, q.data(), v.data());
    body_poses(model, q.data(), pos.data(), quat.data());
    ref.mass_matrix(q.data());  // runs MuJoCo's kinematics at q
    ASSERT_NEAR_REL(pos.data(), ref.d->xpos + 3, 3 * model.nbody, 1e-10, 1e-12, "body positions");
    for (int i = 0; i < model.nbody; ++i) {  // q and −q are the same rotation
      double d = 0;
      for (int k = 0; k < 4; ++k) d += quat[4 * i + k] * ref.d->xquat[4 * (i + 1) + k];
      ASSERT_NEAR(std::abs(d), 1.0, 1e-10) << "body " << model.body_name[i] << " state " << s;
    }
  }
}

}  // namespace
}  // namespace moreau

namespace moreau {
namespace {

// adj_crba (and adj_transform_t inside it) against central differences of ⟨H̄, H(q)⟩ for a
// random H̄ over H's sparse storage, on ANYmal C at random configurations, and the
// added-base-mass gradient.
TEST(DynamicsAdjoint, CrbaMatchesFiniteDifferences) {
  const test::KernelModel km("anymal_c.json");
  const Model& model = km.model;
  const kern::ModelView<double>& m = km.m;
  std::mt19937 rng(17);
  std::normal_distribution<double> normal(0, 1);
  const int nv = model.nv, nq = model.nq;
  std::vector<double> Hbar(model.nM), q(nq), v(nv);
  for (double& x : Hbar) x = normal(rng);
  auto loss = [&](const double* qq, double added_mass) {
    kern::Workspace<double> ws;
    kern::body_inertias(m, added_mass, ws);
    kern::forward_kinematics(m, qq, ws);
    kern::crba(m, static_cast<const double*>(nullptr), ws);
    double L = 0;
    for (int k = 0; k < model.nM; ++k) L += Hbar[k] * ws.H[k];
    return L;
  };
  for (int s = 0; s < 3; ++s) {
    test::random_state(model, rng, q.data(), v.data());
    const double added = 0.7;
    kern::Workspace<double> ws;
    kern::AdjWorkspace<double> aw;
    kern::body_inertias(m, added, ws);
    kern::forward_kinematics(m, q.data(), ws);
    kern::crba(m, static_cast<const double*>(nullptr), ws);
    kern::adj_clear(m, aw);
    kern::adj_crba(m, ws, Hbar.data(), aw);
    std::vector<double> gq(nq, 0.0);
    double gm = 0;
    kern::adj_forward_kinematics(m, q.data(), ws, gq.data(), aw);
    kern::adj_body_inertias(m, added, gm, aw);
    const double eps = 1e-6;
    for (int k = 0; k < nq; ++k) {
      std::vector<double> qp = q, qm = q;
      qp[k] += eps;
      qm[k] -= eps;
      const double fd = (loss(qp.data(), added) - loss(qm.data(), added)) / (2 * eps);
      EXPECT_NEAR(gq[k], fd, 1e-6 * std::max(1.0, std::abs(fd))) << "q[" << k << "] state " << s;
    }
    const double fdm = (loss(q.data(), added + eps) - loss(q.data(), added - eps)) / (2 * eps);
    EXPECT_NEAR(gm, fdm, 1e-6 * std::max(1.0, std::abs(fdm)));
    EXPECT_GT(std::abs(gm), 0);
  }
}

}  // namespace
}  // namespace moreau

namespace moreau {
namespace {

// rnea at (q, v, 0) then rnea_add_acceleration(a) leaves what rnea at (q, v, a) leaves (the
// adjoint's setup relies on it).
TEST(DynamicsAdjoint, AddingAnAccelerationEqualsRneaWithIt) {
  const test::KernelModel km("anymal_c.json");
  const Model& model = km.model;
  const kern::ModelView<double>& m = km.m;
  std::mt19937 rng(23);
  std::normal_distribution<double> normal(0, 1);
  std::vector<double> q(model.nq), v(model.nv), a(model.nv), tau(model.nv);
  for (int t = 0; t < 5; ++t) {
    test::random_state(model, rng, q.data(), v.data());
    for (double& x : a) x = 3 * normal(rng);
    kern::Workspace<double> full, added;
    for (kern::Workspace<double>* ws : {&full, &added}) {
      kern::body_inertias(m, 0.0, *ws);
      kern::forward_kinematics(m, q.data(), *ws);
    }
    kern::rnea(m, v.data(), a.data(), full, tau.data());
    kern::rnea(m, v.data(), static_cast<const double*>(nullptr), added, tau.data());
    kern::rnea_add_acceleration(m, a.data(), added);
    double largest = 0;
    for (int i = 0; i < model.nbody; ++i)
      for (int k = 0; k < 3; ++k) {
        const double pairs[4][2] = {{full.acc[i].w[k], added.acc[i].w[k]}, {full.acc[i].v[k], added.acc[i].v[k]},
                                    {full.f[i].n[k], added.f[i].n[k]}, {full.f[i].f[k], added.f[i].f[k]}};
        for (const auto& p : pairs) {
          EXPECT_NEAR(p[1], p[0], 1e-9 * (1 + std::abs(p[0])));
          largest = std::max(largest, std::abs(p[0]));
        }
      }
    EXPECT_GT(largest, 1.0);
  }
}

// The cube's corners: at height z with identity orientation the lowest is z − 0.05; tilted by
// 45° about x the lowest edge is z − 0.05·√2.
TEST(Kinematics, ContactGapsOfTheCube) {
  const Model model = load_model(asset("cube.json"));
  std::vector<double> q = model.qpos0, gaps(model.ncon);
  q[2] = 0.3;
  q[3] = 1, q[4] = q[5] = q[6] = 0;
  contact_gaps(model, q.data(), gaps.data());
  EXPECT_NEAR(*std::min_element(gaps.begin(), gaps.end()), 0.25, 1e-12);
  EXPECT_NEAR(*std::max_element(gaps.begin(), gaps.end()), 0.35, 1e-12);
  q[3] = std::cos(M_PI / 8), q[4] = std::sin(M_PI / 8);
  EXPECT_NEAR(lowest_gap(model, q.data()), 0.3 - 0.05 * std::sqrt(2.0), 1e-12);
}

}  // namespace
}  // namespace moreau
