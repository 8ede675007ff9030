// export_mjcf: MuJoCo loads the exported model with our sizes, inertias, qpos0, damping,
// armature and actuators, and its kinematics, mass matrix and bias forces equal ours.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "moreau/dynamics.h"
#include "moreau/model.h"
#include "support/mujoco_ref.h"
#include "support/test_util.h"

namespace moreau::test {
namespace {

constexpr double kRel = 1e-9, kFloor = 1e-12;

BodySpec make_body(const std::string& name, const std::string& parent, JointType type,
                   std::array<double, 3> pos, double mass, std::array<double, 3> com,
                   std::array<double, 6> inertia) {
  BodySpec b;
  b.name = name;
  b.parent = parent;
  b.joint.type = type;
  b.pos = pos;
  b.mass = mass;
  b.com = com;
  b.inertia = inertia;
  return b;
}

RobotSpec pendulum() {
  RobotSpec s;
  s.name = "pendulum";
  BodySpec pole = make_body("pole", "world", JointType::Revolute, {0, 0, 2}, 1.5, {0, 0, -0.5},
                            {0.1, 0.1, 0.01, 0, 0, 0});
  pole.joint.axis = {0, 1, 0};
  ContactSpec tip;
  tip.pos = {0, 0, -1};
  tip.radius = 0.05;
  pole.contacts.push_back(tip);
  s.bodies.push_back(pole);
  ActuatorSpec motor;
  motor.name = "torque";
  motor.joint = "pole";
  motor.type = ActuatorType::Motor;
  motor.force_limited = true;
  motor.force_range = {-3, 3};
  s.actuators.push_back(motor);
  return s;
}

RobotSpec floating_box() {
  RobotSpec s;
  s.name = "box";
  s.gravity = {0.3, -0.2, -9.81};
  BodySpec box = make_body("box", "world", JointType::Free, {0.1, 0.2, 1.0}, 2.0,
                           {0.01, -0.02, 0.03}, {0.05, 0.07, 0.09, 0.004, -0.003, 0.002});
  box.quat = {std::cos(0.3), std::sin(0.3) * 0.6, 0, std::sin(0.3) * 0.8};
  ContactSpec shell;
  shell.kind = ContactSpec::Kind::Box;
  shell.half_size = {0.2, 0.15, 0.1};
  box.contacts.push_back(shell);
  s.bodies.push_back(box);
  return s;
}

// Revolute (limited, damped, armature, default 0.4) -> ball (offset anchor) -> prismatic
// (limited, default 0.1) -> revolute with a fixed child merged into it.
RobotSpec chain() {
  RobotSpec s;
  s.name = "chain";
  BodySpec l1 = make_body("l1", "world", JointType::Revolute, {0, 0, 0.5}, 1.0, {0.1, 0, 0.2},
                          {0.03, 0.035, 0.02, 0.001, 0.002, -0.001});
  l1.quat = {std::cos(0.2), 0, std::sin(0.2), 0};
  l1.joint.limited = true;
  l1.joint.range = {-1, 1.5};
  l1.joint.damping = 0.3;
  l1.joint.stiffness = 4.0;  // springs on a hinge and a slide
  l1.joint.springref = 0.4;
  l1.joint.armature = 0.05;
  BodySpec l2 = make_body("l2", "l1", JointType::Ball, {0.2, 0, 0.4}, 0.7, {0, 0.05, 0.15},
                          {0.01, 0.012, 0.005, 0.0005, 0, 0.0002});
  l2.joint.pos = {0, 0, 0.05};
  l2.joint.damping = 0.2;
  l2.joint.armature = 0.01;
  BodySpec l3 = make_body("l3", "l2", JointType::Prismatic, {0, 0, 0.3}, 0.5, {0, 0, 0.1},
                          {0.004, 0.004, 0.001, 0, 0, 0});
  l3.joint.axis = {std::sqrt(0.5), 0, std::sqrt(0.5)};
  l3.joint.limited = true;
  l3.joint.range = {-0.2, 0.3};
  l3.joint.damping = 1.0;
  l3.joint.stiffness = 30.0;
  l3.joint.springref = -0.05;
  BodySpec l4 = make_body("l4", "l3", JointType::Revolute, {0, 0.1, 0.2}, 0.3, {0.05, 0, 0},
                          {0.001, 0.002, 0.002, 0, 0, 0});
  l4.joint.axis = {1, 0, 0};
  l4.joint.pos = {0, -0.05, 0};
  l4.joint.armature = 0.02;
  BodySpec tool = make_body("tool", "l4", JointType::Fixed, {0.1, 0, 0}, 0.2, {0, 0, 0.02},
                            {0.0005, 0.0005, 0.0002, 0, 0, 0});
  tool.quat = {std::cos(0.4), std::sin(0.4), 0, 0};
  s.bodies = {l1, l2, l3, l4, tool};

  ActuatorSpec servo;
  servo.name = "servo";
  servo.joint = "l1";
  servo.gear = 2;
  servo.kp = 30;
  servo.kd = 1.5;
  servo.ctrl_limited = true;
  servo.ctrl_range = {-0.5, 0.7};
  servo.force_limited = true;
  servo.force_range = {-8, 6};
  ActuatorSpec push;
  push.name = "push";
  push.joint = "l3";
  push.type = ActuatorType::Motor;
  push.gear = 0.5;
  push.ctrl_limited = true;
  push.ctrl_range = {-10, 10};
  s.actuators = {servo, push};
  s.default_qpos = {{"l1", 0.4}, {"l3", 0.1}};
  return s;
}

// Floating base with two two-link legs: branching, so dof_parent is not a chain.
RobotSpec biped() {
  RobotSpec s;
  s.name = "biped";
  s.bodies.push_back(make_body("base", "world", JointType::Free, {0, 0, 0.8}, 5.0,
                               {0.02, 0, 0.01}, {0.1, 0.2, 0.25, 0.01, 0, 0.005}));
  for (int side = 0; side < 2; ++side) {
    const std::string n = side ? "right" : "left";
    const double y = side ? -0.15 : 0.15;
    BodySpec hip = make_body(n + "_thigh", "base", JointType::Revolute, {0, y, -0.1}, 1.0,
                             {0, 0, -0.15}, {0.01, 0.01, 0.002, 0, 0, 0});
    hip.joint.axis = {0, 1, 0};
    hip.joint.damping = 0.1;
    BodySpec knee = make_body(n + "_shin", n + "_thigh", JointType::Revolute, {0, 0, -0.3},
                              0.6, {0, 0, -0.15}, {0.006, 0.006, 0.001, 0, 0, 0});
    knee.joint.axis = {0, 1, 0};
    knee.joint.armature = 0.03;
    ContactSpec foot;
    foot.pos = {0, 0, -0.3};
    foot.radius = 0.02;
    knee.contacts.push_back(foot);
    s.bodies.push_back(hip);
    s.bodies.push_back(knee);
  }
  s.default_qpos = {{"left_shin", -0.6}, {"right_shin", -0.6}};
  return s;
}

// 3x3 row-major rotation matrix of a unit quaternion (w, x, y, z).
std::array<double, 9> quat_to_mat(const double* q) {
  const double w = q[0], x = q[1], y = q[2], z = q[3];
  return {1 - 2 * (y * y + z * z), 2 * (x * y - w * z),     2 * (x * z + w * y),
          2 * (x * y + w * z),     1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
          2 * (x * z - w * y),     2 * (y * z + w * x),     1 - 2 * (x * x + y * y)};
}

// MuJoCo's principal inertia and iquat, back to (ixx, iyy, izz, ixy, ixz, iyz).
std::array<double, 6> mj_full_inertia(const mjModel* m, int body) {
  const std::array<double, 9> r = quat_to_mat(m->body_iquat + 4 * body);
  const double* d = m->body_inertia + 3 * body;
  auto at = [&](int i, int j) {
    double s = 0;
    for (int k = 0; k < 3; ++k) s += r[3 * i + k] * d[k] * r[3 * j + k];
    return s;
  };
  return {at(0, 0), at(1, 1), at(2, 2), at(0, 1), at(0, 2), at(1, 2)};
}

class MjcfExport : public ::testing::TestWithParam<RobotSpec (*)()> {};

TEST_P(MjcfExport, ModelMatchesMuJoCo) {
  const Model model = compile(GetParam()());
  const std::string xml = export_mjcf(model);
  MjRef ref(xml);
  const mjModel* m = ref.m;
  SCOPED_TRACE(xml);

  ASSERT_EQ(ref.nq(), model.nq);
  ASSERT_EQ(ref.nv(), model.nv);
  ASSERT_EQ(m->nbody - 1, model.nbody);
  ASSERT_EQ(m->nu, model.nu);
  EXPECT_EQ(m->ngeom, model.ncon);
  EXPECT_EQ(m->opt.timestep, model.timestep);
  EXPECT_NEAR_REL(m->opt.gravity, model.gravity, 3, 0, 0, "gravity");

  for (int b = 0; b < model.nbody; ++b) {
    const std::string name = "body " + model.body_name[b];
    EXPECT_EQ(m->body_parentid[b + 1], model.body_parent[b] + 1) << name;
    EXPECT_NEAR_REL(&m->body_mass[b + 1], &model.body_mass[b], 1, 0, 0, name + " mass");
    EXPECT_NEAR_REL(&m->body_ipos[3 * (b + 1)], &model.body_com[3 * b], 3, kRel, kFloor,
                    name + " com");
    EXPECT_NEAR_REL(mj_full_inertia(m, b + 1).data(), &model.body_inertia[6 * b], 6, kRel,
                    kFloor, name + " inertia");
  }
  EXPECT_NEAR_REL(m->qpos0, model.qpos0.data(), model.nq, kRel, kFloor, "qpos0");
  EXPECT_NEAR_REL(m->dof_damping, model.dof_damping.data(), model.nv, 0, 0, "damping");
  for (int j = 0; j < model.nbody; ++j) {
    const int mj = m->body_jntadr[j + 1];
    if (mj < 0 || m->jnt_type[mj] == mjJNT_FREE || m->jnt_type[mj] == mjJNT_BALL) continue;
    EXPECT_EQ(m->jnt_stiffness[mj], model.jnt_stiffness[j]) << model.jnt_name[j];
    EXPECT_EQ(m->qpos_spring[m->jnt_qposadr[mj]], model.jnt_springref[j]) << model.jnt_name[j];
  }
  EXPECT_NEAR_REL(m->dof_armature, model.dof_armature.data(), model.nv, 0, 0, "armature");
  for (int j = 0; j < model.nbody; ++j) {
    if (!model.jnt_limited[j]) continue;
    const int mj = m->body_jntadr[j + 1];
    EXPECT_TRUE(m->jnt_limited[mj]) << model.jnt_name[j];
    EXPECT_NEAR_REL(m->jnt_range + 2 * mj, &model.jnt_range[2 * j], 2, 0, 0, "range");
  }
  for (int u = 0; u < model.nu; ++u) {
    const int joint = m->body_jntadr[model.dof_body[model.actuator_dof[u]] + 1];
    EXPECT_EQ(m->actuator_trnid[2 * u], joint) << model.actuator_name[u];
    EXPECT_EQ(m->actuator_gear[6 * u], model.actuator_gear[u]) << model.actuator_name[u];
  }
}

// At random states: world poses, mass matrix, bias forces, and the passive (damping, spring)
// and actuator forces in MuJoCo's forward dynamics, all against ours.
TEST_P(MjcfExport, DynamicsMatchMuJoCo) {
  const Model model = compile(GetParam()());
  MjRef ref(export_mjcf(model));
  const mjData* d = ref.d;
  const int nv = model.nv;
  std::mt19937 rng(42);
  std::vector<double> q(model.nq), v(nv), H(nv * nv), b(nv), pos(3 * model.nbody),
      quat(4 * model.nbody), tau(nv), ctrl(model.nu), lhs(nv), rhs(nv), passive(nv);
  for (int trial = 0; trial < 100; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    random_state(model, rng, q.data(), v.data());

    mass_matrix(model, q.data(), H.data());
    EXPECT_NEAR_REL(ref.mass_matrix(q.data()), H, kRel, kFloor, "H");
    body_poses(model, q.data(), pos.data(), quat.data());
    for (int i = 0; i < model.nbody; ++i) {
      EXPECT_NEAR_REL(d->xpos + 3 * (i + 1), &pos[3 * i], 3, kRel, kFloor, "body pos");
      EXPECT_NEAR_REL(d->xmat + 9 * (i + 1), quat_to_mat(&quat[4 * i]).data(), 9, kRel, kFloor,
                      "body rot");
    }
    bias_forces(model, q.data(), v.data(), b.data());
    EXPECT_NEAR_REL(ref.bias(q.data(), v.data()), b, kRel, kFloor, "bias");

    // Actuator forces f = clamp(kp (ctrl − g q) − kd g v) or ctrl, τ = g f.
    for (int u = 0; u < model.nu; ++u) {
      const double* range = &model.actuator_ctrlrange[2 * u];
      ctrl[u] = model.actuator_ctrllimited[u]
                    ? std::uniform_real_distribution<double>(range[0], range[1])(rng)
                    : std::normal_distribution<double>(0, 1)(rng);
    }
    std::normal_distribution<double> normal(0, 1);
    for (double& t : tau) t = normal(rng);
    const std::vector<double> qacc = ref.qacc(q.data(), v.data(), tau.data(), ctrl.data());
    std::vector<double> act(nv, 0.0);
    for (int u = 0; u < model.nu; ++u) {
      const int dof = model.actuator_dof[u];
      const double g = model.actuator_gear[u];
      const double qu = q[model.actuator_qposadr[u]];
      double f = model.actuator_type[u] == static_cast<int>(ActuatorType::Position)
                     ? model.actuator_kp[u] * (ctrl[u] - g * qu) - model.actuator_kd[u] * g * v[dof]
                     : ctrl[u];
      if (model.actuator_forcelimited[u]) {
        f = std::clamp(f, model.actuator_forcerange[2 * u], model.actuator_forcerange[2 * u + 1]);
      }
      act[dof] += g * f;
    }
    EXPECT_NEAR_REL(std::vector<double>(d->qfrc_actuator, d->qfrc_actuator + nv), act, kRel,
                    kFloor, "actuator force");
    passive_forces(model, q.data(), v.data(), passive.data());
    EXPECT_NEAR_REL(std::vector<double>(d->qfrc_passive, d->qfrc_passive + nv), passive, kRel, kFloor,
                    "passive force (damping, springs)");
    // H qacc = τ + τ_act + τ_passive − b, with MuJoCo's qacc and our H, b.
    for (int i = 0; i < nv; ++i) {
      lhs[i] = 0;
      for (int j = 0; j < nv; ++j) lhs[i] += H[i * nv + j] * qacc[j];
      rhs[i] = tau[i] + act[i] + passive[i] - b[i];
    }
    EXPECT_NEAR_REL(lhs, rhs, 1e-8, 1e-10, "H qacc");
  }
}

INSTANTIATE_TEST_SUITE_P(Models, MjcfExport,
                         ::testing::Values(&pendulum, &floating_box, &chain, &biped),
                         [](const auto& info) {
                           return std::string(
                               std::array<const char*, 4>{"pendulum", "floating_box", "chain",
                                                          "biped"}[info.index]);
                         });

// Non-zero default positions become MuJoCo joint `ref`s with moved body frames: MuJoCo must
// see the same kinematics and dynamics as with zero defaults, only a different qpos0.
TEST(MjcfExport, DefaultQposOnlyMovesQpos0) {
  RobotSpec spec = chain();
  const Model with = compile(spec);
  spec.default_qpos.clear();
  const Model without = compile(spec);
  MjRef a(export_mjcf(with)), b(export_mjcf(without));
  EXPECT_NE(a.m->qpos0[0], b.m->qpos0[0]);
  std::mt19937 rng(7);
  std::vector<double> q(with.nq), v(with.nv);
  for (int trial = 0; trial < 20; ++trial) {
    random_state(with, rng, q.data(), v.data());
    EXPECT_NEAR_REL(a.mass_matrix(q.data()), b.mass_matrix(q.data()), kRel, kFloor, "H");
    EXPECT_NEAR_REL(a.d->xpos, b.d->xpos, 3 * a.m->nbody, kRel, kFloor, "xpos");
    EXPECT_NEAR_REL(a.d->xmat, b.d->xmat, 9 * a.m->nbody, kRel, kFloor, "xmat");
    EXPECT_NEAR_REL(a.bias(q.data(), v.data()), b.bias(q.data(), v.data()), kRel, kFloor, "bias");
  }
}

TEST(MjcfExport, EscapesNames) {
  RobotSpec s = pendulum();
  s.bodies[0].name = "a<b>&\"c\"";
  s.actuators[0].joint = s.bodies[0].name;
  MjRef ref(export_mjcf(compile(s)));
  EXPECT_STREQ(mj_id2name(ref.m, mjOBJ_BODY, 1), "a<b>&\"c\"");
}

TEST(MjRef, LoadsFileWithIncludes) {
  MjRef ref = MjRef::from_file(refdata("dm_control_cartpole/cartpole.xml"));
  EXPECT_EQ(ref.nq(), 2);
  EXPECT_EQ(ref.nv(), 2);
}

TEST(MjRef, ReportsMuJoCoErrors) {
  try {
    MjRef bad("<mujoco><worldbody><body><joint type=\"nonsense\"/></body></worldbody></mujoco>");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("MuJoCo"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moreau::test
