// MJCF importer: every reference file loads with the sizes and masses of the refdata table,
// MuJoCo 2.2.2 loading the same (mesh-stripped) file gives the same mass matrix and bias
// forces, MuJoCo's conventions (defaults, angles, frames, geom inertia), and each error.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "moreau/dynamics.h"
#include "moreau/import.h"
#include "moreau/model.h"
#include "support/mujoco_ref.h"
#include "support/test_util.h"

namespace moreau {
namespace {

using test::refdata;

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The file with its assets (meshes, textures, materials) and mesh geoms removed, so that
// MuJoCo loads it without the mesh files. Every mesh geom of these files is visual only.
std::string strip_meshes(const std::string& text) {
  std::string s = std::regex_replace(text, std::regex(R"(<asset>[\s\S]*?</asset>)"), "");
  s = std::regex_replace(s, std::regex(R"(<geom\b[^>]*\bmesh="[^"]*"[^>]*/>)"), "");
  return std::regex_replace(s, std::regex(R"(\bmaterial="[^"]*")"), "");
}

struct Row {
  const char* file;
  int nq, nv;
  int nbody;         // MuJoCo's, without the world: the README table
  int moreau_nbody;  // after compile(): a body with k joints is a chain of k bodies
  double mass;       // kg, the README table (3 decimals)
};

void PrintTo(const Row& row, std::ostream* os) { *os << row.file; }

const Row kTable[] = {
    {"anymal_c_menagerie/anymal_c.xml", 19, 18, 13, 13, 44.965},
    {"anymal_c_menagerie/anymal_c_mjx.xml", 19, 18, 13, 13, 44.965},
    {"anymal_c_menagerie/scene.xml", 19, 18, 13, 13, 44.965},
    {"unitree_go1_menagerie/go1.xml", 19, 18, 13, 13, 12.743},
    {"unitree_go1_menagerie/scene.xml", 19, 18, 13, 13, 12.743},
    {"gymnasium_hopper/hopper.xml", 6, 6, 4, 6, 15.820},  // torso: rootx, rootz, rooty
    {"gymnasium_inverted_pendulum/inverted_pendulum.xml", 2, 2, 2, 2, 15.491},
    {"dm_control_cartpole/cartpole.xml", 2, 2, 2, 2, 1.100},
};

double spec_mass(const RobotSpec& spec) {
  double m = 0;
  for (const BodySpec& b : spec.bodies) m += b.mass;
  return m;
}

class ImportMjcfTable : public ::testing::TestWithParam<Row> {};

TEST_P(ImportMjcfTable, MatchesTheReadme) {
  const Row& row = GetParam();
  {
    const RobotSpec spec = parse_mjcf_file(refdata(row.file));
    // chain bodies are named "<body>:<joint>"; the others are MuJoCo's bodies
    int mujoco_bodies = 0;
    for (const BodySpec& b : spec.bodies) mujoco_bodies += b.name.find(':') == std::string::npos;
    EXPECT_EQ(mujoco_bodies, row.nbody);
    EXPECT_NEAR(spec_mass(spec), row.mass, 5e-4);
    const Model m = compile(spec);
    EXPECT_EQ(m.nq, row.nq);
    EXPECT_EQ(m.nv, row.nv);
    EXPECT_EQ(m.nbody, row.moreau_nbody);
    EXPECT_NEAR(m.total_mass(), row.mass, 5e-4);
  }
}

INSTANTIATE_TEST_SUITE_P(Refdata, ImportMjcfTable, ::testing::ValuesIn(kTable), [](const auto& info) {
  return std::regex_replace(std::string(info.param.file), std::regex("[^A-Za-z0-9]"), "_");
});

// The files MuJoCo 2.2.2 loads once the meshes are stripped (the MJX variant needs 3.x; the
// scenes include the robot file, compared on its own).
const char* kMujocoFiles[] = {
    "anymal_c_menagerie/anymal_c.xml",
    "unitree_go1_menagerie/go1.xml",
    "gymnasium_hopper/hopper.xml",
    "gymnasium_inverted_pendulum/inverted_pendulum.xml",
    "dm_control_cartpole/cartpole.xml",
};

test::MjRef mujoco(const std::string& file) {
  const std::string path = refdata(file);
  const std::string text = read(path);
  // cartpole includes files next to it: load from disk (it has no meshes)
  return text.find("<include") != std::string::npos ? test::MjRef::from_file(path)
                                                     : test::MjRef(strip_meshes(text));
}

class ImportMjcfVsMujoco : public ::testing::TestWithParam<const char*> {};

TEST_P(ImportMjcfVsMujoco, SameMassMatrixAndBias) {
  const char* file = GetParam();
  {
    const Model m = compile(parse_mjcf_file(refdata(file)));
    test::MjRef ref = mujoco(file);
    ASSERT_EQ(m.nq, ref.nq());
    ASSERT_EQ(m.nv, ref.nv());
    EXPECT_NEAR(m.total_mass(), mj_getTotalmass(ref.m), 1e-12 * mj_getTotalmass(ref.m));
    EXPECT_NEAR_REL(m.qpos0, std::vector<double>(ref.m->qpos0, ref.m->qpos0 + ref.m->nq), 1e-12, 1e-12, "qpos0");

    std::mt19937 rng(7);
    std::vector<double> q(m.nq), v(m.nv), H(m.nv * m.nv), b(m.nv);
    for (int k = 0; k < 50; ++k) {
      SCOPED_TRACE("state " + std::to_string(k));
      test::random_state(m, rng, q.data(), v.data());
      mass_matrix(m, q.data(), H.data());
      bias_forces(m, q.data(), v.data(), b.data());
      ASSERT_NEAR_REL(H, ref.mass_matrix(q.data()), 1e-9, 1e-12, "mass matrix");
      ASSERT_NEAR_REL(b, ref.bias(q.data(), v.data()), 1e-9, 1e-12, "bias forces");
    }
  }
}

TEST_P(ImportMjcfVsMujoco, SameActuatorsAndJoints) {
  const char* file = GetParam();
  {
    const Model m = compile(parse_mjcf_file(refdata(file)));
    test::MjRef ref = mujoco(file);
    const mjModel* r = ref.m;
    ASSERT_EQ(m.nu, r->nu);
    for (int a = 0; a < m.nu; ++a) {
      SCOPED_TRACE("actuator " + std::to_string(a));
      EXPECT_EQ(m.actuator_dof[a], r->jnt_dofadr[r->actuator_trnid[2 * a]]);
      EXPECT_EQ(m.actuator_gear[a], r->actuator_gear[6 * a]);
      EXPECT_EQ(m.actuator_ctrllimited[a], r->actuator_ctrllimited[a]);
      EXPECT_EQ(m.actuator_forcelimited[a], r->actuator_forcelimited[a]);
      for (int i = 0; i < 2; ++i) {
        if (m.actuator_ctrllimited[a]) {
          EXPECT_EQ(m.actuator_ctrlrange[2 * a + i], r->actuator_ctrlrange[2 * a + i]);
        }
        if (m.actuator_forcelimited[a]) {
          EXPECT_EQ(m.actuator_forcerange[2 * a + i], r->actuator_forcerange[2 * a + i]);
        }
      }
      // gain and bias: position f = kp ctrl − kp l; motor f = ctrl
      EXPECT_EQ(m.actuator_type[a] == int(ActuatorType::Position) ? m.actuator_kp[a] : 1.0,
                r->actuator_gainprm[a * mjNGAIN]);
      EXPECT_EQ(-m.actuator_kp[a], r->actuator_biasprm[a * mjNBIAS + 1]);
    }
    for (int j = 0; j < r->njnt; ++j) {
      const int k = m.joint_index(mj_id2name(r, mjOBJ_JOINT, j) ? mj_id2name(r, mjOBJ_JOINT, j) : "");
      if (k < 0) continue;  // unnamed joints
      SCOPED_TRACE(m.jnt_name[k]);
      EXPECT_EQ(m.jnt_limited[k], r->jnt_limited[j]);
      if (m.jnt_limited[k]) {
        EXPECT_NEAR(m.jnt_range[2 * k], r->jnt_range[2 * j], 1e-12);
        EXPECT_NEAR(m.jnt_range[2 * k + 1], r->jnt_range[2 * j + 1], 1e-12);
      }
      EXPECT_EQ(m.dof_damping[m.jnt_dofadr[k]], r->dof_damping[r->jnt_dofadr[j]]);
      EXPECT_EQ(m.dof_armature[m.jnt_dofadr[k]], r->dof_armature[r->jnt_dofadr[j]]);
      EXPECT_EQ(m.jnt_stiffness[k], r->jnt_stiffness[j]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Refdata, ImportMjcfVsMujoco, ::testing::ValuesIn(kMujocoFiles), [](const auto& info) {
  return std::regex_replace(std::string(info.param), std::regex("[^A-Za-z0-9]"), "_");
});

// The MJX variant (MuJoCo 3.x options) builds the same bodies as the plain file.
TEST(ImportMjcf, MjxVariantHasTheSameDynamics) {
  const Model a = compile(parse_mjcf_file(refdata("anymal_c_menagerie/anymal_c.xml")));
  const Model b = compile(parse_mjcf_file(refdata("anymal_c_menagerie/anymal_c_mjx.xml")));
  EXPECT_EQ(a.body_mass, b.body_mass);
  EXPECT_EQ(a.body_inertia, b.body_inertia);
  EXPECT_EQ(a.body_com, b.body_com);
  EXPECT_EQ(a.jnt_range, b.jnt_range);
  EXPECT_EQ(b.ncon, 4);  // only the feet collide in the MJX file
}

TEST(ImportMjcf, AnymalFeetAreContactSpheres) {
  const Model m = compile(parse_mjcf_file(refdata("anymal_c_menagerie/anymal_c.xml")));
  int feet = 0;
  for (int k = 0; k < m.ncon; ++k) {
    if (m.con_radius[k] != 0.03) continue;
    ++feet;
    EXPECT_NEAR(m.con_pos[3 * k + 2], -0.31547, 1e-12) << m.con_name[k];  // foot class pos overridden
  }
  EXPECT_EQ(feet, 4);
  EXPECT_LE(m.ncon, kMaxContacts);
}

// ---- conventions, on small files -----------------------------------------------------------

RobotSpec parse(const std::string& text) { return parse_mjcf(text, "t.xml"); }

const BodySpec& body(const RobotSpec& spec, const std::string& name) {
  for (const BodySpec& b : spec.bodies)
    if (b.name == name) return b;
  throw std::runtime_error("no body " + name);
}

TEST(ImportMjcf, AnglesDefaultToDegrees) {
  const RobotSpec s = parse(R"(<mujoco><compiler autolimits="true"/><worldbody>
      <body name="a" euler="90 0 0"><joint name="j" range="-90 45"/><geom size="0.1"/></body>
    </worldbody></mujoco>)");
  const BodySpec& a = body(s, "a");
  EXPECT_NEAR(a.quat[0], std::sqrt(0.5), 1e-15);
  EXPECT_NEAR(a.quat[1], std::sqrt(0.5), 1e-15);
  EXPECT_NEAR(a.joint.range[0], -M_PI / 2, 1e-15);
  EXPECT_NEAR(a.joint.range[1], M_PI / 4, 1e-15);
  EXPECT_TRUE(a.joint.limited);
}

// Hinge and slide springs (springref in degrees under angle="degree"): the same stiffness, rest
// position and passive forces as MuJoCo's, at random states.
TEST(ImportMjcf, JointSpringsMatchMuJoCo) {
  const std::string xml = R"(<mujoco><worldbody>
      <body name="a"><joint name="h" axis="0 1 0" stiffness="40" springref="30" damping="0.5"/>
        <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05"/>
        <body name="b" pos="0.5 0 0"><joint name="s" type="slide" axis="1 0 0" stiffness="200" springref="0.1"/>
          <geom size="0.1"/></body></body>
    </worldbody></mujoco>)";
  const Model m = compile(parse(xml));
  test::MjRef ref(xml);
  ASSERT_EQ(m.nv, 2);
  EXPECT_EQ(m.jnt_stiffness, (std::vector<double>{40, 200}));
  EXPECT_NEAR(m.jnt_springref[0], M_PI / 6, 1e-15);
  for (int j = 0; j < 2; ++j) EXPECT_NEAR(m.jnt_springref[j], ref.m->qpos_spring[j], 1e-15);
  std::mt19937 rng(5);
  std::normal_distribution<double> normal(0, 1);
  for (int trial = 0; trial < 10; ++trial) {
    const std::vector<double> q = {normal(rng), 0.2 * normal(rng)}, v = {normal(rng), normal(rng)}, zero(2, 0.0);
    ref.qacc(q.data(), v.data(), zero.data());  // mj_forward at (q, v)
    std::vector<double> tau(2);
    passive_forces(m, q.data(), v.data(), tau.data());
    EXPECT_NEAR_REL(ref.d->qfrc_passive, tau.data(), 2, 1e-12, 1e-12, "qfrc_passive");
  }
}

// A file without <option timestep> steps at MuJoCo's default, 0.002 s.
TEST(ImportMjcf, TimestepDefaultsToMujocos) {
  const std::string body = R"(<body name="a"><joint/><geom size="0.1"/></body>)";
  const std::string xml = "<mujoco><worldbody>" + body + "</worldbody></mujoco>";
  EXPECT_EQ(compile(parse(xml)).timestep, 0.002);
  EXPECT_EQ(compile(parse(xml)).timestep, test::MjRef(xml).m->opt.timestep);
  const std::string with = "<mujoco><option timestep=\"0.01\"/><worldbody>" + body + "</worldbody></mujoco>";
  EXPECT_EQ(compile(parse(with)).timestep, 0.01);
}

TEST(ImportMjcf, EulerSequenceIntrinsicAndExtrinsic) {
  // xyz (moving axes) = Rx Ry Rz; XYZ (fixed axes) = Rz Ry Rx
  const RobotSpec s = parse(R"(<mujoco><compiler angle="radian" eulerseq="xyz"/><worldbody>
      <body name="a" euler="0.1 0.2 0.3"><geom size="0.1"/></body></worldbody></mujoco>)");
  const RobotSpec t = parse(R"(<mujoco><compiler angle="radian" eulerseq="ZYX"/><worldbody>
      <body name="a" euler="0.3 0.2 0.1"><geom size="0.1"/></body></worldbody></mujoco>)");
  // intrinsic x-y-z equals extrinsic Z-Y-X with the angles reversed
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(body(s, "a").quat[i], body(t, "a").quat[i], 1e-15);
}

TEST(ImportMjcf, DefaultClassesChildclassAndPartialSize) {
  const RobotSpec s = parse(R"(<mujoco><compiler autolimits="true"/>
    <default>
      <joint damping="1"/>
      <default class="leg"><joint damping="2" armature="0.5" range="-1 1"/>
        <geom type="capsule" size="0.02 0.1"/>
        <default class="foot"><geom type="sphere" size="0.03" pos="0 0 -0.1"/></default>
      </default>
    </default>
    <worldbody>
      <body name="a" childclass="leg"><joint name="ja"/><geom size="0.05"/>
        <body name="b"><joint name="jb" class="main"/><geom class="foot" pos="0 0 -0.2"/></body>
      </body>
    </worldbody></mujoco>)");
  const BodySpec& a = body(s, "a");
  EXPECT_EQ(a.joint.damping, 2);
  EXPECT_EQ(a.joint.armature, 0.5);
  EXPECT_TRUE(a.joint.limited);
  ASSERT_EQ(a.contacts.size(), 2u);  // capsule radius 0.05 (element), half-length 0.1 (default)
  EXPECT_EQ(a.contacts[0].radius, 0.05);
  EXPECT_EQ(a.contacts[1].pos[2], 0.1);
  const BodySpec& b = body(s, "b");
  EXPECT_EQ(b.joint.damping, 1);  // class "main" overrides the childclass
  EXPECT_FALSE(b.joint.limited);
  ASSERT_EQ(b.contacts.size(), 1u);
  EXPECT_EQ(b.contacts[0].radius, 0.03);
  EXPECT_EQ(b.contacts[0].pos[2], -0.2);
}

TEST(ImportMjcf, GeomInertiaDensityMassAndSettotalmass) {
  const RobotSpec s = parse(R"(<mujoco><compiler settotalmass="10"/><worldbody>
      <body name="a"><freejoint/><geom type="box" size="0.1 0.2 0.3" density="500"/>
        <geom type="sphere" size="0.1" pos="1 0 0" mass="3"/></body>
    </worldbody></mujoco>)");
  const BodySpec& a = body(s, "a");
  const double mbox = 500 * 8 * 0.1 * 0.2 * 0.3, total = mbox + 3, scale = 10 / total;
  EXPECT_NEAR(a.mass, 10, 1e-12);
  EXPECT_NEAR(a.com[0], 3 / total, 1e-12);
  // about the com: box (b² + c²)/3 m + sphere 0.4 m r², plus the parallel-axis terms along x
  const double c = 3 / total;
  const double iyy = mbox * (0.01 + 0.09) / 3 + 0.4 * 3 * 0.01 + mbox * c * c + 3 * (1 - c) * (1 - c);
  EXPECT_NEAR(a.inertia[1], scale * iyy, 1e-12);
  EXPECT_EQ(a.joint.type, JointType::Free);
}

TEST(ImportMjcf, CapsuleFromtoGivesEndSpheres) {
  const RobotSpec s = parse(R"(<mujoco><worldbody><body name="a"><joint/>
      <geom name="c" type="capsule" fromto="0 0 0 0 0 0.6" size="0.05"/></body></worldbody></mujoco>)");
  const BodySpec& a = body(s, "a");
  ASSERT_EQ(a.contacts.size(), 2u);
  EXPECT_EQ(a.contacts[0].name, "c/end0");
  EXPECT_NEAR(a.contacts[0].pos[2], 0, 1e-15);
  EXPECT_NEAR(a.contacts[1].pos[2], 0.6, 1e-15);
  EXPECT_NEAR(a.com[2], 0.3, 1e-15);
}

TEST(ImportMjcf, MultipleJointsBecomeAChain) {
  const RobotSpec s = parse(R"(<mujoco><worldbody><body name="t" pos="0 0 1.25">
      <joint name="x" type="slide" axis="1 0 0"/><joint name="z" type="slide" axis="0 0 1" ref="1.25"/>
      <joint name="r" axis="0 1 0"/><geom size="0.1"/></body></worldbody></mujoco>)");
  ASSERT_EQ(s.bodies.size(), 3u);
  EXPECT_EQ(s.bodies[0].name, "t:x");
  EXPECT_EQ(s.bodies[0].mass, 0);
  EXPECT_EQ(s.bodies[1].name, "t:z");
  EXPECT_EQ(s.bodies[1].pos[2], -1.25);  // ref: q keeps MuJoCo's meaning
  EXPECT_EQ(s.bodies[2].name, "t");
  EXPECT_EQ(s.bodies[2].parent, "t:z");
  EXPECT_GT(s.bodies[2].mass, 0);
  ASSERT_EQ(s.default_qpos.size(), 1u);
  EXPECT_EQ(s.default_qpos[0], std::make_pair(std::string("z"), 1.25));
}

TEST(ImportMjcf, VisualGeomsAndGroundPlane) {
  const RobotSpec s = parse(R"(<mujoco><worldbody><geom type="plane" size="1 1 1"/>
      <body name="a"><joint/><inertial mass="1" diaginertia="1 1 1"/>
        <geom type="mesh" mesh="m" contype="0" conaffinity="0"/><geom type="sphere" size="0.1"/></body>
    </worldbody></mujoco>)");
  EXPECT_EQ(body(s, "a").contacts.size(), 1u);
  EXPECT_TRUE(s.warnings.empty());
}

// MuJoCo's rule against the ground plane: (contype & plane conaffinity) or (plane contype &
// conaffinity); the plane's bits from the file (here in a second <worldbody>, as scene files
// that include a robot put the floor), 1/1 without a plane.
TEST(ImportMjcf, ContypeAndConaffinityChooseTheGroundContacts) {
  const std::string bodies = R"(<worldbody><body name="a"><joint/><inertial mass="1" diaginertia="1 1 1"/>
        <geom name="both" size="0.1"/><geom name="type2" size="0.1" contype="2" conaffinity="0"/>
        <geom name="aff1" size="0.1" contype="0" conaffinity="1"/><geom name="aff2" size="0.1" contype="0" conaffinity="2"/>
        <geom name="none" size="0.1" contype="0" conaffinity="0"/></body></worldbody>)";
  const auto names = [&](const std::string& floor) {
    const RobotSpec s = parse("<mujoco>" + bodies + floor + "</mujoco>");
    std::vector<std::string> out;
    for (const ContactSpec& c : body(s, "a").contacts) out.push_back(c.name);
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(names(""), (V{"both", "aff1"}));
  EXPECT_EQ(names(R"(<worldbody><geom type="plane" size="1 1 1"/></worldbody>)"), (V{"both", "aff1"}));
  EXPECT_EQ(names(R"(<worldbody><geom type="plane" size="1 1 1" contype="2" conaffinity="2"/></worldbody>)"),
            (V{"type2", "aff2"}));
  EXPECT_EQ(names(R"(<worldbody><geom type="plane" size="1 1 1" contype="3" conaffinity="0"/></worldbody>)"),
            (V{"both", "aff1", "aff2"}));
  EXPECT_TRUE(names(R"(<worldbody><geom type="plane" size="1 1 1" contype="0" conaffinity="0"/></worldbody>)").empty());
}

// Hinge and slide limits are enforced (no warning); a ball joint's range is not (a warning).
TEST(ImportMjcf, JointLimitsAreEnforcedBallRangesAreNoted) {
  const RobotSpec s = parse(R"(<mujoco><compiler autolimits="true"/><worldbody><body name="a">
      <joint name="hinge" range="-30 30" frictionloss="0.2"/><joint name="free_spin" axis="1 0 0"/>
      <geom size="0.1"/><body name="b"><joint name="ball" type="ball" range="0 40"/><geom size="0.1"/></body>
      </body></worldbody></mujoco>)");
  EXPECT_TRUE(s.warnings.empty());
  const Model m = compile(s);
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_EQ(m.warnings[0], "joint 'ball': a ball joint's range is stored but not enforced (limits act on revolute "
                           "and prismatic joints)");
  EXPECT_EQ(joint_rows(m), 2);  // the hinge's limit and its friction loss
}

// The body pairs MuJoCo collides with each other (contype/conaffinity, not a weld body and its
// parent's, not <exclude>d) are listed and warned about: moreau does not simulate them. Against
// MuJoCo's own contacts: python/tests/test_models.py.
TEST(ImportMjcf, SelfCollisionsAreListedAndWarned) {
  const std::string legs = R"(<body name="base"><freejoint/><geom size="0.1"/>
      <body name="l"><joint/><geom size="0.1"/><body name="l_foot"><geom size="0.05"/></body></body>
      <body name="r"><joint/><geom size="0.1"/></body>
      <body name="tail"><joint/><geom size="0.1" contype="2" conaffinity="2"/></body></body>)";
  using P = std::vector<std::pair<std::string, std::string>>;
  const auto file = [&](const std::string& extra) { return "<mujoco>" + extra + "<worldbody>" + legs + "</worldbody></mujoco>"; };
  const auto pairs = [&](const std::string& extra) { return parse(file(extra)).self_collisions; };
  EXPECT_EQ(pairs(""), (P{{"l", "r"}}));  // base-l, base-r, base-tail: parent and child; tail: other bits
  EXPECT_EQ(pairs(R"(<contact><exclude body1="r" body2="l_foot"/></contact>)"), (P{{"l", "r"}}));  // l's own geom
  EXPECT_EQ(pairs(R"(<contact><exclude body1="l_foot" body2="r"/><exclude body1="r" body2="l"/></contact>)"), P{});
  EXPECT_EQ(pairs(R"(<option><flag filterparent="disable"/></option>)"), (P{{"base", "l"}, {"base", "r"}, {"l", "r"}}));
  EXPECT_TRUE(pairs(R"(<option><flag contact="disable"/></option>)").empty());
  const RobotSpec s = parse(file(""));
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0], "contacts between the robot's own bodies are not simulated unless asked "
                           "(with_self_collisions: spheres and points, not box or cylinder faces): MuJoCo collides 1 "
                           "pair(s) of bodies here (Model.self_collisions): l–r");
  const Model m = compile(s);
  EXPECT_EQ(m.self_collisions, (P{{"l", "r"}}));
  const Model with = with_self_collisions(m, m.self_collisions);  // the list is what the pairs take
  ASSERT_GT(with.npair, 0);
  for (int k = 0; k < with.npair; ++k) {
    EXPECT_EQ(m.body_name[m.con_body[with.pair_con[2 * k]]], "l");
    EXPECT_EQ(m.body_name[m.con_body[with.pair_con[2 * k + 1]]], "r");
  }
}

TEST(ImportMjcf, ContactFlagDisable) {
  const RobotSpec s = parse(R"(<mujoco><option><flag contact="disable"/></option><worldbody>
      <body name="a"><joint/><geom size="0.1"/></body></worldbody></mujoco>)");
  EXPECT_TRUE(body(s, "a").contacts.empty());
}

TEST(ImportMjcf, GeneralActuatorForms) {
  const RobotSpec s = parse(R"(<mujoco><worldbody><body name="a"><joint name="j"/><geom size="0.1"/></body>
    </worldbody><actuator>
      <general joint="j" name="servo" biastype="affine" gainprm="50" biasprm="0 -50 -2"/>
      <general joint="j" name="motor"/>
    </actuator></mujoco>)");
  ASSERT_EQ(s.actuators.size(), 2u);
  EXPECT_EQ(s.actuators[0].type, ActuatorType::Position);
  EXPECT_EQ(s.actuators[0].kp, 50);
  EXPECT_EQ(s.actuators[0].kd, 2);
  EXPECT_EQ(s.actuators[1].type, ActuatorType::Motor);
}

TEST(ImportMjcf, SolverParametersAreOneWarningEach) {
  const RobotSpec s = parse(R"(<mujoco><worldbody><body name="a"><joint/>
      <geom size="0.1" solimp="0.9 0.95 0.001"/><geom size="0.1" solimp="0.9 0.95 0.001"/></body>
    </worldbody></mujoco>)");
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0],
            "geom attribute 'solimp' ignored (a contact parameter of MuJoCo's solver; moreau's contact model has its "
            "own parameters); 2 uses, first at t.xml:2");
}

// ---- errors: exact messages ----------------------------------------------------------------

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

const char* kBody = R"(<body name="a"><joint name="j"/><geom size="0.1"/></body>)";

std::string world(const std::string& inner, const std::string& outside = "") {
  return "<mujoco>" + outside + "<worldbody>" + inner + "</worldbody></mujoco>";
}

TEST(ImportMjcfErrors, MalformedXml) {
  EXPECT_EQ(error_of("<mujoco><worldbody></mujoco>"), "t.xml:1: malformed XML (XML_ERROR_MISMATCHED_ELEMENT)");
  EXPECT_EQ(error_of(""), "t.xml:0: malformed XML (XML_ERROR_EMPTY_DOCUMENT)");
  EXPECT_EQ(error_of("<robot/>"), "t.xml:1: the root element must be <mujoco>, got <robot>");
}

TEST(ImportMjcfErrors, MissingAttributes) {
  EXPECT_EQ(error_of(world(R"(<body name="a"><joint/><inertial diaginertia="1 1 1"/></body>)")),
            "t.xml:1: body 'a': <inertial> needs a 'mass' attribute");
  EXPECT_EQ(error_of(world(R"(<body name="a"><joint/><inertial mass="1"/></body>)")),
            "t.xml:1: body 'a': <inertial> needs diaginertia or fullinertia");
  EXPECT_EQ(error_of("<mujoco><worldbody>" + std::string(kBody) + "</worldbody><actuator><motor name=\"m\"/></actuator></mujoco>"),
            "t.xml:1: motor 'm': needs a 'joint' attribute");
  EXPECT_EQ(error_of("<mujoco><worldbody>" + std::string(kBody) +
                     "</worldbody><actuator><motor joint=\"nope\"/></actuator></mujoco>"),
            "t.xml:1: motor: unknown joint 'nope'");
}

TEST(ImportMjcfErrors, NegativeOrNanInertia) {
  EXPECT_EQ(error_of(world(R"(<body name="a"><joint/><inertial mass="1" diaginertia="-1 1 1"/></body>)")),
            "t.xml:1: body 'a': <inertial>: diaginertia must be >= 0, got -1 1 1");
  EXPECT_EQ(error_of(world(R"(<body name="a"><joint/><inertial mass="1" diaginertia="nan 1 1"/></body>)")),
            "t.xml:1: attribute 'diaginertia': expected 3 finite numbers, got 'nan 1 1'");
  EXPECT_EQ(error_of(world(R"(<body name="a"><joint/><inertial mass="-2" diaginertia="1 1 1"/></body>)")),
            "t.xml:1: body 'a': <inertial>: mass must be >= 0, got -2");
  EXPECT_EQ(error_of(world(R"(<body name="a"><joint/><inertial mass="1" fullinertia="1 -1 1 0 0 0"/></body>)")),
            "t.xml:1: body 'a': <inertial>: fullinertia diagonal must be >= 0, got 1 -1 1");
  EXPECT_EQ(error_of(world(R"(<body name="a"><joint/><geom size="0.1" mass="-1"/></body>)")),
            "t.xml:1: geom mass must be >= 0, got -1");
}

TEST(ImportMjcfErrors, IncludeCycle) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/cycle_a.xml") << "<mujoco><include file=\"cycle_b.xml\"/></mujoco>";
  std::ofstream(dir + "/cycle_b.xml") << "<mujoco>\n<include file=\"cycle_a.xml\"/></mujoco>";
  try {
    parse_mjcf_file(dir + "/cycle_a.xml");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cycle_b.xml:2: <include>: file 'cycle_a.xml' is already included");
  }
  EXPECT_EQ(error_of("<mujoco><include file=\"missing.xml\"/></mujoco>"),
            "t.xml:1: <include>: cannot read './missing.xml' (not a file of at most 16 MB)");
}

// One error lists every unsupported feature, each with its element, not only the first.
TEST(ImportMjcfErrors, EveryRefusalIsNamed) {
  EXPECT_EQ(error_of(world(R"(<body name="a" gravcomp="1"><joint name="h" springdamper="0.1 1"/><geom size="0.1"/>
      <body name="b"><joint name="k" springdamper="0.2 1"/><geom size="0.1"/></body></body>)")),
            "t.xml:1: body 'a': body gravcomp is not supported\n"
            "t.xml:1: joint 'h': joint springdamper is not supported\n"
            "t.xml:2: joint 'k': joint springdamper is not supported");
  // a hard error after refusals: both reported
  EXPECT_EQ(error_of(world(R"(<body name="a" gravcomp="1"><joint/><geom size="0.1" bogus="1"/></body>)")),
            "t.xml:1: body 'a': body gravcomp is not supported\nt.xml:1: <geom>: unknown attribute 'bogus'");
}

TEST(ImportMjcfErrors, UnsupportedFeatures) {
  EXPECT_EQ(error_of("<mujoco><tendon><fixed name=\"t\"/></tendon></mujoco>"),
            "t.xml:1: <tendon> elements are not supported (<fixed>)");
  EXPECT_EQ(error_of("<mujoco><equality><weld body1=\"a\"/></equality></mujoco>"),
            "t.xml:1: <equality> elements are not supported (<weld>)");
  EXPECT_EQ(error_of("<mujoco><worldbody>" + std::string(kBody) +
                     "</worldbody><actuator><velocity joint=\"j\"/></actuator></mujoco>"),
            "t.xml:1: <velocity> actuators are not supported");
  EXPECT_EQ(error_of(world(R"(<body name="a"><joint type="ball" stiffness="10"/><geom size="0.1"/></body>)")),
            "t.xml:1: joint: joint stiffness on a ball joint is not supported (springs on hinge and slide only)");
  EXPECT_EQ(error_of(world(R"(<body name="a"><joint name="h" ref="10"/><geom size="0.1"/></body>)")),
            "t.xml:1: joint 'h': joint ref != 0 is supported on slide joints only");
  EXPECT_EQ(error_of(world(R"(<body name="a"><joint/><geom size="0.1" bogus="1"/></body>)")),
            "t.xml:1: <geom>: unknown attribute 'bogus'");
  EXPECT_EQ(error_of(world(R"(<body name="a"><joint/><composite type="grid"/></body>)")),
            "t.xml:1: unsupported element <composite> in body 'a'");
  EXPECT_EQ(error_of(world(R"(<body name="a"><joint/><geom type="mesh" mesh="m"/></body>)")),
            "t.xml:1: geom: the inertia of a mesh geom needs its file, which moreau does not read; give the body an "
            "<inertial>");
  EXPECT_EQ(error_of(world(kBody, "<option density=\"1.2\"/>")),
            "t.xml:1: <option density> (fluid forces) is not supported");
  EXPECT_EQ(error_of(world(kBody, "<compiler coordinate=\"global\"/>")),
            "t.xml:1: <compiler coordinate=\"global\"> is not supported");
  EXPECT_EQ(error_of(world(R"(<body name="a"><joint range="-1 1"/><geom size="0.1"/></body>)")),
            "t.xml:1: joint has range but not limited: set autolimits=\"true\" in <compiler>, give limited=\"true\" "
            "or \"false\", or remove range");
  EXPECT_EQ(error_of(world(R"(<body name="a"><freejoint/><joint/><geom size="0.1"/></body>)")),
            "t.xml:1: a free joint must be the only joint of a child of <worldbody>");
  EXPECT_EQ(error_of(world(R"(<body name="a" mocap="true"><geom size="0.1"/></body>)")),
            "t.xml:1: body 'a': mocap bodies are not supported");
  EXPECT_EQ(error_of(world(R"(<body name="a"><joint/><geom type="plane" size="1 1 1"/></body>)")),
            "t.xml:1: geom: plane geoms only in the worldbody");
  EXPECT_EQ(error_of(world(R"(<body name="a"><joint/><geom size="0"/></body>)")),
            "t.xml:1: geom: size[0] of a sphere must be > 0, got 0");
  EXPECT_EQ(error_of(world(kBody, R"(<contact><exclude body1="a" body2="b"/></contact>)")),
            "t.xml:1: <exclude>: no body named 'b'");
  EXPECT_EQ(error_of(world(kBody, R"(<contact><exclude body1="a"/></contact>)")),
            "t.xml:1: <exclude> needs 'body1' and 'body2'");
}

}  // namespace
}  // namespace moreau
