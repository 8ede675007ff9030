// URDF importer: the reference files load with the sizes and masses of the refdata table,
// the options (fixed base, contact bodies, default positions, actuators), the ANYmal C URDF
// agrees with the menagerie MJCF on the legs, and each error has its exact message.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <random>
#include <regex>

#include "moreau/dynamics.h"
#include "moreau/import.h"
#include "moreau/model.h"
#include "support/test_util.h"

namespace moreau {
namespace {

using test::refdata;

struct Row {
  const char* file;
  int links, nq, nv, nbody;
  double mass;  // kg, the README table (3 decimals)
};

void PrintTo(const Row& row, std::ostream* os) { *os << row.file; }

const Row kTable[] = {
    {"anymal_c_anybotics_urdf/anymal.urdf", 78, 19, 18, 13, 52.135},
    {"anymal_c_legged_gym/anymal_c.urdf", 77, 19, 18, 13, 52.135},
    {"unitree_go1_unitree_ros/go1.urdf", 46, 19, 18, 13, 13.100},
};

class ImportUrdfTable : public ::testing::TestWithParam<Row> {};

TEST_P(ImportUrdfTable, MatchesTheReadme) {
  const Row& row = GetParam();
  const RobotSpec spec = parse_urdf_file(refdata(row.file));
  EXPECT_EQ(static_cast<int>(spec.bodies.size()), row.links);
  double mass = 0;
  for (const BodySpec& b : spec.bodies) mass += b.mass;
  EXPECT_NEAR(mass, row.mass, 1e-3);  // the README gives 3 decimals, not always rounded
  const Model m = compile(spec);
  EXPECT_EQ(m.nq, row.nq);
  EXPECT_EQ(m.nv, row.nv);
  EXPECT_EQ(m.nbody, row.nbody);
  EXPECT_EQ(m.nu, 12);
  EXPECT_NEAR(m.total_mass(), row.mass, 1e-3);
  EXPECT_LE(m.ncon, kMaxContacts);
}

INSTANTIATE_TEST_SUITE_P(Refdata, ImportUrdfTable, ::testing::ValuesIn(kTable), [](const auto& info) {
  return std::regex_replace(std::string(info.param.file), std::regex("[^A-Za-z0-9]"), "_");
});

TEST(ImportUrdf, AnymalOptionsLikeLeggedGym) {
  UrdfOptions o;
  o.contact_bodies = {"*_FOOT"};
  o.kp = 80;
  o.kd = 2;
  o.default_qpos = {{"LF_HFE", 0.4}, {"LF_KFE", -0.8}};
  const Model m = compile(parse_urdf_file(refdata("anymal_c_legged_gym/anymal_c.urdf"), o));
  ASSERT_EQ(m.ncon, 4);
  for (int k = 0; k < m.ncon; ++k) {
    EXPECT_EQ(m.con_radius[k], 0.03);
    EXPECT_NE(m.body_name[m.con_body[k]].find("SHANK"), std::string::npos);  // FOOT merged into SHANK
  }
  ASSERT_EQ(m.nu, 12);
  for (int a = 0; a < m.nu; ++a) {
    EXPECT_EQ(m.actuator_type[a], int(ActuatorType::Position));
    EXPECT_EQ(m.actuator_kp[a], 80);
    EXPECT_EQ(m.actuator_kd[a], 2);
    EXPECT_TRUE(m.actuator_forcelimited[a]);
    EXPECT_EQ(m.actuator_forcerange[2 * a + 1], 80);  // effort
  }
  EXPECT_EQ(m.qpos0[m.jnt_qposadr[m.joint_index("LF_HFE")]], 0.4);
  EXPECT_EQ(m.qpos0[m.jnt_qposadr[m.joint_index("LF_KFE")]], -0.8);
  // legged_gym's file has no lower/upper: unlimited, with one warning per joint
  for (int j = 1; j < m.nbody; ++j) EXPECT_FALSE(m.jnt_limited[j]) << m.jnt_name[j];
  int warned = 0;
  for (const std::string& w : m.warnings) warned += w.find("has no lower/upper") != std::string::npos;
  EXPECT_EQ(warned, 12);
}

// The ANYbotics ANYmal C URDF: its thigh and shank collision boxes (legged_gym penalises and
// terminates on those contacts) are all kept, by default and when chosen with contact_bodies.
TEST(ImportUrdf, AnymalKeepsItsThighAndShankBoxes) {
  const auto corners = [](const Model& m, const std::string& prefix) {
    int n = 0;
    for (const std::string& c : m.con_name) n += c.rfind(prefix, 0) == 0 && c.find("/corner") != std::string::npos;
    return n;
  };
  const std::string file = refdata("anymal_c_anybotics_urdf/anymal.urdf");
  UrdfOptions legs;
  legs.contact_bodies = {"*_FOOT", "*_thigh_fixed", "*_shank_fixed"};
  const Model all = compile(parse_urdf_file(file)), chosen = compile(parse_urdf_file(file, legs));
  for (const char* leg : {"LF", "RF", "LH", "RH"})
    for (const char* part : {"_thigh_fixed/", "_shank_fixed/"}) {
      EXPECT_EQ(corners(all, leg + std::string(part)), 8) << leg << part;
      EXPECT_EQ(corners(chosen, leg + std::string(part)), 8) << leg << part;
    }
  EXPECT_LE(all.ncon, kMaxContacts);
  // the 4 foot spheres, the 8 leg boxes and the cylinders of the 8 leg links; the feet's own
  // cylinders (4 x 16 points, the deepest level) exceed the cap and are dropped
  EXPECT_EQ(chosen.ncon, 4 + 8 * 8 + 8 * 2 * ContactSpec::kRimPoints);
}

TEST(ImportUrdf, FixedBaseAndMotorActuators) {
  UrdfOptions o;
  o.fixed_base = true;
  const Model m = compile(parse_urdf_file(refdata("anymal_c_anybotics_urdf/anymal.urdf"), o));
  EXPECT_EQ(m.nq, 12);
  EXPECT_EQ(m.nv, 12);
  EXPECT_EQ(m.nbody, 12);  // the fixed base merges into the world
  for (int a = 0; a < m.nu; ++a) EXPECT_EQ(m.actuator_type[a], int(ActuatorType::Motor));
  const int haa = m.joint_index("LF_HAA");
  EXPECT_TRUE(m.jnt_limited[haa]);
  EXPECT_EQ(m.jnt_range[2 * haa], -0.72);
  EXPECT_EQ(m.jnt_range[2 * haa + 1], 0.49);
}

// The ANYmal C URDF and the menagerie MJCF describe the same legs: the same body masses and
// principal inertias, and, with each joint's sign aligned, the same mass matrix outside the
// base block (which the URDF's heavier base changes). The menagerie rounds to 6 digits.
TEST(ImportUrdf, AnymalUrdfAndMjcfAgreeOnTheLegs) {
  const Model u = compile(parse_urdf_file(refdata("anymal_c_anybotics_urdf/anymal.urdf")));
  const Model x = compile(parse_mjcf_file(refdata("anymal_c_menagerie/anymal_c.xml")));
  ASSERT_EQ(u.nv, x.nv);
  std::vector<int> dof_u(x.nv), dof_x(x.nv);
  std::vector<double> sign(x.nv, 1.0);
  std::vector<double> q_u(u.nq), q_x(x.nq), pos_u(3 * u.nbody), quat_u(4 * u.nbody), pos_x(3 * x.nbody),
      quat_x(4 * x.nbody);
  for (double* q : {q_u.data(), q_x.data()}) {
    std::fill(q, q + 19, 0.0);
    q[3] = 1;
  }
  body_poses(u, q_u.data(), pos_u.data(), quat_u.data());
  body_poses(x, q_x.data(), pos_x.data(), quat_x.data());
  auto world_axis = [](const Model& m, const std::vector<double>& quat, int b) {
    const Eigen::Quaterniond r(quat[4 * b], quat[4 * b + 1], quat[4 * b + 2], quat[4 * b + 3]);
    return Eigen::Vector3d(r * Eigen::Vector3d(m.jnt_axis[3 * b], m.jnt_axis[3 * b + 1], m.jnt_axis[3 * b + 2]));
  };
  for (const char* leg : {"LF", "RF", "LH", "RH"}) {
    for (const char* part : {"HIP", "THIGH", "SHANK"}) {
      const std::string name = std::string(leg) + "_" + part;
      SCOPED_TRACE(name);
      const int bu = u.body_index(name), bx = x.body_index(name);
      ASSERT_GE(bu, 0);
      ASSERT_GE(bx, 0);
      EXPECT_NEAR(u.body_mass[bu], x.body_mass[bx], 1e-12);
      auto moments = [](const Model& m, int b) {
        const double* i = &m.body_inertia[6 * b];
        Eigen::Matrix3d I;
        I << i[0], i[3], i[4], i[3], i[1], i[5], i[4], i[5], i[2];
        return Eigen::Vector3d(Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d>(I).eigenvalues());
      };
      EXPECT_TRUE(moments(u, bu).isApprox(moments(x, bx), 1e-4)) << moments(u, bu).transpose() << " vs "
                                                                 << moments(x, bx).transpose();
      const int d = x.jnt_dofadr[bx];
      dof_x[d] = d;
      dof_u[d] = u.jnt_dofadr[bu];
      sign[d] = world_axis(u, quat_u, bu).dot(world_axis(x, quat_x, bx)) > 0 ? 1 : -1;
      EXPECT_NEAR(std::fabs(world_axis(u, quat_u, bu).dot(world_axis(x, quat_x, bx))), 1, 1e-5);
    }
  }
  for (int d = 0; d < 6; ++d) dof_u[d] = dof_x[d] = d;

  std::mt19937 rng(3);
  std::uniform_real_distribution<double> angle(-1, 1);
  std::vector<double> H_u(u.nv * u.nv), H_x(x.nv * x.nv);
  for (int k = 0; k < 20; ++k) {
    test::random_quat(rng, &q_x[3]);
    std::copy(&q_x[3], &q_x[7], &q_u[3]);
    for (int d = 6; d < x.nv; ++d) {
      q_x[d + 1] = angle(rng);
      q_u[dof_u[d] + 1] = sign[d] * q_x[d + 1];
    }
    mass_matrix(u, q_u.data(), H_u.data());
    mass_matrix(x, q_x.data(), H_x.data());
    double scale = 0;
    for (double h : H_x) scale = std::max(scale, std::fabs(h));
    for (int i = 0; i < x.nv; ++i)
      for (int j = 6; j < x.nv; ++j) {
        const double hu = sign[i] * sign[j] * H_u[dof_u[i] * u.nv + dof_u[j]], hx = H_x[i * x.nv + j];
        EXPECT_NEAR(hu, hx, 2e-4 * std::max(std::fabs(hx), 1e-2)) << "H(" << i << ", " << j << ")";
      }
  }
}

TEST(ImportUrdf, InertialOriginRotatesTheInertia) {
  const RobotSpec s = parse_urdf(R"(<robot name="r"><link name="a">
      <inertial><origin xyz="0.1 0.2 0.3" rpy="0 0 1.5707963267948966"/><mass value="2"/>
        <inertia ixx="1" iyy="2" izz="3" ixy="0" ixz="0" iyz="0"/></inertial></link></robot>)",
                                 "r.urdf");
  ASSERT_EQ(s.bodies.size(), 1u);
  const BodySpec& a = s.bodies[0];
  EXPECT_EQ(a.joint.type, JointType::Free);
  EXPECT_EQ(a.com, (std::array<double, 3>{0.1, 0.2, 0.3}));
  EXPECT_NEAR(a.inertia[0], 2, 1e-12);  // x and y swap under a 90° yaw
  EXPECT_NEAR(a.inertia[1], 1, 1e-12);
  EXPECT_NEAR(a.inertia[2], 3, 1e-12);
  EXPECT_NEAR(a.inertia[3], 0, 1e-12);
}

TEST(ImportUrdf, JointsLimitsDynamicsAndWorldRoot) {
  const RobotSpec s = parse_urdf(R"(<robot name="r">
      <link name="world"/>
      <link name="a"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>
        <collision><origin xyz="0 0 -1"/><geometry><box size="0.2 0.4 0.6"/></geometry></collision></link>
      <link name="b"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>
        <collision><geometry><sphere radius="0.05"/></geometry></collision>
        <collision><geometry><cylinder radius="0.05" length="0.1"/></geometry></collision>
        <collision><geometry><mesh filename="b.stl"/></geometry></collision></link>
      <joint name="slide" type="prismatic"><parent link="world"/><child link="a"/><axis xyz="0 0 2"/>
        <limit effort="10" velocity="1" lower="-0.5" upper="0.5"/><dynamics damping="0.3" friction="0.1"/></joint>
      <joint name="spin" type="continuous"><parent link="a"/><child link="b"/><origin xyz="0 0 1" rpy="1.5707963267948966 0 0"/></joint>
    </robot>)",
                                 "r.urdf");
  ASSERT_EQ(s.bodies.size(), 2u);
  const BodySpec& a = s.bodies[0];
  EXPECT_EQ(a.parent, "world");
  EXPECT_EQ(a.joint.type, JointType::Prismatic);
  EXPECT_EQ(a.joint.axis, (std::array<double, 3>{0, 0, 1}));
  EXPECT_TRUE(a.joint.limited);
  EXPECT_EQ(a.joint.range, (std::array<double, 2>{-0.5, 0.5}));
  EXPECT_EQ(a.joint.damping, 0.3);
  EXPECT_EQ(a.joint.frictionloss, 0.1);
  ASSERT_EQ(a.contacts.size(), 1u);
  EXPECT_EQ(a.contacts[0].kind, ContactSpec::Kind::Box);
  EXPECT_EQ(a.contacts[0].half_size, (std::array<double, 3>{0.1, 0.2, 0.3}));
  const BodySpec& b = s.bodies[1];
  EXPECT_EQ(b.joint.type, JointType::Revolute);
  EXPECT_EQ(b.joint.axis, (std::array<double, 3>{1, 0, 0}));  // URDF default axis
  EXPECT_FALSE(b.joint.limited);
  EXPECT_NEAR(b.quat[0], std::sqrt(0.5), 1e-15);
  EXPECT_NEAR(b.quat[1], std::sqrt(0.5), 1e-15);
  ASSERT_EQ(b.contacts.size(), 2u);
  EXPECT_EQ(b.contacts[1].kind, ContactSpec::Kind::Cylinder);
  EXPECT_EQ(b.contacts[1].radius, 0.05);
  EXPECT_EQ(b.contacts[1].half_length, 0.05);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0], "mesh collisions ignored (moreau's contacts are spheres, boxes and cylinders): 1 on 'b'");
  ASSERT_EQ(s.actuators.size(), 2u);
  EXPECT_TRUE(s.actuators[0].force_limited);
  EXPECT_EQ(s.actuators[0].force_range[1], 10);
  EXPECT_FALSE(s.actuators[1].force_limited);  // continuous without <limit>
}

// ---- errors: exact messages ----------------------------------------------------------------

std::string error_of(const std::string& text) {
  try {
    parse_urdf(text, "r.urdf");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

const std::string kInertial =
    R"(<inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>)";

std::string robot(const std::string& inner) { return "<robot name=\"r\">" + inner + "</robot>"; }
std::string link(const std::string& name, const std::string& inner = kInertial) {
  return "<link name=\"" + name + "\">" + inner + "</link>";
}
std::string joint(const std::string& name, const std::string& parent, const std::string& child,
                  const std::string& type = "fixed", const std::string& inner = "") {
  return "<joint name=\"" + name + "\" type=\"" + type + "\"><parent link=\"" + parent + "\"/><child link=\"" + child +
         "\"/>" + inner + "</joint>";
}

TEST(ImportUrdfErrors, MalformedXml) {
  EXPECT_EQ(error_of("<robot><link name=\"a\"></robot>"), "r.urdf:1: malformed XML (XML_ERROR_MISMATCHED_ELEMENT)");
  EXPECT_EQ(error_of("<mujoco/>"), "r.urdf:1: the root element must be <robot>, got <mujoco>");
  EXPECT_EQ(error_of(robot("")), "r.urdf:1: the robot has no <link>");
}

TEST(ImportUrdfErrors, MissingAttributes) {
  EXPECT_EQ(error_of(robot("<link/>")), "r.urdf:1: <link> needs a 'name' attribute");
  EXPECT_EQ(error_of(robot(link("a") + link("b") +
                           "<joint name=\"j\"><parent link=\"a\"/><child link=\"b\"/></joint>")),
            "r.urdf:1: <joint> needs a 'type' attribute");
  EXPECT_EQ(error_of(robot(link("a", R"(<inertial><mass value="1"/><inertia iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>)"))),
            "r.urdf:1: <inertia> needs a 'ixx' attribute");
  EXPECT_EQ(error_of(robot(link("a", R"(<inertial><mass/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>)"))),
            "r.urdf:1: <mass> needs a 'value' attribute");
  EXPECT_EQ(error_of(robot(link("a") + link("b") + joint("j", "a", "b", "revolute", "<limit lower=\"0\" upper=\"1\"/>"))),
            "r.urdf:1: <limit> needs a 'effort' attribute");
  EXPECT_EQ(error_of(robot(link("a") + link("b") + joint("j", "a", "b", "revolute"))),
            "r.urdf:1: joint 'j' needs a <limit> element");
  EXPECT_EQ(error_of(robot(link("a") + joint("j", "a", "c"))), "r.urdf:1: joint 'j': no link named 'c'");
}

TEST(ImportUrdfErrors, NegativeOrNanInertia) {
  EXPECT_EQ(error_of(robot(link("a", R"(<inertial><mass value="-1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>)"))),
            "r.urdf:1: link 'a': mass must be >= 0, got -1");
  EXPECT_EQ(error_of(robot(link("a", R"(<inertial><mass value="1"/><inertia ixx="-1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>)"))),
            "r.urdf:1: link 'a': inertia ixx, iyy, izz must be >= 0, got -1 1 1");
  EXPECT_EQ(error_of(robot(link("a", R"(<inertial><mass value="1"/><inertia ixx="NaN" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>)"))),
            "r.urdf:1: attribute 'ixx': expected 1 finite number, got 'NaN'");
  EXPECT_EQ(error_of(robot(link("a", R"(<inertial><mass value="nan"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>)"))),
            "r.urdf:1: attribute 'value': expected 1 finite number, got 'nan'");
}

TEST(ImportUrdfErrors, CyclesAndTwoParents) {
  EXPECT_EQ(error_of(robot(link("a") + link("b") + joint("j1", "a", "b") + joint("j2", "b", "a"))),
            "r.urdf: no root link: the joints form a cycle");
  EXPECT_EQ(error_of(robot(link("r") + link("a") + link("b") + joint("j1", "a", "b") + joint("j2", "b", "a"))),
            "r.urdf:1: link 'a' is on a cycle of joints, not below the root 'r'");
  EXPECT_EQ(error_of(robot(link("a") + link("b") + link("c") + joint("j1", "a", "c") + joint("j2", "b", "c"))),
            "r.urdf:1: link 'c' is the child of two joints ('j1' and 'j2')");
  EXPECT_EQ(error_of(robot(link("a") + link("b"))), "r.urdf:1: link 'b' is a second root (first 'a'); a URDF is one tree");
  EXPECT_EQ(error_of(robot(link("a") + joint("j", "a", "a"))), "r.urdf:1: joint 'j' connects link 'a' to itself");
  EXPECT_EQ(error_of(robot(link("a") + link("a"))), "r.urdf:1: repeated link name 'a'");
}

TEST(ImportUrdfErrors, UnsupportedElements) {
  EXPECT_EQ(error_of(robot(link("a") + link("b") + joint("j", "a", "b", "planar"))),
            "r.urdf:1: joint 'j': planar joints are not supported");
  EXPECT_EQ(error_of(robot(link("a") + link("b") + joint("j", "a", "b", "hinge"))),
            "r.urdf:1: joint 'j': unknown joint type 'hinge'");
  EXPECT_EQ(error_of(robot(link("a") + link("b") + link("c") + joint("j", "a", "b", "continuous") +
                           joint("k", "a", "c", "continuous", "<mimic joint=\"j\"/>"))),
            "r.urdf:1: joint 'k': <mimic> is not supported");
  EXPECT_EQ(error_of(robot(link("a", kInertial + "<collision><geometry><cone/></geometry></collision>"))),
            "r.urdf:1: link 'a': unknown geometry <cone>");
  EXPECT_EQ(error_of(robot(link("a") + "<sensor name=\"s\"/>")), "r.urdf:1: unsupported element <sensor> in <robot>");
  EXPECT_EQ(error_of(robot(link("a") + link("b") + link("c") + joint("j", "a", "b") + joint("f", "b", "c", "floating"))),
            "r.urdf:1: joint 'f': a floating joint must attach a link to the world link");
}

}  // namespace
}  // namespace moreau
