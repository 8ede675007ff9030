// moreau-inspect: loads a robot file (.json, .urdf, MJCF .xml), compiles it and prints the
// body tree with masses, inertias and joints, the actuators, the contact points, the total
// mass and the loader's warnings.
//
//   moreau-inspect FILE [--fixed-base] [--contact-bodies GLOB[,GLOB...]] [--kp KP] [--kd KD]
//                       [--no-actuators]
// The options after FILE apply to URDF files.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "moreau/import.h"
#include "moreau/model.h"

namespace {

void usage() {
  std::fputs(
      "usage: moreau-inspect FILE [--fixed-base] [--contact-bodies GLOB[,GLOB...]] [--kp KP] [--kd KD]\n"
      "                           [--no-actuators]\n"
      "FILE: .json (moreau), .urdf, .xml (MJCF); the options apply to URDF files.\n",
      stderr);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

void print(const moreau::Model& m) {
  using moreau::JointType;
  std::printf("%s (%s): nq %d, nv %d, nu %d, nbody %d, contact points %d\n", m.name.c_str(), m.source.c_str(), m.nq,
              m.nv, m.nu, m.nbody, m.ncon);
  std::printf("gravity (%g, %g, %g), timestep %g s, decimation %d\n\n", m.gravity[0], m.gravity[1], m.gravity[2],
              m.timestep, m.decimation);

  std::printf("bodies (mass [kg], com [m] and inertia about com [kg m^2] in the body frame):\n");
  std::vector<int> depth(m.nbody, 0);
  for (int b = 0; b < m.nbody; ++b) {
    depth[b] = m.body_parent[b] < 0 ? 0 : depth[m.body_parent[b]] + 1;
    const std::string indent(2 + 2 * depth[b], ' ');
    const JointType type = JointType(m.jnt_type[b]);
    std::printf("%s%s  (parent %s)\n", indent.c_str(), m.body_name[b].c_str(),
                m.body_parent[b] < 0 ? "world" : m.body_name[m.body_parent[b]].c_str());
    std::printf("%s  joint %s '%s'", indent.c_str(), moreau::joint_type_name(type), m.jnt_name[b].c_str());
    if (type == JointType::Revolute || type == JointType::Prismatic) {
      const double* a = &m.jnt_axis[3 * b];
      std::printf(" axis (%g, %g, %g)", a[0], a[1], a[2]);
      if (m.jnt_limited[b])
        std::printf(" range [%g, %g]", m.jnt_range[2 * b], m.jnt_range[2 * b + 1]);
      else
        std::printf(" unlimited");
      std::printf(" q0 %g", m.qpos0[m.jnt_qposadr[b]]);
    }
    const int dof = m.jnt_dofadr[b];
    if (type != JointType::Fixed && (m.dof_damping[dof] != 0 || m.dof_armature[dof] != 0))
      std::printf(" damping %g armature %g", m.dof_damping[dof], m.dof_armature[dof]);
    if (m.jnt_stiffness[b] != 0) std::printf(" spring %g at %g", m.jnt_stiffness[b], m.jnt_springref[b]);
    std::printf("\n");
    const double* c = &m.body_com[3 * b];
    const double* i = &m.body_inertia[6 * b];
    std::printf("%s  mass %.6g  com (%.6g, %.6g, %.6g)\n", indent.c_str(), m.body_mass[b], c[0], c[1], c[2]);
    std::printf("%s  inertia ixx %.6g iyy %.6g izz %.6g ixy %.6g ixz %.6g iyz %.6g\n", indent.c_str(), i[0], i[1],
                i[2], i[3], i[4], i[5]);
  }

  std::printf("\nactuators:\n");
  if (m.nu == 0) std::printf("  none\n");
  for (int a = 0; a < m.nu; ++a) {
    const bool position = m.actuator_type[a] == static_cast<int>(moreau::ActuatorType::Position);
    std::printf("  %s  %s on dof %d  gear %g", m.actuator_name[a].c_str(), position ? "position" : "motor",
                m.actuator_dof[a], m.actuator_gear[a]);
    if (position) std::printf("  kp %g kd %g", m.actuator_kp[a], m.actuator_kd[a]);
    if (m.actuator_ctrllimited[a])
      std::printf("  ctrl [%g, %g]", m.actuator_ctrlrange[2 * a], m.actuator_ctrlrange[2 * a + 1]);
    if (m.actuator_forcelimited[a])
      std::printf("  force [%g, %g]", m.actuator_forcerange[2 * a], m.actuator_forcerange[2 * a + 1]);
    if (m.actuator_peakforce[a] > 0)
      std::printf("  peak %g at vmax %g", m.actuator_peakforce[a], m.actuator_maxvel[a]);
    std::printf("\n");
  }

  std::printf("\ncontact points (position in the body frame [m], radius [m]):\n");
  if (m.ncon == 0) std::printf("  none\n");
  for (int k = 0; k < m.ncon; ++k) {
    const double* p = &m.con_pos[3 * k];
    std::printf("  %-28s body %-12s (%.6g, %.6g, %.6g)  r %g\n", m.con_name[k].c_str(),
                m.body_name[m.con_body[k]].c_str(), p[0], p[1], p[2], m.con_radius[k]);
  }

  std::printf("\ntotal mass: %.6g kg\n", m.total_mass());
  if (!m.warnings.empty()) {
    std::printf("\nwarnings:\n");
    for (const std::string& w : m.warnings) std::printf("  %s\n", w.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  const std::string path = argv[1];
  moreau::UrdfOptions options;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--fixed-base") {
      options.fixed_base = true;
    } else if (a == "--no-actuators") {
      options.add_actuators = false;
    } else if (a == "--contact-bodies" && has_value) {
      options.contact_bodies = split(argv[++i], ',');
    } else if (a == "--kp" && has_value) {
      options.kp = std::atof(argv[++i]);
    } else if (a == "--kd" && has_value) {
      options.kd = std::atof(argv[++i]);
    } else {
      usage();
      return 2;
    }
  }
  try {
    const moreau::Model m = ends_with(path, ".urdf") ? moreau::compile(moreau::parse_urdf_file(path, options))
                                                     : moreau::load_model(path);
    print(m);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moreau-inspect: %s\n", e.what());
    return 1;
  }
  return 0;
}
