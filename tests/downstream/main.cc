// Uses moreau as an installed package: loads ANYmal C from the installed assets, steps a batch
// under hard contact and runs one adjoint; exits 0 when every state and gradient is finite and
// the gradient is non-zero.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "moreau/model.h"
#include "moreau/simulator.h"

int main() {
  using namespace moreau;
  const Model model = load_model(std::string(MOREAU_ASSETS_DIR) + "/robots/anymal_c.json");
  SimulatorOptions o;
  o.n_env = 64;
  o.contact.mode = ContactMode::Hard;
  Simulator sim(model, o);
  sim.step(10);
  const int n = o.n_env;
  std::vector<double> q(n * model.nq), v(n * model.nv), wq(q.size(), 1.0), wv(v.size(), 1.0);
  sim.get_state(q.data(), v.data(), n);
  Simulator weights(model, o), grads(model, o);
  weights.set_state(wq.data(), wv.data(), n);
  Simulator::Gradients g;
  g.q = grads.q().data;
  g.v = grads.v().data;
  g.action = grads.action().data;
  sim.step_adjoint(sim.q().data, sim.v().data, sim.action().data, weights.q().data, weights.v().data, g,
                   static_cast<int32_t*>(grads.status().data));
  std::vector<double> gq(q.size()), gv(v.size());
  grads.get_state(gq.data(), gv.data(), n);
  double norm = 0;
  bool finite = true;
  for (const auto* x : {&q, &v, &gq, &gv})
    for (double e : *x) finite = finite && std::isfinite(e);
  for (double e : gq) norm += e * e;
  std::printf("moreau downstream: %d envs of %s, base height %.3f m, |dL/dq| %.3g, finite %d\n", n,
              model.name.c_str(), q[2], std::sqrt(norm), finite);
  return finite && norm > 0 ? 0 : 1;
}
