// moreau — uncompiled robot description.
//
// Every loader (JSON, URDF, MJCF) fills a RobotSpec; compile() (model.h) validates it and
// turns it into the flat, immutable Model the kernels read. A RobotSpec is a tree of bodies,
// each attached to its parent by exactly one joint (fixed joints are merged at compile time).
//
// Conventions (used everywhere in moreau):
//   - SI units, world z-up, right-handed, angles in radians.
//   - Quaternions are (w, x, y, z), Hamilton product, as in MuJoCo.
//   - A body's `pos`/`quat` place its frame in the parent's frame when its joint is at zero.
//   - Inertia is given about the centre of mass, in the body frame, as
//     (ixx, iyy, izz, ixy, ixz, iyz) — MuJoCo's `fullinertia` order.
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

namespace moreau {

enum class JointType : int { Free = 0, Ball = 1, Revolute = 2, Prismatic = 3, Fixed = 4 };

// Name used in files and messages: "free", "ball", "revolute", "prismatic", "fixed".
const char* joint_type_name(JointType type);

struct JointSpec {
  std::string name;                      // unique among joints; defaults to the body's name
  JointType type = JointType::Fixed;
  std::array<double, 3> axis{0, 0, 1};   // revolute/prismatic axis in the body frame
  std::array<double, 3> pos{0, 0, 0};    // anchor in the body frame (revolute, ball)
  bool limited = false;
  std::array<double, 2> range{0, 0};     // position limits [rad or m] (enforced on revolute and prismatic joints)
  double damping = 0;                    // viscous joint damping [N m s/rad or N s/m]
  double stiffness = 0;                  // joint spring τ = −stiffness (q − springref) [N m/rad or N/m]
  double springref = 0;                  // the spring's rest position [rad or m] (revolute, prismatic)
  double armature = 0;                   // rotor inertia added to the mass matrix diagonal
  double frictionloss = 0;               // dry friction bound [N m] or [N]
};

struct ContactSpec {
  enum class Kind { Sphere, Box, Cylinder };
  static constexpr int kRimPoints = 8;     // points on each end circle of a cylinder
  Kind kind = Kind::Sphere;
  std::string name;
  std::array<double, 3> pos{0, 0, 0};      // centre in the body frame
  std::array<double, 4> quat{1, 0, 0, 0};  // orientation in the body frame (boxes, cylinders)
  double radius = 0;                       // sphere or cylinder radius
  std::array<double, 3> half_size{0, 0, 0};  // box half-sizes; the 8 corners become points
  double half_length = 0;                  // cylinder half-length along its z axis; the 2 kRimPoints
                                           // points of its two end circles become points
};

struct BodySpec {
  std::string name;
  std::string parent;                      // "world" (or empty) for a root body
  std::array<double, 3> pos{0, 0, 0};
  std::array<double, 4> quat{1, 0, 0, 0};
  JointSpec joint;
  double mass = 0;
  std::array<double, 3> com{0, 0, 0};      // centre of mass in the body frame
  std::array<double, 6> inertia{0, 0, 0, 0, 0, 0};  // about com: ixx iyy izz ixy ixz iyz
  std::vector<ContactSpec> contacts;
  std::string where;                       // location in the source for messages, e.g. "$.bodies[3]"
};

enum class ActuatorType : int { Position = 0, Motor = 1 };

// Actuator on a single-DoF joint. With gear g, actuator length l = g q and joint torque
// τ = g f. Position servo: f = kp (ctrl − l) − kd l̇; motor: f = ctrl. Then f is clamped
// to [f_min(l̇), f_max(l̇)]: with a velocity limit,
//   f_max(l̇) = clamp(peak (1 − l̇ / vmax), 0, force_range[1]),
//   f_min(l̇) = −clamp(peak (1 + l̇ / vmax), 0, −force_range[0]);
// otherwise the constant force_range (when force_limited).
struct ActuatorSpec {
  std::string name;
  std::string joint;
  ActuatorType type = ActuatorType::Position;
  double gear = 1;
  double kp = 0, kd = 0;
  bool ctrl_limited = false;
  std::array<double, 2> ctrl_range{0, 0};
  bool force_limited = false;
  std::array<double, 2> force_range{0, 0};
  double peak_force = 0;    // > 0 enables the velocity-dependent limit (needs vmax)
  double max_velocity = 0;  // q̇_max of the torque–speed line
  std::string where;
};

// A heightfield ground (Model::hfield_*, docs/terrain.md); nx = 0: the plane z = 0.
struct HeightfieldSpec {
  int nx = 0, ny = 0;
  double dx = 0, dy = 0, x0 = 0, y0 = 0;  // [m] spacing, sample (0, 0)
  std::vector<double> height;             // (ny x nx) [m]
};

struct RobotSpec {
  std::string name;
  std::string source;                      // file name (or "<string>") for messages
  std::array<double, 3> gravity{0, 0, -9.81};
  double timestep = 0.005;                 // physics step h [s]
  int decimation = 1;                      // physics steps per control step
  std::vector<BodySpec> bodies;
  std::vector<ActuatorSpec> actuators;
  // Default joint positions by joint name (scalar joints); others default to 0 / identity.
  std::vector<std::pair<std::string, double>> default_qpos;
  HeightfieldSpec heightfield;             // the ground
  // Pairs of bodies whose collision shapes collide with each other in the source format (MJCF's
  // contype/conaffinity/exclude rules); moreau does not simulate such contacts.
  std::vector<std::pair<std::string, std::string>> self_collisions;
  std::vector<std::string> warnings;       // non-fatal notes from the loader
};

}  // namespace moreau
