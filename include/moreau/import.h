// moreau — importers for robot files written for other tools (URDF, MJCF).
// Each returns a RobotSpec for compile(); load_model() dispatches on the file extension.
#pragma once

#include <string>
#include <vector>

#include "moreau/robot_spec.h"

namespace moreau {

struct UrdfOptions {
  bool fixed_base = false;                    // root gets a free joint unless true
  std::vector<std::string> contact_bodies;    // glob patterns, e.g. "*_FOOT"; empty = all
  std::vector<std::pair<std::string, double>> default_qpos;  // by joint name
  // Actuators on every non-fixed joint when kp > 0 (position servo) or motor if kp == 0 and
  // add_actuators; torque limits from the URDF effort.
  bool add_actuators = true;
  double kp = 0, kd = 0;
};

RobotSpec parse_urdf(const std::string& text, const std::string& source,
                     const UrdfOptions& options = {});
RobotSpec parse_urdf_file(const std::string& path, const UrdfOptions& options = {});

// MJCF: `<include>` files are resolved relative to the directory of `path`.
RobotSpec parse_mjcf_file(const std::string& path);
RobotSpec parse_mjcf(const std::string& text, const std::string& source,
                     const std::string& include_dir = ".");

}  // namespace moreau
