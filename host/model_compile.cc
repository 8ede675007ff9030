// compile(): RobotSpec -> Model. Validates every field, merges fixed bodies into their
// parents (mass, centre of mass and inertia transferred exactly), orders bodies depth-first
// and fills the flat arrays. Every error reads "<source>: <where>.<field>: expected …, got …".
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include <Eigen/Dense>

#include "moreau/model.h"

namespace moreau {
namespace {

using Vec3 = Eigen::Vector3d;
using Mat3 = Eigen::Matrix3d;
using Quat = Eigen::Quaterniond;

std::string str(double x) {
  std::ostringstream s;
  s.precision(10);
  s << x;
  return s.str();
}

template <size_t N>
std::string str(const std::array<double, N>& a) {
  std::string s = "[";
  for (size_t i = 0; i < N; ++i) s += (i ? ", " : "") + str(a[i]);
  return s + "]";
}

std::string quoted(const std::string& name) { return "'" + name + "'"; }

// Throws "<source>: <loc>: expected <expected>, got <got>".
[[noreturn]] void fail(const RobotSpec& spec, const std::string& loc, const std::string& expected,
                       const std::string& got) {
  throw Error(spec.source + ": " + loc + ": expected " + expected + ", got " + got);
}

std::string where(const BodySpec& b) { return b.where.empty() ? "body " + quoted(b.name) : b.where; }
std::string where(const ActuatorSpec& a) {
  return a.where.empty() ? "actuator " + quoted(a.name) : a.where;
}

void check_finite(const RobotSpec& spec, const std::string& loc, double x) {
  if (!std::isfinite(x)) fail(spec, loc, "a finite number", str(x));
}

template <size_t N>
void check_finite(const RobotSpec& spec, const std::string& loc, const std::array<double, N>& a) {
  for (size_t i = 0; i < N; ++i) check_finite(spec, loc + "[" + std::to_string(i) + "]", a[i]);
}

void check_nonnegative(const RobotSpec& spec, const std::string& loc, double x) {
  check_finite(spec, loc, x);
  if (!(x >= 0)) fail(spec, loc, "a number >= 0", str(x));
}

void check_range(const RobotSpec& spec, const std::string& loc, const std::array<double, 2>& r) {
  check_finite(spec, loc, r);
  if (!(r[0] <= r[1])) fail(spec, loc, "lower <= upper", str(r));
}

// Quaternions (w, x, y, z) must be non-zero; they are normalised, as MuJoCo does.
void check_quat(const RobotSpec& spec, const std::string& loc, const std::array<double, 4>& q) {
  check_finite(spec, loc, q);
  if (Eigen::Vector4d(q[0], q[1], q[2], q[3]).norm() < 1e-12)
    fail(spec, loc, "a non-zero quaternion (w, x, y, z)", str(q));
}

Quat quat(const std::array<double, 4>& q) { return Quat(q[0], q[1], q[2], q[3]).normalized(); }
Vec3 vec(const std::array<double, 3>& a) { return Vec3(a[0], a[1], a[2]); }

// (ixx iyy izz ixy ixz iyz) <-> symmetric 3x3.
Mat3 inertia_matrix(const std::array<double, 6>& i) {
  Mat3 m;
  m << i[0], i[3], i[4], i[3], i[1], i[5], i[4], i[5], i[2];
  return m;
}

// Principal moments A <= B <= C of an inertia about the com.
std::array<double, 3> principal_moments(const Mat3& inertia) {
  const Vec3 l = Eigen::SelfAdjointEigenSolver<Mat3>(inertia, Eigen::EigenvaluesOnly).eigenvalues();
  return {l[0], l[1], l[2]};
}

// Physical mass distributions satisfy A + B >= C (relative tolerance 1e-9).
bool triangle_inequality(const std::array<double, 3>& l) { return l[0] + l[1] >= l[2] * (1 - 1e-9); }

// A moving body's inertia about its com: positive definite and physical.
void check_inertia(const RobotSpec& spec, const std::string& loc, const Mat3& inertia) {
  const std::array<double, 3> l = principal_moments(inertia);
  if (!(l[0] > 0)) fail(spec, loc, "a positive definite matrix", "principal moments " + str(l));
  if (!triangle_inequality(l)) fail(spec, loc, "principal moments satisfying A + B >= C", str(l));
}

// Mass properties of one body, in the frame of the body it is merged into.
struct MassProps {
  double mass = 0;
  Vec3 com = Vec3::Zero();
  Mat3 inertia = Mat3::Zero();  // about com
};

// Adds b (already expressed in a's frame) to a: masses add, com is the mass-weighted mean,
// inertias move to the new com by the parallel-axis theorem I + m (|d|² E − d dᵀ).
void merge(MassProps& a, const MassProps& b) {
  const double m = a.mass + b.mass;
  if (m == 0) return;
  const Vec3 com = (a.mass * a.com + b.mass * b.com) / m;
  auto shifted = [&](const MassProps& p) {
    const Vec3 d = p.com - com;
    return Mat3(p.inertia + p.mass * (d.squaredNorm() * Mat3::Identity() - d * d.transpose()));
  };
  a.inertia = shifted(a) + shifted(b);
  a.mass = m;
  a.com = com;
}

// Rigid placement of a frame in another: x_outer = pos + rot · x_inner.
struct Pose {
  Vec3 pos = Vec3::Zero();
  Quat rot = Quat::Identity();
  Pose operator*(const Pose& inner) const { return {pos + rot * inner.pos, rot * inner.rot}; }
};

int nq_of(JointType t) {
  switch (t) {
    case JointType::Free: return 7;
    case JointType::Ball: return 4;
    case JointType::Fixed: return 0;
    default: return 1;
  }
}

int nv_of(JointType t) {
  switch (t) {
    case JointType::Free: return 6;
    case JointType::Ball: return 3;
    case JointType::Fixed: return 0;
    default: return 1;
  }
}

bool is_scalar(JointType t) { return t == JointType::Revolute || t == JointType::Prismatic; }

// A contact placed in the frame of the compiled body it belongs to.
struct PlacedContact {
  const ContactSpec* spec;
  std::string name;
  Pose pose;
};

class Compiler {
 public:
  explicit Compiler(const RobotSpec& spec) : spec_(spec) {}

  Model run() {
    check_globals();
    for (size_t i = 0; i < spec_.bodies.size(); ++i) check_body(i);
    build_tree();
    for (size_t i = 0; i < spec_.bodies.size(); ++i)
      if (parent_[i] < 0) visit(i, -1, Pose());
    check_unreached();
    check_moving_bodies();
    fill_joints();
    fill_contacts();
    fill_actuators();
    fill_default_qpos();
    const HeightfieldSpec& hf = spec_.heightfield;
    if (hf.nx > 0) return with_heightfield(m_, hf.height, hf.nx, hf.ny, hf.dx, hf.dy, hf.x0, hf.y0);
    return std::move(m_);
  }

 private:
  void check_globals() {
    m_.name = spec_.name;
    m_.source = spec_.source;
    m_.warnings = spec_.warnings;
    m_.self_collisions = spec_.self_collisions;
    check_finite(spec_, "gravity", spec_.gravity);
    for (int k = 0; k < 3; ++k) m_.gravity[k] = spec_.gravity[k];
    if (!(std::isfinite(spec_.timestep) && spec_.timestep > 0))
      fail(spec_, "timestep", "a finite number > 0", str(spec_.timestep));
    m_.timestep = spec_.timestep;
    if (spec_.decimation < 1) fail(spec_, "decimation", "an integer >= 1", std::to_string(spec_.decimation));
    m_.decimation = spec_.decimation;
    if (spec_.bodies.empty()) fail(spec_, "bodies", "at least one body", "none");
  }

  void check_body(size_t i) {
    const BodySpec& b = spec_.bodies[i];
    const std::string w = where(b);
    if (b.name.empty() || b.name == "world")
      fail(spec_, w + ".name", "a non-empty name other than 'world'", quoted(b.name));
    if (!body_by_name_.emplace(b.name, i).second)
      fail(spec_, w + ".name", "a unique body name",
           quoted(b.name) + " (also " + where(spec_.bodies[body_by_name_[b.name]]) + ")");
    const std::string jname = joint_name(b);
    if (!joint_by_name_.emplace(jname, i).second)
      fail(spec_, w + ".joint.name", "a unique joint name",
           quoted(jname) + " (also " + where(spec_.bodies[joint_by_name_[jname]]) + ")");

    check_finite(spec_, w + ".pos", b.pos);
    check_quat(spec_, w + ".quat", b.quat);
    check_joint(b, w + ".joint");

    check_finite(spec_, w + ".com", b.com);
    check_finite(spec_, w + ".inertia", b.inertia);
    // A moving body's own mass may be 0 when merged fixed children give it mass
    // (check_moving_bodies); a massless body has no inertia.
    check_nonnegative(spec_, w + ".mass", b.mass);
    if (b.mass > 0 && b.joint.type == JointType::Fixed) {
      check_fixed_inertia(b, w + ".inertia");
    } else if (b.mass > 0) {
      check_inertia(spec_, w + ".inertia", inertia_matrix(b.inertia));
    } else if (b.inertia != std::array<double, 6>{}) {
      fail(spec_, w + ".inertia", "zeros for a body of mass 0", str(b.inertia));
    }

    for (size_t k = 0; k < b.contacts.size(); ++k)
      check_contact(b.contacts[k], w + ".contacts[" + std::to_string(k) + "]");
  }

  // A fixed body only adds to the body it merges into, which gets the full check: its own
  // inertia may be a point mass (zero) and, as vendor files sometimes have, unphysical (warned).
  void check_fixed_inertia(const BodySpec& b, const std::string& loc) {
    const std::array<double, 3> l = principal_moments(inertia_matrix(b.inertia));
    if (!(l[0] >= -1e-9 * l[2])) fail(spec_, loc, "a positive semi-definite matrix", "principal moments " + str(l));
    if (!triangle_inequality(l))
      m_.warnings.push_back("body " + quoted(b.name) + ": principal moments " + str(l) +
                            " violate A + B >= C; accepted because the body is fixed and merged");
  }

  static std::string joint_name(const BodySpec& b) { return b.joint.name.empty() ? b.name : b.joint.name; }

  void check_joint(const BodySpec& b, const std::string& w) {
    const JointSpec& j = b.joint;
    check_finite(spec_, w + ".pos", j.pos);
    check_finite(spec_, w + ".axis", j.axis);
    check_finite(spec_, w + ".range", j.range);
    check_nonnegative(spec_, w + ".damping", j.damping);
    check_nonnegative(spec_, w + ".stiffness", j.stiffness);
    check_finite(spec_, w + ".springref", j.springref);
    check_nonnegative(spec_, w + ".armature", j.armature);
    check_nonnegative(spec_, w + ".frictionloss", j.frictionloss);
    if (j.type == JointType::Fixed) return;
    if (vec(j.axis).norm() < 1e-12) fail(spec_, w + ".axis", "a non-zero axis", str(j.axis));
    if (j.limited) check_range(spec_, w + ".range", j.range);
    if (j.stiffness != 0 && j.type != JointType::Revolute && j.type != JointType::Prismatic)
      fail(spec_, w + ".stiffness", "0 on a " + std::string(joint_type_name(j.type)) +
           " joint (springs act on revolute and prismatic joints)", str(j.stiffness));
    if (j.limited && j.type == JointType::Ball)
      m_.warnings.push_back("joint " + quoted(joint_name(b)) + ": a ball joint's range is stored but not enforced " +
                            "(limits act on revolute and prismatic joints)");
  }

  void check_contact(const ContactSpec& c, const std::string& w) {
    check_finite(spec_, w + ".pos", c.pos);
    check_quat(spec_, w + ".quat", c.quat);
    if (c.kind == ContactSpec::Kind::Sphere) {
      check_nonnegative(spec_, w + ".radius", c.radius);
      return;
    }
    if (c.kind == ContactSpec::Kind::Cylinder) {
      if (!(c.radius > 0) || !std::isfinite(c.radius)) fail(spec_, w + ".radius", "a radius > 0", str(c.radius));
      if (!(c.half_length > 0) || !std::isfinite(c.half_length))
        fail(spec_, w + ".half_length", "a half-length > 0", str(c.half_length));
      return;
    }
    check_finite(spec_, w + ".half_size", c.half_size);
    for (double h : c.half_size)
      if (!(h > 0)) fail(spec_, w + ".half_size", "three half-sizes > 0", str(c.half_size));
  }

  // parent_[i]: spec index of the parent body, -1 for a root; children_ in spec order.
  void build_tree() {
    const size_t n = spec_.bodies.size();
    parent_.assign(n, -1);
    children_.assign(n, {});
    for (size_t i = 0; i < n; ++i) {
      const BodySpec& b = spec_.bodies[i];
      if (b.parent.empty() || b.parent == "world") continue;
      auto it = body_by_name_.find(b.parent);
      if (it == body_by_name_.end())
        fail(spec_, where(b) + ".parent", "'world' or the name of a body", quoted(b.parent));
      parent_[i] = static_cast<int>(it->second);
      children_[it->second].push_back(i);
    }
    owner_.assign(n, -2);  // -2: not reached from a root (cycle)
  }

  // Depth-first preorder. `owner` is the compiled body this spec body's parent frame belongs
  // to (-1 = world) and `placement` the pose of that parent frame in the owner's frame.
  void visit(size_t i, int owner, const Pose& placement) {
    const BodySpec& b = spec_.bodies[i];
    const Pose pose = placement * Pose{vec(b.pos), quat(b.quat)};  // in the owner's frame
    Pose frame_in_owner = pose;  // where this body's frame sits in the body it belongs to

    if (b.joint.type != JointType::Fixed) {
      if (b.joint.type == JointType::Free && owner != -1)
        fail(spec_, where(b) + ".parent", "'world' for a body with a free joint", quoted(b.parent));
      const int k = static_cast<int>(spec_of_.size());
      spec_of_.push_back(i);
      placement_.push_back(pose);
      m_.body_name.push_back(b.name);
      m_.body_parent.push_back(owner);
      // A free body's pose lives in q (qpos0); its frame is placed at the identity.
      const Pose frame = b.joint.type == JointType::Free ? Pose() : pose;
      m_.body_pos.insert(m_.body_pos.end(), frame.pos.data(), frame.pos.data() + 3);
      m_.body_quat.insert(m_.body_quat.end(), {frame.rot.w(), frame.rot.x(), frame.rot.y(), frame.rot.z()});
      mass_.push_back({b.mass, vec(b.com), inertia_matrix(b.inertia)});
      contacts_.emplace_back();
      owner = k;
      frame_in_owner = Pose();
    } else if (owner >= 0) {
      // Merge into the owner: com' = p + R c, I' = R I Rᵀ.
      const Mat3 r = pose.rot.toRotationMatrix();
      merge(mass_[owner], {b.mass, pose.pos + r * vec(b.com), r * inertia_matrix(b.inertia) * r.transpose()});
    } else {
      if (b.mass > 0)
        m_.warnings.push_back("body " + quoted(b.name) + ": fixed to the world; its mass " + str(b.mass) +
                              " is static and dropped");
      if (!b.contacts.empty())
        m_.warnings.push_back("body " + quoted(b.name) + ": fixed to the world; its " +
                              std::to_string(b.contacts.size()) + " contact(s) are dropped");
    }
    owner_[i] = owner;

    if (owner >= 0) {
      for (size_t c = 0; c < b.contacts.size(); ++c) {
        const ContactSpec& cs = b.contacts[c];
        const std::string name = cs.name.empty() ? b.name + "/contact" + std::to_string(c) : cs.name;
        contacts_[owner].push_back({&cs, name, frame_in_owner * Pose{vec(cs.pos), quat(cs.quat)}});
      }
    }
    for (size_t c : children_[i]) visit(c, owner, frame_in_owner);
  }

  void check_unreached() {
    for (size_t i = 0; i < spec_.bodies.size(); ++i) {
      if (owner_[i] != -2) continue;
      std::string chain = quoted(spec_.bodies[i].name);
      std::set<size_t> seen{i};
      for (size_t j = parent_[i];; j = parent_[j]) {
        chain += " -> " + quoted(spec_.bodies[j].name);
        if (!seen.insert(j).second) break;
      }
      fail(spec_, where(spec_.bodies[i]) + ".parent", "a chain of parents that ends at 'world'", "a cycle " + chain);
    }
  }

  // Merged mass properties and the capacity limits.
  void check_moving_bodies() {
    m_.nbody = static_cast<int>(spec_of_.size());
    if (m_.nbody > kMaxBodies)
      fail(spec_, "bodies", "at most " + std::to_string(kMaxBodies) + " moving bodies after merging (kMaxBodies)",
           std::to_string(m_.nbody));
    // A moving body may be massless (mass and inertia 0, as the intermediate bodies of an MJCF
    // body with several joints) when a body below it carries mass, as in MuJoCo.
    std::vector<double> subtree_mass(m_.nbody, 0.0);
    for (int k = m_.nbody - 1; k >= 0; --k) {
      subtree_mass[k] += mass_[k].mass;
      if (m_.body_parent[k] >= 0) subtree_mass[m_.body_parent[k]] += subtree_mass[k];
    }
    for (int k = 0; k < m_.nbody; ++k) {
      const BodySpec& b = spec_.bodies[spec_of_[k]];
      const MassProps& p = mass_[k];
      const bool massless = p.mass == 0 && p.inertia.isZero(0) && subtree_mass[k] > 0;
      if (!(p.mass > 0) && !massless)
        fail(spec_, where(b) + ".mass",
             "a number > 0 for a moving body (with its merged fixed children), or 0 with zero inertia when a body "
             "below it has mass",
             str(p.mass));
      const std::array<double, 6> inertia{p.inertia(0, 0), p.inertia(1, 1), p.inertia(2, 2),
                                          p.inertia(0, 1), p.inertia(0, 2), p.inertia(1, 2)};
      if (!massless)
        check_inertia(spec_, where(b) + ".inertia" + (p.mass != b.mass ? " (merged with fixed children)" : ""),
                      p.inertia);
      m_.body_mass.push_back(p.mass);
      m_.body_com.insert(m_.body_com.end(), p.com.data(), p.com.data() + 3);
      m_.body_inertia.insert(m_.body_inertia.end(), inertia.begin(), inertia.end());
    }
  }

  void fill_joints() {
    for (int k = 0; k < m_.nbody; ++k) {
      const BodySpec& b = spec_.bodies[spec_of_[k]];
      const JointSpec& j = b.joint;
      m_.jnt_name.push_back(joint_name(b));
      m_.jnt_type.push_back(static_cast<int>(j.type));
      m_.jnt_qposadr.push_back(m_.nq);
      m_.jnt_dofadr.push_back(m_.nv);
      const Vec3 axis = vec(j.axis).normalized();
      m_.jnt_axis.insert(m_.jnt_axis.end(), axis.data(), axis.data() + 3);
      m_.jnt_pos.insert(m_.jnt_pos.end(), j.pos.begin(), j.pos.end());
      m_.jnt_limited.push_back(j.limited);
      m_.jnt_range.insert(m_.jnt_range.end(), {j.limited ? j.range[0] : 0, j.limited ? j.range[1] : 0});
      m_.jnt_stiffness.push_back(j.type == JointType::Fixed ? 0 : j.stiffness);
      m_.jnt_springref.push_back(j.type == JointType::Fixed ? 0 : j.springref);

      // First dof: last dof of the parent body (-1 at a root); later dofs: the previous one.
      const int parent = m_.body_parent[k];
      const int first_parent =
          parent < 0 ? -1 : m_.jnt_dofadr[parent] + nv_of(JointType(m_.jnt_type[parent])) - 1;
      for (int d = 0; d < nv_of(j.type); ++d) {
        m_.dof_body.push_back(k);
        const int dof_parent = d == 0 ? first_parent : m_.nv + d - 1;
        m_.dof_parent.push_back(dof_parent);
        m_.dof_depth.push_back(dof_parent < 0 ? 0 : m_.dof_depth[dof_parent] + 1);
        m_.dof_Madr.push_back(m_.nM);
        m_.nM += m_.dof_depth.back() + 1;
        // row: the parent's row (its ancestors and itself), then this dof
        for (int t = 0; dof_parent >= 0 && t <= m_.dof_depth[dof_parent]; ++t)
          m_.M_colind.push_back(m_.M_colind[m_.dof_Madr[dof_parent] + t]);
        m_.M_colind.push_back(m_.nv + d);
        m_.nchain = std::max(m_.nchain, m_.dof_depth.back() + 1);
        m_.dof_damping.push_back(j.damping);
        m_.dof_armature.push_back(j.armature);
        m_.dof_frictionloss.push_back(j.frictionloss);
      }

      if (j.type == JointType::Free) {
        const Pose& p = placement_[k];
        m_.qpos0.insert(m_.qpos0.end(), {p.pos.x(), p.pos.y(), p.pos.z(), p.rot.w(), p.rot.x(), p.rot.y(), p.rot.z()});
      } else if (j.type == JointType::Ball) {
        m_.qpos0.insert(m_.qpos0.end(), {1, 0, 0, 0});
      } else {
        m_.qpos0.push_back(0);
      }
      m_.nq += nq_of(j.type);
      m_.nv += nv_of(j.type);
    }
    if (m_.nv > kMaxNv)
      fail(spec_, "nv", "at most " + std::to_string(kMaxNv) + " degrees of freedom (kMaxNv)", std::to_string(m_.nv));
    if (joint_rows(m_) > kMaxJointRows)
      fail(spec_, "joints", "at most " + std::to_string(kMaxJointRows) +
           " limited revolute/prismatic joints plus dofs with frictionloss (kMaxJointRows)",
           std::to_string(joint_rows(m_)));
    if (m_.nq > kMaxNq)
      fail(spec_, "nq", "at most " + std::to_string(kMaxNq) + " position coordinates (kMaxNq)", std::to_string(m_.nq));
  }

  // Spheres become one point; boxes their 8 corners pos + R (±hx, ±hy, ±hz), radius 0;
  // cylinders the points pos + R (r cos θᵢ, r sin θᵢ, ±b) of their end circles, θᵢ = 2π i / n, radius 0.
  void fill_contacts() {
    for (int k = 0; k < m_.nbody; ++k) {
      for (const PlacedContact& c : contacts_[k]) {
        if (c.spec->kind == ContactSpec::Kind::Sphere) {
          add_contact(k, c.name, c.pose.pos, c.spec->radius);
          continue;
        }
        if (c.spec->kind == ContactSpec::Kind::Cylinder) {
          const int n = ContactSpec::kRimPoints;
          for (int end = 0; end < 2; ++end)
            for (int i = 0; i < n; ++i) {
              const double th = 2 * M_PI * i / n, r = c.spec->radius;
              const Vec3 local(r * std::cos(th), r * std::sin(th), (end ? 1 : -1) * c.spec->half_length);
              add_contact(k, c.name + "/rim" + std::to_string(end * n + i), c.pose.pos + c.pose.rot * local, 0);
            }
          continue;
        }
        for (int corner = 0; corner < 8; ++corner) {
          const Vec3 local((corner & 1 ? 1 : -1) * c.spec->half_size[0], (corner & 2 ? 1 : -1) * c.spec->half_size[1],
                           (corner & 4 ? 1 : -1) * c.spec->half_size[2]);
          add_contact(k, c.name + "/corner" + std::to_string(corner), c.pose.pos + c.pose.rot * local, 0);
        }
      }
    }
    if (m_.ncon > kMaxContacts)
      fail(spec_, "contacts", "at most " + std::to_string(kMaxContacts) + " contact points (kMaxContacts)",
           std::to_string(m_.ncon));
  }

  void add_contact(int body, const std::string& name, const Vec3& pos, double radius) {
    m_.con_name.push_back(name);
    m_.con_body.push_back(body);
    m_.con_pos.insert(m_.con_pos.end(), pos.data(), pos.data() + 3);
    m_.con_radius.push_back(radius);
    ++m_.ncon;
  }

  void fill_actuators() {
    m_.nu = static_cast<int>(spec_.actuators.size());
    if (m_.nu > kMaxNu)
      fail(spec_, "actuators", "at most " + std::to_string(kMaxNu) + " actuators (kMaxNu)", std::to_string(m_.nu));
    std::map<std::string, std::string> seen;  // name -> where
    for (const ActuatorSpec& a : spec_.actuators) {
      const std::string w = where(a);
      const std::string name = a.name.empty() ? a.joint : a.name;
      if (!seen.emplace(name, w).second)
        fail(spec_, w + ".name", "a unique actuator name", quoted(name) + " (also " + seen[name] + ")");
      const int jnt = m_.joint_index(a.joint);
      if (jnt < 0 || !is_scalar(JointType(m_.jnt_type[jnt]))) {
        const auto it = joint_by_name_.find(a.joint);
        const std::string what = it == joint_by_name_.end()
                                     ? "no such joint"
                                     : std::string("a ") + joint_type_name(spec_.bodies[it->second].joint.type) + " joint";
        fail(spec_, w + ".joint", "the name of a revolute or prismatic joint", quoted(a.joint) + " (" + what + ")");
      }
      check_finite(spec_, w + ".gear", a.gear);
      if (a.gear == 0) fail(spec_, w + ".gear", "a non-zero number", str(a.gear));
      check_nonnegative(spec_, w + ".kp", a.kp);
      check_nonnegative(spec_, w + ".kd", a.kd);
      if (a.ctrl_limited) check_range(spec_, w + ".ctrl_range", a.ctrl_range);
      if (a.force_limited) check_range(spec_, w + ".force_range", a.force_range);
      check_nonnegative(spec_, w + ".peak_force", a.peak_force);
      check_nonnegative(spec_, w + ".max_velocity", a.max_velocity);
      // The torque-speed line f_max = peak (1 − l̇/vmax) is clipped to force_range.
      if (a.peak_force > 0 && !(a.max_velocity > 0))
        fail(spec_, w + ".max_velocity", "a number > 0 when peak_force > 0", str(a.max_velocity));
      if (a.peak_force > 0 && !a.force_limited)
        fail(spec_, w + ".force_range", "a force range when peak_force > 0", "none");

      m_.actuator_name.push_back(name);
      m_.actuator_type.push_back(static_cast<int>(a.type));
      m_.actuator_dof.push_back(m_.jnt_dofadr[jnt]);
      m_.actuator_qposadr.push_back(m_.jnt_qposadr[jnt]);
      m_.actuator_gear.push_back(a.gear);
      m_.actuator_kp.push_back(a.kp);
      m_.actuator_kd.push_back(a.kd);
      m_.actuator_ctrllimited.push_back(a.ctrl_limited);
      m_.actuator_ctrlrange.insert(m_.actuator_ctrlrange.end(), a.ctrl_range.begin(), a.ctrl_range.end());
      m_.actuator_forcelimited.push_back(a.force_limited);
      m_.actuator_forcerange.insert(m_.actuator_forcerange.end(), a.force_range.begin(), a.force_range.end());
      m_.actuator_peakforce.push_back(a.peak_force);
      m_.actuator_maxvel.push_back(a.max_velocity);
    }
  }

  void fill_default_qpos() {
    std::set<std::string> seen;
    for (const auto& [name, value] : spec_.default_qpos) {
      const std::string loc = "default_qpos." + name;
      const int jnt = m_.joint_index(name);
      if (jnt < 0 || !is_scalar(JointType(m_.jnt_type[jnt])))
        fail(spec_, loc, "the name of a revolute or prismatic joint", quoted(name));
      if (!seen.insert(name).second) fail(spec_, loc, "one value per joint", "a second value");
      check_finite(spec_, loc, value);
      m_.qpos0[m_.jnt_qposadr[jnt]] = value;
    }
  }

  const RobotSpec& spec_;
  Model m_;
  std::map<std::string, size_t> body_by_name_, joint_by_name_;  // -> spec index
  std::vector<int> parent_;                    // spec index -> spec index of parent, -1 root
  std::vector<std::vector<size_t>> children_;  // spec order
  std::vector<int> owner_;                     // spec index -> compiled body (-1 world)
  // per compiled body
  std::vector<size_t> spec_of_;
  std::vector<Pose> placement_;  // frame in the parent body's frame (world for roots)
  std::vector<MassProps> mass_;
  std::vector<std::vector<PlacedContact>> contacts_;
};

}  // namespace

Model compile(const RobotSpec& spec) { return Compiler(spec).run(); }

}  // namespace moreau
