// URDF importer: links, joints, inertials, limits, dynamics and sphere, box and cylinder collisions.
// The root link gets a free joint (or a fixed one with UrdfOptions::fixed_base); fixed
// joints stay fixed bodies, which compile() merges. Choices for what URDF leaves open (a
// <limit> without lower/upper, mesh collisions) are in docs/import.md.
#include "moreau/import.h"
#include "moreau/model.h"

#ifdef MOREAU_WITH_XML

#include <fnmatch.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "host/xml_util.h"

namespace moreau {
namespace {

using namespace xml;
using tinyxml2::XMLDocument;
using tinyxml2::XMLElement;

class UrdfParser {
 public:
  UrdfParser(std::string source, const UrdfOptions& options) : options_(options) {
    spec_.source = std::move(source);
  }

  RobotSpec parse(const std::string& text) {
    XMLDocument doc;
    if (doc.Parse(text.data(), text.size()) != tinyxml2::XML_SUCCESS)
      throw Error(spec_.source + ":" + std::to_string(doc.ErrorLineNum()) + ": malformed XML (" + doc.ErrorName() +
                  ")");
    const XMLElement* robot = doc.RootElement();
    if (!robot) throw Error(spec_.source + ": malformed XML (no root element)");
    if (std::string(robot->Name()) != "robot")
      throw Error(loc(robot) + ": the root element must be <robot>, got <" + robot->Name() + ">");
    spec_.name = robot->Attribute("name") ? robot->Attribute("name") : "";

    int gazebo = 0;
    for (const XMLElement* e = robot->FirstChildElement(); e; e = e->NextSiblingElement()) {
      const std::string tag = e->Name();
      if (tag == "link") {
        const std::string name = required(e, "name");
        if (!links_.emplace(name, e).second) throw Error(loc(e) + ": repeated link name " + in_quotes(name));
        link_order_.push_back(name);
      } else if (tag == "joint") {
        const std::string name = required(e, "name");
        if (!joint_names_.insert(name).second) throw Error(loc(e) + ": repeated joint name " + in_quotes(name));
        joints_.push_back(e);
      } else if (tag == "gazebo") {
        ++gazebo;
      } else if (tag == "transmission" || tag == "material") {
        // actuator wiring for ros_control and colours: nothing for the dynamics
      } else {
        throw Error(loc(e) + ": unsupported element <" + tag + "> in <robot>");
      }
    }
    if (links_.empty()) throw Error(loc(robot) + ": the robot has no <link>");
    if (gazebo > 0)
      spec_.warnings.push_back(spec_.source + ": " + std::to_string(gazebo) +
                               " <gazebo> extension(s) ignored (Gazebo's own contact and plugin settings)");

    build_tree();
    add_bodies();
    add_actuators();
    for (const auto& [kind, list] : skipped_)
      spec_.warnings.push_back(kind + " collisions ignored (moreau's contacts are spheres, boxes and cylinders): " + list);
    for (const auto& [name, value] : options_.default_qpos) spec_.default_qpos.emplace_back(name, value);
    cap_contacts(spec_);
    return std::move(spec_);
  }

 private:
  std::string loc(const XMLElement* e) const { return at(spec_.source, e); }

  std::string required(const XMLElement* e, const char* attr) const {
    const char* v = e->Attribute(attr);
    if (!v) throw Error(loc(e) + ": <" + e->Name() + "> needs a " + in_quotes(attr) + " attribute");
    return v;
  }

  const XMLElement* child(const XMLElement* e, const char* tag, bool needed = false) const {
    const XMLElement* c = e->FirstChildElement(tag);
    if (!c && needed) throw Error(loc(e) + ": " + describe(e) + " needs a <" + tag + "> element");
    if (c && c->NextSiblingElement(tag))
      throw Error(loc(c->NextSiblingElement(tag)) + ": " + describe(e) + " has a second <" + tag + ">");
    return c;
  }

  std::string describe(const XMLElement* e) const {
    const char* name = e->Attribute("name");
    return std::string(e->Name()) + (name ? " " + in_quotes(name) : std::string());
  }

  double number(const XMLElement* e, const char* attr, double init) const {
    const char* v = e->Attribute(attr);
    return v ? numbers(loc(e), attr, v, 1, 1)[0] : init;
  }
  double required_number(const XMLElement* e, const char* attr) const {
    required(e, attr);
    return number(e, attr, 0);
  }
  Vec3 vec3(const XMLElement* e, const char* attr, const Vec3& init) const {
    const char* v = e->Attribute(attr);
    if (!v) return init;
    const std::vector<double> x = numbers(loc(e), attr, v, 3, 3);
    return Vec3(x[0], x[1], x[2]);
  }

  // <origin xyz rpy>: rpy are fixed-axis roll (x), pitch (y), yaw (z): R = Rz Ry Rx.
  struct Pose {
    Vec3 pos = Vec3::Zero();
    Quat rot = Quat::Identity();
  };
  Pose origin(const XMLElement* parent) const {
    Pose p;
    const XMLElement* o = child(parent, "origin");
    if (!o) return p;
    p.pos = vec3(o, "xyz", Vec3::Zero());
    const Vec3 rpy = vec3(o, "rpy", Vec3::Zero());
    p.rot = axis_angle(Vec3::UnitZ(), rpy.z()) * axis_angle(Vec3::UnitY(), rpy.y()) *
            axis_angle(Vec3::UnitX(), rpy.x());
    return p;
  }

  // parent_joint_[link]: the joint whose child it is; the root is the one link without.
  void build_tree() {
    for (const XMLElement* j : joints_) {
      const std::string name = j->Attribute("name");
      const std::string parent = required(child(j, "parent", true), "link");
      const std::string kid = required(child(j, "child", true), "link");
      for (const std::string& l : {parent, kid})
        if (!links_.count(l)) throw Error(loc(j) + ": joint " + in_quotes(name) + ": no link named " + in_quotes(l));
      if (parent == kid) throw Error(loc(j) + ": joint " + in_quotes(name) + " connects link " + in_quotes(kid) + " to itself");
      const auto [it, fresh] = parent_joint_.emplace(kid, j);
      if (!fresh)
        throw Error(loc(j) + ": link " + in_quotes(kid) + " is the child of two joints (" +
                    in_quotes(it->second->Attribute("name")) + " and " + in_quotes(name) + ")");
      children_[parent].push_back(j);
    }
    for (const std::string& l : link_order_) {
      if (parent_joint_.count(l)) continue;
      if (!root_.empty())
        throw Error(loc(links_.at(l)) + ": link " + in_quotes(l) + " is a second root (first " + in_quotes(root_) +
                    "); a URDF is one tree");
      root_ = l;
    }
    if (root_.empty()) throw Error(spec_.source + ": no root link: the joints form a cycle");
    // Every link must hang below the root; what does not is on a cycle.
    std::set<std::string> reached;
    std::vector<std::string> stack{root_};
    while (!stack.empty()) {
      const std::string l = stack.back();
      stack.pop_back();
      reached.insert(l);
      for (const XMLElement* j : children_[l]) stack.push_back(j->FirstChildElement("child")->Attribute("link"));
    }
    for (const std::string& l : link_order_)
      if (!reached.count(l))
        throw Error(loc(links_.at(l)) + ": link " + in_quotes(l) + " is on a cycle of joints, not below the root " +
                    in_quotes(root_));
  }

  // Depth-first from the root, so parents precede children in the spec.
  void add_bodies() {
    // A root link named "world" is the world itself: its joints attach links to it.
    const bool world_root = root_ == "world" && !links_.at(root_)->FirstChildElement("inertial");
    if (!world_root) {
      BodySpec b = link_body(root_);
      b.parent = "world";
      b.joint.type = options_.fixed_base ? JointType::Fixed : JointType::Free;
      spec_.bodies.push_back(std::move(b));
    }
    std::vector<const XMLElement*> stack(children_[root_].rbegin(), children_[root_].rend());
    while (!stack.empty()) {
      const XMLElement* j = stack.back();
      stack.pop_back();
      add_joint_body(j, world_root && j->FirstChildElement("parent")->Attribute("link") == root_);
      const auto& next = children_[j->FirstChildElement("child")->Attribute("link")];
      stack.insert(stack.end(), next.rbegin(), next.rend());
    }
  }

  void add_joint_body(const XMLElement* j, bool from_world) {
    const std::string name = j->Attribute("name");
    const std::string w = loc(j) + ": joint " + in_quotes(name);
    BodySpec b = link_body(j->FirstChildElement("child")->Attribute("link"));
    b.parent = from_world ? "world" : j->FirstChildElement("parent")->Attribute("link");
    const Pose p = origin(j);
    b.pos = arr3(p.pos);
    b.quat = arr4(p.rot);
    JointSpec& s = b.joint;
    s.name = name;
    joint_where_[name] = loc(j) + " joint " + in_quotes(name);
    const std::string type = required(j, "type");
    if (type == "revolute" || type == "continuous") {
      s.type = JointType::Revolute;
    } else if (type == "prismatic") {
      s.type = JointType::Prismatic;
    } else if (type == "fixed") {
      s.type = JointType::Fixed;
    } else if (type == "floating") {
      if (!from_world) throw Error(w + ": a floating joint must attach a link to the world link");
      s.type = JointType::Free;
    } else if (type == "planar") {
      throw Error(w + ": planar joints are not supported");
    } else {
      throw Error(w + ": unknown joint type " + in_quotes(type));
    }
    if (const XMLElement* m = child(j, "mimic")) throw Error(loc(m) + ": joint " + in_quotes(name) + ": <mimic> is not supported");
    for (const XMLElement* c = j->FirstChildElement(); c; c = c->NextSiblingElement()) {
      const std::string tag = c->Name();
      if (!(tag == "origin" || tag == "parent" || tag == "child" || tag == "axis" || tag == "limit" ||
            tag == "dynamics" || tag == "safety_controller" || tag == "calibration"))
        throw Error(loc(c) + ": unsupported element <" + tag + "> in joint " + in_quotes(name));
    }
    if (s.type == JointType::Revolute || s.type == JointType::Prismatic) {
      const XMLElement* axis = child(j, "axis");
      const Vec3 a = axis ? vec3(axis, "xyz", Vec3::UnitX()) : Vec3::UnitX();
      if (a.norm() < 1e-12) throw Error(loc(axis) + ": joint " + in_quotes(name) + ": the axis is zero");
      s.axis = arr3(a.normalized());
      read_limit(j, type, b);
    }
    if (const XMLElement* d = child(j, "dynamics")) {
      s.damping = number(d, "damping", 0);
      s.frictionloss = number(d, "friction", 0);
      if (s.damping < 0) throw Error(loc(d) + ": joint " + in_quotes(name) + ": damping must be >= 0, got " + num(s.damping));
      if (s.frictionloss < 0)
        throw Error(loc(d) + ": joint " + in_quotes(name) + ": friction must be >= 0, got " + num(s.frictionloss));
    }
    spec_.bodies.push_back(std::move(b));
  }

  // <limit effort velocity lower upper>. URDF says missing lower/upper are 0, which locks a
  // revolute joint; files written for other simulators omit them meaning "unlimited", so
  // both missing -> unlimited (with a warning), one missing -> 0 as URDF says (warning).
  void read_limit(const XMLElement* j, const std::string& type, BodySpec& b) {
    const std::string name = j->Attribute("name");
    const XMLElement* limit = child(j, "limit", type == "revolute" || type == "prismatic");
    if (!limit) return;
    const std::string w = loc(limit) + ": joint " + in_quotes(name);
    const double effort = required_number(limit, "effort");
    number(limit, "velocity", 0);  // checked; a joint speed limit is not modelled
    if (effort < 0) throw Error(w + ": effort must be >= 0, got " + num(effort));
    effort_[name] = effort;
    if (type == "continuous") return;
    const bool has_lower = limit->Attribute("lower"), has_upper = limit->Attribute("upper");
    if (!has_lower && !has_upper) {
      spec_.warnings.push_back(w + ": <limit> has no lower/upper (URDF reads 0, a locked joint); treated as unlimited");
      return;
    }
    if (!has_lower || !has_upper)
      spec_.warnings.push_back(w + ": <limit> has no " + (has_lower ? "upper" : "lower") +
                               "; URDF reads 0 for the missing bound");
    b.joint.limited = true;
    b.joint.range = {number(limit, "lower", 0), number(limit, "upper", 0)};
  }

  // A link's mass properties and contact shapes, in the link frame.
  BodySpec link_body(const std::string& name) {
    const XMLElement* link = links_.at(name);
    BodySpec b;
    b.name = name;
    b.where = loc(link) + " link " + in_quotes(name);
    const std::string w = loc(link) + ": link " + in_quotes(name);
    for (const XMLElement* c = link->FirstChildElement(); c; c = c->NextSiblingElement()) {
      const std::string tag = c->Name();
      if (!(tag == "inertial" || tag == "visual" || tag == "collision" || tag == "self_filter"))
        throw Error(loc(c) + ": unsupported element <" + tag + "> in link " + in_quotes(name));
    }
    if (const XMLElement* inertial = child(link, "inertial")) {
      const Pose p = origin(inertial);
      const double mass = required_number(child(inertial, "mass", true), "value");
      if (!(mass >= 0)) throw Error(w + ": mass must be >= 0, got " + num(mass));
      const XMLElement* i = child(inertial, "inertia", true);
      double v[6];
      const char* names[] = {"ixx", "iyy", "izz", "ixy", "ixz", "iyz"};
      for (int k = 0; k < 6; ++k) v[k] = required_number(i, names[k]);
      if (v[0] < 0 || v[1] < 0 || v[2] < 0)
        throw Error(loc(i) + ": link " + in_quotes(name) + ": inertia ixx, iyy, izz must be >= 0, got " + num(v[0]) +
                    " " + num(v[1]) + " " + num(v[2]));
      // The inertia is given in the frame of <origin>; rotate it into the link frame.
      const Mat3 r = p.rot.toRotationMatrix();
      b.mass = mass;
      b.com = arr3(p.pos);
      b.inertia = inertia6(r * inertia_mat(v[0], v[1], v[2], v[3], v[4], v[5]) * r.transpose());
    }
    if (!wanted_for_contact(name)) return b;
    int index = 0;
    std::map<std::string, int> skipped;
    for (const XMLElement* c = link->FirstChildElement("collision"); c; c = c->NextSiblingElement("collision"), ++index) {
      const Pose p = origin(c);
      const XMLElement* g = child(c, "geometry", true);
      const XMLElement* shape = g->FirstChildElement();
      if (!shape) throw Error(loc(g) + ": link " + in_quotes(name) + ": <geometry> is empty");
      ContactSpec s;
      s.name = c->Attribute("name") ? c->Attribute("name") : name + "/collision" + std::to_string(index);
      s.pos = arr3(p.pos);
      const std::string kind = shape->Name();
      if (kind == "sphere") {
        s.radius = required_number(shape, "radius");
        if (!(s.radius > 0)) throw Error(loc(shape) + ": link " + in_quotes(name) + ": sphere radius must be > 0");
        b.contacts.push_back(s);
      } else if (kind == "box") {
        required(shape, "size");
        const Vec3 size = vec3(shape, "size", Vec3::Zero());
        if (!(size.minCoeff() > 0)) throw Error(loc(shape) + ": link " + in_quotes(name) + ": box size must be > 0");
        s.kind = ContactSpec::Kind::Box;
        s.quat = arr4(p.rot);
        s.half_size = arr3(size / 2);
        b.contacts.push_back(s);
      } else if (kind == "cylinder") {
        s.kind = ContactSpec::Kind::Cylinder;
        s.quat = arr4(p.rot);
        s.radius = required_number(shape, "radius");
        s.half_length = required_number(shape, "length") / 2;
        if (!(s.radius > 0) || !(s.half_length > 0))
          throw Error(loc(shape) + ": link " + in_quotes(name) + ": cylinder radius and length must be > 0");
        b.contacts.push_back(s);
      } else if (kind == "mesh" || kind == "capsule") {
        ++skipped[kind];
      } else {
        throw Error(loc(shape) + ": link " + in_quotes(name) + ": unknown geometry <" + kind + ">");
      }
    }
    for (const auto& [kind, count] : skipped)
      skipped_[kind] += (skipped_[kind].empty() ? "" : ", ") + std::to_string(count) + " on " + in_quotes(name);
    return b;
  }

  bool wanted_for_contact(const std::string& link) const {
    if (options_.contact_bodies.empty()) return true;
    for (const std::string& pattern : options_.contact_bodies)
      if (fnmatch(pattern.c_str(), link.c_str(), 0) == 0) return true;
    return false;
  }

  // One actuator per revolute/prismatic joint: a position servo when kp > 0, else a motor;
  // the force limit is the URDF effort (none when the effort is 0 or absent).
  void add_actuators() {
    if (!options_.add_actuators) return;
    for (const BodySpec& b : spec_.bodies) {
      if (b.joint.type != JointType::Revolute && b.joint.type != JointType::Prismatic) continue;
      ActuatorSpec a;
      a.name = b.joint.name;
      a.joint = b.joint.name;
      a.where = joint_where_.at(b.joint.name);
      a.type = options_.kp > 0 ? ActuatorType::Position : ActuatorType::Motor;
      a.kp = options_.kp;
      a.kd = options_.kd;
      const auto e = effort_.find(b.joint.name);
      if (e != effort_.end() && e->second > 0) {
        a.force_limited = true;
        a.force_range = {-e->second, e->second};
      }
      spec_.actuators.push_back(a);
    }
  }

  const UrdfOptions& options_;
  RobotSpec spec_;
  std::map<std::string, const XMLElement*> links_;
  std::vector<std::string> link_order_;
  std::vector<const XMLElement*> joints_;
  std::set<std::string> joint_names_;
  std::map<std::string, const XMLElement*> parent_joint_;
  std::map<std::string, std::vector<const XMLElement*>> children_;
  std::string root_;
  std::map<std::string, std::string> skipped_;    // geometry -> "4 on 'base', 1 on 'LF_HIP'"
  std::map<std::string, double> effort_;          // joint -> <limit effort>
  std::map<std::string, std::string> joint_where_;  // joint -> "file:line joint 'name'"
};

}  // namespace

RobotSpec parse_urdf(const std::string& text, const std::string& source, const UrdfOptions& options) {
  return UrdfParser(source, options).parse(text);
}

RobotSpec parse_urdf_file(const std::string& path, const UrdfOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot read the file");
  std::stringstream text;
  text << in.rdbuf();
  const size_t slash = path.find_last_of('/');
  return parse_urdf(text.str(), slash == std::string::npos ? path : path.substr(slash + 1), options);
}

}  // namespace moreau

#else  // !MOREAU_WITH_XML

namespace moreau {

RobotSpec parse_urdf(const std::string&, const std::string& source, const UrdfOptions&) {
  throw Error(source + ": URDF import needs moreau built with tinyxml2 (libtinyxml2-dev)");
}

RobotSpec parse_urdf_file(const std::string& path, const UrdfOptions&) {
  throw Error(path + ": URDF import needs moreau built with tinyxml2 (libtinyxml2-dev)");
}

}  // namespace moreau

#endif
