// moreau — the compiled robot: flat, immutable arrays with MuJoCo-style names.
//
// Bodies are in topological order (parent index < child index); the world is not a body
// (body_parent = -1 for a root). After fixed-body merging every body has exactly one joint,
// so joint index == body index. State layout:
//   q (nq): per joint, free: position (3, world) then quaternion (w, x, y, z);
//           ball: quaternion; revolute/prismatic: one coordinate.
//   v (nv): free: linear velocity of the body origin in the WORLD frame (3), then angular
//           velocity in the BODY frame (3) — MuJoCo's convention; ball: body-frame angular
//           velocity (3); revolute/prismatic: one rate.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "moreau/limits.h"
#include "moreau/robot_spec.h"

namespace moreau {

// Every error moreau throws for bad input or a failed device call.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Model {
  std::string name;
  std::string source;
  int nq = 0, nv = 0, nu = 0, nbody = 0, ncon = 0, npair = 0;
  int nM = 0;      // entries of the mass matrix's tree-sparse lower triangle (dof_Madr)
  int nchain = 0;  // dofs on the longest root-to-dof path, 1 + max dof_depth (a contact row's length)
  double gravity[3] = {0, 0, -9.81};
  double timestep = 0.005;
  int decimation = 1;

  // bodies (nbody)
  std::vector<std::string> body_name;
  std::vector<int> body_parent;        // (nbody)      parent body, -1 = world
  std::vector<double> body_pos;        // (nbody x 3)  frame origin in parent frame at q = 0
  std::vector<double> body_quat;       // (nbody x 4)  frame orientation in parent frame
  std::vector<double> body_mass;       // (nbody)
  std::vector<double> body_com;        // (nbody x 3)  centre of mass in body frame
  std::vector<double> body_inertia;    // (nbody x 6)  about com: ixx iyy izz ixy ixz iyz

  // joints (one per body)
  std::vector<std::string> jnt_name;
  std::vector<int> jnt_type;           // (nbody)      JointType
  std::vector<int> jnt_qposadr;        // (nbody)      first index in q
  std::vector<int> jnt_dofadr;         // (nbody)      first index in v
  std::vector<double> jnt_axis;        // (nbody x 3)  unit axis in body frame
  std::vector<double> jnt_pos;         // (nbody x 3)  anchor in body frame
  std::vector<int> jnt_limited;        // (nbody)      position limits enforced (revolute, prismatic)
  std::vector<double> jnt_range;       // (nbody x 2)
  std::vector<double> jnt_stiffness;   // (nbody)      spring τ = −k (q − q_spring), revolute/prismatic
  std::vector<double> jnt_springref;   // (nbody)      q_spring, the spring's rest position

  // degrees of freedom
  std::vector<int> dof_body;           // (nv)         body the dof moves
  std::vector<int> dof_parent;         // (nv)         previous dof on the path to the root, -1
  std::vector<int> dof_depth;          // (nv)         number of dofs on that path (0 at a root)
  std::vector<int> dof_Madr;           // (nv)         row k of the sparse mass matrix: H_kj at dof_Madr[k] +
                                       //              dof_depth[j] for j = k and its ancestors (MuJoCo's M)
  std::vector<int> M_colind;           // (nM)         the dof j of each of those entries, row by row: k's
                                       //              ancestors root-first, then k (MuJoCo's M_colind)
  std::vector<double> dof_damping;     // (nv)
  std::vector<double> dof_armature;    // (nv)
  std::vector<double> dof_frictionloss;  // (nv)      dry friction bound [N m] or [N] (a constraint row)

  std::vector<double> qpos0;           // (nq)         default configuration

  // actuators (nu)
  std::vector<std::string> actuator_name;
  std::vector<int> actuator_type;      // (nu)         ActuatorType
  std::vector<int> actuator_dof;       // (nu)         dof it drives
  std::vector<int> actuator_qposadr;   // (nu)         coordinate it measures
  std::vector<double> actuator_gear;   // (nu)
  std::vector<double> actuator_kp;     // (nu)
  std::vector<double> actuator_kd;     // (nu)
  std::vector<int> actuator_ctrllimited;    // (nu)
  std::vector<double> actuator_ctrlrange;   // (nu x 2)
  std::vector<int> actuator_forcelimited;   // (nu)
  std::vector<double> actuator_forcerange;  // (nu x 2)
  std::vector<double> actuator_peakforce;   // (nu)  0 = no velocity-dependent limit
  std::vector<double> actuator_maxvel;      // (nu)

  // contact points (ncon): spheres, and box corners as spheres of radius 0
  std::vector<std::string> con_name;
  std::vector<int> con_body;           // (ncon)
  std::vector<double> con_pos;         // (ncon x 3)   centre in body frame
  std::vector<double> con_radius;      // (ncon)
  // contact pairs (npair): two contact points of different bodies, sphere against sphere
  // (with_self_collisions; docs/contact.md, "Contact between two bodies of the robot")
  std::vector<int> pair_con;           // (npair x 2)

  // the ground: a heightfield of hfield_nx x hfield_ny heights, sample (i, j) at
  // (hfield_origin + (i dx, j dy)); hfield_nx = 0: the plane z = 0 (docs/terrain.md)
  int hfield_nx = 0, hfield_ny = 0;
  double hfield_origin[2] = {0, 0};    // [m] (x, y) of sample (0, 0)
  double hfield_spacing[2] = {0, 0};   // [m] dx, dy
  std::vector<double> hfield_height;   // (ny x nx) [m], sample (i, j) at j nx + i

  // Body pairs whose collision shapes collide in the robot file (MJCF: MuJoCo's contype,
  // conaffinity, parent and <exclude> rules); contact between two bodies is not simulated.
  std::vector<std::pair<std::string, std::string>> self_collisions;
  std::vector<std::string> warnings;   // carried over from the loader

  int body_index(const std::string& name) const;      // -1 if absent
  int joint_index(const std::string& name) const;     // -1 if absent
  int actuator_index(const std::string& name) const;  // -1 if absent
  double total_mass() const;
};

// Joint constraint rows a contact solve may hold for the model: one per limited revolute or
// prismatic joint, one per dof with friction loss.
int joint_rows(const Model& model);

// A copy of the model with only the named contact points, in the order given (for a task that
// simulates a robot's feet of all its collision geometry). Throws Error naming an unknown or
// repeated point.
Model select_contacts(const Model& model, const std::vector<std::string>& names);

// A copy of the model whose listed body pairs collide with each other: every contact point of the
// first body against every one of the second's, sphere against sphere (a box corner or a
// cylinder's rim point is a sphere of radius 0; two such points are not paired: they never
// touch), in every contact mode; pairs of points already listed are replaced. Bodies by name (a
// body merged into its parent at compile time by the parent's); a pair of a body with itself,
// an unknown body or a body without contact points is an Error naming the element.
Model with_self_collisions(const Model& model, const std::vector<std::pair<std::string, std::string>>& bodies);

// A copy of the model on a heightfield ground: `height` holds ny rows of nx heights [m] (row j at
// y = origin_y + j dy), nx, ny ≥ 2, dx, dy > 0, every height finite. Throws Error naming the bad
// argument.
Model with_heightfield(const Model& model, const std::vector<double>& height, int nx, int ny, double dx, double dy,
                       double origin_x = 0, double origin_y = 0);

// Validates the spec and compiles it: topological order, fixed-body merging with inertia
// transfer, flat arrays. Throws Error naming spec.source, the field and what is wrong.
Model compile(const RobotSpec& spec);

// JSON robot format (docs/robot-format.md). Errors name the file and the JSON path.
RobotSpec parse_robot_json(const std::string& text, const std::string& source = "<string>");
Model load_model(const std::string& path);  // by extension: .json (.urdf, .xml when built)
Model load_model_from_string(const std::string& json_text, const std::string& source = "<string>");

// Writes a minimal MJCF (no meshes, no contact geometry beyond the points) that MuJoCo
// loads with the same bodies, joints, inertias, damping, armature and gravity; a heightfield
// ground as an <hfield> named "terrain" (MuJoCo's surface equals moreau's), the plane not at all.
std::string export_mjcf(const Model& model);

}  // namespace moreau
