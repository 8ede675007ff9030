// moreau-bench-toss: Study A's data side (python/moreau/studies/cube_data.py). Cube tosses per
// second of moreau's batched generator (every toss one environment of one Simulator, CPU,
// float64, one thread) against MuJoCo stepping the same tosses one after another (mj_step, one
// thread), 500 steps of h = 0.00674 s per toss, the same initial states in both.
//
//   moreau-bench-toss [--tosses N] [--mujoco-tosses N] [--json-out FILE]
//
// Settings, MuJoCo stiffness k ∈ {100, 300, 2500} [1/s²]: MuJoCo with solref = (−k, −2√k) (its
// direct stiffness and damping) on a 0.1 m box geom, condim 3, μ = 1; moreau's penalty model at
// the converted k_n = m k / 4, k_d = (m / 2)√k per corner with cube_data.substeps' substeps
// (ceil(h √(4 k_n / m) / 0.05)); and moreau's hard contact beside them. Initial states: the
// reference toss of docs/studies.md (Study A) with U(±0.1) on position, velocity and angular velocity and a
// U(±1 rad) rotation about a random axis, redrawn while a corner is below the ground
// (std::mt19937_64, seed 0: the distribution of cube_data.initial_states, not its numbers).
// Prints a table and one line "JSON {...}". Exit status 0, 2 on bad arguments or an error.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <mujoco/mujoco.h>
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "moreau/model.h"
#include "moreau/simulator.h"

namespace {

using namespace bench;
using nlohmann::json;

constexpr double kMass = 0.37, kHalf = 0.05, kDt = 0.00674;
constexpr int kSteps = 500;

struct Tosses {
  std::vector<double> q, v;  // row-major (n x 7), (n x 6); v[3:6] in the body frame
  int n = 0;
};

// Unit quaternion (w, x, y, z) products and rotations.
void qmul(const double* a, const double* b, double* o) {
  o[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
  o[1] = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
  o[2] = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
  o[3] = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
}
// R(q)ᵀ x (inverse = true) or R(q) x
void qrot(const double* q, const double* x, double* o, bool inverse) {
  const double s = inverse ? -1 : 1;
  const double w = q[0], u[3] = {q[1], q[2], q[3]};
  const double c[3] = {u[1] * x[2] - u[2] * x[1], u[2] * x[0] - u[0] * x[2], u[0] * x[1] - u[1] * x[0]};
  const double d = u[0] * x[0] + u[1] * x[1] + u[2] * x[2];
  for (int k = 0; k < 3; ++k) o[k] = x[k] * (2 * w * w - 1) + s * 2 * w * c[k] + 2 * u[k] * d;
}

Tosses initial_states(int n) {
  const double p0[3] = {0.18629883, 0.02622872, 0.12283257}, q0[4] = {-0.52503014, 0.39360754, -0.29753734, -0.67794127};
  const double v0[3] = {0.01438053, 1.29095332, -0.21252927}, w0[3] = {1.46313532, -4.85439428, 9.86961928};
  std::mt19937_64 rng(0);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::normal_distribution<double> g;
  Tosses t;
  t.n = n;
  while (static_cast<int>(t.q.size()) < 7 * n) {
    double p[3], v[3], w[3], axis[3], quat[4], rot[4];
    for (int k = 0; k < 3; ++k) p[k] = p0[k] + 0.1 * u(rng), v[k] = v0[k] + 0.1 * u(rng), w[k] = w0[k] + 0.1 * u(rng);
    for (double& a : axis) a = g(rng);
    const double norm = std::sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]), angle = u(rng);
    rot[0] = std::cos(angle / 2);
    for (int k = 0; k < 3; ++k) rot[k + 1] = std::sin(angle / 2) * axis[k] / norm;
    qmul(rot, q0, quat);
    double lowest = 1e9;
    for (int c = 0; c < 8; ++c) {  // the corners' heights
      const double corner[3] = {c & 1 ? kHalf : -kHalf, c & 2 ? kHalf : -kHalf, c & 4 ? kHalf : -kHalf};
      double x[3];
      qrot(quat, corner, x, false);
      lowest = std::min(lowest, p[2] + x[2]);
    }
    if (lowest <= 0) continue;
    double wb[3];
    qrot(quat, w, wb, true);
    t.q.insert(t.q.end(), {p[0], p[1], p[2], quat[0], quat[1], quat[2], quat[3]});
    t.v.insert(t.v.end(), {v[0], v[1], v[2], wb[0], wb[1], wb[2]});
  }
  return t;
}

// moreau: all tosses at once, kSteps steps; returns tosses per second.
double moreau_rate(const moreau::Model& model, const Tosses& t, moreau::ContactMode mode, double kn, double kd,
                   int substeps) {
  moreau::SimulatorOptions opt;
  opt.n_env = t.n;
  opt.dtype = moreau::DType::Float64;
  opt.n_threads = 1;
  opt.timestep = kDt;
  opt.decimation = 1;
  opt.contact.mode = mode;
  opt.contact.substeps = substeps;
  moreau::Simulator sim(model, opt);
  const double mu = 1.0;
  sim.set_param("friction", &mu, 1, 1);
  if (mode == moreau::ContactMode::Soft) {
    sim.set_param("contact_kn", &kn, 1, 1);
    sim.set_param("contact_kd", &kd, 1, 1);
  }
  sim.set_state(t.q.data(), t.v.data(), t.n);
  const auto t0 = Clock::now();
  for (int s = 0; s < kSteps; ++s) sim.step();
  return t.n / seconds_since(t0);
}

// MuJoCo: the tosses one by one; returns tosses per second.
double mujoco_rate(double k, const Tosses& t) {
  char xml[2048];
  std::snprintf(xml, sizeof xml,
                "<mujoco><option timestep=\"%.17g\" cone=\"elliptic\"/><worldbody>"
                "<geom type=\"plane\" size=\"0 0 1\" friction=\"1 0 0\" solref=\"%.17g %.17g\"/>"
                "<body><freejoint/><geom type=\"box\" size=\"%g %g %g\" friction=\"1 0 0\" condim=\"3\" "
                "solref=\"%.17g %.17g\"/><inertial pos=\"0 0 0\" mass=\"%g\" diaginertia=\"6.16666666667e-4 "
                "6.16666666667e-4 6.16666666667e-4\"/></body></worldbody></mujoco>",
                kDt, -k, -2 * std::sqrt(k), kHalf, kHalf, kHalf, -k, -2 * std::sqrt(k), kMass);
  mjModel* m = load_mjcf(xml);
  mjData* d = mj_makeData(m);
  const auto t0 = Clock::now();
  for (int j = 0; j < t.n; ++j) {
    mj_resetData(m, d);
    for (int a = 0; a < 7; ++a) d->qpos[a] = t.q[7 * j + a];
    for (int a = 0; a < 6; ++a) d->qvel[a] = t.v[6 * j + a];  // MuJoCo's free joint: ω in the body frame too
    for (int s = 0; s < kSteps; ++s) mj_step(m, d);
  }
  const double rate = t.n / seconds_since(t0);
  mj_deleteData(d);
  mj_deleteModel(m);
  return rate;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 2000, n_mj = 200;
  std::string json_out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--tosses" && i + 1 < argc) n = std::atoi(argv[++i]);
    else if (a == "--mujoco-tosses" && i + 1 < argc) n_mj = std::atoi(argv[++i]);
    else if (a == "--json-out" && i + 1 < argc) json_out = argv[++i];
    else {
      std::fprintf(stderr, "usage: moreau-bench-toss [--tosses N] [--mujoco-tosses N] [--json-out FILE]\n");
      return 2;
    }
  }
  if (n < 1 || n_mj < 1) {
    std::fprintf(stderr, "moreau-bench-toss: --tosses and --mujoco-tosses must be at least 1\n");
    return 2;
  }
  try {
    const moreau::Model model = moreau::load_model(std::string(MOREAU_ASSETS_DIR) + "/robots/cube.json");
    const Tosses tosses = initial_states(n), few = initial_states(n_mj);
    json rows = json::array();
    std::printf("%-16s %10s %14s %14s %8s\n", "setting", "substeps", "moreau toss/s", "MuJoCo toss/s", "ratio");
    for (const double k : {100.0, 300.0, 2500.0}) {
      const double kn = kMass * k / 4, kd = 0.5 * kMass * std::sqrt(k);
      const int sub = std::max(1, static_cast<int>(std::ceil(kDt * std::sqrt(4 * kn / kMass) / 0.05)));
      const double mr = moreau_rate(model, tosses, moreau::ContactMode::Soft, kn, kd, sub);
      const double jr = mujoco_rate(k, few);
      std::printf("soft k=%-8g %10d %14.0f %14.0f %8.2f\n", k, sub, mr, jr, mr / jr);
      rows.push_back({{"setting", "soft"}, {"mujoco_stiffness", k}, {"contact_kn", kn}, {"contact_kd", kd},
                      {"substeps", sub}, {"moreau_tosses_per_s", mr}, {"mujoco_tosses_per_s", jr}, {"ratio", mr / jr}});
    }
    const double hr = moreau_rate(model, tosses, moreau::ContactMode::Hard, 0, 0, 0);
    std::printf("%-16s %10s %14.0f %14s %8s\n", "hard", "-", hr, "-", "-");
    rows.push_back({{"setting", "hard"}, {"moreau_tosses_per_s", hr}});
    json out = {{"bench", "toss"}, {"machine", cpu_model()}, {"date", utc_now()}, {"command", command_line(argc, argv)},
                {"tosses", n}, {"mujoco_tosses", n_mj}, {"steps", kSteps}, {"dt", kDt}, {"rows", rows}};
    emit_json(out, json_out);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moreau-bench-toss: %s\n", e.what());
    return 2;
  }
  return 0;
}
