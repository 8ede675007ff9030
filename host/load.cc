// load_model(): reads a robot file and compiles it; the importer is chosen by extension.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "moreau/import.h"
#include "moreau/model.h"

namespace moreau {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open file: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

RobotSpec parse_file(const std::string& path) {
  if (ends_with(path, ".json")) return parse_robot_json(read_file(path), path);
  if (ends_with(path, ".urdf") || ends_with(path, ".xml")) {
#ifdef MOREAU_WITH_XML
    return ends_with(path, ".urdf") ? parse_urdf_file(path) : parse_mjcf_file(path);
#else
    throw Error("moreau was built without tinyxml2: cannot read URDF/MJCF file " + path);
#endif
  }
  throw Error(path + ": expected a file name ending in .json, .urdf or .xml");
}

}  // namespace

Model load_model(const std::string& path) { return compile(parse_file(path)); }

Model load_model_from_string(const std::string& json_text, const std::string& source) {
  return compile(parse_robot_json(json_text, source));
}

}  // namespace moreau
