// MJCF importer: the subset of MuJoCo's XML (2.2.2 semantics) that describes a tree of rigid
// bodies with hinge, slide, ball and free joints, primitive geoms and joint actuators.
// Every attribute is classified: read, ignored because it cannot change the dynamics
// (names, rendering), or ignored with one warning per attribute (contact and solver
// parameters of MuJoCo's own solver). Anything else, and every unsupported feature that
// would change the dynamics, is an error naming the file, line and feature. docs/import.md
// lists the choices.
#include "moreau/import.h"
#include "moreau/model.h"

#ifdef MOREAU_WITH_XML

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#ifdef MOREAU_WITH_PNG
#include <png.h>
#endif

#include "host/xml_util.h"

namespace moreau {
namespace {

using namespace xml;
using tinyxml2::XMLDocument;
using tinyxml2::XMLElement;

// How an attribute is treated.
enum class Use {
  Read,    // the importer reads it
  Ignore,  // cannot change the dynamics (names, rendering, memory sizes)
  Warn,    // a contact/solver parameter of MuJoCo's solver: ignored with one warning
};
using AttrTable = std::map<std::string, Use>;

AttrTable table(std::initializer_list<const char*> read, std::initializer_list<const char*> ignore,
                std::initializer_list<const char*> warn) {
  AttrTable t;
  for (const char* a : read) t[a] = Use::Read;
  for (const char* a : ignore) t[a] = Use::Ignore;
  for (const char* a : warn) t[a] = Use::Warn;
  return t;
}

const std::map<std::string, AttrTable>& attr_tables() {
  static const std::map<std::string, AttrTable> tables = [] {
    std::map<std::string, AttrTable> t;
    t["mujoco"] = table({"model"}, {}, {});
    t["include"] = table({"file"}, {}, {});
    t["compiler"] = table({"angle", "eulerseq", "autolimits", "inertiafromgeom", "settotalmass", "inertiagrouprange",
                           "coordinate", "boundmass", "boundinertia", "balanceinertia", "meshdir", "assetdir"},
                          {"texturedir", "strippath", "fitaabb", "discardvisual", "convexhull",
                           "usethread", "fusestatic", "exactmeshinertia", "saveinertial", "alignfree"},
                          {});
    t["option"] = table({"timestep", "gravity", "integrator", "density", "viscosity", "wind"},
                        {"magnetic", "apirate"},
                        {"impratio", "tolerance", "noslip_tolerance", "mpr_tolerance", "o_margin", "o_solref",
                         "o_solimp", "o_friction", "collision", "cone", "jacobian", "solver", "iterations",
                         "noslip_iterations", "mpr_iterations", "ls_iterations", "ls_tolerance", "ccd_iterations",
                         "ccd_tolerance", "sdf_iterations", "sdf_initpoints", "actuatorgroupdisable"});
    t["flag"] = table({"contact", "gravity", "filterparent"},
                      {"warmstart", "sensor", "energy", "fwdinv", "invdiscrete", "sensornoise"},
                      {"constraint", "equality", "frictionloss", "limit", "passive", "actuation", "clampctrl",
                       "refsafe", "override", "eulerdamp", "spring", "damper", "midphase",
                       "nativeccd", "multiccd", "island", "autoreset"});
    t["default"] = table({"class"}, {}, {});
    t["worldbody"] = table({}, {}, {});
    t["body"] = table({"name", "childclass", "pos", "quat", "axisangle", "euler", "xyaxes", "zaxis", "mocap",
                       "gravcomp"},
                      {"user"}, {});
    t["inertial"] = table({"pos", "quat", "axisangle", "euler", "xyaxes", "zaxis", "mass", "diaginertia",
                           "fullinertia"},
                          {}, {});
    t["joint"] = table({"name", "class", "type", "pos", "axis", "limited", "range", "ref", "stiffness",
                        "springdamper", "springref", "armature", "damping", "frictionloss", "actuatorfrclimited",
                        "actuatorfrcrange", "actuatorgravcomp"},
                       {"group", "user"},
                       {"solreflimit", "solimplimit", "solreffriction", "solimpfriction", "margin"});
    t["freejoint"] = table({"name"}, {"group", "align"}, {});
    t["geom"] = table({"name", "class", "type", "contype", "conaffinity", "group", "size", "mass", "density",
                       "fromto", "pos", "quat", "axisangle", "euler", "xyaxes", "zaxis", "mesh", "hfield",
                       "shellinertia", "fluidshape"},
                      {"material", "rgba", "user", "fitscale"},
                      {"condim", "priority", "friction", "solmix", "solref", "solimp", "margin", "gap",
                       "fluidcoef"});
    const AttrTable actuator = table({"name", "class", "ctrllimited", "forcelimited", "ctrlrange", "forcerange",
                                      "gear", "joint", "jointinparent", "tendon", "slidersite", "cranksite", "site",
                                      "refsite", "body", "actlimited", "actrange"},
                                     {"group", "user", "lengthrange", "cranklength"}, {});
    t["motor"] = actuator;
    t["position"] = actuator;
    for (const char* a : {"kp", "kv", "dampratio", "timeconst", "inheritrange"}) t["position"][a] = Use::Read;
    t["general"] = actuator;
    for (const char* a : {"dyntype", "gaintype", "biastype", "dynprm", "gainprm", "biasprm", "actdim", "actearly"})
      t["general"][a] = Use::Read;
    return t;
  }();
  return tables;
}

// Why an attribute is ignored with a warning, by element.
std::string warn_reason(const std::string& tag) {
  if (tag == "option" || tag == "flag") return "a setting of MuJoCo's solver; moreau has its own time stepping";
  if (tag == "geom") return "a contact parameter of MuJoCo's solver; moreau's contact model has its own parameters";
  return "a constraint-solver parameter of MuJoCo; moreau's joint limits have their own";
}

// Elements whose whole subtree is read by nothing and changes no dynamics.
const std::set<std::string>& ignored_sections() {
  static const std::set<std::string> s{"visual", "statistic", "custom", "sensor", "keyframe", "size", "asset"};
  return s;
}

// Children of a body that cannot change the dynamics.
const std::set<std::string>& ignored_body_children() {
  static const std::set<std::string> s{"site", "camera", "light"};
  return s;
}

const std::set<std::string>& actuator_tags() {
  static const std::set<std::string> s{"motor",    "position", "general", "velocity", "intvelocity",
                                       "damper",   "cylinder", "muscle",  "adhesion", "plugin"};
  return s;
}

constexpr double kPi = 3.14159265358979323846;
constexpr std::uintmax_t kMaxFileBytes = 16 << 20;

// One default class: its parent and, by element group ("joint", "geom", "actuator"), the
// elements that set its defaults.
struct DefaultClass {
  std::string name;
  int parent = -1;
  std::map<std::string, std::vector<const XMLElement*>> elems;
};

// Attributes of an element seen through its default classes: the layers are the default
// elements from the root class to the element's class, then the element itself. A scalar
// comes from the last layer that has it; a vector starts from the MuJoCo default and each
// layer overwrites the leading entries it gives (as MuJoCo reads `size="0.1"` over a
// default `size="0.2 0.3"`).
struct Layers {
  std::vector<const XMLElement*> layers;
  const XMLElement* source(const char* name) const {
    for (auto it = layers.rbegin(); it != layers.rend(); ++it)
      if ((*it)->Attribute(name)) return *it;
    return nullptr;
  }
  const char* raw(const char* name) const {
    const XMLElement* s = source(name);
    return s ? s->Attribute(name) : nullptr;
  }
  bool has(const char* name) const { return source(name) != nullptr; }
};

class MjcfParser {
 public:
  MjcfParser(std::string source, std::string include_dir) : include_dir_(std::move(include_dir)) {
    spec_.source = std::move(source);
    spec_.timestep = 0.002;  // MuJoCo's default for a file without <option timestep>
  }

  // Every unsupported feature of the file, each naming its element, in one Error (parse_all
  // goes on past a refusal, so that a file with six stiff joints lists all six).
  RobotSpec parse(const std::string& text, const std::string& main_path) {
    try {
      parse_all(text, main_path);
    } catch (const Error& e) {
      if (refusals_.empty()) throw;
      refuse(e.what());
    }
    if (!refusals_.empty()) {
      std::string msg;
      for (const std::string& r : refusals_) msg += (msg.empty() ? "" : "\n") + r;
      throw Error(msg);
    }
    return std::move(spec_);
  }

 private:
  void refuse(const std::string& what) { refusals_.push_back(what); }

  void parse_all(const std::string& text, const std::string& main_path) {
    if (!main_path.empty()) included_.insert(main_path);
    const XMLElement* root = load(text, spec_.source);
    if (std::string(root->Name()) != "mujoco")
      throw Error(loc(root) + ": the root element must be <mujoco>, got <" + root->Name() + ">");
    check_attrs(root);
    spec_.name = root->Attribute("model") ? root->Attribute("model") : "";

    // MuJoCo reads the sections in a fixed order, whatever their order in the file.
    const std::vector<const XMLElement*> top = children(root);
    for (const XMLElement* e : top) {
      const std::string tag = e->Name();
      if (tag == "compiler") parse_compiler(e);
    }
    classes_.push_back({"main", -1, {}});
    class_index_["main"] = 0;
    for (const XMLElement* e : top) {
      const std::string tag = e->Name();
      if (tag == "option") {
        parse_option(e);
      } else if (tag == "default") {
        parse_default(e, -1);
      } else if (tag == "compiler" || tag == "worldbody" || tag == "actuator" || ignored_sections().count(tag)) {
      } else if (tag == "contact") {
        parse_contact_section(e);
      } else if (tag == "equality" || tag == "tendon") {
        if (e->FirstChildElement())
          throw Error(loc(e->FirstChildElement()) + ": <" + tag + "> elements are not supported (<" +
                      e->FirstChildElement()->Name() + ">)");
      } else {
        throw Error(loc(e) + ": unsupported element <" + tag + ">");
      }
    }
    for (const XMLElement* e : top)  // of the assets, the heightfields (the rest is rendering or meshes)
      if (std::string(e->Name()) == "asset")
        for (const XMLElement* c : children(e))
          if (std::string(c->Name()) == "hfield" && c->Attribute("name")) hfields_[c->Attribute("name")] = c;
    std::vector<Geom> statics;  // the geoms of every <worldbody>: the ground's first
    for (const XMLElement* e : top) {
      if (std::string(e->Name()) != "worldbody") continue;
      check_attrs(e);
      for (const XMLElement* c : children(e))
        if (std::string(c->Name()) == "geom") statics.push_back(read_geom(c, 0));
    }
    read_ground(statics);
    for (const XMLElement* e : top)
      if (std::string(e->Name()) == "worldbody") parse_worldbody(e);
    for (const XMLElement* e : top)
      if (std::string(e->Name()) == "actuator") parse_actuators(e);

    if (!refusals_.empty()) return;  // parse() reports them
    find_self_collisions();
    apply_totalmass();
    flush_warnings();
    cap_contacts(spec_);
  }

  // ---- documents and includes ------------------------------------------------------------

  const XMLElement* load(const std::string& text, const std::string& file) {
    auto doc = std::make_unique<XMLDocument>();
    if (doc->Parse(text.data(), text.size()) != tinyxml2::XML_SUCCESS)
      throw Error(file + ":" + std::to_string(doc->ErrorLineNum()) + ": malformed XML (" + doc->ErrorName() + ")");
    if (!doc->RootElement()) throw Error(file + ": malformed XML (no root element)");
    file_of_[doc.get()] = file;
    docs_.push_back(std::move(doc));
    return docs_.back()->RootElement();
  }

  // "<file>:<line>" of an element, in whichever (included) file it is.
  std::string loc(const XMLElement* e) const { return at(file_of_.at(e->GetDocument()), e); }

  // An element's children, with every <include> replaced by the children of the included
  // file's <mujoco> root (recursively), as MuJoCo does.
  std::vector<const XMLElement*> children(const XMLElement* e) {
    std::vector<const XMLElement*> out;
    for (const XMLElement* c = e->FirstChildElement(); c; c = c->NextSiblingElement()) {
      if (std::string(c->Name()) != "include") {
        out.push_back(c);
        continue;
      }
      check_attrs(c);
      const char* file = c->Attribute("file");
      if (!file) throw Error(loc(c) + ": <include> needs a 'file' attribute");
      const std::string path = file[0] == '/' ? std::string(file) : include_dir_ + "/" + file;
      if (!included_.insert(path).second)
        throw Error(loc(c) + ": <include>: file " + in_quotes(file) + " is already included");
      std::error_code ec;
      if (!std::filesystem::is_regular_file(path, ec) || std::filesystem::file_size(path, ec) > kMaxFileBytes)
        throw Error(loc(c) + ": <include>: cannot read " + in_quotes(path) + " (not a file of at most 16 MB)");
      std::ifstream in(path, std::ios::binary);
      if (!in) throw Error(loc(c) + ": <include>: cannot read " + in_quotes(path));
      std::stringstream text;
      text << in.rdbuf();
      const XMLElement* root = load(text.str(), file);
      if (std::string(root->Name()) != "mujoco")
        throw Error(loc(root) + ": the root element of an included file must be <mujoco>, got <" + root->Name() +
                    ">");
      for (const XMLElement* i : children(root)) out.push_back(i);
    }
    return out;
  }

  // ---- attributes ------------------------------------------------------------------------

  // Unknown attributes are errors (as in MuJoCo); solver parameters are noted for a warning.
  void check_attrs(const XMLElement* e) {
    const std::string tag = e->Name();
    const auto& tables = attr_tables();
    const auto t = tables.find(tag);
    for (const tinyxml2::XMLAttribute* a = e->FirstAttribute(); a; a = a->Next()) {
      if (t == tables.end()) throw Error(loc(e) + ": <" + tag + ">: unknown attribute " + in_quotes(a->Name()));
      const auto use = t->second.find(a->Name());
      if (use == t->second.end()) throw Error(loc(e) + ": <" + tag + ">: unknown attribute " + in_quotes(a->Name()));
      if (use->second == Use::Warn) {
        auto [it, fresh] = warned_.try_emplace(tag + " attribute " + in_quotes(a->Name()), loc(e), 0, tag);
        ++std::get<1>(it->second);
      }
    }
  }

  // The body pairs MuJoCo collides with each other, by its filter (its collision driver): two
  // geoms of different weld bodies, neither the other's weld parent (unless filterparent is
  // disabled), their bodies not an <exclude>d pair, and (contype₁ & conaffinity₂) ≠ 0 or
  // (contype₂ & conaffinity₁) ≠ 0. moreau's contacts are against the ground only: it lists the
  // pairs (RobotSpec::self_collisions, by weld body) and warns that it does not simulate them.
  void find_self_collisions() {
    std::set<std::pair<std::string, std::string>> excluded;
    for (const Exclude& x : excludes_) {
      for (const std::string& b : {x.body1, x.body2})
        if (!weld_.count(b)) throw Error(loc(x.elem) + ": <exclude>: no body named " + in_quotes(b));
      excluded.insert(std::minmax(x.body1, x.body2));
    }
    std::set<std::pair<int, int>> pairs;  // by the weld bodies' order in the file
    for (size_t i = 0; i < body_geoms_.size(); ++i)
      for (size_t j = i + 1; j < body_geoms_.size(); ++j) {
        const BodyGeom& a = body_geoms_[i];
        const BodyGeom& b = body_geoms_[j];
        if (a.weld == b.weld || (filterparent_ && (a.weld == b.weld_parent || b.weld == a.weld_parent)) ||
            excluded.count(std::minmax(a.body, b.body)) ||
            ((a.contype & b.conaffinity) == 0 && (b.contype & a.conaffinity) == 0))
          continue;
        pairs.insert(std::minmax(weld_order_.at(a.weld), weld_order_.at(b.weld)));
      }
    std::vector<std::string> weld_name(weld_order_.size());
    for (const auto& [name, k] : weld_order_) weld_name[k] = name;
    std::string listed;
    for (const auto& [i, j] : pairs) {
      spec_.self_collisions.emplace_back(weld_name[i], weld_name[j]);
      if (spec_.self_collisions.size() <= 6) listed += (listed.empty() ? "" : ", ") + weld_name[i] + "–" + weld_name[j];
    }
    if (!pairs.empty())
      spec_.warnings.push_back("contacts between the robot's own bodies are not simulated unless asked "
                               "(with_self_collisions: spheres and points, not box or cylinder faces): MuJoCo collides " +
                               std::to_string(pairs.size()) +
                               " pair(s) of bodies here (Model.self_collisions): " + listed +
                               (pairs.size() > 6 ? ", ..." : ""));
  }

  void flush_warnings() {
    for (const auto& [type, list] : skipped_)
      spec_.warnings.push_back(type + " collision geoms ignored (moreau's contacts are spheres, boxes, capsules and cylinders): " +
                               list);
    for (const auto& [what, info] : warned_) {
      const auto& [first, count, tag] = info;
      spec_.warnings.push_back(what + " ignored (" + warn_reason(tag) + "); " + std::to_string(count) +
                               (count == 1 ? " use, at " : " uses, first at ") + first);
    }
  }

  std::vector<double> vec(const Layers& l, const char* name, std::vector<double> init, bool exact) {
    for (const XMLElement* e : l.layers) {
      const char* text = e->Attribute(name);
      if (!text) continue;
      const std::vector<double> v = numbers(loc(e), name, text, exact ? init.size() : 1, init.size());
      for (size_t i = 0; i < v.size(); ++i) init[i] = v[i];
    }
    return init;
  }
  double number(const Layers& l, const char* name, double init) { return vec(l, name, {init}, true)[0]; }
  Vec3 vec3(const Layers& l, const char* name, const Vec3& init) {
    const std::vector<double> v = vec(l, name, {init.x(), init.y(), init.z()}, true);
    return Vec3(v[0], v[1], v[2]);
  }
  // An attribute with a fixed set of keywords.
  std::string keyword(const Layers& l, const char* name, const std::string& init,
                      std::initializer_list<const char*> allowed) {
    const XMLElement* s = l.source(name);
    if (!s) return init;
    const std::string v = s->Attribute(name);
    std::string list;
    for (const char* a : allowed) {
      if (v == a) return v;
      list += std::string(list.empty() ? "" : ", ") + a;
    }
    throw Error(loc(s) + ": attribute " + in_quotes(name) + ": expected one of " + list + ", got " + in_quotes(v));
  }
  bool boolean(const Layers& l, const char* name, bool init) {
    const std::string v = keyword(l, name, init ? "true" : "false", {"true", "false"});
    return v == "true";
  }
  int integer(const Layers& l, const char* name, int init) {
    const XMLElement* s = l.source(name);
    if (!s) return init;
    const double x = number(l, name, init);
    if (x != std::floor(x) || std::fabs(x) > 1e9)
      throw Error(loc(s) + ": attribute " + in_quotes(name) + ": expected an integer, got " +
                  in_quotes(s->Attribute(name)));
    return static_cast<int>(x);
  }
  double angle(double x) const { return degree_ ? x * kPi / 180 : x; }

  // MuJoCo's frame orientation: one of quat, axisangle, euler, xyaxes, zaxis, taken from
  // the most specific layer that gives any.
  Quat orientation(const Layers& l) {
    static const char* kinds[] = {"quat", "axisangle", "euler", "xyaxes", "zaxis"};
    for (auto it = l.layers.rbegin(); it != l.layers.rend(); ++it) {
      const XMLElement* e = *it;
      std::vector<const char*> given;
      for (const char* k : kinds)
        if (e->Attribute(k)) given.push_back(k);
      if (given.empty()) continue;
      if (given.size() > 1)
        throw Error(loc(e) + ": <" + e->Name() + ">: more than one orientation given (" + given[0] + " and " +
                    given[1] + ")");
      const std::string kind = given[0];
      const size_t n = kind == "quat" || kind == "axisangle" ? 4 : kind == "xyaxes" ? 6 : 3;
      const std::vector<double> v = numbers(loc(e), given[0], e->Attribute(given[0]), n, n);
      auto nonzero = [&](const Vec3& a, const char* what) {
        if (a.norm() < 1e-12) throw Error(loc(e) + ": attribute " + in_quotes(given[0]) + ": " + what + " is zero");
        return a.normalized();
      };
      if (kind == "quat") {
        const Quat q(v[0], v[1], v[2], v[3]);
        if (q.norm() < 1e-12) throw Error(loc(e) + ": attribute 'quat': the quaternion is zero");
        return q.normalized();
      }
      if (kind == "axisangle") return axis_angle(nonzero(Vec3(v[0], v[1], v[2]), "the axis"), angle(v[3]));
      if (kind == "euler") {
        Quat q = Quat::Identity();
        for (int i = 0; i < 3; ++i) {
          const char c = eulerseq_[i];
          const int k = c == 'x' || c == 'X' ? 0 : c == 'y' || c == 'Y' ? 1 : 2;
          const Quat r = axis_angle(Vec3::Unit(k), angle(v[i]));
          q = std::islower(static_cast<unsigned char>(c)) ? q * r : r * q;  // lower case: axes move with the frame
        }
        return q;
      }
      if (kind == "xyaxes") {
        const Vec3 x = nonzero(Vec3(v[0], v[1], v[2]), "the x axis");
        Vec3 y(v[3], v[4], v[5]);
        y = nonzero(y - x * x.dot(y), "the y axis (orthogonal to x)");
        Mat3 r;
        r.col(0) = x;
        r.col(1) = y;
        r.col(2) = x.cross(y);
        return Quat(r).normalized();
      }
      return z_to(nonzero(Vec3(v[0], v[1], v[2]), "the z axis"));
    }
    return Quat::Identity();
  }

  // The rotation taking (0, 0, 1) to the unit vector z (MuJoCo's mjuu_z2quat).
  static Quat z_to(const Vec3& z) {
    Vec3 axis = Vec3::UnitZ().cross(z);
    const double s = axis.norm();
    axis = s < 1e-10 ? Vec3::UnitX() : Vec3(axis / s);
    return axis_angle(axis, std::atan2(s, z.z()));
  }

  // ---- compiler, option, defaults, contact ------------------------------------------------

  void parse_compiler(const XMLElement* e) {
    check_attrs(e);
    for (const XMLElement* c : children(e))
      if (std::string(c->Name()) != "lengthrange") throw Error(loc(c) + ": unsupported element <" + c->Name() + ">");
    const Layers l{{e}};
    degree_ = keyword(l, "angle", degree_ ? "degree" : "radian", {"degree", "radian"}) == "degree";
    if (const char* seq = e->Attribute("eulerseq")) {
      const std::string s = seq;
      if (s.size() != 3 || s.find_first_not_of("xyzXYZ") != std::string::npos)
        throw Error(loc(e) + ": attribute 'eulerseq': expected 3 of the characters xyzXYZ, got " + in_quotes(s));
      eulerseq_ = s;
    }
    autolimits_ = boolean(l, "autolimits", autolimits_);
    // heightfield files are found in meshdir (assetdir sets it unless meshdir is given), as MuJoCo does
    if (const char* dir = e->Attribute("meshdir") ? e->Attribute("meshdir") : e->Attribute("assetdir")) meshdir_ = dir;
    inertiafromgeom_ = keyword(l, "inertiafromgeom", inertiafromgeom_, {"false", "true", "auto"});
    settotalmass_ = number(l, "settotalmass", settotalmass_);
    if (e->Attribute("inertiagrouprange")) {
      const std::vector<double> g = vec(l, "inertiagrouprange", {0, 5}, true);
      inertiagroup_ = {static_cast<int>(std::clamp(g[0], -1e9, 1e9)), static_cast<int>(std::clamp(g[1], -1e9, 1e9))};
    }
    if (keyword(l, "coordinate", "local", {"local", "global"}) == "global")
      throw Error(loc(e) + ": <compiler coordinate=\"global\"> is not supported");
    for (const char* a : {"boundmass", "boundinertia"})
      if (number(l, a, 0) != 0) throw Error(loc(e) + ": <compiler " + a + "> is not supported");
    if (boolean(l, "balanceinertia", false)) throw Error(loc(e) + ": <compiler balanceinertia> is not supported");
  }

  void parse_option(const XMLElement* e) {
    check_attrs(e);
    const Layers l{{e}};
    spec_.timestep = number(l, "timestep", spec_.timestep);
    const Vec3 g = vec3(l, "gravity", xml::vec3(spec_.gravity));
    if (gravity_enabled_) spec_.gravity = arr3(g);
    if (const char* integrator = e->Attribute("integrator"))
      spec_.warnings.push_back(loc(e) + ": option integrator " + in_quotes(integrator) +
                               " ignored (moreau uses its own time stepping)");
    for (const char* a : {"density", "viscosity"})
      if (number(l, a, 0) != 0) refuse(loc(e) + ": <option " + a + "> (fluid forces) is not supported");
    if (vec3(l, "wind", Vec3::Zero()) != Vec3::Zero())
      refuse(loc(e) + ": <option wind> (fluid forces) is not supported");
    for (const XMLElement* c : children(e)) {
      if (std::string(c->Name()) != "flag") throw Error(loc(c) + ": unsupported element <" + c->Name() + ">");
      check_attrs(c);
      const Layers f{{c}};
      if (keyword(f, "contact", "enable", {"enable", "disable"}) == "disable") contact_enabled_ = false;
      if (keyword(f, "filterparent", "enable", {"enable", "disable"}) == "disable") filterparent_ = false;
      if (keyword(f, "gravity", "enable", {"enable", "disable"}) == "disable") {
        gravity_enabled_ = false;
        spec_.gravity = {0, 0, 0};
      }
    }
  }

  void parse_default(const XMLElement* e, int parent) {
    check_attrs(e);
    const char* name = e->Attribute("class");
    int index = 0;
    if (parent < 0 && (!name || std::string(name) == "main")) {
      index = 0;  // a top-level <default> is class "main"
    } else {
      if (!name) throw Error(loc(e) + ": a nested <default> needs a 'class' attribute");
      if (class_index_.count(name)) throw Error(loc(e) + ": repeated default class " + in_quotes(name));
      index = static_cast<int>(classes_.size());
      classes_.push_back({name, parent < 0 ? 0 : parent, {}});
      class_index_[name] = index;
    }
    std::vector<const XMLElement*> nested;
    for (const XMLElement* c : children(e)) {
      const std::string tag = c->Name();
      if (tag == "default") {
        nested.push_back(c);
      } else if (tag == "joint" || tag == "geom") {
        check_attrs(c);
        classes_[index].elems[tag].push_back(c);
      } else if (actuator_tags().count(tag)) {
        if (!attr_tables().count(tag)) throw Error(loc(c) + ": <" + tag + "> actuators are not supported");
        check_attrs(c);
        classes_[index].elems["actuator"].push_back(c);
      } else if (!(tag == "site" || tag == "camera" || tag == "light" || tag == "mesh" || tag == "material" ||
                   tag == "pair" || tag == "equality" || tag == "tendon" || tag == "texture")) {
        throw Error(loc(c) + ": unsupported element <" + tag + "> in <default>");
      }
    }
    for (const XMLElement* c : nested) parse_default(c, index);
  }

  int class_named(const XMLElement* e, const char* name) {
    const auto it = class_index_.find(name);
    if (it == class_index_.end()) throw Error(loc(e) + ": unknown default class " + in_quotes(name));
    return it->second;
  }

  // The layers of an element of `group` whose class is its `class` attribute or `fallback`.
  Layers layers(const XMLElement* e, const std::string& group, int fallback) {
    const char* cls = e->Attribute("class");
    const int index = cls ? class_named(e, cls) : fallback;
    std::vector<int> chain;
    for (int c = index; c >= 0; c = classes_[c].parent) chain.insert(chain.begin(), c);
    Layers l;
    for (int c : chain) {
      const auto it = classes_[c].elems.find(group);
      if (it != classes_[c].elems.end()) l.layers.insert(l.layers.end(), it->second.begin(), it->second.end());
    }
    l.layers.push_back(e);
    return l;
  }

  void parse_contact_section(const XMLElement* e) {
    for (const XMLElement* c : children(e)) {
      const std::string tag = c->Name();
      if (tag == "pair") {
        spec_.warnings.push_back(loc(c) + ": <contact><pair> ignored (moreau has no geom-geom contacts)");
      } else if (tag == "exclude") {
        const char* b1 = c->Attribute("body1");
        const char* b2 = c->Attribute("body2");
        if (!b1 || !b2) throw Error(loc(c) + ": <exclude> needs 'body1' and 'body2'");
        excludes_.push_back({c, b1, b2});
      } else {
        throw Error(loc(c) + ": unsupported element <" + tag + "> in <contact>");
      }
    }
  }

  // ---- bodies ------------------------------------------------------------------------

  struct Geom {
    const XMLElement* elem;
    std::string name, type;
    std::vector<double> size;
    Vec3 pos;
    Quat quat;
    bool has_mass;
    double mass, density;
    int contype, conaffinity, group;
  };

  Geom read_geom(const XMLElement* e, int cls) {
    check_attrs(e);
    const Layers l = layers(e, "geom", cls);
    Geom g{e, e->Attribute("name") ? e->Attribute("name") : "", "", {}, Vec3::Zero(), Quat::Identity(),
           false, 0, 1000, 1, 1, 0};
    g.type = keyword(l, "type", "sphere",
                     {"plane", "hfield", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh", "sdf"});
    if (l.has("mesh") || l.has("hfield")) g.type = l.has("mesh") ? "mesh" : "hfield";  // shape from a file
    g.size = vec(l, "size", {0, 0, 0}, false);
    g.pos = vec3(l, "pos", Vec3::Zero());
    g.quat = orientation(l);
    if (const XMLElement* s = l.source("fromto")) {
      const std::vector<double> ft = vec(l, "fromto", {0, 0, 0, 0, 0, 0}, true);
      if (!(g.type == "capsule" || g.type == "cylinder" || g.type == "box" || g.type == "ellipsoid"))
        throw Error(loc(s) + ": attribute 'fromto' needs a capsule, cylinder, box or ellipsoid, not a " + g.type);
      const Vec3 a(ft[0], ft[1], ft[2]), b(ft[3], ft[4], ft[5]);
      if ((b - a).norm() < 1e-12) throw Error(loc(s) + ": attribute 'fromto': the two points coincide");
      g.pos = (a + b) / 2;
      g.quat = z_to((b - a).normalized());
      const double half = (b - a).norm() / 2;
      if (g.type == "capsule" || g.type == "cylinder") {
        g.size[1] = half;
      } else {
        g.size[1] = g.size[0];
        g.size[2] = half;
      }
    }
    g.has_mass = l.has("mass");
    g.mass = number(l, "mass", 0);
    g.density = number(l, "density", 1000);
    if (g.mass < 0) throw Error(loc(l.source("mass")) + ": geom mass must be >= 0, got " + num(g.mass));
    if (g.density < 0) throw Error(loc(l.source("density")) + ": geom density must be >= 0, got " + num(g.density));
    g.contype = integer(l, "contype", 1);
    g.conaffinity = integer(l, "conaffinity", 1);
    g.group = integer(l, "group", 0);
    if (keyword(l, "shellinertia", "false", {"true", "false"}) == "true")
      refuse(loc(l.source("shellinertia")) + ": geom shellinertia is not supported");
    if (keyword(l, "fluidshape", "none", {"none", "ellipsoid"}) != "none")
      refuse(loc(l.source("fluidshape")) + ": geom fluidshape (fluid forces) is not supported");
    const int nsize = g.type == "sphere" ? 1 : g.type == "capsule" || g.type == "cylinder" ? 2
                                           : g.type == "box" || g.type == "ellipsoid"      ? 3
                                                                                           : 0;
    for (int i = 0; i < nsize; ++i)
      if (!(g.size[i] > 0))
        throw Error(loc(e) + ": " + describe(e) + ": size[" + std::to_string(i) + "] of a " + g.type +
                    " must be > 0, got " + num(g.size[i]));
    return g;
  }

  std::string describe(const XMLElement* e) const {
    const char* name = e->Attribute("name");
    return std::string(e->Name()) + (name ? " " + in_quotes(name) : std::string());
  }

  // MuJoCo collides two geoms when (contype₁ & conaffinity₂) ≠ 0 or (contype₂ & conaffinity₁) ≠ 0;
  // moreau's contacts are with the ground only, whose bits are those of the worldbody's plane.
  bool collides(const Geom& g) const {
    return contact_enabled_ && ((g.contype & ground_conaffinity_) != 0 || (ground_contype_ & g.conaffinity) != 0);
  }

  // Mass and inertia about the geom's centre in its own frame, MuJoCo's formulas.
  void add_geom_mass(const Geom& g, MassSum& sum) {
    if (g.group < inertiagroup_[0] || g.group > inertiagroup_[1]) return;
    if (g.type == "mesh" || g.type == "hfield" || g.type == "sdf")
      throw Error(loc(g.elem) + ": " + describe(g.elem) + ": the inertia of a " + g.type +
                  " geom needs its file, which moreau does not read; give the body an <inertial>");
    const double r = g.size[0], a = g.size[0], b = g.size[1], c = g.size[2];
    double volume = 0;
    if (g.type == "sphere") volume = 4.0 / 3 * kPi * r * r * r;
    if (g.type == "capsule") volume = kPi * r * r * (2 * b) + 4.0 / 3 * kPi * r * r * r;
    if (g.type == "cylinder") volume = kPi * r * r * 2 * b;
    if (g.type == "ellipsoid") volume = 4.0 / 3 * kPi * a * b * c;
    if (g.type == "box") volume = 8 * a * b * c;
    const double m = g.has_mass ? g.mass : g.density * volume;
    Vec3 d = Vec3::Zero();  // principal moments
    if (g.type == "sphere") d.setConstant(0.4 * m * r * r);
    if (g.type == "capsule") {
      // a cylinder of height h = 2 b and two hemispheres, their masses in proportion to volume
      const double h = 2 * b, ms = m * 4 * r / (4 * r + 3 * h), mc = m - ms;
      d.x() = d.y() = mc * (3 * r * r + h * h) / 12 + 0.4 * ms * r * r + ms * h * (3 * r + 2 * h) / 8;
      d.z() = mc * r * r / 2 + 0.4 * ms * r * r;
    }
    if (g.type == "cylinder") {
      d.x() = d.y() = m * (3 * r * r + 4 * b * b) / 12;
      d.z() = m * r * r / 2;
    }
    if (g.type == "ellipsoid") d = m / 5 * Vec3(b * b + c * c, a * a + c * c, a * a + b * b);
    if (g.type == "box") d = m / 3 * Vec3(b * b + c * c, a * a + c * c, a * a + b * b);
    const Mat3 rot = g.quat.toRotationMatrix();
    sum.add(m, g.pos, rot * d.asDiagonal() * rot.transpose());
  }

  // Contact shapes of a collidable geom in the body frame: spheres, boxes, capsules as their
  // two end spheres, cylinders as their rim points. Ellipsoids are noted and skipped (docs/import.md).
  void add_contacts(const Geom& g, const std::string& fallback_name, std::vector<ContactSpec>& out,
                    std::map<std::string, int>& skipped) {
    if (!collides(g)) return;
    const std::string name = g.name.empty() ? fallback_name : g.name;
    ContactSpec c;
    c.name = name;
    c.pos = arr3(g.pos);
    if (g.type == "sphere") {
      c.radius = g.size[0];
      out.push_back(c);
    } else if (g.type == "box") {
      c.kind = ContactSpec::Kind::Box;
      c.quat = arr4(g.quat);
      c.half_size = {g.size[0], g.size[1], g.size[2]};
      out.push_back(c);
    } else if (g.type == "cylinder") {
      c.kind = ContactSpec::Kind::Cylinder;
      c.quat = arr4(g.quat);
      c.radius = g.size[0];
      c.half_length = g.size[1];
      out.push_back(c);
    } else if (g.type == "capsule") {
      const Vec3 half = g.quat * Vec3(0, 0, g.size[1]);
      for (int end = 0; end < 2; ++end) {
        c.name = name + (end ? "/end1" : "/end0");
        c.pos = arr3(g.pos + (end ? half : Vec3(-half)));
        c.radius = g.size[0];
        out.push_back(c);
      }
    } else {
      ++skipped[g.type];
    }
  }

  // The first plane's contype/conaffinity become the ground's (MuJoCo's defaults 1/1 without a
  // plane; they decide which body geoms are contacts); other static geoms are noted and skipped.
  // A heightfield geom of the worldbody is the ground (the first; its bits when there is no plane):
  // docs/terrain.md. A plane beside it is ignored with a warning.
  void read_ground(const std::vector<Geom>& statics) {
    const Geom* hfield = nullptr;
    for (const Geom& g : statics)
      if (g.type == "hfield" && contact_enabled_ && (g.contype != 0 || g.conaffinity != 0)) {
        hfield = &g;
        break;
      }
    for (const Geom& g : statics) {
      if (g.type != (hfield ? "hfield" : "plane")) continue;
      ground_contype_ = g.contype;
      ground_conaffinity_ = g.conaffinity;
      break;
    }
    if (hfield) read_heightfield(*hfield);
    for (const Geom& g : statics) {
      if (!contact_enabled_ || (g.contype == 0 && g.conaffinity == 0) || &g == hfield) continue;
      if (g.type == "plane" && hfield) {
        spec_.warnings.push_back(loc(g.elem) + ": " + describe(g.elem) + ": plane ignored: moreau's ground is the "
                                 "heightfield " + describe(hfield->elem) + ", its edges continued outward");
      } else if (g.type == "plane") {
        const Vec3 z = g.quat * Vec3::UnitZ();
        if (std::fabs(g.pos.z()) > 1e-12 || std::fabs(z.z() - 1) > 1e-12)
          spec_.warnings.push_back(loc(g.elem) + ": " + describe(g.elem) +
                                   ": a ground plane that is not z = 0 facing up; moreau's ground is z = 0");
      } else {
        spec_.warnings.push_back(loc(g.elem) + ": " + describe(g.elem) + ": static " + g.type +
                                 " geom ignored (moreau's only static geometry is the ground: the plane z = 0 or one heightfield)");
      }
    }
  }

  // MuJoCo's <hfield nrow ncol size="rx ry top base" elevation="..."> or <hfield file="F"
  // size=...> (F a .png, else MuJoCo's binary format): the elevations (a PNG's first channel: the
  // grey, or the red of a colour image)
  // normalised to [0, 1] (minus their minimum, over their range) times `top`, the rows listed (the
  // image's rows from its top) from +y to −y, the grid spanning ±rx, ±ry about the geom's position
  // (its height added). The geom may not be rotated.
  void read_heightfield(const Geom& g) {
    const char* name = g.elem->Attribute("hfield");
    const auto it = name ? hfields_.find(name) : hfields_.end();
    if (it == hfields_.end())
      throw Error(loc(g.elem) + ": " + describe(g.elem) + ": no <hfield> asset named " + in_quotes(name ? name : ""));
    const XMLElement* h = it->second;
    const std::string where = loc(h) + ": <hfield " + in_quotes(name) + ">";
    const char* file = h->Attribute("file");
    if (file && h->Attribute("elevation")) throw Error(where + ": both 'file' and 'elevation' given");
    if (!file && !h->Attribute("elevation")) throw Error(where + ": neither 'file' nor 'elevation' given");
    if (!g.quat.isApprox(Quat::Identity(), 1e-12))
      throw Error(loc(g.elem) + ": " + describe(g.elem) + ": a rotated heightfield is not supported");
    int nrow = h->IntAttribute("nrow", 0), ncol = h->IntAttribute("ncol", 0);
    std::vector<double> e;  // the values, rows listed from +y to −y
    if (file) {
      if (nrow || ncol) throw Error(where + ": 'nrow' and 'ncol' go with 'elevation', not with a 'file'");
      const std::string dir = meshdir_.empty() ? include_dir_ : meshdir_[0] == '/' ? meshdir_ : include_dir_ + "/" + meshdir_;
      const std::string path = file[0] == '/' ? std::string(file) : dir + "/" + file;
      std::string ext = std::filesystem::path(path).extension().string();
      for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      e = ext == ".png" ? read_png(path, where, nrow, ncol) : read_binary_hfield(path, where, nrow, ncol);
    }
    if (nrow < 2 || ncol < 2)
      throw Error(where + ": expected nrow and ncol >= 2, got " + std::to_string(nrow) + " and " + std::to_string(ncol));
    const std::vector<double> size = numbers(where, "size", h->Attribute("size") ? h->Attribute("size") : "", 4, 4);
    if (!(size[0] > 0 && size[1] > 0 && size[2] >= 0))
      throw Error(where + ": attribute 'size': expected radius_x, radius_y > 0 and elevation_z >= 0");
    const size_t n = static_cast<size_t>(nrow) * ncol;
    if (!file) e = numbers(where, "elevation", h->Attribute("elevation"), n, n);
    const auto [lo, hi] = std::minmax_element(e.begin(), e.end());
    HeightfieldSpec& hf = spec_.heightfield;
    hf.nx = ncol;
    hf.ny = nrow;
    hf.dx = 2 * size[0] / (ncol - 1);
    hf.dy = 2 * size[1] / (nrow - 1);
    hf.x0 = g.pos.x() - size[0];
    hf.y0 = g.pos.y() - size[1];
    hf.height.resize(n);
    for (int j = 0; j < nrow; ++j)
      for (int i = 0; i < ncol; ++i) {
        const double v = e[static_cast<size_t>(nrow - 1 - j) * ncol + i];
        hf.height[static_cast<size_t>(j) * ncol + i] = g.pos.z() + size[2] * (*hi > *lo ? (v - *lo) / (*hi - *lo) : 0.0);
      }
  }

  // MuJoCo's binary heightfield file: int32 nrow, int32 ncol, then nrow x ncol float32 values,
  // its first row at −y; returned with the rows listed from +y (as elevation's and a PNG's).
  std::vector<double> read_binary_hfield(const std::string& path, const std::string& where, int& nrow, int& ncol) {
    const std::string what = where + ": heightfield file " + in_quotes(path);
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error(what + ": cannot be opened");
    std::int32_t dims[2] = {0, 0};
    if (!f.read(reinterpret_cast<char*>(dims), sizeof dims) || dims[0] < 2 || dims[1] < 2 || dims[0] > (1 << 15) ||
        dims[1] > (1 << 15))
      throw Error(what + ": expected MuJoCo's binary format (int32 nrow, int32 ncol >= 2, then the values) or a .png");
    nrow = dims[0];
    ncol = dims[1];
    const size_t n = static_cast<size_t>(nrow) * ncol;
    std::vector<float> values(n);
    if (!f.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(n * sizeof(float))) ||
        f.peek() != std::char_traits<char>::eof())
      throw Error(what + ": expected 8 + 4 x " + std::to_string(nrow) + " x " + std::to_string(ncol) + " bytes");
    std::vector<double> out(n);
    for (int r = 0; r < nrow; ++r)
      for (int c = 0; c < ncol; ++c) out[static_cast<size_t>(r) * ncol + c] = values[static_cast<size_t>(nrow - 1 - r) * ncol + c];
    for (double v : out)
      if (!std::isfinite(v)) throw Error(what + ": expected finite values");
    return out;
  }

  // A PNG heightfield file's first channel per pixel (an 8-bit image's grey, or its red), rows from
  // the image's top; its size into nrow, ncol. libpng's simplified API; 16-bit images are refused
  // (MuJoCo reads 8 bits).
  std::vector<double> read_png(const std::string& path, const std::string& where, int& nrow, int& ncol) {
#ifdef MOREAU_WITH_PNG
    png_image image{};
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&image, path.c_str()))
      throw Error(where + ": heightfield file " + in_quotes(path) + ": " + image.message);
    if (image.format & PNG_FORMAT_FLAG_LINEAR) {
      png_image_free(&image);
      throw Error(where + ": heightfield file " + in_quotes(path) + ": expected an 8-bit PNG, got a 16-bit one");
    }
    image.format = PNG_FORMAT_RGB;  // a grey image's grey in all three
    std::vector<unsigned char> rgb(PNG_IMAGE_SIZE(image));
    if (!png_image_finish_read(&image, nullptr, rgb.data(), 0, nullptr))
      throw Error(where + ": heightfield file " + in_quotes(path) + ": " + image.message);
    nrow = static_cast<int>(image.height);
    ncol = static_cast<int>(image.width);
    std::vector<double> out(static_cast<size_t>(nrow) * ncol);
    for (size_t k = 0; k < out.size(); ++k) out[k] = rgb[3 * k];
    return out;
#else
    (void)nrow;
    (void)ncol;
    throw Error(where + ": heightfield file " + in_quotes(path) + ": this build of moreau reads no PNG (built "
                "without libpng; Debian: libpng-dev)");
#endif
  }

  void parse_worldbody(const XMLElement* e) {
    for (const XMLElement* c : children(e)) {
      const std::string tag = c->Name();
      if (tag == "body") {
        parse_body(c, "world", 0);
      } else if (tag != "geom" && !ignored_body_children().count(tag)) {
        throw Error(loc(c) + ": unsupported element <" + tag + "> in <worldbody>");
      }
    }
  }

  struct Joint {
    const XMLElement* elem;
    JointSpec spec;
    double ref = 0;
  };

  Joint read_joint(const XMLElement* e, int cls) {
    check_attrs(e);
    Joint j{e, {}, 0};
    JointSpec& s = j.spec;
    s.name = e->Attribute("name") ? e->Attribute("name") : "";
    const std::string w = loc(e) + ": " + describe(e);
    if (std::string(e->Name()) == "freejoint") {
      s.type = JointType::Free;
      return j;
    }
    const Layers l = layers(e, "joint", cls);
    const std::string type = keyword(l, "type", "hinge", {"free", "ball", "slide", "hinge"});
    s.type = type == "free" ? JointType::Free : type == "ball" ? JointType::Ball
             : type == "slide"                                  ? JointType::Prismatic
                                                                : JointType::Revolute;
    s.pos = arr3(vec3(l, "pos", Vec3::Zero()));
    const Vec3 axis = vec3(l, "axis", Vec3::UnitZ());
    if (axis.norm() < 1e-12) throw Error(w + ": the axis is zero");
    s.axis = arr3(axis.normalized());
    const std::vector<double> range = vec(l, "range", {0, 0}, true);
    const bool angular = s.type == JointType::Revolute || s.type == JointType::Ball;
    s.range = {angular ? angle(range[0]) : range[0], angular ? angle(range[1]) : range[1]};
    s.limited = limited(l, "limited", "range", range[0] != 0 || range[1] != 0, w);
    s.damping = number(l, "damping", 0);
    s.armature = number(l, "armature", 0);
    s.frictionloss = number(l, "frictionloss", 0);
    j.ref = number(l, "ref", 0);
    if (angular) j.ref = angle(j.ref);
    s.stiffness = number(l, "stiffness", 0);
    s.springref = number(l, "springref", 0);
    if (angular) s.springref = angle(s.springref);
    if (s.stiffness != 0 && (s.type == JointType::Ball || s.type == JointType::Free))
      refuse(w + ": joint stiffness on a " + type + " joint is not supported (springs on hinge and slide only)");
    if (vec(l, "springdamper", {0, 0}, true) != std::vector<double>{0, 0})
      refuse(w + ": joint springdamper is not supported");
    if (j.ref != 0 && s.type != JointType::Prismatic)
      refuse(w + ": joint ref != 0 is supported on slide joints only");
    if (boolean(l, "actuatorgravcomp", false)) refuse(w + ": joint actuatorgravcomp is not supported");
    const std::string frc = keyword(l, "actuatorfrclimited", "auto", {"true", "false", "auto"});
    if (frc == "true" || (frc == "auto" && vec(l, "actuatorfrcrange", {0, 0}, true) != std::vector<double>{0, 0}))
      refuse(w + ": joint actuatorfrcrange is not supported (give the actuator a forcerange)");
    return j;
  }

  // limited="true|false|auto": with "auto" (the default), limited iff a range is given and
  // the compiler has autolimits="true"; a range without autolimits is an error, as in MuJoCo.
  bool limited(const Layers& l, const char* flag, const char* range_name, bool has_range, const std::string& w) {
    const std::string v = keyword(l, flag, "auto", {"true", "false", "auto"});
    if (v != "auto") return v == "true";
    if (!has_range) return false;
    if (autolimits_) return true;
    throw Error(w + " has " + range_name + " but not " + flag + ": set autolimits=\"true\" in <compiler>, give " +
                flag + "=\"true\" or \"false\", or remove " + range_name);
  }

  void parse_body(const XMLElement* e, const std::string& parent, int cls) {
    check_attrs(e);
    ++body_counter_;
    const Layers l{{e}};
    std::string name = e->Attribute("name") ? e->Attribute("name") : "body" + std::to_string(body_counter_);
    if (const char* cc = e->Attribute("childclass")) cls = class_named(e, cc);
    const std::string where = loc(e) + " body " + in_quotes(name);
    const std::string w = loc(e) + ": body " + in_quotes(name);
    if (!body_names_.insert(name).second) throw Error(w + ": repeated body name");
    if (boolean(l, "mocap", false)) refuse(w + ": mocap bodies are not supported");
    if (number(l, "gravcomp", 0) != 0) refuse(w + ": body gravcomp is not supported");
    const Vec3 pos = vec3(l, "pos", Vec3::Zero());
    const Quat quat = orientation(l);

    const XMLElement* inertial = nullptr;
    std::vector<Joint> joints;
    std::vector<Geom> geoms;
    std::vector<const XMLElement*> bodies;
    for (const XMLElement* c : children(e)) {
      const std::string tag = c->Name();
      if (tag == "inertial") {
        if (inertial) throw Error(loc(c) + ": body " + in_quotes(name) + " has a second <inertial>");
        inertial = c;
      } else if (tag == "joint" || tag == "freejoint") {
        joints.push_back(read_joint(c, cls));
      } else if (tag == "geom") {
        geoms.push_back(read_geom(c, cls));
      } else if (tag == "body") {
        bodies.push_back(c);
      } else if (!ignored_body_children().count(tag)) {
        throw Error(loc(c) + ": unsupported element <" + tag + "> in body " + in_quotes(name));
      }
    }

    // Mass properties: <inertial>, or the geoms (inertiafromgeom), in the body frame.
    MassSum sum;
    const bool from_geoms = inertiafromgeom_ == "true" || (inertiafromgeom_ == "auto" && !inertial);
    if (from_geoms) {
      for (const Geom& g : geoms) {
        if (g.type == "plane") throw Error(loc(g.elem) + ": " + describe(g.elem) + ": plane geoms only in the worldbody");
        add_geom_mass(g, sum);
      }
    } else if (inertial) {
      read_inertial(inertial, name, sum);
    }
    if (!std::isfinite(sum.mass) || !sum.origin.allFinite() || !sum.first.allFinite())
      throw Error(w + ": the mass or inertia is not finite");

    // One spec body per joint: MuJoCo applies a body's joints in order, each with its axis
    // and anchor in the body frame moved by the joints before it, which is a chain of
    // bodies at the same frame. The first carries the body's placement, the last its mass.
    for (const Joint& j : joints) {
      if (j.spec.type == JointType::Free && (joints.size() > 1 || parent != "world"))
        throw Error(loc(j.elem) + ": a free joint must be the only joint of a child of <worldbody>");
      if (!j.spec.name.empty() && !joint_names_.insert(j.spec.name).second)
        throw Error(loc(j.elem) + ": repeated joint name " + in_quotes(j.spec.name));
    }
    const std::string weld = joints.empty() ? weld_.at(parent) : name;
    weld_[name] = weld;
    if (!joints.empty()) {
      weld_parent_[name] = weld_.at(parent);
      weld_order_.emplace(name, static_cast<int>(weld_order_.size()));
    }
    if (weld != "world" && contact_enabled_)
      for (const Geom& g : geoms)
        if (g.contype != 0 || g.conaffinity != 0)
          body_geoms_.push_back({name, weld, weld_parent_.at(weld), g.contype, g.conaffinity});
    const size_t n = std::max<size_t>(joints.size(), 1);
    std::string prev = parent;
    for (size_t k = 0; k < n; ++k) {
      BodySpec b;
      const bool last = k + 1 == n;
      b.name = last ? name : name + ":" + (joints[k].spec.name.empty() ? "joint" + std::to_string(k) : joints[k].spec.name);
      if (!last && !body_names_.insert(b.name).second) throw Error(w + ": body name " + in_quotes(b.name) + " is taken");
      b.parent = prev;
      b.where = where;
      const Quat q = k == 0 ? quat : Quat::Identity();
      Vec3 p = k == 0 ? pos : Vec3::Zero();
      if (!joints.empty()) {
        b.joint = joints[k].spec;
        // slide joint ref: MuJoCo moves the body by axis (q − ref) and starts at q = ref;
        // shifting the body by −axis ref keeps q the same coordinate as in MuJoCo
        if (joints[k].ref != 0) {
          p -= q * (xml::vec3(b.joint.axis) * joints[k].ref);
          spec_.default_qpos.emplace_back(b.joint.name.empty() ? b.name : b.joint.name, joints[k].ref);
        }
        if (!b.joint.name.empty()) joint_elem_[b.joint.name] = joints[k].elem;
      }
      b.pos = arr3(p);
      b.quat = arr4(q);
      if (last) {
        b.mass = sum.mass;
        b.com = arr3(sum.com());
        b.inertia = inertia6(sum.inertia_about_com());
        std::map<std::string, int> skipped;
        for (size_t i = 0; i < geoms.size(); ++i)
          add_contacts(geoms[i], name + "/geom" + std::to_string(i), b.contacts, skipped);
        for (const auto& [type, count] : skipped)
          skipped_[type] += (skipped_[type].empty() ? "" : ", ") + std::to_string(count) + " on " + in_quotes(name);
      }
      spec_.bodies.push_back(std::move(b));
      prev = spec_.bodies.back().name;
    }
    for (const XMLElement* c : bodies) parse_body(c, name, cls);
  }

  void read_inertial(const XMLElement* e, const std::string& body, MassSum& sum) {
    check_attrs(e);
    const Layers l{{e}};
    const std::string w = loc(e) + ": body " + in_quotes(body) + ": <inertial>";
    if (!e->Attribute("mass")) throw Error(w + " needs a 'mass' attribute");
    const double mass = number(l, "mass", 0);
    if (!(mass >= 0)) throw Error(w + ": mass must be >= 0, got " + num(mass));
    const Vec3 pos = vec3(l, "pos", Vec3::Zero());
    Mat3 inertia;
    if (e->Attribute("fullinertia")) {
      if (e->Attribute("diaginertia")) throw Error(w + ": give diaginertia or fullinertia, not both");
      if (e->Attribute("quat") || e->Attribute("euler") || e->Attribute("axisangle") || e->Attribute("xyaxes") ||
          e->Attribute("zaxis"))
        throw Error(w + ": fullinertia cannot be combined with an orientation");
      const std::vector<double> f = vec(l, "fullinertia", {0, 0, 0, 0, 0, 0}, true);
      if (f[0] < 0 || f[1] < 0 || f[2] < 0)
        throw Error(w + ": fullinertia diagonal must be >= 0, got " + num(f[0]) + " " + num(f[1]) + " " + num(f[2]));
      inertia = inertia_mat(f[0], f[1], f[2], f[3], f[4], f[5]);
    } else if (e->Attribute("diaginertia")) {
      const Vec3 d = vec3(l, "diaginertia", Vec3::Zero());
      if (d.minCoeff() < 0)
        throw Error(w + ": diaginertia must be >= 0, got " + num(d.x()) + " " + num(d.y()) + " " + num(d.z()));
      const Mat3 r = orientation(l).toRotationMatrix();
      inertia = r * d.asDiagonal() * r.transpose();
    } else {
      throw Error(w + " needs diaginertia or fullinertia");
    }
    sum.add(mass, pos, inertia);
  }

  // settotalmass > 0 scales every mass and inertia so that the masses sum to it.
  void apply_totalmass() {
    if (settotalmass_ <= 0) return;
    double total = 0;
    for (const BodySpec& b : spec_.bodies) total += b.mass;
    if (total <= 0) throw Error(spec_.source + ": settotalmass needs bodies with mass");
    const double scale = settotalmass_ / total;
    for (BodySpec& b : spec_.bodies) {
      b.mass *= scale;
      for (double& i : b.inertia) i *= scale;
    }
  }

  // ---- actuators ---------------------------------------------------------------------

  void parse_actuators(const XMLElement* section) {
    check_attrs(section);
    for (const XMLElement* e : children(section)) {
      const std::string tag = e->Name();
      if (!attr_tables().count(tag) || !actuator_tags().count(tag))
        throw Error(loc(e) + ": " + (actuator_tags().count(tag) ? "<" + tag + "> actuators are not supported"
                                                                 : "unsupported element <" + tag + "> in <actuator>"));
      check_attrs(e);
      spec_.actuators.push_back(read_actuator(e, layers(e, "actuator", 0)));
    }
  }

  ActuatorSpec read_actuator(const XMLElement* e, const Layers& l) {
    const std::string tag = e->Name();
    ActuatorSpec a;
    a.name = e->Attribute("name") ? e->Attribute("name") : "";
    const std::string w = loc(e) + ": " + describe(e);
    a.where = loc(e) + " actuator " + in_quotes(a.name.empty() ? tag : a.name);
    for (const char* t : {"tendon", "slidersite", "cranksite", "site", "refsite", "body"})
      if (l.has(t)) throw Error(w + ": transmission " + in_quotes(t) + " is not supported (joints only)");
    const char* joint = l.raw("joint") ? l.raw("joint") : l.raw("jointinparent");
    if (!joint) throw Error(w + ": needs a 'joint' attribute");
    a.joint = joint;
    const auto je = joint_elem_.find(a.joint);
    if (je == joint_elem_.end()) throw Error(w + ": unknown joint " + in_quotes(a.joint));
    a.gear = vec(l, "gear", {1, 0, 0, 0, 0, 0}, false)[0];
    const std::vector<double> ctrl = vec(l, "ctrlrange", {0, 0}, true);
    const std::vector<double> force = vec(l, "forcerange", {0, 0}, true);
    a.ctrl_limited = limited(l, "ctrllimited", "ctrlrange", ctrl[0] != 0 || ctrl[1] != 0, w);
    a.force_limited = limited(l, "forcelimited", "forcerange", force[0] != 0 || force[1] != 0, w);
    a.ctrl_range = {ctrl[0], ctrl[1]};
    a.force_range = {force[0], force[1]};
    if (keyword(l, "actlimited", "auto", {"true", "false", "auto"}) == "true")
      throw Error(w + ": actlimited is not supported (no actuator dynamics)");
    if (tag == "motor") {
      a.type = ActuatorType::Motor;
    } else if (tag == "position") {
      a.type = ActuatorType::Position;
      a.kp = l.has("kp") ? number(l, "kp", 1) : l.has("gainprm") ? vec(l, "gainprm", std::vector<double>(10, 0), false)[0] : 1;
      a.kd = number(l, "kv", 0);
      for (const char* t : {"dampratio", "timeconst"})
        if (number(l, t, 0) != 0) throw Error(w + ": position " + t + " is not supported");
      if (l.has("inheritrange")) throw Error(w + ": position inheritrange is not supported");
    } else {
      read_general(l, w, a);
    }
    return a;
  }

  // <general>: only the motor (gain 1, no bias) and position-servo (gain kp, bias
  // 0 − kp l − kd l̇) forms, without activation dynamics.
  void read_general(const Layers& l, const std::string& w, ActuatorSpec& a) {
    if (keyword(l, "dyntype", "none", {"none", "integrator", "filter", "filterexact", "muscle", "user"}) != "none")
      throw Error(w + ": dyntype " + in_quotes(l.raw("dyntype")) + " is not supported (only 'none')");
    if (keyword(l, "gaintype", "fixed", {"fixed", "affine", "muscle", "user"}) != "fixed")
      throw Error(w + ": gaintype " + in_quotes(l.raw("gaintype")) + " is not supported (only 'fixed')");
    const std::string bias = keyword(l, "biastype", "none", {"none", "affine", "muscle", "user"});
    std::vector<double> gain(10, 0), biasprm(10, 0);
    gain[0] = 1;
    gain = vec(l, "gainprm", gain, false);
    biasprm = vec(l, "biasprm", biasprm, false);
    if (bias == "none" && gain[0] == 1) {
      a.type = ActuatorType::Motor;
    } else if (bias == "affine" && biasprm[0] == 0 && gain[0] > 0 && biasprm[1] == -gain[0] && biasprm[2] <= 0) {
      a.type = ActuatorType::Position;
      a.kp = gain[0];
      a.kd = -biasprm[2];
    } else {
      throw Error(w + ": only the motor form (gainprm 1, biastype none) and the position-servo form (gainprm kp, "
                      "biastype affine, biasprm 0 -kp -kv) of <general> are supported");
    }
  }

  RobotSpec spec_;
  std::vector<std::string> refusals_;
  std::string include_dir_;
  std::vector<std::unique_ptr<XMLDocument>> docs_;
  std::map<const XMLDocument*, std::string> file_of_;
  std::set<std::string> included_;

  // compiler and option
  bool degree_ = true;
  std::string eulerseq_ = "xyz";
  bool autolimits_ = false;
  std::string inertiafromgeom_ = "auto";
  double settotalmass_ = -1;
  std::array<int, 2> inertiagroup_{0, 5};
  bool contact_enabled_ = true;
  bool filterparent_ = true;  // <flag filterparent>: MuJoCo does not collide a body with its parent
  struct Exclude {
    const XMLElement* elem;
    std::string body1, body2;
  };
  std::vector<Exclude> excludes_;
  // A collidable geom of a moving body, as MuJoCo's filter between two bodies sees it: its body,
  // the body's weld body (the nearest ancestor-or-self with a joint) and that one's parent's.
  struct BodyGeom {
    std::string body, weld, weld_parent;
    int contype, conaffinity;
  };
  std::vector<BodyGeom> body_geoms_;
  std::map<std::string, std::string> weld_{{"world", "world"}};  // body -> its weld body
  std::map<std::string, std::string> weld_parent_;                // weld body -> its parent's weld body
  std::map<std::string, int> weld_order_;                         // weld body -> its order in the file
  std::map<std::string, const XMLElement*> hfields_;  // <asset><hfield> by name
  std::string meshdir_;                               // <compiler meshdir> (or assetdir)
  int ground_contype_ = 1, ground_conaffinity_ = 1;
  bool gravity_enabled_ = true;

  std::vector<DefaultClass> classes_;
  std::map<std::string, int> class_index_;
  std::set<std::string> body_names_, joint_names_;
  std::map<std::string, const XMLElement*> joint_elem_;
  std::map<std::string, std::string> skipped_;  // geom type -> "9 on 'base', 1 on 'LF_HIP'"
  int body_counter_ = 0;
  // "<tag> attribute '<name>'" -> (first location, count, tag)
  std::map<std::string, std::tuple<std::string, int, std::string>> warned_;
};

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string dir_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

RobotSpec parse_mjcf(const std::string& text, const std::string& source, const std::string& include_dir) {
  return MjcfParser(source, include_dir).parse(text, "");
}

RobotSpec parse_mjcf_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot read the file");
  std::stringstream text;
  text << in.rdbuf();
  return MjcfParser(base_name(path), dir_name(path)).parse(text.str(), path);
}

}  // namespace moreau

#else  // !MOREAU_WITH_XML

namespace moreau {

RobotSpec parse_mjcf(const std::string&, const std::string& source, const std::string&) {
  throw Error(source + ": MJCF import needs moreau built with tinyxml2 (libtinyxml2-dev)");
}

RobotSpec parse_mjcf_file(const std::string& path) {
  throw Error(path + ": MJCF import needs moreau built with tinyxml2 (libtinyxml2-dev)");
}

}  // namespace moreau

#endif
