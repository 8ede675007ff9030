// Model helpers: name lookups, totals and contact selection.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "moreau/model.h"

namespace moreau {

const char* joint_type_name(JointType type) {
  switch (type) {
    case JointType::Free: return "free";
    case JointType::Ball: return "ball";
    case JointType::Revolute: return "revolute";
    case JointType::Prismatic: return "prismatic";
    case JointType::Fixed: return "fixed";
  }
  return "unknown";
}

namespace {
int index_of(const std::vector<std::string>& names, const std::string& name) {
  const auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? -1 : static_cast<int>(it - names.begin());
}
}  // namespace

int Model::body_index(const std::string& name) const { return index_of(body_name, name); }
int Model::joint_index(const std::string& name) const { return index_of(jnt_name, name); }
int Model::actuator_index(const std::string& name) const { return index_of(actuator_name, name); }

int joint_rows(const Model& m) {
  int n = 0;
  for (int b = 0; b < m.nbody; ++b)
    n += m.jnt_limited[b] && (m.jnt_type[b] == static_cast<int>(JointType::Revolute) ||
                              m.jnt_type[b] == static_cast<int>(JointType::Prismatic));
  for (double f : m.dof_frictionloss) n += f > 0;
  return n;
}

Model select_contacts(const Model& model, const std::vector<std::string>& names) {
  Model m = model;
  m.con_name.clear();
  m.con_body.clear();
  m.con_pos.clear();
  m.con_radius.clear();
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    const std::string where = "select_contacts: argument 'names': element " + std::to_string(i) + ": expected ";
    const int k = index_of(model.con_name, name);
    if (k < 0) {
      std::string have;
      for (int c = 0; c < std::min(model.ncon, 8); ++c) have += (c ? ", " : "") + model.con_name[c];
      throw Error(where + "a contact point of " + model.source + " (" + std::to_string(model.ncon) + ": " + have +
                  (model.ncon > 8 ? ", ..." : "") + "), got '" + name + "'");
    }
    if (index_of(m.con_name, name) >= 0) throw Error(where + "a name not given before, got '" + name + "' again");
    m.con_name.push_back(name);
    m.con_body.push_back(model.con_body[k]);
    m.con_pos.insert(m.con_pos.end(), model.con_pos.begin() + 3 * k, model.con_pos.begin() + 3 * k + 3);
    m.con_radius.push_back(model.con_radius[k]);
  }
  m.ncon = static_cast<int>(names.size());
  // pairs whose two points are both kept, renumbered
  m.pair_con.clear();
  for (int k = 0; k < model.npair; ++k) {
    const int a = index_of(m.con_name, model.con_name[model.pair_con[2 * k]]);
    const int b = index_of(m.con_name, model.con_name[model.pair_con[2 * k + 1]]);
    if (a >= 0 && b >= 0) m.pair_con.insert(m.pair_con.end(), {a, b});
  }
  m.npair = static_cast<int>(m.pair_con.size() / 2);
  return m;
}

Model with_self_collisions(const Model& model, const std::vector<std::pair<std::string, std::string>>& bodies) {
  Model m = model;
  m.pair_con.clear();
  for (size_t i = 0; i < bodies.size(); ++i) {
    const std::string where = "with_self_collisions: argument 'bodies': element " + std::to_string(i) + ": expected ";
    int b[2];
    const std::string* names[2] = {&bodies[i].first, &bodies[i].second};
    for (int s = 0; s < 2; ++s) {
      b[s] = model.body_index(*names[s]);
      if (b[s] < 0) throw Error(where + "a body of " + model.source + ", got '" + *names[s] + "'");
      if (std::find(model.con_body.begin(), model.con_body.end(), b[s]) == model.con_body.end())
        throw Error(where + "bodies with contact points, got '" + *names[s] + "' (none)");
    }
    if (b[0] == b[1]) throw Error(where + "two different bodies, got '" + *names[0] + "' twice");
    for (int ka = 0; ka < model.ncon; ++ka)
      for (int kb = 0; kb < model.ncon; ++kb)
        if (model.con_body[ka] == b[0] && model.con_body[kb] == b[1] &&
            (model.con_radius[ka] > 0 || model.con_radius[kb] > 0))  // two points never touch
          m.pair_con.insert(m.pair_con.end(), {ka, kb});
  }
  m.npair = static_cast<int>(m.pair_con.size() / 2);
  return m;
}

Model with_heightfield(const Model& model, const std::vector<double>& height, int nx, int ny, double dx, double dy,
                       double origin_x, double origin_y) {
  const auto fail = [](const std::string& arg, const std::string& expected, const std::string& got) {
    throw Error("with_heightfield: argument '" + arg + "': expected " + expected + ", got " + got);
  };
  if (nx < 2) fail("nx", ">= 2 samples", std::to_string(nx));
  if (ny < 2) fail("ny", ">= 2 samples", std::to_string(ny));
  if (!(dx > 0) || !std::isfinite(dx)) fail("dx", "a spacing > 0 [m]", std::to_string(dx));
  if (!(dy > 0) || !std::isfinite(dy)) fail("dy", "a spacing > 0 [m]", std::to_string(dy));
  if (!std::isfinite(origin_x) || !std::isfinite(origin_y)) fail("origin", "finite coordinates", "a non-finite one");
  if (height.size() != static_cast<size_t>(nx) * ny)
    fail("height", "nx * ny = " + std::to_string(static_cast<size_t>(nx) * ny) + " values", std::to_string(height.size()));
  for (size_t k = 0; k < height.size(); ++k)
    if (!std::isfinite(height[k])) fail("height", "finite values", "a non-finite one at index " + std::to_string(k));
  Model m = model;
  m.hfield_nx = nx;
  m.hfield_ny = ny;
  m.hfield_spacing[0] = dx;
  m.hfield_spacing[1] = dy;
  m.hfield_origin[0] = origin_x;
  m.hfield_origin[1] = origin_y;
  m.hfield_height = height;
  return m;
}

double Model::total_mass() const { return std::accumulate(body_mass.begin(), body_mass.end(), 0.0); }

}  // namespace moreau
