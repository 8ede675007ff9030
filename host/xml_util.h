// Helpers shared by the URDF and MJCF importers: number parsing with located errors,
// rotations, rigid-body inertia, and the contact-capacity policy.
#pragma once

#include <tinyxml2.h>

#include <Eigen/Dense>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "moreau/model.h"
#include "moreau/robot_spec.h"

namespace moreau::xml {

using Vec3 = Eigen::Vector3d;
using Mat3 = Eigen::Matrix3d;
using Quat = Eigen::Quaterniond;

inline std::string num(double x) {
  std::ostringstream s;
  s.precision(10);
  s << x;
  return s.str();
}

inline std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

// "anymal.urdf:57" — the file and line of an element.
inline std::string at(const std::string& file, const tinyxml2::XMLElement* e) {
  return e ? file + ":" + std::to_string(e->GetLineNum()) : file;
}

// Parses whitespace-separated finite numbers. Returns false on anything else.
inline bool parse_numbers(const char* text, std::vector<double>& out) {
  out.clear();
  const char* p = text;
  while (true) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') ++p;
    if (*p == '\0') return true;
    char* end = nullptr;
    errno = 0;
    const double x = std::strtod(p, &end);
    if (end == p || !std::isfinite(x) || errno == ERANGE) return false;
    if (*end != '\0' && *end != ' ' && *end != '\t' && *end != '\n' && *end != '\r') return false;
    out.push_back(x);
    p = end;
  }
}

// Throws "<loc>: attribute '<name>': expected <n> finite numbers, got '<text>'" unless
// `text` holds between min_n and max_n numbers.
inline std::vector<double> numbers(const std::string& loc, const char* name, const char* text, size_t min_n,
                                   size_t max_n) {
  std::vector<double> v;
  if (!parse_numbers(text, v) || v.size() < min_n || v.size() > max_n) {
    const std::string count = min_n == max_n ? std::to_string(min_n)
                                             : std::to_string(min_n) + " to " + std::to_string(max_n);
    throw Error(loc + ": attribute " + in_quotes(name) + ": expected " + count + " finite number" +
                (max_n == 1 ? "" : "s") + ", got " + in_quotes(text));
  }
  return v;
}

inline Vec3 vec3(const std::array<double, 3>& a) { return Vec3(a[0], a[1], a[2]); }
inline std::array<double, 3> arr3(const Vec3& v) { return {v.x(), v.y(), v.z()}; }
inline std::array<double, 4> arr4(const Quat& q) { return {q.w(), q.x(), q.y(), q.z()}; }

// Rotation by `angle` about the unit `axis`.
inline Quat axis_angle(const Vec3& axis, double angle) {
  const double s = std::sin(angle / 2);
  return Quat(std::cos(angle / 2), axis.x() * s, axis.y() * s, axis.z() * s);
}

// Full inertia (ixx iyy izz ixy ixz iyz) <-> symmetric matrix.
inline std::array<double, 6> inertia6(const Mat3& m) {
  return {m(0, 0), m(1, 1), m(2, 2), m(0, 1), m(0, 2), m(1, 2)};
}
inline Mat3 inertia_mat(double ixx, double iyy, double izz, double ixy, double ixz, double iyz) {
  Mat3 m;
  m << ixx, ixy, ixz, ixy, iyy, iyz, ixz, iyz, izz;
  return m;
}

// Mass properties accumulated in one frame: Σ m, Σ m c, and Σ of inertias about the
// frame origin, so that parts add without knowing the final centre of mass.
struct MassSum {
  double mass = 0;
  Vec3 first = Vec3::Zero();        // Σ m c
  Mat3 origin = Mat3::Zero();       // Σ (R I Rᵀ + m (|c|² E − c cᵀ))

  // A part of mass m, centre c, inertia `inertia` about c (already in this frame).
  void add(double m, const Vec3& c, const Mat3& inertia) {
    mass += m;
    first += m * c;
    origin += inertia + m * (c.squaredNorm() * Mat3::Identity() - c * c.transpose());
  }
  Vec3 com() const { return mass > 0 ? Vec3(first / mass) : Vec3::Zero(); }
  // Inertia about the centre of mass: I_o − m (|c|² E − c cᵀ).
  Mat3 inertia_about_com() const {
    if (mass <= 0) return origin;
    const Vec3 c = com();
    return origin - mass * (c.squaredNorm() * Mat3::Identity() - c * c.transpose());
  }
};

// Contact points a spec produces once compiled (a sphere: 1, a box: its 8 corners, a
// cylinder: the points of its two end circles).
inline int contact_points(const ContactSpec& c) {
  return c.kind == ContactSpec::Kind::Sphere ? 1 : c.kind == ContactSpec::Kind::Box ? 8 : 2 * ContactSpec::kRimPoints;
}

// The kernels hold at most kMaxContacts points. When the collision shapes of a file need
// more, all spheres (feet, capsule ends) are kept, then the boxes of whole tree levels from
// the root outwards while they fit, then the cylinders (16 points each) likewise: a symmetric
// robot keeps symmetric contacts. One warning names the dropped shapes.
inline void cap_contacts(RobotSpec& spec) {
  using Kind = ContactSpec::Kind;
  int total = 0, used = 0;
  std::map<std::string, int> depth;                 // bodies are listed parents first
  std::map<std::pair<Kind, int>, int> level_points;  // (box or cylinder, depth) -> its points
  for (const BodySpec& b : spec.bodies) {
    const auto parent = depth.find(b.parent);
    const int d = depth[b.name] = parent == depth.end() ? 0 : parent->second + 1;
    for (const ContactSpec& c : b.contacts) {
      total += contact_points(c);
      if (c.kind == Kind::Sphere) ++used;
      else level_points[{c.kind, d}] += contact_points(c);
    }
  }
  if (total <= kMaxContacts) return;
  std::map<Kind, int> keep_depth{{Kind::Box, -1}, {Kind::Cylinder, -1}};  // shapes at depth <= this stay
  for (const Kind kind : {Kind::Box, Kind::Cylinder})
    for (const auto& [level, points] : level_points) {
      if (level.first != kind) continue;
      if (used + points > kMaxContacts) break;
      used += points;
      keep_depth[kind] = level.second;
    }
  std::string dropped;
  int ndropped = 0;
  for (BodySpec& b : spec.bodies) {
    std::vector<ContactSpec> kept;
    for (ContactSpec& c : b.contacts) {
      if (c.kind == Kind::Sphere || depth[b.name] <= keep_depth[c.kind])
        kept.push_back(std::move(c));
      else
        dropped += (ndropped++ ? ", " : "") + in_quotes(c.name);
    }
    b.contacts = std::move(kept);
  }
  spec.warnings.push_back("the collision shapes give " + std::to_string(total) + " contact points, more than " +
                          "kMaxContacts = " + std::to_string(kMaxContacts) + "; kept the spheres, then the boxes and " +
                          "then the cylinders of the bodies nearest the root (" + std::to_string(used) +
                          " points), dropped " + std::to_string(ndropped) + " shape(s): " + dropped);
}

}  // namespace moreau::xml
