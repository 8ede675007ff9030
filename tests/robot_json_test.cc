// JSON robot format: every field read, every bad input rejected with source, JSON path,
// expected and got; every asset in assets/robots loads.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "moreau/model.h"

namespace moreau {
namespace {

// A valid robot using every field of the format.
const char* kRobot = R"({
  "name": "arm",
  "gravity": [0, 0, -9.8],
  "timestep": 0.002,
  "decimation": 3,
  "bodies": [
    {"name": "base", "parent": "world", "pos": [0, 0, 0.5], "quat": [1, 0, 0, 0],
     "joint": {"type": "free"},
     "mass": 2, "com": [0, 0, 0.01], "inertia": [0.02, 0.02, 0.03, 0, 0, 0],
     "contacts": [{"type": "box", "name": "shell", "pos": [0, 0, 0], "quat": [1, 0, 0, 0], "half_size": [0.1, 0.1, 0.05]}]},
    {"name": "upper", "parent": "base", "pos": [0.1, 0, 0], "quat": [0, 0, 0, 1],
     "joint": {"name": "shoulder", "type": "revolute", "axis": [0, 2, 0], "pos": [0, 0, 0.01],
               "range": [-1, 1], "damping": 0.1, "armature": 0.01, "frictionloss": 0, "stiffness": 3,
               "springref": 0.25},
     "mass": 1, "com": [0, 0, -0.2], "inertia": [0.01, 0.01, 0.001, 0, 0, 0]},
    {"name": "flange", "parent": "upper", "pos": [0, 0, -0.4],
     "mass": 0.2, "inertia": [0.001, 0.001, 0.001, 0, 0, 0],
     "contacts": [{"type": "sphere", "name": "tip", "pos": [0, 0, -0.05], "radius": 0.02}]},
    {"name": "slide", "parent": "flange",
     "joint": {"type": "prismatic", "axis": [0, 0, 1]},
     "mass": 0.1, "inertia": [1e-4, 1e-4, 1e-4, 0, 0, 0]}
  ],
  "actuators": [
    {"name": "shoulder_servo", "joint": "shoulder", "type": "position", "kp": 50, "kd": 1.5, "gear": 2,
     "force_range": [-30, 30], "ctrl_range": [-1, 1], "velocity_limit": {"peak_force": 40, "max_velocity": 8}},
    {"joint": "slide", "type": "motor", "gear": 5}
  ],
  "default_qpos": {"shoulder": 0.3, "slide": -0.05}
})";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "test setup: '" << from << "' not in the robot";
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

TEST(RobotJson, ReadsEveryField) {
  const RobotSpec spec = parse_robot_json(kRobot, "arm.json");
  EXPECT_EQ(spec.name, "arm");
  EXPECT_EQ(spec.source, "arm.json");
  EXPECT_EQ(spec.gravity[2], -9.8);
  EXPECT_EQ(spec.timestep, 0.002);
  EXPECT_EQ(spec.decimation, 3);
  ASSERT_EQ(spec.bodies.size(), 4u);
  const BodySpec& upper = spec.bodies[1];
  EXPECT_EQ(upper.where, "$.bodies[1]");
  EXPECT_EQ(upper.parent, "base");
  EXPECT_EQ(upper.quat, (std::array<double, 4>{0, 0, 0, 1}));
  EXPECT_EQ(upper.joint.name, "shoulder");
  EXPECT_EQ(upper.joint.type, JointType::Revolute);
  EXPECT_EQ(upper.joint.axis, (std::array<double, 3>{0, 2, 0}));
  EXPECT_EQ(upper.joint.pos[2], 0.01);
  EXPECT_TRUE(upper.joint.limited);
  EXPECT_EQ(upper.joint.range, (std::array<double, 2>{-1, 1}));
  EXPECT_EQ(upper.joint.damping, 0.1);
  EXPECT_EQ(upper.joint.armature, 0.01);
  EXPECT_EQ(upper.joint.stiffness, 3);
  EXPECT_EQ(upper.joint.springref, 0.25);
  EXPECT_EQ(upper.com[2], -0.2);
  EXPECT_EQ(upper.inertia[2], 0.001);
  EXPECT_EQ(spec.bodies[2].joint.type, JointType::Fixed);  // no "joint": fixed
  EXPECT_FALSE(spec.bodies[3].joint.limited);               // no "range": unlimited
  const ContactSpec& shell = spec.bodies[0].contacts[0];
  EXPECT_EQ(shell.kind, ContactSpec::Kind::Box);
  EXPECT_EQ(shell.half_size, (std::array<double, 3>{0.1, 0.1, 0.05}));
  EXPECT_EQ(spec.bodies[2].contacts[0].radius, 0.02);

  ASSERT_EQ(spec.actuators.size(), 2u);
  const ActuatorSpec& servo = spec.actuators[0];
  EXPECT_EQ(servo.where, "$.actuators[0]");
  EXPECT_EQ(servo.name, "shoulder_servo");
  EXPECT_EQ(servo.type, ActuatorType::Position);
  EXPECT_EQ(servo.kp, 50);
  EXPECT_EQ(servo.kd, 1.5);
  EXPECT_EQ(servo.gear, 2);
  EXPECT_TRUE(servo.force_limited);
  EXPECT_TRUE(servo.ctrl_limited);
  EXPECT_EQ(servo.force_range, (std::array<double, 2>{-30, 30}));
  EXPECT_EQ(servo.peak_force, 40);
  EXPECT_EQ(servo.max_velocity, 8);
  const ActuatorSpec& motor = spec.actuators[1];
  EXPECT_EQ(motor.name, "slide");  // defaults to the joint name
  EXPECT_EQ(motor.type, ActuatorType::Motor);
  EXPECT_FALSE(motor.force_limited);
  EXPECT_FALSE(motor.ctrl_limited);
  EXPECT_EQ(spec.default_qpos.size(), 2u);
}

TEST(RobotJson, CompilesWithMergedFlangeAndDefaults) {
  const Model m = load_model_from_string(kRobot, "arm.json");
  EXPECT_EQ(m.nbody, 3);  // the fixed flange merges into upper
  EXPECT_EQ(m.body_name, (std::vector<std::string>{"base", "upper", "slide"}));
  EXPECT_EQ(m.nq, 9);
  EXPECT_EQ(m.nv, 8);
  EXPECT_EQ(m.nu, 2);
  EXPECT_EQ(m.ncon, 9);
  EXPECT_NEAR(m.total_mass(), 3.3, 1e-15);
  EXPECT_EQ(m.con_body[8], 1);
  EXPECT_NEAR(m.con_pos[3 * 8 + 2], -0.45, 1e-15);
  EXPECT_EQ(m.qpos0[7], 0.3);
  EXPECT_EQ(m.qpos0[8], -0.05);
  EXPECT_EQ(m.actuator_dof, (std::vector<int>{6, 7}));
}

struct BadJson {
  const char* label;
  std::string text;
  std::vector<std::string> expected;  // substrings of the message
};

std::vector<BadJson> bad_inputs() {
  const std::string r = kRobot;
  return {
      {"malformed", replaced(r, "\"decimation\": 3,", "\"decimation\": 3,,"),
       {"bad.json: $: expected valid JSON, got a syntax error at byte " + std::to_string(r.find("\"decimation\": 3,") + 17) +
            ": parse error at line 5, column 19"}},
      {"empty", "", {"bad.json: $: expected valid JSON, got a syntax error at byte 1"}},
      {"overflow", replaced(r, "\"mass\": 2,", "\"mass\": 1e999,"),
       {"bad.json: $: expected valid JSON with finite numbers, got", "1e999"}},
      {"not an object", "[1, 2]", {"bad.json: $: expected an object, got array [1,2]"}},
      {"missing name", replaced(r, "\"name\": \"arm\",", ""), {"bad.json: $.name: expected a string (required), got nothing"}},
      {"missing bodies", "{\"name\": \"x\"}", {"bad.json: $.bodies: expected an array of bodies (required), got nothing"}},
      {"bodies not array", "{\"name\": \"x\", \"bodies\": {}}", {"bad.json: $.bodies: expected an array, got object {}"}},
      {"missing body name", replaced(r, "\"name\": \"upper\", ", ""),
       {"bad.json: $.bodies[1].name: expected a string (required), got nothing"}},
      {"missing mass", replaced(r, "\"mass\": 1, ", ""), {"bad.json: $.bodies[1].mass: expected a number (required), got nothing"}},
      {"missing inertia", replaced(r, ", \"inertia\": [0.01, 0.01, 0.001, 0, 0, 0]", ""),
       {"bad.json: $.bodies[1].inertia: expected an array of 6 numbers (required), got nothing"}},
      {"missing joint type", replaced(r, "\"type\": \"free\"", ""),
       {"bad.json: $.bodies[0].joint.type: expected a joint type (required), got nothing"}},
      {"unknown field", replaced(r, "\"mass\": 1,", "\"masss\": 1, \"mass\": 1,"),
       {"bad.json: $.bodies[1]: expected only the fields name, parent, pos, quat, joint, mass, com, inertia, contacts, got unknown field 'masss'"}},
      {"unknown top field", replaced(r, "\"decimation\": 3,", "\"decimation\": 3, \"dt\": 0.1,"),
       {"bad.json: $: expected only the fields", "got unknown field 'dt'"}},
      {"unknown joint field", replaced(r, "\"damping\": 0.1", "\"dampin\": 0.1"),
       {"bad.json: $.bodies[1].joint: expected only the fields", "got unknown field 'dampin'"}},
      {"sphere with half_size", replaced(r, "\"radius\": 0.02", "\"radius\": 0.02, \"half_size\": [1, 1, 1]"),
       {"bad.json: $.bodies[2].contacts[0]: expected only the fields type, name, pos, radius, got unknown field 'half_size'"}},
      {"motor with kp", replaced(r, "\"type\": \"motor\",", "\"type\": \"motor\", \"kp\": 3,"),
       {"bad.json: $.actuators[1]: expected only the fields name, joint, type, gear,", "got unknown field 'kp'"}},
      {"unknown velocity limit field", replaced(r, "\"max_velocity\": 8", "\"max_velocity\": 8, \"vmax\": 1"),
       {"bad.json: $.actuators[0].velocity_limit: expected only the fields peak_force, max_velocity, got unknown field 'vmax'"}},
      {"unknown joint type", replaced(r, "\"type\": \"revolute\"", "\"type\": \"hinge\""),
       {"bad.json: $.bodies[1].joint.type: expected one of 'free', 'ball', 'revolute', 'prismatic', 'fixed', got 'hinge'"}},
      {"unknown actuator type", replaced(r, "\"type\": \"motor\"", "\"type\": \"velocity\""),
       {"bad.json: $.actuators[1].type: expected one of 'position', 'motor', got 'velocity'"}},
      {"unknown contact type", replaced(r, "\"type\": \"sphere\"", "\"type\": \"capsule\""),
       {"bad.json: $.bodies[2].contacts[0].type: expected one of 'sphere', 'box', 'cylinder', got 'capsule'"}},
      {"cylinder without half_length", replaced(r, "\"type\": \"sphere\"", "\"type\": \"cylinder\""),
       {"bad.json: $.bodies[2].contacts[0].half_length: expected a number (required), got nothing"}},
      {"mass as string", replaced(r, "\"mass\": 1,", "\"mass\": \"1\","),
       {"bad.json: $.bodies[1].mass: expected a number, got string \"1\""}},
      {"short pos", replaced(r, "\"pos\": [0.1, 0, 0]", "\"pos\": [0.1, 0]"),
       {"bad.json: $.bodies[1].pos: expected an array of 3 numbers, got array [0.1,0]"}},
      {"null in array", replaced(r, "\"pos\": [0.1, 0, 0]", "\"pos\": [0.1, null, 0]"),
       {"bad.json: $.bodies[1].pos[1]: expected a number, got null null"}},
      {"long quat", replaced(r, "\"quat\": [0, 0, 0, 1]", "\"quat\": [0, 0, 0, 1, 0]"),
       {"bad.json: $.bodies[1].quat: expected an array of 4 numbers, got array [0,0,0,1,0]"}},
      {"fractional decimation", replaced(r, "\"decimation\": 3", "\"decimation\": 2.5"),
       {"bad.json: $.decimation: expected an integer, got number 2.5"}},
      {"default qpos string", replaced(r, "\"slide\": -0.05", "\"slide\": \"low\""),
       {"bad.json: $.default_qpos.slide: expected a number, got string \"low\""}},
      {"contacts not array",
       replaced(r, "[{\"type\": \"sphere\", \"name\": \"tip\", \"pos\": [0, 0, -0.05], \"radius\": 0.02}]",
                "{\"type\": \"sphere\", \"radius\": 0.02}"),
       {"bad.json: $.bodies[2].contacts: expected an array"}},
      // Physical errors come from compile() and still carry the JSON path.
      {"non-positive mass", replaced(r, "\"mass\": 1,", "\"mass\": -1,"),
       {"bad.json: $.bodies[1].mass: expected a number >= 0, got -1"}},
      {"zero mass", replaced(r, "\"mass\": 0.1, \"inertia\": [1e-4, 1e-4, 1e-4, 0, 0, 0]", "\"mass\": 0, \"inertia\": [0, 0, 0, 0, 0, 0]"),
       {"bad.json: $.bodies[3].mass: expected a number > 0 for a moving body"}},
      {"non-PD inertia", replaced(r, "[0.01, 0.01, 0.001, 0, 0, 0]", "[0.01, 0.01, 0.001, 0, 0.02, 0]"),
       {"bad.json: $.bodies[1].inertia: expected a positive definite matrix, got principal moments"}},
      {"triangle inequality", replaced(r, "[0.01, 0.01, 0.001, 0, 0, 0]", "[0.01, 0.001, 0.001, 0, 0, 0]"),
       {"bad.json: $.bodies[1].inertia: expected principal moments satisfying A + B >= C, got [0.001, 0.001, 0.01]"}},
      {"cycle", replaced(r, "\"parent\": \"base\"", "\"parent\": \"slide\""),
       {"bad.json: $.bodies[1].parent: expected a chain of parents that ends at 'world', got a cycle 'upper' -> 'slide' -> 'flange' -> 'upper'"}},
      {"dangling parent", replaced(r, "\"parent\": \"base\"", "\"parent\": \"torso\""),
       {"bad.json: $.bodies[1].parent: expected 'world' or the name of a body, got 'torso'"}},
      {"duplicate body name", replaced(r, "\"name\": \"slide\"", "\"name\": \"upper\""),
       {"bad.json: $.bodies[3].name: expected a unique body name, got 'upper' (also $.bodies[1])"}},
      {"duplicate joint name", replaced(r, "\"type\": \"prismatic\"", "\"name\": \"shoulder\", \"type\": \"prismatic\""),
       {"bad.json: $.bodies[3].joint.name: expected a unique joint name, got 'shoulder' (also $.bodies[1])"}},
      {"actuator on unknown joint", replaced(r, "\"joint\": \"slide\"", "\"joint\": \"elbow\""),
       {"bad.json: $.actuators[1].joint: expected the name of a revolute or prismatic joint, got 'elbow' (no such joint)"}},
      {"range reversed", replaced(r, "\"range\": [-1, 1]", "\"range\": [1, -1]"),
       {"bad.json: $.bodies[1].joint.range: expected lower <= upper, got [1, -1]"}},
  };
}

TEST(RobotJson, CylinderContact) {
  const std::string text = replaced(kRobot, R"({"type": "sphere", "name": "tip", "pos": [0, 0, -0.05], "radius": 0.02})",
                                    R"({"type": "cylinder", "name": "tip", "pos": [0, 0, -0.05], "quat": [0, 1, 0, 0],
                                        "radius": 0.02, "half_length": 0.03})");
  const RobotSpec spec = parse_robot_json(text, "c.json");
  const ContactSpec& c = spec.bodies[2].contacts[0];
  EXPECT_EQ(c.kind, ContactSpec::Kind::Cylinder);
  EXPECT_EQ(c.radius, 0.02);
  EXPECT_EQ(c.half_length, 0.03);
  EXPECT_EQ(c.quat, (std::array<double, 4>{0, 1, 0, 0}));
  const Model m = load_model_from_string(text, "c.json");
  EXPECT_EQ(m.ncon, 8 + 2 * ContactSpec::kRimPoints);
  EXPECT_EQ(m.con_name[8], "tip/rim0");
}

TEST(RobotJson, EveryBadInputNamesSourcePathExpectedAndGot) {
  for (const BadJson& c : bad_inputs()) {
    try {
      load_model_from_string(c.text, "bad.json");
      ADD_FAILURE() << c.label << ": no error";
    } catch (const Error& e) {
      for (const std::string& s : c.expected)
        EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << c.label << ":\n  got:      " << e.what()
                                                                     << "\n  expected: " << s;
    }
  }
}

std::string asset(const std::string& name) { return std::string(MOREAU_ASSETS_DIR) + "/robots/" + name; }

TEST(RobotJson, EveryAssetLoads) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(MOREAU_ASSETS_DIR) + "/robots")) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    const Model m = load_model(entry.path().string());
    EXPECT_GT(m.nbody, 0);
    EXPECT_TRUE(m.warnings.empty());
    EXPECT_EQ(m.gravity[2], -9.81);
    ++count;
  }
  EXPECT_GE(count, 6);
}

TEST(RobotJson, SmallAssetsHaveTheDocumentedShape) {
  struct Expect {
    const char* file;
    int nq, nv, nu, nbody, ncon;
    double mass;
  };
  for (const Expect& e : {Expect{"cartpole.json", 2, 2, 1, 2, 0, 1.1}, Expect{"pendulum.json", 1, 1, 0, 1, 0, 1},
                          Expect{"double_pendulum.json", 2, 2, 0, 2, 0, 2}, Expect{"cube.json", 7, 6, 0, 1, 8, 0.37},
                          Expect{"planar_box.json", 3, 3, 0, 3, 8, 1.002}}) {
    SCOPED_TRACE(e.file);
    const Model m = load_model(asset(e.file));
    EXPECT_EQ(m.nq, e.nq);
    EXPECT_EQ(m.nv, e.nv);
    EXPECT_EQ(m.nu, e.nu);
    EXPECT_EQ(m.nbody, e.nbody);
    EXPECT_EQ(m.ncon, e.ncon);
    EXPECT_NEAR(m.total_mass(), e.mass, 1e-12);
  }
  const Model cartpole = load_model(asset("cartpole.json"));
  EXPECT_EQ(cartpole.actuator_type[0], static_cast<int>(ActuatorType::Motor));
  EXPECT_EQ(cartpole.actuator_gear[0], 10);
  EXPECT_EQ(cartpole.actuator_ctrlrange, (std::vector<double>{-1, 1}));
}

// The example in docs/robot-format.md compiles to what the text says.
TEST(RobotJson, DocumentedExampleCompiles) {
  std::ifstream in(std::string(MOREAU_ASSETS_DIR) + "/../docs/robot-format.md");
  ASSERT_TRUE(in) << "docs/robot-format.md not found";
  std::stringstream doc;
  doc << in.rdbuf();
  const std::string text = doc.str();
  const size_t begin = text.find("```json\n");
  ASSERT_NE(begin, std::string::npos);
  const size_t end = text.find("```", begin + 8);
  const Model m = load_model_from_string(text.substr(begin + 8, end - begin - 8), "robot-format.md");
  EXPECT_EQ(m.body_name, (std::vector<std::string>{"base", "upper"}));
  EXPECT_NEAR(m.body_mass[1], 1.2, 1e-15);
  EXPECT_EQ(m.nq, 8);
  EXPECT_EQ(m.nv, 7);
  EXPECT_EQ(m.nu, 1);
  ASSERT_EQ(m.ncon, 9);
  EXPECT_EQ(m.con_name[8], "foot");
  EXPECT_EQ(m.con_body[8], 1);
  EXPECT_NEAR(m.con_pos[3 * 8 + 2], -0.45, 1e-15);
}

TEST(RobotJson, LoadModelErrorsNameThePath) {
  try {
    load_model("/nonexistent/robot.json");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/robot.json: cannot open file"), std::string::npos) << e.what();
  }
  try {
    load_model("robot.yaml");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("robot.yaml: expected a file name ending in .json, .urdf or .xml"), std::string::npos)
        << e.what();
  }
  // A file's errors name the file.
  const std::string path = ::testing::TempDir() + "robot_json_test_bad.json";
  std::ofstream(path) << replaced(kRobot, "\"mass\": 1,", "\"mass\": -1,");
  try {
    load_model(path);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": $.bodies[1].mass: expected a number >= 0, got -1"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace moreau
