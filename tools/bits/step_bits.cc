// moreau-step-bits ROBOT OUTDIR [SECONDS] — what one revision's kernels compute, bit for bit, for
// scripts/kernel_bits.sh to compare with another's. For float32 and float64 and every contact mode:
// 64 environments of the robot start from its initial pose raised, tilted and with its joints and
// velocities perturbed (a fixed pseudo-random sequence), fall and walk under random actions for
// SECONDS (default 0.4); then one step_pure and its step_adjoint (∂L/∂q_out, ∂L/∂v_out
// pseudo-random) from that state. The pairs of bodies the robot file collides
// (Model::self_collisions, from an MJCF) collide (with_self_collisions).
// OUTDIR/<dtype>_<contact>.bin holds n_env, nq, nv, nu (int32), then q_out, v_out, ∂L/∂q, ∂L/∂v,
// ∂L/∂action and ∂L/∂added_base_mass widened to float64, then the two calls' status bits (int32),
// little-endian. With adjoint tapes 1 (OUTDIR/<dtype>_<contact>_tapes1.bin) the adjoint recomputes
// each environment alone from one tape, the CUDA backend's schedule. Only the public API is used,
// so any revision with it compiles against this file.
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <vector>

#include "moreau/model.h"
#include "moreau/simulator.h"

using namespace moreau;

namespace {

// A fixed sequence in [−1, 1) (splitmix64), the same on every platform and standard library.
struct Sequence {
  uint64_t s;
  double next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
  }
};

// The simulator's layout (element k of environment e at k * n_env + e) from rows of width w.
template <class T>
std::vector<T> to_device(const std::vector<double>& rows, int n_env, int w) {
  std::vector<T> out(rows.size());
  for (int e = 0; e < n_env; ++e)
    for (int k = 0; k < w; ++k) out[k * n_env + e] = static_cast<T>(rows[e * w + k]);
  return out;
}

template <class T>
void run(const Model& model, DType dtype, ContactMode mode, int tapes, double seconds, const std::string& path) {
  const int n = 64, nq = model.nq, nv = model.nv, nu = model.nu;
  SimulatorOptions opt;
  opt.n_env = n;
  opt.dtype = dtype;
  opt.n_threads = 1;
  opt.contact.mode = mode;
  opt.adjoint_tapes = tapes;
  Simulator sim(model, opt);
  sim.reset_all();
  Sequence r{12345};
  std::vector<double> q(n * nq), v(n * nv), a(n * nu);
  sim.get_state(q.data(), v.data(), n);
  for (int e = 0; e < n; ++e) {
    double* qe = q.data() + e * nq;
    for (int k = 0; k < nq; ++k) qe[k] += 0.05 * r.next();
    if (model.nq >= 7) qe[2] += 0.05 * r.next();  // a free base: its height
    for (int k = 0; k < nv; ++k) v[e * nv + k] = 0.5 * r.next();
  }
  sim.set_state(q.data(), v.data(), n);
  const int control_steps = static_cast<int>(seconds / (model.timestep * model.decimation));
  for (int s = 0; s < control_steps; ++s) {
    for (double& x : a) x = 0.5 * r.next();
    sim.set_action(a.data(), n);
    sim.step(1);
  }
  sim.get_state(q.data(), v.data(), n);
  for (double& x : a) x = 0.5 * r.next();
  std::vector<double> seed_q(n * nq), seed_v(n * nv);
  for (double& x : seed_q) x = r.next();
  for (double& x : seed_v) x = r.next();
  const std::vector<T> qd = to_device<T>(q, n, nq), vd = to_device<T>(v, n, nv), ad = to_device<T>(a, n, nu);
  const std::vector<T> sq = to_device<T>(seed_q, n, nq), sv = to_device<T>(seed_v, n, nv);
  std::vector<T> q_out(n * nq), v_out(n * nv), gq(n * nq), gv(n * nv), ga(n * nu), gm(n);
  std::vector<int32_t> status(n), adj_status(n);
  sim.step_pure(qd.data(), vd.data(), ad.data(), q_out.data(), v_out.data(), status.data());
  Simulator::Gradients g;
  g.q = gq.data();
  g.v = gv.data();
  g.action = ga.data();
  g.added_base_mass = gm.data();
  sim.step_adjoint(qd.data(), vd.data(), ad.data(), sq.data(), sv.data(), g, adj_status.data());
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw Error("moreau-step-bits: cannot write " + path);
  const int32_t sizes[4] = {n, nq, nv, nu};
  std::fwrite(sizes, sizeof(int32_t), 4, f);
  for (const std::vector<T>* x : {&q_out, &v_out, &gq, &gv, &ga, &gm})
    for (T y : *x) {
      const double d = y;
      std::fwrite(&d, sizeof d, 1, f);
    }
  std::fwrite(status.data(), sizeof(int32_t), n, f);
  std::fwrite(adj_status.data(), sizeof(int32_t), n, f);
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: moreau-step-bits ROBOT OUTDIR [SECONDS]\n");
    return 2;
  }
  try {
    Model model = load_model(argv[1]);
    if (!model.self_collisions.empty()) model = with_self_collisions(model, model.self_collisions);
    const std::string dir = argv[2];
    const double seconds = argc == 4 ? std::atof(argv[3]) : 0.4;
    for (ContactMode mode : {ContactMode::None, ContactMode::Hard, ContactMode::Soft, ContactMode::Smooth,
                             ContactMode::HardSmoothGrad}) {
      for (int tapes : {0, 1}) {
        const std::string name = std::string(contact_mode_name(mode)) + (tapes ? "_tapes1" : "");
        run<float>(model, DType::Float32, mode, tapes, seconds, dir + "/float32_" + name + ".bin");
        run<double>(model, DType::Float64, mode, tapes, seconds, dir + "/float64_" + name + ".bin");
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moreau-step-bits: %s\n", e.what());
    return 1;
  }
}
