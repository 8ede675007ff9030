// Model helpers: name lookups, totals and contact selection.
#include <algorithm>
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
  for (const std::string& name : names) {
    const int k = index_of(model.con_name, name);
    if (k < 0)
      throw Error(model.source + ": select_contacts: no contact point '" + name + "' (the model has " +
                  std::to_string(model.ncon) + ")");
    if (index_of(m.con_name, name) >= 0)
      throw Error(model.source + ": select_contacts: contact point '" + name + "' named twice");
    m.con_name.push_back(name);
    m.con_body.push_back(model.con_body[k]);
    m.con_pos.insert(m.con_pos.end(), model.con_pos.begin() + 3 * k, model.con_pos.begin() + 3 * k + 3);
    m.con_radius.push_back(model.con_radius[k]);
  }
  m.ncon = static_cast<int>(names.size());
  return m;
}

double Model::total_mass() const { return std::accumulate(body_mass.begin(), body_mass.end(), 0.0); }

}  // namespace moreau
