// JSON robot format (docs/robot-format.md) -> RobotSpec. Strict: unknown fields, wrong types
// and wrong lengths are errors naming the source and the JSON path ("$.bodies[2].mass").
// Physical validity (masses, inertias, names, tree) is checked by compile().
#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include <nlohmann/json.hpp>

#include "moreau/model.h"

namespace moreau {
namespace {

using json = nlohmann::json;

// nlohmann's message without its "[json.exception.parse_error.101] " prefix.
std::string json_message(const nlohmann::json::exception& e) {
  const std::string what = e.what();
  const size_t end = what.find("] ");
  return end == std::string::npos ? what : what.substr(end + 2);
}

class Reader {
 public:
  explicit Reader(const std::string& source) : source_(source) {}

  // Throws "<source>: <path>: expected <expected>, got <got>".
  [[noreturn]] void fail(const std::string& path, const std::string& expected, const std::string& got) const {
    throw Error(source_ + ": " + path + ": expected " + expected + ", got " + got);
  }

  // A JSON value for messages: its type and (shortened) text.
  static std::string describe(const json& j) {
    std::string text = j.dump();
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    return std::string(j.type_name()) + " " + text;
  }

  // An object whose keys are all in `allowed`.
  void object(const json& j, const std::string& path, std::initializer_list<const char*> allowed) const {
    if (!j.is_object()) fail(path, "an object", describe(j));
    for (const auto& [key, value] : j.items()) {
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      std::string list;
      for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      fail(path, "only the fields " + list, "unknown field '" + key + "'");
    }
  }

  // The member `key` of an object, or null when absent.
  static const json* find(const json& obj, const char* key) {
    const auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }

  const json& require(const json& obj, const std::string& path, const char* key, const std::string& what) const {
    const json* j = find(obj, key);
    if (!j) fail(path + "." + key, what + " (required)", "nothing");
    return *j;
  }

  double number(const json& j, const std::string& path) const {
    if (!j.is_number()) fail(path, "a number", describe(j));
    return j.get<double>();
  }

  int integer(const json& j, const std::string& path) const {
    if (!j.is_number_integer() || j.get<int64_t>() < INT32_MIN || j.get<int64_t>() > INT32_MAX)
      fail(path, "an integer", describe(j));
    return j.get<int>();
  }

  std::string string(const json& j, const std::string& path) const {
    if (!j.is_string()) fail(path, "a string", describe(j));
    return j.get<std::string>();
  }

  template <size_t N>
  std::array<double, N> numbers(const json& j, const std::string& path) const {
    if (!j.is_array() || j.size() != N) fail(path, "an array of " + std::to_string(N) + " numbers", describe(j));
    std::array<double, N> a;
    for (size_t i = 0; i < N; ++i) a[i] = number(j[i], path + "[" + std::to_string(i) + "]");
    return a;
  }

  const json& array(const json& j, const std::string& path) const {
    if (!j.is_array()) fail(path, "an array", describe(j));
    return j;
  }

  // Reads an optional member into `out` with `read(value, path)`.
  template <class T, class Read>
  void optional(const json& obj, const std::string& path, const char* key, T& out, Read read) const {
    if (const json* j = find(obj, key)) out = (this->*read)(*j, path + "." + key);
  }

  // One of `names` (by position: the enum value), e.g. a joint type.
  template <class Enum>
  Enum choice(const json& j, const std::string& path, std::initializer_list<const char*> names) const {
    const std::string s = string(j, path);
    std::string list;
    int index = 0;
    for (const char* n : names) {
      if (s == n) return static_cast<Enum>(index);
      list += (index++ ? ", " : "") + std::string("'") + n + "'";
    }
    fail(path, "one of " + list, "'" + s + "'");
  }

  JointSpec joint(const json& j, const std::string& path) const {
    object(j, path, {"name", "type", "axis", "pos", "range", "damping", "armature", "frictionloss", "stiffness",
                     "springref"});
    JointSpec s;
    s.type = choice<JointType>(require(j, path, "type", "a joint type"), path + ".type",
                               {"free", "ball", "revolute", "prismatic", "fixed"});
    optional(j, path, "name", s.name, &Reader::string);
    optional(j, path, "axis", s.axis, &Reader::numbers<3>);
    optional(j, path, "pos", s.pos, &Reader::numbers<3>);
    if (const json* r = find(j, "range")) {
      s.limited = true;
      s.range = numbers<2>(*r, path + ".range");
    }
    optional(j, path, "damping", s.damping, &Reader::number);
    optional(j, path, "armature", s.armature, &Reader::number);
    optional(j, path, "frictionloss", s.frictionloss, &Reader::number);
    optional(j, path, "stiffness", s.stiffness, &Reader::number);
    optional(j, path, "springref", s.springref, &Reader::number);
    return s;
  }

  ContactSpec contact(const json& j, const std::string& path) const {
    if (!j.is_object()) fail(path, "an object", describe(j));
    ContactSpec c;
    c.kind = choice<ContactSpec::Kind>(require(j, path, "type", "a contact type"), path + ".type", {"sphere", "box", "cylinder"});
    if (c.kind == ContactSpec::Kind::Sphere) {
      object(j, path, {"type", "name", "pos", "radius"});
      c.radius = number(require(j, path, "radius", "a number"), path + ".radius");
    } else if (c.kind == ContactSpec::Kind::Cylinder) {
      object(j, path, {"type", "name", "pos", "quat", "radius", "half_length"});
      optional(j, path, "quat", c.quat, &Reader::numbers<4>);
      c.radius = number(require(j, path, "radius", "a number"), path + ".radius");
      c.half_length = number(require(j, path, "half_length", "a number"), path + ".half_length");
    } else {
      object(j, path, {"type", "name", "pos", "quat", "half_size"});
      optional(j, path, "quat", c.quat, &Reader::numbers<4>);
      c.half_size = numbers<3>(require(j, path, "half_size", "an array of 3 numbers"), path + ".half_size");
    }
    optional(j, path, "name", c.name, &Reader::string);
    optional(j, path, "pos", c.pos, &Reader::numbers<3>);
    return c;
  }

  BodySpec body(const json& j, const std::string& path) const {
    object(j, path, {"name", "parent", "pos", "quat", "joint", "mass", "com", "inertia", "contacts"});
    BodySpec b;
    b.where = path;
    b.name = string(require(j, path, "name", "a string"), path + ".name");
    b.parent = "world";
    optional(j, path, "parent", b.parent, &Reader::string);
    optional(j, path, "pos", b.pos, &Reader::numbers<3>);
    optional(j, path, "quat", b.quat, &Reader::numbers<4>);
    if (const json* jt = find(j, "joint")) b.joint = joint(*jt, path + ".joint");  // absent: fixed
    // Mass and inertia are required for a moving body; a fixed body defaults to massless.
    if (b.joint.type == JointType::Fixed) {
      optional(j, path, "mass", b.mass, &Reader::number);
      optional(j, path, "inertia", b.inertia, &Reader::numbers<6>);
    } else {
      b.mass = number(require(j, path, "mass", "a number"), path + ".mass");
      b.inertia = numbers<6>(require(j, path, "inertia", "an array of 6 numbers"), path + ".inertia");
    }
    optional(j, path, "com", b.com, &Reader::numbers<3>);
    if (const json* cs = find(j, "contacts")) {
      const std::string cpath = path + ".contacts";
      const json& list = array(*cs, cpath);
      for (size_t k = 0; k < list.size(); ++k)
        b.contacts.push_back(contact(list[k], cpath + "[" + std::to_string(k) + "]"));
    }
    return b;
  }

  ActuatorSpec actuator(const json& j, const std::string& path) const {
    if (!j.is_object()) fail(path, "an object", describe(j));
    ActuatorSpec a;
    a.where = path;
    a.type = choice<ActuatorType>(require(j, path, "type", "an actuator type"), path + ".type", {"position", "motor"});
    // A motor has no gains: kp/kd there would be silently ignored.
    if (a.type == ActuatorType::Position) {
      object(j, path, {"name", "joint", "type", "kp", "kd", "gear", "force_range", "ctrl_range", "velocity_limit"});
      optional(j, path, "kp", a.kp, &Reader::number);
      optional(j, path, "kd", a.kd, &Reader::number);
    } else {
      object(j, path, {"name", "joint", "type", "gear", "force_range", "ctrl_range", "velocity_limit"});
    }
    a.joint = string(require(j, path, "joint", "a joint name"), path + ".joint");
    a.name = a.joint;
    optional(j, path, "name", a.name, &Reader::string);
    optional(j, path, "gear", a.gear, &Reader::number);
    if (const json* r = find(j, "force_range")) {
      a.force_limited = true;
      a.force_range = numbers<2>(*r, path + ".force_range");
    }
    if (const json* r = find(j, "ctrl_range")) {
      a.ctrl_limited = true;
      a.ctrl_range = numbers<2>(*r, path + ".ctrl_range");
    }
    if (const json* v = find(j, "velocity_limit")) {
      const std::string vpath = path + ".velocity_limit";
      object(*v, vpath, {"peak_force", "max_velocity"});
      a.peak_force = number(require(*v, vpath, "peak_force", "a number"), vpath + ".peak_force");
      a.max_velocity = number(require(*v, vpath, "max_velocity", "a number"), vpath + ".max_velocity");
    }
    return a;
  }

  RobotSpec robot(const json& j) const {
    object(j, "$", {"name", "gravity", "timestep", "decimation", "bodies", "actuators", "default_qpos"});
    RobotSpec spec;
    spec.source = source_;
    spec.name = string(require(j, "$", "name", "a string"), "$.name");
    optional(j, "$", "gravity", spec.gravity, &Reader::numbers<3>);
    optional(j, "$", "timestep", spec.timestep, &Reader::number);
    optional(j, "$", "decimation", spec.decimation, &Reader::integer);
    const json& bodies = array(require(j, "$", "bodies", "an array of bodies"), "$.bodies");
    for (size_t i = 0; i < bodies.size(); ++i)
      spec.bodies.push_back(body(bodies[i], "$.bodies[" + std::to_string(i) + "]"));
    if (const json* acts = find(j, "actuators")) {
      const json& list = array(*acts, "$.actuators");
      for (size_t i = 0; i < list.size(); ++i)
        spec.actuators.push_back(actuator(list[i], "$.actuators[" + std::to_string(i) + "]"));
    }
    if (const json* q = find(j, "default_qpos")) {
      if (!q->is_object()) fail("$.default_qpos", "an object of joint name: value", describe(*q));
      for (const auto& [name, value] : q->items())
        spec.default_qpos.emplace_back(name, number(value, "$.default_qpos." + name));
    }
    return spec;
  }

 private:
  std::string source_;
};

}  // namespace

RobotSpec parse_robot_json(const std::string& text, const std::string& source) {
  const Reader reader(source);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    reader.fail("$", "valid JSON", "a syntax error at byte " + std::to_string(e.byte) + ": " + json_message(e));
  } catch (const json::exception& e) {  // e.g. a number too large for a double (1e999)
    reader.fail("$", "valid JSON with finite numbers", json_message(e));
  }
  return reader.robot(j);
}

}  // namespace moreau
