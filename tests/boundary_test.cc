// Every public function of include/moreau/ refuses bad arguments with a moreau::Error that names
// the function, the argument, what was expected and what was received. The Simulator's own
// entry points are walked in simulator_test.cc (Validation.*), the importers'
// in robot_json_test, import_urdf_test and import_mjcf_test; this file walks the host dynamics
// and derivatives and the name functions, and checks that its registry of covered functions
// names every function the headers declare.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "moreau/derivatives.h"
#include "moreau/dynamics.h"
#include "moreau/import.h"
#include "moreau/simulator.h"
#include "support/test_util.h"

namespace moreau {
namespace {

using test::expect_error;

const Model& anymal() {
  static const Model m = load_model(test::asset("anymal_c.json"));
  return m;
}

std::vector<std::string> null_arg(const std::string& fn, const std::string& arg) {
  return {fn + ": argument '" + arg + "': expected a buffer, got null"};
}

// q with element 5 not a number: the message names the element.
std::vector<std::string> nan_arg(const std::string& fn, const std::string& arg) {
  return {fn + ": argument '" + arg + "': element 5: expected a finite number, got nan"};
}

TEST(Boundary, HostDynamicsRefuseNullAndNonFiniteBuffers) {
  const Model& m = anymal();
  std::vector<double> q(m.qpos0), v(m.nv, 0.1), out(m.nv * m.nv), out2(4 * m.nbody), bad(m.qpos0);
  bad[5] = std::nan("");
  std::vector<double> bad_v(v);
  bad_v[5] = std::nan("");
  const double* Q = q.data();
  const double* V = v.data();
  double* O = out.data();
  // (name, call with null q, call with a NaN in q, call with null v or null output where there is one)
  expect_error([&] { mass_matrix(m, nullptr, O); }, null_arg("mass_matrix", "q"), "mass_matrix q");
  expect_error([&] { mass_matrix(m, bad.data(), O); }, nan_arg("mass_matrix", "q"), "mass_matrix NaN q");
  expect_error([&] { mass_matrix(m, Q, nullptr); }, null_arg("mass_matrix", "H_out"), "mass_matrix H_out");
  expect_error([&] { bias_forces(m, Q, bad_v.data(), O); }, nan_arg("bias_forces", "v"), "bias_forces NaN v");
  expect_error([&] { bias_forces(m, Q, V, nullptr); }, null_arg("bias_forces", "b_out"), "bias_forces b_out");
  expect_error([&] { passive_forces(m, Q, nullptr, O); }, null_arg("passive_forces", "v"), "passive_forces v");
  expect_error([&] { passive_forces(m, Q, V, nullptr); }, null_arg("passive_forces", "tau_out"), "passive_forces out");
  expect_error([&] { kinetic_energy(m, Q, nullptr); }, null_arg("kinetic_energy", "v"), "kinetic_energy v");
  expect_error([&] { kinetic_energy(m, bad.data(), V); }, nan_arg("kinetic_energy", "q"), "kinetic_energy NaN q");
  expect_error([&] { potential_energy(m, nullptr); }, null_arg("potential_energy", "q"), "potential_energy q");
  expect_error([&] { body_poses(m, Q, O, nullptr); }, null_arg("body_poses", "quat_out"), "body_poses quat_out");
  expect_error([&] { body_poses(m, Q, nullptr, out2.data()); }, null_arg("body_poses", "pos_out"), "body_poses pos");
  expect_error([&] { center_of_mass(m, Q, nullptr); }, null_arg("center_of_mass", "com_out"), "center_of_mass");
  expect_error([&] { contact_gaps(m, Q, nullptr); }, null_arg("contact_gaps", "gaps_out"), "contact_gaps");
  expect_error([&] { lowest_gap(m, bad.data()); }, nan_arg("lowest_gap", "q"), "lowest_gap NaN q");
  expect_error([&] { momentum(m, Q, V, nullptr); }, null_arg("momentum", "h_out"), "momentum h_out");
  expect_error([&] { momentum(m, Q, bad_v.data(), O); }, nan_arg("momentum", "v"), "momentum NaN v");
  // and the good call still works
  EXPECT_NO_THROW(mass_matrix(m, Q, O));
  EXPECT_GT(out[0], 0);
}

TEST(Boundary, DerivativesRefuseNullAndNonFiniteBuffers) {
  const Model& m = anymal();
  std::vector<double> q(m.qpos0), v(m.nv, 0.1), a(m.nv, 0.2), bad(m.qpos0), out(m.nv * m.nq), out2(m.nv * m.nv);
  bad[5] = std::nan("");
  const double* Q = q.data();
  const double* V = v.data();
  expect_error([&] { tangent_map(m, nullptr, out.data()); }, null_arg("tangent_map", "q"), "tangent_map q");
  expect_error([&] { tangent_map(m, Q, nullptr); }, null_arg("tangent_map", "dq_ddelta"), "tangent_map out");
  expect_error([&] { rnea_derivatives(m, bad.data(), V, nullptr, out.data(), out2.data()); },
               nan_arg("rnea_derivatives", "q"), "rnea_derivatives NaN q");
  expect_error([&] { rnea_derivatives(m, Q, nullptr, nullptr, out.data(), out2.data()); },
               null_arg("rnea_derivatives", "v"), "rnea_derivatives v");
  std::vector<double> bad_a(a);
  bad_a[5] = std::nan("");
  expect_error([&] { rnea_derivatives_tangent(m, Q, V, bad_a.data(), out2.data(), out2.data()); },
               nan_arg("rnea_derivatives_tangent", "a"), "rnea_derivatives_tangent NaN a");
  expect_error([&] { forward_dynamics_derivatives(m, Q, V, nullptr, out.data(), nullptr, nullptr); },
               null_arg("forward_dynamics_derivatives", "tau"), "forward_dynamics_derivatives tau");
  expect_error([&] { forward_dynamics_derivatives_tangent(m, bad.data(), V, a.data(), nullptr, nullptr, nullptr); },
               nan_arg("forward_dynamics_derivatives_tangent", "q"), "forward_dynamics_derivatives_tangent");
  EXPECT_NO_THROW(rnea_derivatives(m, Q, V, nullptr, out.data(), nullptr));  // a and outputs may be null

  SimulatorOptions o;
  o.n_env = 2;
  o.dtype = DType::Float64;
  Simulator sim(m, o);
  const int N = m.nq + m.nv;
  std::vector<double> qs(2 * m.nq), vs(2 * m.nv), us(2 * m.nu), A(2 * N * N);
  std::vector<int32_t> st(2);
  expect_error([&] { transition_jacobians(sim, nullptr, vs.data(), us.data(), A.data(), nullptr, st.data()); },
               null_arg("transition_jacobians", "q_in"), "transition_jacobians q_in");
  expect_error([&] { transition_jacobians(sim, qs.data(), vs.data(), nullptr, A.data(), nullptr, st.data()); },
               null_arg("transition_jacobians", "action"), "transition_jacobians action");
  expect_error([&] { transition_jacobians_tangent(sim, qs.data(), vs.data(), us.data(), nullptr, nullptr, st.data()); },
               null_arg("transition_jacobians_tangent", "A"), "transition_jacobians_tangent A");
  expect_error([&] { transition_jacobians_tangent(sim, qs.data(), vs.data(), us.data(), A.data(), nullptr, nullptr); },
               null_arg("transition_jacobians_tangent", "status"), "transition_jacobians_tangent status");
}

TEST(Boundary, NamesOfValuesOutOfRangeAreUnknownNotGarbage) {
  EXPECT_STREQ(device_name(Device::CUDA), "cuda");
  EXPECT_STREQ(device_name(static_cast<Device>(7)), "unknown");
  EXPECT_STREQ(dtype_name(DType::Int32), "int32");
  EXPECT_STREQ(dtype_name(static_cast<DType>(-1)), "unknown");
  EXPECT_STREQ(contact_mode_name(ContactMode::HardSmoothGrad), "hard_smooth_grad");
  EXPECT_STREQ(contact_mode_name(static_cast<ContactMode>(99)), "unknown");
  EXPECT_STREQ(joint_type_name(JointType::Prismatic), "prismatic");
  EXPECT_STREQ(joint_type_name(static_cast<JointType>(42)), "unknown");
  expect_error([] { contact_mode_from_name("rigid"); }, {"contact mode: expected one of", "got 'rigid'"}, "mode name");
  expect_error([] { cuda_block_threads(33); }, {"cuda_block", "got 33"}, "cuda_block_threads");
  expect_error([] { cuda_team_lanes(3); }, {"cuda_team", "got 3"}, "cuda_team_lanes");
}

// Where each public function's bad arguments are tested; "-" marks one with nothing to refuse
// (no argument, or a Model that only moreau's loaders make, or a name lookup that returns −1).
const std::set<std::string>& covered() {
  static const std::set<std::string> names = {
      // dynamics.h, derivatives.h, the name functions: this file
      "mass_matrix", "bias_forces", "passive_forces", "kinetic_energy", "potential_energy", "body_poses",
      "center_of_mass", "contact_gaps", "lowest_gap", "momentum", "tangent_map", "rnea_derivatives",
      "rnea_derivatives_tangent", "forward_dynamics_derivatives", "forward_dynamics_derivatives_tangent",
      "transition_jacobians", "transition_jacobians_tangent", "device_name", "dtype_name", "contact_mode_name",
      "contact_mode_from_name", "joint_type_name", "cuda_block_threads", "cuda_team_lanes",
      // import.h and model.h: robot_json_test (EveryBadInputNamesSourcePathExpectedAndGot),
      // import_urdf_test, import_mjcf_test, model_compile_test
      "parse_urdf", "parse_urdf_file", "parse_mjcf", "parse_mjcf_file", "compile", "parse_robot_json",
      "load_model", "load_model_from_string", "select_contacts",
      // terrain_test.cc, BadHeightfieldsAreRefusedWithTheArgumentNamed
      "with_heightfield",
      // pair_contact_test.cc, SelfCollisionListsNameBadBodies
      "with_self_collisions",
      // Simulator: simulator_test.cc, Validation.*
      "Simulator::param", "Simulator::set_param", "Simulator::set_state", "Simulator::get_state",
      "Simulator::set_action", "Simulator::get_status", "Simulator::step_pure", "Simulator::step_adjoint",
      "Simulator::step_adjoint_rows", "Simulator::rollout", "Simulator::rollout_backward", "Simulator::step",
      "Simulator::reset", "Simulator::reset_where", "max_environments",
      // nothing to refuse
      "-cuda_available", "-export_mjcf", "-Simulator::model", "-Simulator::options", "-Simulator::n_env",
      "-Simulator::q", "-Simulator::v", "-Simulator::action", "-Simulator::status", "-Simulator::time",
      "-Simulator::contact_gap", "-Simulator::contact_impulse", "-Simulator::contact_active",
      "-Simulator::solver_iterations", "-Simulator::solver_residual", "-Simulator::substeps",
      "-Simulator::param_names", "-Simulator::rollout_horizon", "-Simulator::reset_all", "-Simulator::synchronize",
      "-Model::body_index", "-Model::joint_index", "-Model::actuator_index", "-Model::total_mass", "-joint_rows"};
  return names;
}

// The functions include/moreau/ declares: free functions at namespace scope (column 0) and the
// public members of Simulator and Model (two spaces in), by their declarations' shape.
std::set<std::string> declared() {
  std::set<std::string> out;
  const std::regex free_fn(R"(^[A-Za-z][\w:<>, ]*[\s&*]+\**([a-z_0-9]+)\()");
  const std::regex member(R"(^  [A-Za-z][\w:<>, ]*[\s&*]+\**([a-z_0-9]+)\()");
  for (const char* header : {"derivatives.h", "dynamics.h", "import.h", "model.h", "robot_spec.h", "simulator.h"}) {
    std::ifstream in(std::string(MOREAU_INCLUDE_DIR) + "/" + header);
    EXPECT_TRUE(in.good()) << header;
    std::string line, cls;
    std::smatch mt;
    while (std::getline(in, line)) {
      if (line.rfind("class Simulator", 0) == 0) cls = "Simulator";
      if (line.rfind("struct Model", 0) == 0) cls = "Model";
      if (line.rfind("};", 0) == 0) cls.clear();
      if (std::regex_search(line, mt, free_fn) && cls.empty()) out.insert(mt[1]);
      if (std::regex_search(line, mt, member) && !cls.empty()) out.insert(cls + "::" + std::string(mt[1]));
    }
  }
  return out;
}

TEST(Boundary, TheRegistryNamesEveryDeclaredFunction) {
  const std::set<std::string> decl = declared();
  ASSERT_TRUE(decl.count("mass_matrix") && decl.count("Simulator::step_pure") && decl.count("Model::total_mass"))
      << "the declaration scan found too little";
  std::set<std::string> known;
  for (const std::string& n : covered()) known.insert(n[0] == '-' ? n.substr(1) : n);
  for (const std::string& n : decl)
    EXPECT_TRUE(known.count(n)) << n << " is declared in include/moreau/ but has no boundary case (registry above)";
  for (const std::string& n : known) EXPECT_TRUE(decl.count(n)) << n << " is in the registry but not declared";
}

}  // namespace
}  // namespace moreau
