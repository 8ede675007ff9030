// export_mjcf: a minimal MJCF with the same rigid-body dynamics as a compiled Model, for
// comparing against MuJoCo and for viewing. Contact points become non-colliding spheres; a
// heightfield ground becomes an <hfield> (the plane is not written).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "moreau/model.h"

namespace moreau {
namespace {

// Full precision, so that MuJoCo reads back exactly our doubles.
std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

std::string nums(const double* x, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? " " : "") + num(x[i]);
  return s;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string name_attr(const std::string& name) {
  return name.empty() ? "" : " name=\"" + xml_escape(name) + "\"";
}

// Hamilton product r = a b, quaternions (w, x, y, z).
void quat_mul(const double* a, const double* b, double* r) {
  r[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
  r[1] = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
  r[2] = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
  r[3] = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
}

// r = q v q*
void quat_rotate(const double* q, const double* v, double* r) {
  const double p[4] = {0, v[0], v[1], v[2]};
  const double qc[4] = {q[0], -q[1], -q[2], -q[3]};
  double t[4], u[4];
  quat_mul(q, p, t);
  quat_mul(t, qc, u);
  r[0] = u[1], r[1] = u[2], r[2] = u[3];
}

struct Frame {
  double pos[3];
  double quat[4];
};

// MuJoCo puts a scalar joint's qpos0 at its `ref`, and the MJCF body frame is the frame at
// q = ref, whereas ours is the frame at q = 0. Emitting ref = qpos0 therefore needs the body
// frame moved by the joint displacement at q = ref:
//   hinge: frame * T(p) R(axis, ref) T(-p);  slide: frame * T(axis ref).
Frame frame_at_ref(const Model& m, int b, double ref) {
  Frame f;
  const double* pos = &m.body_pos[3 * b];
  const double* quat = &m.body_quat[4 * b];
  const double* a = &m.jnt_axis[3 * b];
  double local[3] = {0, 0, 0};
  double rot[4] = {1, 0, 0, 0};
  if (m.jnt_type[b] == static_cast<int>(JointType::Revolute)) {
    const double s = std::sin(ref / 2);
    rot[0] = std::cos(ref / 2), rot[1] = s * a[0], rot[2] = s * a[1], rot[3] = s * a[2];
    const double* p = &m.jnt_pos[3 * b];
    double rp[3];
    quat_rotate(rot, p, rp);
    for (int i = 0; i < 3; ++i) local[i] = p[i] - rp[i];
  } else {
    for (int i = 0; i < 3; ++i) local[i] = a[i] * ref;
  }
  double shift[3];
  quat_rotate(quat, local, shift);
  for (int i = 0; i < 3; ++i) f.pos[i] = pos[i] + shift[i];
  quat_mul(quat, rot, f.quat);
  return f;
}

// Principal moments and the orientation of the principal axes in the body frame, such that
// I = R(quat) diag(moments) R(quat)ᵀ. Done here in double precision because MuJoCo 2.2.2's
// own diagonalisation of `fullinertia` is accurate only to ~1e-10 relative.
void principal_inertia(const double* in, double* moments, double* quat) {
  Eigen::Matrix3d I;
  I << in[0], in[3], in[4], in[3], in[1], in[5], in[4], in[5], in[2];
  const Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d> eig(I);
  Eigen::Matrix3d r = eig.eigenvectors();
  if (r.determinant() < 0) r.col(2) *= -1;  // a rotation, not a reflection
  const Eigen::Quaterniond q(r);
  for (int i = 0; i < 3; ++i) moments[i] = eig.eigenvalues()[i];
  quat[0] = q.w(), quat[1] = q.x(), quat[2] = q.y(), quat[3] = q.z();
}

class Writer {
 public:
  explicit Writer(const Model& m) : m_(m), children_(m.nbody + 1) {
    for (int b = 0; b < m.nbody; ++b) children_[m.body_parent[b] + 1].push_back(b);
  }

  std::string run() {
    check_order();
    out_ += "<mujoco model=\"" + xml_escape(m_.name.empty() ? "moreau" : m_.name) + "\">\n";
    // Inertias exactly as given: no inference from geoms, no bounding, no balancing.
    // Limits are emitted with explicit limited/ctrllimited/forcelimited flags.
    out_ += "  <compiler angle=\"radian\" inertiafromgeom=\"false\""
            " boundmass=\"0\" boundinertia=\"0\" balanceinertia=\"false\"/>\n";
    out_ += "  <option timestep=\"" + num(m_.timestep) + "\" gravity=\"" + nums(m_.gravity, 3) +
            "\" integrator=\"Euler\"/>\n";
    heightfield_asset();
    out_ += "  <worldbody>\n";
    if (m_.hfield_nx > 0)
      out_ += "    <geom name=\"terrain\" type=\"hfield\" hfield=\"terrain\" pos=\"" + nums(hfield_pos_, 3) + "\"/>\n";
    for (int b : children_[0]) body(b, 2);
    out_ += "  </worldbody>\n";
    actuators();
    out_ += "</mujoco>\n";
    return out_;
  }

 private:
  // MuJoCo numbers bodies (and so dofs) in depth-first pre-order of the nesting; the state
  // vectors only line up with ours if our topological order is that same pre-order.
  void check_order() const {
    std::vector<int> order, stack(children_[0].rbegin(), children_[0].rend());
    while (!stack.empty()) {
      const int b = stack.back();
      stack.pop_back();
      order.push_back(b);
      stack.insert(stack.end(), children_[b + 1].rbegin(), children_[b + 1].rend());
    }
    for (int i = 0; i < m_.nbody; ++i) {
      if (order[i] != i) {
        throw Error(m_.source + ": export_mjcf: body order is not depth-first (body " +
                    std::to_string(i) + " '" + m_.body_name[i] + "'), MuJoCo would reorder dofs");
      }
    }
  }

  // A heightfield ground as MuJoCo's <hfield>: MuJoCo normalises the elevations to [0, 1] and
  // scales them by size's elevation_z, its first row at +y, the grid spanning ±radius about the
  // geom's position; so elevation = the heights (rows from +y), elevation_z = max − min, and the
  // geom at the grid's centre, at height min. The plane z = 0 is not written (no ground).
  void heightfield_asset() {
    if (m_.hfield_nx == 0) return;
    const int nx = m_.hfield_nx, ny = m_.hfield_ny;
    const auto [lo, hi] = std::minmax_element(m_.hfield_height.begin(), m_.hfield_height.end());
    const double rx = 0.5 * (nx - 1) * m_.hfield_spacing[0], ry = 0.5 * (ny - 1) * m_.hfield_spacing[1];
    const double top = *hi - *lo;
    hfield_pos_[0] = m_.hfield_origin[0] + rx;
    hfield_pos_[1] = m_.hfield_origin[1] + ry;
    hfield_pos_[2] = *lo;
    // MuJoCo needs elevation_z > 0 and base_z > 0 (the thickness below the lowest sample)
    const double size[4] = {rx, ry, top > 0 ? top : 1.0, std::max(top, 0.1)};
    std::string elevation;
    for (int j = ny - 1; j >= 0; --j)
      for (int i = 0; i < nx; ++i)
        elevation += (elevation.empty() ? "" : " ") + num(m_.hfield_height[static_cast<size_t>(j) * nx + i] - *lo);
    out_ += "  <asset>\n    <hfield name=\"terrain\" nrow=\"" + std::to_string(ny) + "\" ncol=\"" + std::to_string(nx) +
            "\" size=\"" + nums(size, 4) + "\" elevation=\"" + elevation + "\"/>\n  </asset>\n";
  }

  void body(int b, int depth) {
    const std::string ind(2 * depth, ' ');
    const int type = m_.jnt_type[b];
    const double* q0 = &m_.qpos0[m_.jnt_qposadr[b]];
    Frame f;
    if (type == static_cast<int>(JointType::Free)) {
      // MuJoCo's free-joint qpos0 is the body pose in the MJCF.
      if (m_.body_parent[b] != -1) {
        throw Error(m_.source + ": export_mjcf: free joint on non-root body '" +
                    m_.body_name[b] + "' (MuJoCo allows free joints at top level only)");
      }
      std::copy(q0, q0 + 3, f.pos);
      std::copy(q0 + 3, q0 + 7, f.quat);
    } else if (type == static_cast<int>(JointType::Revolute) ||
               type == static_cast<int>(JointType::Prismatic)) {
      f = frame_at_ref(m_, b, q0[0]);
    } else {
      std::copy(&m_.body_pos[3 * b], &m_.body_pos[3 * b + 3], f.pos);
      std::copy(&m_.body_quat[4 * b], &m_.body_quat[4 * b + 4], f.quat);
    }
    out_ += ind + "<body" + name_attr(m_.body_name[b]) + " pos=\"" + nums(f.pos, 3) +
            "\" quat=\"" + nums(f.quat, 4) + "\">\n";
    double moments[3], iquat[4];
    principal_inertia(&m_.body_inertia[6 * b], moments, iquat);
    out_ += ind + "  <inertial pos=\"" + nums(&m_.body_com[3 * b], 3) + "\" quat=\"" +
            nums(iquat, 4) + "\" mass=\"" + num(m_.body_mass[b]) + "\" diaginertia=\"" +
            nums(moments, 3) + "\"/>\n";
    joint(b, ind + "  ");
    for (int c = 0; c < m_.ncon; ++c) {
      if (m_.con_body[c] != b) continue;
      // Visual only; radius-0 points (box corners) get a small sphere to be seen.
      const double r = m_.con_radius[c] > 0 ? m_.con_radius[c] : 0.005;
      out_ += ind + "  <geom" + name_attr(m_.con_name[c]) + " type=\"sphere\" size=\"" +
              num(r) + "\" pos=\"" + nums(&m_.con_pos[3 * c], 3) +
              "\" contype=\"0\" conaffinity=\"0\" mass=\"0\"/>\n";
    }
    for (int c : children_[b + 1]) body(c, depth + 1);
    out_ += ind + "</body>\n";
  }

  void joint(int b, const std::string& ind) {
    const int type = m_.jnt_type[b];
    const std::string name = name_attr(m_.jnt_name[b]);
    if (type == static_cast<int>(JointType::Free)) {
      out_ += ind + "<freejoint" + name + "/>\n";
      return;
    }
    if (type == static_cast<int>(JointType::Fixed)) return;  // welded to the parent
    const int dof = m_.jnt_dofadr[b];
    // Ball dofs share one damping/armature/frictionloss value in MJCF; ours are per dof.
    const std::string dyn = " damping=\"" + num(m_.dof_damping[dof]) + "\" armature=\"" +
                            num(m_.dof_armature[dof]) + "\" frictionloss=\"" + num(m_.dof_frictionloss[dof]) + "\"";
    if (type == static_cast<int>(JointType::Ball)) {
      for (int k = 1; k < 3; ++k) {
        if (m_.dof_damping[dof + k] != m_.dof_damping[dof] ||
            m_.dof_armature[dof + k] != m_.dof_armature[dof] ||
            m_.dof_frictionloss[dof + k] != m_.dof_frictionloss[dof]) {
          throw Error(m_.source + ": export_mjcf: ball joint '" + m_.jnt_name[b] +
                      "' has unequal per-dof damping, armature or frictionloss, which MJCF cannot express");
        }
      }
      out_ += ind + "<joint" + name + " type=\"ball\" pos=\"" + nums(&m_.jnt_pos[3 * b], 3) +
              "\"" + dyn + "/>\n";
      return;
    }
    const bool hinge = type == static_cast<int>(JointType::Revolute);
    std::string s = ind + "<joint" + name + " type=\"" + (hinge ? "hinge" : "slide") +
                    "\" pos=\"" + nums(&m_.jnt_pos[3 * b], 3) + "\" axis=\"" +
                    nums(&m_.jnt_axis[3 * b], 3) + "\" ref=\"" +
                    num(m_.qpos0[m_.jnt_qposadr[b]]) + "\"" + dyn;
    if (m_.jnt_stiffness[b] != 0)
      s += " stiffness=\"" + num(m_.jnt_stiffness[b]) + "\" springref=\"" + num(m_.jnt_springref[b]) + "\"";
    if (m_.jnt_limited[b]) s += " limited=\"true\" range=\"" + nums(&m_.jnt_range[2 * b], 2) + "\"";
    out_ += s + "/>\n";
  }

  void actuators() {
    if (m_.nu == 0) return;
    out_ += "  <actuator>\n";
    for (int u = 0; u < m_.nu; ++u) {
      const std::string& joint = m_.jnt_name[m_.dof_body[m_.actuator_dof[u]]];
      std::string s = "    ";
      if (m_.actuator_peakforce[u] > 0) {
        s += "<!-- velocity-dependent force limit (peak " + num(m_.actuator_peakforce[u]) +
             ", vmax " + num(m_.actuator_maxvel[u]) + ") is not expressible in MJCF -->\n    ";
      }
      const double kp = m_.actuator_kp[u], kd = m_.actuator_kd[u];
      // f = gain ctrl + b0 + b1 length + b2 velocity, with length = gear q.
      if (m_.actuator_type[u] == static_cast<int>(ActuatorType::Position)) {
        s += "<general" + name_attr(m_.actuator_name[u]) + " gaintype=\"fixed\" gainprm=\"" +
             num(kp) + "\" biastype=\"affine\" biasprm=\"0 " + num(-kp) + " " + num(-kd) + "\"";
      } else {
        s += "<motor" + name_attr(m_.actuator_name[u]);
      }
      s += " joint=\"" + xml_escape(joint) + "\" gear=\"" + num(m_.actuator_gear[u]) + "\"";
      if (m_.actuator_ctrllimited[u]) {
        s += " ctrllimited=\"true\" ctrlrange=\"" + nums(&m_.actuator_ctrlrange[2 * u], 2) + "\"";
      }
      if (m_.actuator_forcelimited[u]) {
        s += " forcelimited=\"true\" forcerange=\"" + nums(&m_.actuator_forcerange[2 * u], 2) +
             "\"";
      }
      out_ += s + "/>\n";
    }
    out_ += "  </actuator>\n";
  }

  const Model& m_;
  std::vector<std::vector<int>> children_;  // (nbody + 1): [0] roots, [b + 1] children of b
  std::string out_;
  double hfield_pos_[3] = {0, 0, 0};  // the heightfield geom's position (heightfield_asset)
};

}  // namespace

std::string export_mjcf(const Model& model) { return Writer(model).run(); }

}  // namespace moreau
