// moreau-derivatives: our analytic dynamics derivatives as JSON, for comparing against other
// libraries (tests/python/test_pinocchio.py) without Python bindings.
//
//   moreau-derivatives MODEL --mjcf    prints export_mjcf(MODEL)
//   moreau-derivatives MODEL < IN      IN = {"states": [{"q": [nq], "v": [nv], "a": [nv], "tau": [nv]}, ...]}
// prints {"nq", "nv", "gravity", "dof_armature", "body_name", "results": [...]} with, per state,
// (matrices as lists of rows; conventions of moreau/derivatives.h, tangent = moreau's q ⊕ δ):
//   tau = RNEA(q, v, a), dtau_dq (nv x nq raw), dtau_dq_tangent, dtau_dv;
//   ddq = H⁻¹ (tau − b), dddq_dq_tangent, dddq_dv, dddq_dtau (forward dynamics at the state's tau);
//   body_pos (nbody x 3), body_quat (nbody x 4, w x y z): world poses of the body frames.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "moreau/derivatives.h"
#include "moreau/dynamics.h"
#include "moreau/model.h"

namespace {

using nlohmann::json;
using Vec = std::vector<double>;

json matrix(const Vec& m, int rows, int cols) {
  json out = json::array();
  for (int r = 0; r < rows; ++r) out.push_back(Vec(m.begin() + r * cols, m.begin() + (r + 1) * cols));
  return out;
}

Vec vector_field(const json& state, const char* key, int n) {
  const Vec x = state.at(key).get<Vec>();
  if (static_cast<int>(x.size()) != n) {
    throw moreau::Error(std::string("moreau-derivatives: \"") + key + "\": wrong argument size: expected " +
                        std::to_string(n) + ", got " + std::to_string(x.size()));
  }
  return x;
}

json evaluate(const moreau::Model& m, const json& state) {
  const int nq = m.nq, nv = m.nv;
  const Vec q = vector_field(state, "q", nq), v = vector_field(state, "v", nv);
  const Vec a = vector_field(state, "a", nv), tau = vector_field(state, "tau", nv);
  Vec dq(nv * nq), dqt(nv * nv), dv(nv * nv), t(nv);
  moreau::rnea_derivatives(m, q.data(), v.data(), a.data(), dq.data(), dv.data(), t.data());
  moreau::rnea_derivatives_tangent(m, q.data(), v.data(), a.data(), dqt.data(), nullptr);
  json r;
  r["tau"] = t;
  r["dtau_dq"] = matrix(dq, nv, nq);
  r["dtau_dq_tangent"] = matrix(dqt, nv, nv);
  r["dtau_dv"] = matrix(dv, nv, nv);
  Vec fq(nv * nv), fv(nv * nv), ft(nv * nv), ddq(nv);
  moreau::forward_dynamics_derivatives_tangent(m, q.data(), v.data(), tau.data(), fq.data(), fv.data(), ft.data(),
                                               ddq.data());
  r["ddq"] = ddq;
  r["dddq_dq_tangent"] = matrix(fq, nv, nv);
  r["dddq_dv"] = matrix(fv, nv, nv);
  r["dddq_dtau"] = matrix(ft, nv, nv);
  Vec pos(3 * m.nbody), quat(4 * m.nbody);
  moreau::body_poses(m, q.data(), pos.data(), quat.data());
  r["body_pos"] = matrix(pos, m.nbody, 3);
  r["body_quat"] = matrix(quat, m.nbody, 4);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || (argc == 3 && std::string(argv[2]) != "--mjcf") || argc > 3) {
    std::fputs("usage: moreau-derivatives MODEL [--mjcf] < STATES.json\n", stderr);
    return 2;
  }
  try {
    const moreau::Model m = moreau::load_model(argv[1]);
    if (argc == 3) {
      std::fputs(moreau::export_mjcf(m).c_str(), stdout);
      return 0;
    }
    const json in = json::parse(std::string(std::istreambuf_iterator<char>(std::cin), {}));
    json out;
    out["nq"] = m.nq;
    out["nv"] = m.nv;
    out["gravity"] = Vec(m.gravity, m.gravity + 3);
    out["dof_armature"] = m.dof_armature;
    out["body_name"] = m.body_name;
    out["results"] = json::array();
    for (const json& state : in.at("states")) out["results"].push_back(evaluate(m, state));
    std::cout << out.dump() << "\n";
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moreau-derivatives: %s\n", e.what());
    return 1;
  }
  return 0;
}
