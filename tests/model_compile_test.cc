// compile(): fixed-body merging, ordering, addresses, contacts and every validation error.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include <Eigen/Dense>
#include <gtest/gtest.h>

#include "moreau/dynamics.h"
#include "moreau/model.h"
#include "support/test_util.h"

namespace moreau {
namespace {

using Vec3 = Eigen::Vector3d;
using Mat3 = Eigen::Matrix3d;
using Quat = Eigen::Quaterniond;

std::array<double, 6> diag_inertia(double a, double b, double c) { return {a, b, c, 0, 0, 0}; }

BodySpec body(const std::string& name, const std::string& parent, JointType type, double mass = 1) {
  BodySpec b;
  b.name = name;
  b.parent = parent;
  b.joint.type = type;
  b.joint.axis = {0, 1, 0};
  b.mass = mass;
  b.inertia = mass > 0 ? diag_inertia(0.01, 0.02, 0.025) : std::array<double, 6>{};
  return b;
}

// A valid two-body spec: free base, revolute arm with a position actuator, a sphere contact.
RobotSpec base_spec() {
  RobotSpec spec;
  spec.name = "test";
  spec.source = "test.json";
  BodySpec base = body("base", "world", JointType::Free, 2);
  base.pos = {0, 0, 1};
  base.where = "$.bodies[0]";
  BodySpec arm = body("arm", "base", JointType::Revolute, 1);
  arm.joint.name = "shoulder";
  arm.joint.limited = true;
  arm.joint.range = {-1, 1};
  arm.where = "$.bodies[1]";
  ContactSpec foot;
  foot.name = "foot";
  foot.pos = {0, 0, -0.5};
  foot.radius = 0.02;
  arm.contacts.push_back(foot);
  spec.bodies = {base, arm};
  ActuatorSpec act;
  act.name = "shoulder";
  act.joint = "shoulder";
  act.kp = 10;
  act.kd = 1;
  act.where = "$.actuators[0]";
  spec.actuators = {act};
  return spec;
}

Mat3 to_mat(const std::array<double, 6>& i) {
  Mat3 m;
  m << i[0], i[3], i[4], i[3], i[1], i[5], i[4], i[5], i[2];
  return m;
}

std::array<double, 6> to_array(const Mat3& m) {
  return {m(0, 0), m(1, 1), m(2, 2), m(0, 1), m(0, 2), m(1, 2)};
}

Quat random_quat(std::mt19937& rng) {
  std::normal_distribution<double> n;
  return Quat(n(rng), n(rng), n(rng), n(rng)).normalized();
}

Vec3 random_vec(std::mt19937& rng, double scale) {
  std::uniform_real_distribution<double> u(-scale, scale);
  return Vec3(u(rng), u(rng), u(rng));
}

// A physical inertia: R diag(a, b, c) Rᵀ with a + b >= c.
Mat3 random_inertia(std::mt19937& rng) {
  std::uniform_real_distribution<double> u(0.01, 0.1);
  const double a = u(rng), b = u(rng);
  const double c = std::uniform_real_distribution<double>(std::abs(a - b), a + b)(rng);
  const Mat3 r = random_quat(rng).toRotationMatrix();
  return r * Vec3(a, b, c).asDiagonal() * r.transpose();
}

void set_pose(BodySpec& b, const Vec3& p, const Quat& q) {
  b.pos = {p.x(), p.y(), p.z()};
  b.quat = {q.w(), q.x(), q.y(), q.z()};
}

void set_mass(BodySpec& b, double m, const Vec3& com, const Mat3& inertia) {
  b.mass = m;
  b.com = {com.x(), com.y(), com.z()};
  b.inertia = to_array(inertia);
}

void expect_near(const Vec3& a, const Vec3& b, double tol, const std::string& what) {
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(a[k], b[k], tol) << what << "[" << k << "]";
}

Vec3 body_vec(const std::vector<double>& v, int i) { return Vec3(v[3 * i], v[3 * i + 1], v[3 * i + 2]); }

// A chain arm (revolute) <- plate (fixed) <- sensor (fixed) <- hand (revolute), with contacts
// on the fixed bodies, compiles to arm + hand with the mass properties summed about the
// combined com, computed here independently through inertias about the arm origin.
TEST(ModelCompile, FixedChainMergesMassComInertiaAndContacts) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    RobotSpec spec;
    spec.source = "merge";
    BodySpec arm = body("arm", "world", JointType::Revolute);
    BodySpec plate = body("plate", "arm", JointType::Fixed);
    BodySpec sensor = body("sensor", "plate", JointType::Fixed);
    BodySpec hand = body("hand", "sensor", JointType::Revolute);
    const Vec3 p1 = random_vec(rng, 0.5), p2 = random_vec(rng, 0.5), p3 = random_vec(rng, 0.5);
    const Quat q1 = random_quat(rng), q2 = random_quat(rng), q3 = random_quat(rng);
    set_pose(plate, p1, q1);
    set_pose(sensor, p2, q2);
    set_pose(hand, p3, q3);
    const double m0 = 1.5, m1 = 0.7, m2 = 0.3;
    const Vec3 c0 = random_vec(rng, 0.2), c1 = random_vec(rng, 0.2), c2 = random_vec(rng, 0.2);
    const Mat3 i0 = random_inertia(rng), i1 = random_inertia(rng), i2 = random_inertia(rng);
    set_mass(arm, m0, c0, i0);
    set_mass(plate, m1, c1, i1);
    set_mass(sensor, m2, c2, i2);
    ContactSpec c;
    c.name = "tip";
    c.pos = {0.1, 0.2, 0.3};
    c.radius = 0.01;
    sensor.contacts.push_back(c);
    spec.bodies = {arm, plate, sensor, hand};

    const Model m = compile(spec);
    ASSERT_EQ(m.nbody, 2);
    EXPECT_EQ(m.body_name, (std::vector<std::string>{"arm", "hand"}));
    EXPECT_EQ(m.body_parent, (std::vector<int>{-1, 0}));

    // Poses of plate and sensor frames in the arm frame.
    const Mat3 r1 = q1.toRotationMatrix(), r2 = (q1 * q2).toRotationMatrix();
    const Vec3 o1 = p1, o2 = p1 + r1 * p2;
    // Inertia about the arm origin: Σ (R I Rᵀ + m (|c|² E − c cᵀ)) with c the com in the arm frame.
    auto about_origin = [](double mass, const Vec3& com, const Mat3& inertia) {
      return Mat3(inertia + mass * (com.squaredNorm() * Mat3::Identity() - com * com.transpose()));
    };
    const Vec3 w0 = c0, w1 = o1 + r1 * c1, w2 = o2 + r2 * c2;
    const double mass = m0 + m1 + m2;
    const Vec3 com = (m0 * w0 + m1 * w1 + m2 * w2) / mass;
    const Mat3 origin = about_origin(m0, w0, i0) + about_origin(m1, w1, r1 * i1 * r1.transpose()) +
                        about_origin(m2, w2, r2 * i2 * r2.transpose());
    const Mat3 expected = origin - mass * (com.squaredNorm() * Mat3::Identity() - com * com.transpose());

    EXPECT_NEAR(m.body_mass[0], mass, 1e-12);
    expect_near(body_vec(m.body_com, 0), com, 1e-12, "com");
    const Mat3 got = to_mat({m.body_inertia[0], m.body_inertia[1], m.body_inertia[2], m.body_inertia[3],
                             m.body_inertia[4], m.body_inertia[5]});
    EXPECT_LT((got - expected).norm(), 1e-12 * expected.norm()) << "trial " << trial << "\n" << got << "\n" << expected;

    // The hand is re-parented to the arm with its placement composed through both fixed frames.
    const Vec3 hand_pos = o2 + r2 * p3;
    const Quat hand_quat = q1 * q2 * q3;
    expect_near(body_vec(m.body_pos, 1), hand_pos, 1e-12, "hand pos");
    const Quat got_quat(m.body_quat[4], m.body_quat[5], m.body_quat[6], m.body_quat[7]);
    EXPECT_NEAR(std::abs(got_quat.dot(hand_quat)), 1, 1e-12);

    // The sensor's contact moves to the arm.
    ASSERT_EQ(m.ncon, 1);
    EXPECT_EQ(m.con_body[0], 0);
    EXPECT_EQ(m.con_name[0], "tip");
    expect_near(body_vec(m.con_pos, 0), o2 + r2 * Vec3(0.1, 0.2, 0.3), 1e-12, "contact");
    EXPECT_EQ(m.con_radius[0], 0.01);
  }
}

TEST(ModelCompile, FixedToWorldMakesChildrenRootsAndDropsItsMass) {
  RobotSpec spec;
  spec.source = "weld";
  BodySpec stand = body("stand", "", JointType::Fixed, 5);
  set_pose(stand, Vec3(1, 0, 0), Quat(Eigen::AngleAxisd(M_PI / 2, Vec3::UnitZ())));
  ContactSpec c;
  c.radius = 0.1;
  stand.contacts.push_back(c);
  BodySpec pole = body("pole", "stand", JointType::Revolute);
  set_pose(pole, Vec3(0, 2, 0), Quat::Identity());
  spec.bodies = {stand, pole};
  const Model m = compile(spec);
  ASSERT_EQ(m.nbody, 1);
  EXPECT_EQ(m.body_parent[0], -1);
  expect_near(body_vec(m.body_pos, 0), Vec3(-1, 0, 0), 1e-12, "pole pos");
  EXPECT_NEAR(m.body_quat[0], std::cos(M_PI / 4), 1e-12);
  EXPECT_NEAR(m.body_quat[3], std::sin(M_PI / 4), 1e-12);
  EXPECT_EQ(m.total_mass(), 1);
  EXPECT_EQ(m.ncon, 0);
  ASSERT_EQ(m.warnings.size(), 2u);
  EXPECT_NE(m.warnings[0].find("'stand': fixed to the world; its mass 5 is static and dropped"), std::string::npos);
  EXPECT_NE(m.warnings[1].find("'stand': fixed to the world; its 1 contact(s) are dropped"), std::string::npos);
}

// Bodies listed out of order compile in depth-first preorder, children in spec order.
TEST(ModelCompile, PreorderAddressesAndDofParents) {
  RobotSpec spec;
  spec.source = "tree";
  BodySpec b1 = body("b1", "base", JointType::Ball);
  BodySpec b2 = body("b2", "b1", JointType::Prismatic);
  BodySpec c1 = body("c1", "base", JointType::Revolute);
  BodySpec base = body("base", "world", JointType::Free);
  set_pose(base, Vec3(0.1, 0.2, 0.3), Quat(2, 0, 0, 2));
  BodySpec rail = body("rail", "world", JointType::Prismatic);
  spec.bodies = {b2, c1, b1, rail, base};
  spec.default_qpos = {{"b2", 0.25}, {"rail", -0.5}};

  // Roots in spec order (rail, base), then each subtree depth-first.
  const Model m = compile(spec);
  EXPECT_EQ(m.body_name, (std::vector<std::string>{"rail", "base", "c1", "b1", "b2"}));
  EXPECT_EQ(m.body_parent, (std::vector<int>{-1, -1, 1, 1, 3}));
  EXPECT_EQ(m.jnt_qposadr, (std::vector<int>{0, 1, 8, 9, 13}));
  EXPECT_EQ(m.jnt_dofadr, (std::vector<int>{0, 1, 7, 8, 11}));
  EXPECT_EQ(m.nq, 14);
  EXPECT_EQ(m.nv, 12);
  EXPECT_EQ(m.dof_body, (std::vector<int>{0, 1, 1, 1, 1, 1, 1, 2, 3, 3, 3, 4}));
  EXPECT_EQ(m.dof_parent, (std::vector<int>{-1, -1, 1, 2, 3, 4, 5, 6, 6, 8, 9, 10}));
  // the mass matrix's sparse rows: each dof's ancestors and itself (two roots, two branches)
  EXPECT_EQ(m.dof_depth, (std::vector<int>{0, 0, 1, 2, 3, 4, 5, 6, 6, 7, 8, 9}));
  EXPECT_EQ(m.dof_Madr, (std::vector<int>{0, 1, 2, 4, 7, 11, 16, 22, 29, 36, 44, 53}));
  EXPECT_EQ(m.nM, 63);
  EXPECT_EQ(m.nchain, 10);  // b2's last dof: the base's 6, b1's 3 and its own
  // each row's dofs: ancestors root-first, then the dof (b1's dof 7 and b2's 8 share 1..6)
  EXPECT_EQ(m.M_colind, (std::vector<int>{0, 1, 1, 2, 1, 2, 3, 1, 2, 3, 4, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 6,
                                          1, 2, 3, 4, 5, 6, 7, 1, 2, 3, 4, 5, 6, 8, 1, 2, 3, 4, 5, 6, 8, 9,
                                          1, 2, 3, 4, 5, 6, 8, 9, 10, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11}));
  // Free body: frame at the identity, pose in qpos0 with the quaternion normalised.
  for (int k = 3; k < 6; ++k) EXPECT_EQ(m.body_pos[k], 0);
  EXPECT_EQ(m.body_quat[4], 1);
  const double s = std::sqrt(0.5);
  const std::vector<double> qpos0{-0.5, 0.1, 0.2, 0.3, s, 0, 0, s, 0, 1, 0, 0, 0, 0.25};
  ASSERT_EQ(m.qpos0.size(), qpos0.size());
  for (size_t i = 0; i < qpos0.size(); ++i) EXPECT_NEAR(m.qpos0[i], qpos0[i], 1e-15) << i;
  EXPECT_EQ(m.body_index("b2"), 4);
  EXPECT_EQ(m.joint_index("c1"), 2);
  EXPECT_EQ(m.body_index("nope"), -1);
}

TEST(ModelCompile, JointsActuatorsAndGlobalsAreCopied) {
  RobotSpec spec = base_spec();
  spec.gravity = {0, 0, -3};
  spec.timestep = 0.002;
  spec.decimation = 5;
  spec.bodies[1].joint.axis = {0, 0, 2};
  spec.bodies[1].joint.pos = {0.1, 0, 0};
  spec.bodies[1].joint.damping = 0.5;
  spec.bodies[1].joint.armature = 0.01;
  spec.bodies[1].joint.frictionloss = 0.1;
  ActuatorSpec& a = spec.actuators[0];
  a.type = ActuatorType::Motor;
  a.gear = -2;
  a.ctrl_limited = true;
  a.ctrl_range = {-1, 1};
  a.force_limited = true;
  a.force_range = {-80, 70};
  a.peak_force = 100;
  a.max_velocity = 7.5;

  const Model m = compile(spec);
  EXPECT_EQ(m.gravity[2], -3);
  EXPECT_EQ(m.timestep, 0.002);
  EXPECT_EQ(m.decimation, 5);
  EXPECT_EQ(m.name, "test");
  EXPECT_EQ(m.source, "test.json");
  EXPECT_EQ(m.jnt_name, (std::vector<std::string>{"base", "shoulder"}));
  EXPECT_EQ(m.jnt_axis, (std::vector<double>{0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(m.jnt_pos[3], 0.1);
  EXPECT_EQ(m.jnt_limited, (std::vector<int>{0, 1}));
  EXPECT_EQ(m.jnt_range, (std::vector<double>{0, 0, -1, 1}));
  EXPECT_EQ(m.dof_damping[6], 0.5);
  EXPECT_EQ(m.dof_armature[6], 0.01);
  EXPECT_EQ(m.dof_damping[0], 0);
  EXPECT_EQ(m.dof_frictionloss[6], 0.1);
  EXPECT_EQ(m.dof_frictionloss[0], 0);
  EXPECT_TRUE(m.warnings.empty());
  EXPECT_EQ(joint_rows(m), 2);  // the shoulder's limit and friction loss

  ASSERT_EQ(m.nu, 1);
  EXPECT_EQ(m.actuator_type[0], static_cast<int>(ActuatorType::Motor));
  EXPECT_EQ(m.actuator_dof[0], 6);
  EXPECT_EQ(m.actuator_qposadr[0], 7);
  EXPECT_EQ(m.actuator_gear[0], -2);
  EXPECT_EQ(m.actuator_kp[0], 10);
  EXPECT_EQ(m.actuator_kd[0], 1);
  EXPECT_EQ(m.actuator_ctrllimited[0], 1);
  EXPECT_EQ(m.actuator_forcerange, (std::vector<double>{-80, 70}));
  EXPECT_EQ(m.actuator_peakforce[0], 100);
  EXPECT_EQ(m.actuator_maxvel[0], 7.5);
  EXPECT_EQ(m.actuator_index("shoulder"), 0);
}

// A cylinder's contact points are its two end circles, kRimPoints each, radius 0:
// pos + R (r cos θᵢ, r sin θᵢ, ∓b), θᵢ = 2π i / n (rim0..rim7 at −b, rim8..rim15 at +b).
TEST(ModelCompile, CylinderBecomesItsRimPoints) {
  RobotSpec spec = base_spec();
  ContactSpec cyl;
  cyl.kind = ContactSpec::Kind::Cylinder;
  cyl.name = "shank";
  cyl.pos = {0.1, -0.2, 0.3};
  const Quat q(Eigen::AngleAxisd(0.7, Vec3(1, -2, 0.5).normalized()));
  cyl.quat = {q.w(), q.x(), q.y(), q.z()};
  cyl.radius = 0.04;
  cyl.half_length = 0.15;
  spec.bodies[0].contacts.push_back(cyl);

  const Model m = compile(spec);
  const int n = ContactSpec::kRimPoints;
  ASSERT_EQ(m.ncon, 1 + 2 * n);
  const Mat3 r = q.toRotationMatrix();
  const Vec3 axis = r.col(2), centre(0.1, -0.2, 0.3);
  for (int k = 0; k < 2 * n; ++k) {
    EXPECT_EQ(m.con_name[k], "shank/rim" + std::to_string(k));
    EXPECT_EQ(m.con_radius[k], 0);
    const Vec3 d = body_vec(m.con_pos, k) - centre;
    EXPECT_NEAR(d.dot(axis), k < n ? -0.15 : 0.15, 1e-14) << k;           // on an end plane
    EXPECT_NEAR((d - d.dot(axis) * axis).norm(), 0.04, 1e-14) << k;        // on the rim
    const Vec3 local = r.transpose() * d;
    const double th = 2 * M_PI * (k % n) / n;
    EXPECT_NEAR(local.x(), 0.04 * std::cos(th), 1e-14) << k;
    EXPECT_NEAR(local.y(), 0.04 * std::sin(th), 1e-14) << k;
  }
}

TEST(ModelCompile, BoxBecomesEightCorners) {
  RobotSpec spec = base_spec();
  ContactSpec box;
  box.kind = ContactSpec::Kind::Box;
  box.name = "shell";
  box.pos = {0.1, 0.2, 0.3};
  const Quat q(Eigen::AngleAxisd(0.3, Vec3(1, 2, 3).normalized()));
  box.quat = {q.w(), q.x(), q.y(), q.z()};
  box.half_size = {0.05, 0.1, 0.2};
  spec.bodies[0].contacts.push_back(box);

  const Model m = compile(spec);
  ASSERT_EQ(m.ncon, 9);
  const Mat3 r = q.toRotationMatrix();
  for (int k = 0; k < 8; ++k) {
    EXPECT_EQ(m.con_name[k], "shell/corner" + std::to_string(k));
    EXPECT_EQ(m.con_body[k], 0);
    EXPECT_EQ(m.con_radius[k], 0);
    const Vec3 local((k & 1 ? 0.05 : -0.05), (k & 2 ? 0.1 : -0.1), (k & 4 ? 0.2 : -0.2));
    expect_near(body_vec(m.con_pos, k), Vec3(0.1, 0.2, 0.3) + r * local, 1e-14, "corner " + std::to_string(k));
  }
  // Every corner is distinct and the box centre is their mean.
  Vec3 mean = Vec3::Zero();
  for (int k = 0; k < 8; ++k) mean += body_vec(m.con_pos, k) / 8;
  expect_near(mean, Vec3(0.1, 0.2, 0.3), 1e-14, "centre");
  EXPECT_EQ(m.con_name[8], "foot");
  EXPECT_EQ(m.con_body[8], 1);
}

// ANYmal C from menagerie values: 13 bodies in MJCF order, floating base, 12 hinges.
TEST(ModelCompile, AnymalOrderAddressesAndDofParents) {
  const Model m = load_model(std::string(MOREAU_ASSETS_DIR) + "/robots/anymal_c.json");
  EXPECT_EQ(m.nq, 19);
  EXPECT_EQ(m.nv, 18);
  EXPECT_EQ(m.nu, 12);
  EXPECT_EQ(m.nbody, 13);
  EXPECT_EQ(m.ncon, 4);
  EXPECT_EQ(m.decimation, 4);
  EXPECT_EQ(m.timestep, 0.005);
  // base 19.2035 kg + 4 legs × (hip 2.781 + thigh 3.071 + shank 0.58842)
  EXPECT_NEAR(m.total_mass(), 19.2035 + 4 * (2.781 + 3.071 + 0.58842), 1e-12);

  const std::vector<std::string> legs{"LF", "RF", "LH", "RH"};
  for (int leg = 0; leg < 4; ++leg) {
    SCOPED_TRACE(legs[leg]);
    const int hip = 1 + 3 * leg;
    EXPECT_EQ(m.body_name[hip], legs[leg] + "_HIP");
    EXPECT_EQ(m.body_name[hip + 1], legs[leg] + "_THIGH");
    EXPECT_EQ(m.body_name[hip + 2], legs[leg] + "_SHANK");
    EXPECT_EQ(m.body_parent[hip], 0);
    EXPECT_EQ(m.body_parent[hip + 1], hip);
    EXPECT_EQ(m.body_parent[hip + 2], hip + 1);
    for (int j = 0; j < 3; ++j) {
      EXPECT_EQ(m.jnt_qposadr[hip + j], 7 + 3 * leg + j);
      EXPECT_EQ(m.jnt_dofadr[hip + j], 6 + 3 * leg + j);
      EXPECT_EQ(m.dof_body[6 + 3 * leg + j], hip + j);
      EXPECT_EQ(m.dof_parent[6 + 3 * leg + j], j == 0 ? 5 : 6 + 3 * leg + j - 1);
      EXPECT_EQ(m.actuator_dof[3 * leg + j], 6 + 3 * leg + j);
      EXPECT_EQ(m.actuator_qposadr[3 * leg + j], 7 + 3 * leg + j);
    }
    EXPECT_EQ(m.jnt_name[hip], legs[leg] + "_HAA");
    EXPECT_EQ(m.con_body[leg], hip + 2);
    EXPECT_EQ(m.con_radius[leg], 0.03);
    EXPECT_EQ(m.dof_damping[6 + 3 * leg], 0);
    // default pose: HAA 0, HFE ±0.4, KFE ∓0.8 (front +/−, hind −/+)
    const double sign = leg < 2 ? 1 : -1;
    EXPECT_EQ(m.qpos0[7 + 3 * leg], 0);
    EXPECT_EQ(m.qpos0[8 + 3 * leg], 0.4 * sign);
    EXPECT_EQ(m.qpos0[9 + 3 * leg], -0.8 * sign);
  }
  EXPECT_EQ(m.dof_parent[0], -1);
  for (int d = 1; d < 6; ++d) EXPECT_EQ(m.dof_parent[d], d - 1);
  // the mass matrix's sparse rows: the base's 1 + ... + 6, each leg's 7 + 8 + 9 (117 of 324 entries)
  EXPECT_EQ(m.nM, 117);
  EXPECT_EQ(m.nchain, 9);  // a foot's contact rows: the base's 6 dofs and its leg's 3
  for (int d = 0; d < m.nv; ++d) EXPECT_EQ(m.dof_depth[d], d < 6 ? d : 6 + (d - 6) % 3);
  for (int d = 1; d < m.nv; ++d) EXPECT_EQ(m.dof_Madr[d], m.dof_Madr[d - 1] + m.dof_depth[d - 1] + 1);
  ASSERT_EQ(m.M_colind.size(), 117u);
  for (int d = 0; d < m.nv; ++d)  // row d's entries name d and its ancestors, each at its depth
    for (int j = d; j >= 0; j = m.dof_parent[j]) EXPECT_EQ(m.M_colind[m.dof_Madr[d] + m.dof_depth[j]], j) << d;
  const std::vector<double> base_q{0, 0, 0.6, 1, 0, 0, 0};
  for (int k = 0; k < 7; ++k) EXPECT_EQ(m.qpos0[k], base_q[k]);
  for (int b = 0; b < m.nbody; ++b) {
    const Quat q(m.body_quat[4 * b], m.body_quat[4 * b + 1], m.body_quat[4 * b + 2], m.body_quat[4 * b + 3]);
    EXPECT_NEAR(q.norm(), 1, 1e-15) << m.body_name[b];
  }
  EXPECT_EQ(m.jnt_axis[3 * m.joint_index("RF_HFE")], -1);
  EXPECT_EQ(m.jnt_range[2 * m.joint_index("RF_HAA")], -0.49);
  EXPECT_EQ(m.actuator_forcerange[1], 80);
  EXPECT_EQ(m.actuator_kp[0], 80);
  EXPECT_EQ(m.actuator_kd[0], 2);
}

// Each case breaks one rule of a valid spec; the message must name the source, the place,
// what was expected and what was found.
struct BadCase {
  const char* label;
  std::function<void(RobotSpec&)> mutate;
  std::vector<std::string> expected;  // substrings of the message
};

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

std::vector<BadCase> bad_cases() {
  auto arm = [](RobotSpec& s) -> BodySpec& { return s.bodies[1]; };
  auto act = [](RobotSpec& s) -> ActuatorSpec& { return s.actuators[0]; };
  auto chain = [](int n) {
    RobotSpec s;
    s.source = "big.json";
    for (int i = 0; i < n; ++i) s.bodies.push_back(body("b" + std::to_string(i), i ? "b" + std::to_string(i - 1) : "world", JointType::Ball));
    return s;
  };
  return {
      {"nan pos", [&](RobotSpec& s) { arm(s).pos[1] = kNaN; }, {"test.json: $.bodies[1].pos[1]: expected a finite number, got nan"}},
      {"inf mass", [&](RobotSpec& s) { arm(s).mass = kInf; }, {"test.json: $.bodies[1].mass: expected a finite number, got inf"}},
      {"nan inertia", [&](RobotSpec& s) { arm(s).inertia[4] = kNaN; }, {"$.bodies[1].inertia[4]: expected a finite number, got nan"}},
      {"nan com", [&](RobotSpec& s) { arm(s).com[0] = -kInf; }, {"$.bodies[1].com[0]: expected a finite number, got -inf"}},
      {"nan quat", [&](RobotSpec& s) { arm(s).quat[0] = kNaN; }, {"$.bodies[1].quat[0]: expected a finite number, got nan"}},
      {"nan axis", [&](RobotSpec& s) { arm(s).joint.axis[2] = kNaN; }, {"$.bodies[1].joint.axis[2]: expected a finite number, got nan"}},
      {"nan range", [&](RobotSpec& s) { arm(s).joint.range[0] = kNaN; }, {"$.bodies[1].joint.range[0]: expected a finite number, got nan"}},
      {"nan damping", [&](RobotSpec& s) { arm(s).joint.damping = kNaN; }, {"$.bodies[1].joint.damping: expected a finite number, got nan"}},
      {"negative stiffness", [&](RobotSpec& s) { arm(s).joint.stiffness = -1; }, {"$.bodies[1].joint.stiffness: expected a number >= 0, got -1"}},
      {"nan springref", [&](RobotSpec& s) { arm(s).joint.springref = kNaN; }, {"$.bodies[1].joint.springref: expected a finite number, got nan"}},
      {"free-joint spring", [](RobotSpec& s) { s.bodies[0].joint.stiffness = 2; }, {"$.bodies[0].joint.stiffness: expected 0 on a free joint (springs act on revolute and prismatic joints), got 2"}},
      {"nan contact", [&](RobotSpec& s) { arm(s).contacts[0].radius = kInf; }, {"$.bodies[1].contacts[0].radius: expected a finite number, got inf"}},
      {"nan gravity", [](RobotSpec& s) { s.gravity[2] = kNaN; }, {"test.json: gravity[2]: expected a finite number, got nan"}},
      {"inf gear", [&](RobotSpec& s) { act(s).gear = kInf; }, {"$.actuators[0].gear: expected a finite number, got inf"}},
      {"nan kp", [&](RobotSpec& s) { act(s).kp = kNaN; }, {"$.actuators[0].kp: expected a finite number, got nan"}},
      {"nan default", [](RobotSpec& s) { s.default_qpos = {{"shoulder", kNaN}}; }, {"default_qpos.shoulder: expected a finite number, got nan"}},
      {"no bodies", [](RobotSpec& s) { s.bodies.clear(); s.actuators.clear(); }, {"test.json: bodies: expected at least one body, got none"}},
      {"timestep", [](RobotSpec& s) { s.timestep = 0; }, {"test.json: timestep: expected a finite number > 0, got 0"}},
      {"decimation", [](RobotSpec& s) { s.decimation = 0; }, {"test.json: decimation: expected an integer >= 1, got 0"}},
      {"empty name", [&](RobotSpec& s) { arm(s).name = ""; }, {"$.bodies[1].name: expected a non-empty name other than 'world', got ''"}},
      {"duplicate body", [&](RobotSpec& s) { arm(s).name = "base"; arm(s).parent = "world"; },
       {"test.json: $.bodies[1].name: expected a unique body name, got 'base' (also $.bodies[0])"}},
      {"duplicate joint", [&](RobotSpec& s) { arm(s).joint.name = "base"; },
       {"test.json: $.bodies[1].joint.name: expected a unique joint name, got 'base' (also $.bodies[0])"}},
      {"dangling parent", [&](RobotSpec& s) { arm(s).parent = "bsae"; },
       {"test.json: $.bodies[1].parent: expected 'world' or the name of a body, got 'bsae'"}},
      {"cycle", [](RobotSpec& s) {
         s.bodies.push_back(body("x", "y", JointType::Revolute));
         s.bodies.push_back(body("y", "x", JointType::Revolute));
       },
       {"test.json: body 'x'.parent: expected a chain of parents that ends at 'world', got a cycle 'x' -> 'y' -> 'x'"}},
      {"free not root", [&](RobotSpec& s) { arm(s).joint.type = JointType::Free; },
       {"test.json: $.bodies[1].parent: expected 'world' for a body with a free joint, got 'base'"}},
      {"negative mass", [&](RobotSpec& s) { arm(s).mass = -1; }, {"test.json: $.bodies[1].mass: expected a number >= 0, got -1"}},
      {"zero mass moving", [&](RobotSpec& s) { arm(s).mass = 0; arm(s).inertia = {}; },
       {"test.json: $.bodies[1].mass: expected a number > 0 for a moving body (with its merged fixed children), or 0 "
        "with zero inertia when a body below it has mass, got 0"}},
      {"massless fixed with inertia", [&](RobotSpec& s) { arm(s).joint.type = JointType::Fixed; arm(s).mass = 0; },
       {"$.bodies[1].inertia: expected zeros for a body of mass 0, got [0.01, 0.02, 0.025, 0, 0, 0]"}},
      {"not positive definite", [&](RobotSpec& s) { arm(s).inertia = {0.01, 0.02, 0.025, 0.05, 0, 0}; },
       {"test.json: $.bodies[1].inertia: expected a positive definite matrix, got principal moments ["}},
      {"triangle inequality", [&](RobotSpec& s) { arm(s).inertia = diag_inertia(0.01, 0.02, 0.031); },
       {"test.json: $.bodies[1].inertia: expected principal moments satisfying A + B >= C, got [0.01, 0.02, 0.031]"}},
      {"zero axis", [&](RobotSpec& s) { arm(s).joint.axis = {0, 0, 0}; },
       {"test.json: $.bodies[1].joint.axis: expected a non-zero axis, got [0, 0, 0]"}},
      {"zero quat", [&](RobotSpec& s) { arm(s).quat = {0, 0, 0, 0}; },
       {"test.json: $.bodies[1].quat: expected a non-zero quaternion (w, x, y, z), got [0, 0, 0, 0]"}},
      {"range", [&](RobotSpec& s) { arm(s).joint.range = {1, -1}; },
       {"test.json: $.bodies[1].joint.range: expected lower <= upper, got [1, -1]"}},
      {"damping", [&](RobotSpec& s) { arm(s).joint.damping = -0.1; }, {"$.bodies[1].joint.damping: expected a number >= 0, got -0.1"}},
      {"armature", [&](RobotSpec& s) { arm(s).joint.armature = -1; }, {"$.bodies[1].joint.armature: expected a number >= 0, got -1"}},
      {"sphere radius", [&](RobotSpec& s) { arm(s).contacts[0].radius = -0.01; },
       {"test.json: $.bodies[1].contacts[0].radius: expected a number >= 0, got -0.01"}},
      {"box half size", [&](RobotSpec& s) {
         arm(s).contacts[0].kind = ContactSpec::Kind::Box;
         arm(s).contacts[0].half_size = {0.1, 0, 0.1};
       },
       {"test.json: $.bodies[1].contacts[0].half_size: expected three half-sizes > 0, got [0.1, 0, 0.1]"}},
      {"box quat", [&](RobotSpec& s) {
         arm(s).contacts[0].kind = ContactSpec::Kind::Box;
         arm(s).contacts[0].half_size = {0.1, 0.1, 0.1};
         arm(s).contacts[0].quat = {0, 0, 0, 0};
       },
       {"$.bodies[1].contacts[0].quat: expected a non-zero quaternion (w, x, y, z), got [0, 0, 0, 0]"}},
      {"cylinder radius", [&](RobotSpec& s) {
         arm(s).contacts[0].kind = ContactSpec::Kind::Cylinder;
         arm(s).contacts[0].radius = 0;
         arm(s).contacts[0].half_length = 0.1;
       },
       {"test.json: $.bodies[1].contacts[0].radius: expected a radius > 0, got 0"}},
      {"cylinder half length", [&](RobotSpec& s) {
         arm(s).contacts[0].kind = ContactSpec::Kind::Cylinder;
         arm(s).contacts[0].radius = 0.05;
       },
       {"test.json: $.bodies[1].contacts[0].half_length: expected a half-length > 0, got 0"}},
      {"actuator joint missing", [&](RobotSpec& s) { act(s).joint = "elbow"; },
       {"test.json: $.actuators[0].joint: expected the name of a revolute or prismatic joint, got 'elbow' (no such joint)"}},
      {"actuator on free joint", [&](RobotSpec& s) { act(s).joint = "base"; },
       {"$.actuators[0].joint: expected the name of a revolute or prismatic joint, got 'base' (a free joint)"}},
      {"actuator on fixed joint", [&](RobotSpec& s) {
         s.bodies.push_back(body("tool", "arm", JointType::Fixed));
         act(s).joint = "tool";
       },
       {"$.actuators[0].joint: expected the name of a revolute or prismatic joint, got 'tool' (a fixed joint)"}},
      {"gear", [&](RobotSpec& s) { act(s).gear = 0; }, {"test.json: $.actuators[0].gear: expected a non-zero number, got 0"}},
      {"kp", [&](RobotSpec& s) { act(s).kp = -1; }, {"test.json: $.actuators[0].kp: expected a number >= 0, got -1"}},
      {"kd", [&](RobotSpec& s) { act(s).kd = -2; }, {"test.json: $.actuators[0].kd: expected a number >= 0, got -2"}},
      {"ctrl range", [&](RobotSpec& s) { act(s).ctrl_limited = true; act(s).ctrl_range = {2, 1}; },
       {"test.json: $.actuators[0].ctrl_range: expected lower <= upper, got [2, 1]"}},
      {"force range", [&](RobotSpec& s) { act(s).force_limited = true; act(s).force_range = {80, -80}; },
       {"test.json: $.actuators[0].force_range: expected lower <= upper, got [80, -80]"}},
      {"peak without vmax", [&](RobotSpec& s) {
         act(s).force_limited = true;
         act(s).force_range = {-80, 80};
         act(s).peak_force = 100;
       },
       {"test.json: $.actuators[0].max_velocity: expected a number > 0 when peak_force > 0, got 0"}},
      {"peak without force range", [&](RobotSpec& s) { act(s).peak_force = 100; act(s).max_velocity = 5; },
       {"test.json: $.actuators[0].force_range: expected a force range when peak_force > 0, got none"}},
      {"duplicate actuator", [&](RobotSpec& s) { s.actuators.push_back(act(s)); s.actuators[1].where = "$.actuators[1]"; },
       {"test.json: $.actuators[1].name: expected a unique actuator name, got 'shoulder' (also $.actuators[0])"}},
      {"default qpos unknown", [](RobotSpec& s) { s.default_qpos = {{"elbow", 0.1}}; },
       {"test.json: default_qpos.elbow: expected the name of a revolute or prismatic joint, got 'elbow'"}},
      {"default qpos free", [](RobotSpec& s) { s.default_qpos = {{"base", 0.1}}; },
       {"default_qpos.base: expected the name of a revolute or prismatic joint, got 'base'"}},
      {"where fallback", [&](RobotSpec& s) { arm(s).where = ""; arm(s).mass = -1; },
       {"test.json: body 'arm'.mass: expected a number >= 0, got -1"}},
      {"too many bodies", [&](RobotSpec& s) { s = chain(kMaxBodies + 1); },
       {"big.json: bodies: expected at most 32 moving bodies after merging (kMaxBodies), got 33"}},
      {"too many dofs", [&](RobotSpec& s) { s = chain(14); },
       {"big.json: nv: expected at most 40 degrees of freedom (kMaxNv), got 42"}},
      {"too many coordinates", [&](RobotSpec& s) { s = chain(13); },
       {"big.json: nq: expected at most 48 position coordinates (kMaxNq), got 52"}},
      {"too many actuators", [&](RobotSpec& s) {
         for (int i = 0; i < kMaxNu; ++i) {
           s.actuators.push_back(act(s));
           s.actuators.back().name = "a" + std::to_string(i);
         }
       },
       {"test.json: actuators: expected at most 32 actuators (kMaxNu), got 33"}},
      {"too many contacts", [&](RobotSpec& s) {
         ContactSpec box;
         box.kind = ContactSpec::Kind::Box;
         box.half_size = {0.1, 0.1, 0.1};
         for (int i = 0; i < kMaxContacts / 8; ++i) arm(s).contacts.push_back(box);
       },
       {"test.json: contacts: expected at most 256 contact points (kMaxContacts), got 257"}},
  };
}

TEST(ModelCompile, ValidSpecCompiles) { EXPECT_NO_THROW(compile(base_spec())); }

// A massless moving body is accepted when a body below it has mass (MuJoCo's rule), and the
// chain's mass matrix is then positive definite.
TEST(ModelCompile, MasslessMovingBodyWithMassBelowIsAccepted) {
  RobotSpec spec = base_spec();
  BodySpec slider = body("slider", "world", JointType::Prismatic, 0);
  slider.joint.axis = {1, 0, 0};
  spec.bodies.insert(spec.bodies.begin(), slider);
  spec.bodies[1].parent = "slider";
  spec.bodies[1].joint.type = JointType::Revolute;
  const Model m = compile(spec);
  ASSERT_EQ(m.body_mass[0], 0.0);
  std::vector<double> H(m.nv * m.nv), q(m.qpos0);
  mass_matrix(m, q.data(), H.data());
  Eigen::Map<Eigen::MatrixXd> Hm(H.data(), m.nv, m.nv);
  EXPECT_GT(Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(Hm).eigenvalues().minCoeff(), 0.0);
}

TEST(ModelCompile, EveryValidationErrorNamesSourcePlaceExpectedAndGot) {
  for (const BadCase& c : bad_cases()) {
    RobotSpec spec = base_spec();
    c.mutate(spec);
    try {
      compile(spec);
      ADD_FAILURE() << c.label << ": no error";
    } catch (const Error& e) {
      for (const std::string& s : c.expected)
        EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << c.label << ":\n  got:      " << e.what()
                                                                     << "\n  expected: " << s;
    }
  }
}

// A fixed body may be a point mass or carry an unphysical inertia (warned): only the merged
// body must be physical.
TEST(ModelCompile, FixedBodyInertiaIsCheckedAfterMerging) {
  RobotSpec spec = base_spec();
  BodySpec sensor = body("sensor", "arm", JointType::Fixed, 0.01);
  sensor.inertia = diag_inertia(1e-6, 1e-6, 1e-5);
  BodySpec point = body("point", "arm", JointType::Fixed, 0.01);
  point.inertia = {};
  spec.bodies.push_back(sensor);
  spec.bodies.push_back(point);
  const Model m = compile(spec);
  EXPECT_NEAR(m.body_mass[1], 1.02, 1e-15);
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_EQ(m.warnings[0], "body 'sensor': principal moments [1e-06, 1e-06, 1e-05] violate A + B >= C; "
                           "accepted because the body is fixed and merged");

  spec.bodies[2].inertia = {1e-6, 1e-6, 1e-6, 1e-5, 0, 0};
  try {
    compile(spec);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("body 'sensor'.inertia: expected a positive semi-definite matrix, got principal moments [-9e-06"),
              std::string::npos)
        << e.what();
  }
}

// Principal moments exactly on the triangle inequality (a thin rod or flat plate) are valid.
TEST(ModelCompile, DegenerateButPhysicalInertiaIsAccepted) {
  RobotSpec spec = base_spec();
  spec.bodies[1].inertia = diag_inertia(0.01, 0.02, 0.03);
  EXPECT_NO_THROW(compile(spec));
}

// select_contacts keeps the named points in the order given, with their bodies, positions and
// radii, and leaves everything else as it was; an unknown or repeated name is an error.
TEST(ModelCompile, SelectContactsKeepsTheNamedPointsInOrder) {
  const Model full = load_model(test::asset("anymal_c.json"));
  const Model feet = select_contacts(full, {"RH_FOOT", "LF_FOOT"});
  ASSERT_EQ(feet.ncon, 2);
  for (int a = 0; a < 2; ++a) {
    const int k = static_cast<int>(std::find(full.con_name.begin(), full.con_name.end(), feet.con_name[a]) -
                                   full.con_name.begin());
    EXPECT_EQ(feet.con_body[a], full.con_body[k]);
    EXPECT_EQ(feet.con_radius[a], full.con_radius[k]);
    for (int c = 0; c < 3; ++c) EXPECT_EQ(feet.con_pos[3 * a + c], full.con_pos[3 * k + c]);
  }
  EXPECT_EQ(feet.con_name[0], "RH_FOOT");
  EXPECT_EQ(feet.body_mass, full.body_mass);
  EXPECT_EQ(feet.qpos0, full.qpos0);
  test::expect_error([&] { select_contacts(full, {"LF_FOOT", "NOSE"}); },
                     {"select_contacts: argument 'names': element 1: expected a contact point of", "LF_FOOT, RF_FOOT",
                      "got 'NOSE'"},
                     "unknown point");
  test::expect_error([&] { select_contacts(full, {"LF_FOOT", "LF_FOOT"}); },
                     {"select_contacts: argument 'names': element 1: expected a name not given before, got 'LF_FOOT' again"},
                     "repeated point");
}

}  // namespace
}  // namespace moreau
