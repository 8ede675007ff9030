// moreau-smooth-study — what the smooth contact model's parameters k [1/m] and g_max [m] do to
// the forward simulation, measured against the hard model (docs/contact.md, "smooth").
//
//   moreau-smooth-study [--csv PATH] [--throws N]
//
// Every (k, g_max) pair of the grid runs as one environment of a batched Simulator (smooth_k
// and smooth_gmax are per-environment parameters); the hard reference runs in the same way.
// CPU, float64. Measures:
//   (a) resting penetration: the cube dropped flat from 0.2 m, after 2 s (and its sinking
//       speed then); ANYmal C standing under its PD at the default pose, base height after 3 s
//       minus hard's;
//   (b) creep while sticking on a tilted plane, tan θ = 0.4, μ = 0.5: the box's mean speed
//       down the slope over [0.5 s, 1.5 s];
//   (c) the cube's random drops and throws: mean distance of its position from hard's after 1 s;
//   (d) the normal impulse one step gives a foot of ANYmal C 5 mm and 10 mm above the ground
//       moving down at 0.5 m/s, as a fraction of the impulse hard contact gives it at touchdown;
//   (e) finite-difference sensitivity d z(0.5 s) / d z(0) of the cube's height over the
//       throws, central differences with ε = 1e-2, 1e-3, 1e-4 m: the spread across ε; and
//       (e') the same for flat drops that land around t = 0.5 s (a clean, non-chaotic case).
// Solver stop for all runs (hard and smooth): 1e-4 m/s, 2000 sweeps (at the default 1e-6 m/s /
// 500 sweeps the hard solve stops on its cap on many tumbling cubes: tests/contact_test.cc,
// Solver.TumblingCubeLandingsKeepStepping). Environments with a status bit (a capped solve, or
// worse) are left out and counted ("flagged").
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "moreau/dynamics.h"
#include "moreau/model.h"
#include "moreau/simulator.h"

using namespace moreau;

namespace {

const std::vector<double> kK = {30, 100, 300, 1000, 3000, 1e4};
const std::vector<double> kGmax = {0, 0.005, 0.01, 0.02, 0.05};

std::string asset(const std::string& name) { return std::string(MOREAU_ASSETS_DIR) + "/robots/" + name; }

struct Csv {
  std::ofstream out;
  void row(const std::string& study, const std::string& mode, double k, double gmax, const std::string& metric,
           double value) {
    if (out.is_open()) out << study << ',' << mode << ',' << k << ',' << gmax << ',' << metric << ',' << value << '\n';
  }
};
Csv csv;

SimulatorOptions options(ContactMode mode, int n_env, int decimation = 0) {
  SimulatorOptions o;
  o.n_env = n_env;
  o.dtype = DType::Float64;
  o.decimation = decimation;
  o.contact.mode = mode;
  o.contact.tolerance = 1e-4;
  o.contact.max_iterations = 2000;
  return o;
}

// A smooth simulator with `per` environments for each (k, g_max) of the grid: environment
// c * per + i has combination c.
void set_grid(Simulator& sim, int per) {
  const int n = static_cast<int>(kK.size() * kGmax.size()) * per;
  std::vector<double> k(n), g(n);
  for (int e = 0; e < n; ++e) {
    const int c = e / per;
    k[e] = kK[c / kGmax.size()];
    g[e] = kGmax[c % kGmax.size()];
  }
  sim.set_param("smooth_k", k.data(), n, 1);
  sim.set_param("smooth_gmax", g.data(), n, 1);
}
int n_combos() { return static_cast<int>(kK.size() * kGmax.size()); }

// Replicates one state (q, v of one environment) per environments.
void set_states(Simulator& sim, const Model& m, const std::vector<double>& q, const std::vector<double>& v,
                int per_state) {
  const int n_states = static_cast<int>(q.size() / m.nq), n = sim.n_env();
  std::vector<double> Q(static_cast<size_t>(n) * m.nq), V(static_cast<size_t>(n) * m.nv);
  for (int e = 0; e < n; ++e) {
    const int s = (e % (n_states * per_state)) / per_state;
    std::copy_n(q.data() + static_cast<size_t>(s) * m.nq, m.nq, Q.data() + static_cast<size_t>(e) * m.nq);
    std::copy_n(v.data() + static_cast<size_t>(s) * m.nv, m.nv, V.data() + static_cast<size_t>(e) * m.nv);
  }
  sim.set_state(Q.data(), V.data(), n);
}

struct State {
  std::vector<double> q, v;
  std::vector<int32_t> status;
};
State read(const Simulator& sim, const Model& m) {
  State s{std::vector<double>(static_cast<size_t>(sim.n_env()) * m.nq),
          std::vector<double>(static_cast<size_t>(sim.n_env()) * m.nv), std::vector<int32_t>(sim.n_env())};
  sim.get_state(s.q.data(), s.v.data(), sim.n_env());
  sim.get_status(s.status.data(), sim.n_env());
  return s;
}

// The states (q, v) run for `steps` control steps on hard contact (one environment per state)
// and on smooth contact (each state once per (k, g_max) combination: set_grid).
std::pair<State, State> hard_and_smooth(const Model& m, const std::vector<double>& q, const std::vector<double>& v,
                                        int steps) {
  const int n = static_cast<int>(q.size() / m.nq);
  Simulator hard(m, options(ContactMode::Hard, n)), smooth(m, options(ContactMode::Smooth, n_combos() * n));
  set_grid(smooth, n);
  set_states(hard, m, q, v, 1);
  set_states(smooth, m, q, v, 1);
  hard.step(steps);
  smooth.step(steps);
  return {read(hard, m), read(smooth, m)};
}

// Prints a k x g_max table of values[c] (c = combination), with a hard reference line.
void table(const char* title, const char* unit, const std::vector<double>& values, double hard, const char* fmt,
           const std::string& study, const std::string& metric) {
  std::printf("\n%s [%s]\n  hard: ", title, unit);
  std::printf(fmt, hard);
  std::printf("\n  %-8s", "k \\ gmax");
  for (double g : kGmax) std::printf(" %10g", g);
  std::printf("\n");
  csv.row(study, "hard", 0, 0, metric, hard);
  for (size_t i = 0; i < kK.size(); ++i) {
    std::printf("  %-8g", kK[i]);
    for (size_t j = 0; j < kGmax.size(); ++j) {
      const double x = values[i * kGmax.size() + j];
      char buf[64];
      std::snprintf(buf, sizeof buf, fmt, x);
      std::printf(" %10s", buf);
      csv.row(study, "smooth", kK[i], kGmax[j], metric, x);
    }
    std::printf("\n");
  }
}

// Cube throws as in tests/contact_test.cc: random orientation, lowest corner 0.05–0.5 m up,
// linear velocity ±3 m/s, angular ±10 rad/s per component.
void cube_throws(const Model& m, int n, uint32_t seed, std::vector<double>& q, std::vector<double>& v) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1), height(0.05, 0.5);
  std::normal_distribution<double> normal;
  q.assign(static_cast<size_t>(n) * m.nq, 0);
  v.assign(static_cast<size_t>(n) * m.nv, 0);
  for (int e = 0; e < n; ++e) {
    double* qe = q.data() + static_cast<size_t>(e) * m.nq;
    double* ve = v.data() + static_cast<size_t>(e) * m.nv;
    double n2 = 0;
    for (int i = 0; i < 4; ++i) {
      qe[3 + i] = normal(rng);
      n2 += qe[3 + i] * qe[3 + i];
    }
    for (int i = 0; i < 4; ++i) qe[3 + i] /= std::sqrt(n2);
    qe[2] = height(rng) - lowest_gap(m, qe);
    for (int k = 0; k < 3; ++k) ve[k] = 3 * u(rng);
    for (int k = 3; k < 6; ++k) ve[k] = 10 * u(rng);
  }
}

// ---------------------------------------------------------------------------------------------
// (a) resting penetration
void study_rest() {
  const Model cube = load_model(asset("cube.json"));
  const int steps2 = static_cast<int>(std::lround(2.0 / cube.timestep));
  std::vector<double> q = cube.qpos0, v(cube.nv, 0.0);
  q[2] = 0.2;
  auto run = [&](ContactMode mode, int n, std::vector<double>& z, std::vector<double>& vz, std::vector<int32_t>& st) {
    Simulator sim(cube, options(mode, n));
    if (mode == ContactMode::Smooth) set_grid(sim, 1);
    set_states(sim, cube, q, v, n);
    sim.step(steps2);
    const State s = read(sim, cube);
    z.resize(n);
    vz.resize(n);
    st = s.status;
    for (int e = 0; e < n; ++e) {
      z[e] = s.q[static_cast<size_t>(e) * cube.nq + 2];
      vz[e] = s.v[static_cast<size_t>(e) * cube.nv + 2];
    }
  };
  std::vector<double> zh, vh, zs, vs;
  std::vector<int32_t> sh, ss;
  run(ContactMode::Hard, 1, zh, vh, sh);
  run(ContactMode::Smooth, n_combos(), zs, vs, ss);
  std::vector<double> pen(n_combos()), sink(n_combos());
  for (int c = 0; c < n_combos(); ++c) {
    pen[c] = ss[c] ? NAN : 1e3 * (0.05 - zs[c]);
    sink[c] = ss[c] ? NAN : -1e3 * vs[c];
  }
  table("(a) cube resting penetration after 2 s (dropped flat from 0.2 m)", "mm", pen, 1e3 * (0.05 - zh[0]), "%.3f",
        "rest_cube", "penetration_mm");
  table("(a) cube sinking speed at 2 s", "mm/s", sink, -1e3 * vh[0], "%.4f", "rest_cube", "sink_speed_mm_s");

  const Model robot = load_model(asset("anymal_c.json"));
  const int steps3 = static_cast<int>(std::lround(3.0 / (robot.timestep * robot.decimation)));
  std::vector<double> qr = robot.qpos0, vr(robot.nv, 0.0);
  const auto [h, s] = hard_and_smooth(robot, qr, vr, steps3);
  std::vector<double> dz(n_combos());
  int flagged = 0;
  for (int c = 0; c < n_combos(); ++c) {
    dz[c] = s.status[c] ? NAN : 1e3 * (h.q[2] - s.q[static_cast<size_t>(c) * robot.nq + 2]);
    flagged += s.status[c] != 0;
  }
  std::printf("\nANYmal C standing under PD: hard base height %.4f m (status %d); smooth flagged: %d\n", h.q[2],
              h.status[0], flagged);
  table("(a) ANYmal C standing: base height below hard's after 3 s", "mm", dz, 0.0, "%.2f", "rest_anymal",
        "base_below_hard_mm");
}

// ---------------------------------------------------------------------------------------------
// (b) creep on a tilted plane, tan θ = 0.4, μ = 0.5
void study_creep() {
  Model cube = load_model(asset("cube.json"));
  const double theta = std::atan(0.4), mu = 0.5;
  cube.gravity[0] = 9.81 * std::sin(theta);
  cube.gravity[1] = 0;
  cube.gravity[2] = -9.81 * std::cos(theta);
  std::vector<double> q = cube.qpos0, v(cube.nv, 0.0);
  q[2] = 0.05;
  auto speed = [&](ContactMode mode, int n, std::vector<int32_t>& st) {
    Simulator sim(cube, options(mode, n));
    if (mode == ContactMode::Smooth) set_grid(sim, 1);
    sim.set_param("friction", &mu, 1, 1);
    set_states(sim, cube, q, v, n);
    sim.step(100);  // 0.5 s: settle
    const State a = read(sim, cube);
    sim.step(200);  // 1 s
    const State b = read(sim, cube);
    st = b.status;
    std::vector<double> out(n);
    for (int e = 0; e < n; ++e) out[e] = 1e3 * (b.q[static_cast<size_t>(e) * cube.nq] - a.q[static_cast<size_t>(e) * cube.nq]);
    return out;
  };
  std::vector<int32_t> sh, ss;
  const std::vector<double> h = speed(ContactMode::Hard, 1, sh);
  std::vector<double> s = speed(ContactMode::Smooth, n_combos(), ss);
  for (int c = 0; c < n_combos(); ++c)
    if (ss[c]) s[c] = NAN;
  table("(b) creep down a plane with tan θ = 0.4, μ = 0.5 (should stick): mean speed over [0.5, 1.5] s", "mm/s", s,
        h[0], "%.3f", "creep", "speed_mm_s");
}

// ---------------------------------------------------------------------------------------------
// (c) trajectory deviation from hard after 1 s, cube throws
void study_throws(int n_throws) {
  const Model cube = load_model(asset("cube.json"));
  std::vector<double> q, v;
  cube_throws(cube, n_throws, 7, q, v);
  const int steps = static_cast<int>(std::lround(1.0 / cube.timestep));
  Simulator hard(cube, options(ContactMode::Hard, n_throws)), smooth(cube, options(ContactMode::Smooth, n_combos() * n_throws));
  set_grid(smooth, n_throws);
  set_states(hard, cube, q, v, 1);
  set_states(smooth, cube, q, v, 1);
  SimulatorOptions o = options(ContactMode::Hard, n_throws);
  o.contact.speculative = false;
  Simulator plain(cube, o);
  set_states(plain, cube, q, v, 1);
  hard.step(steps);
  smooth.step(steps);
  plain.step(steps);
  const State h = read(hard, cube), s = read(smooth, cube), p = read(plain, cube);
  double plain_err = 0;
  int plain_count = 0;
  for (int i = 0; i < n_throws; ++i) {
    if (h.status[i] || p.status[i]) continue;
    double d = 0;
    for (int k = 0; k < 3; ++k) d += std::pow(p.q[static_cast<size_t>(i) * cube.nq + k] - h.q[static_cast<size_t>(i) * cube.nq + k], 2);
    plain_err += std::sqrt(d);
    ++plain_count;
  }
  plain_err = 1e3 * plain_err / std::max(plain_count, 1);
  csv.row("throws", "hard_nonspeculative", 0, 0, "mean_error_mm", plain_err);
  std::vector<double> err(n_combos()), worst(n_combos());
  int flagged_hard = 0, flagged_smooth = 0;
  for (int i = 0; i < n_throws; ++i) flagged_hard += h.status[i] != 0;
  for (int c = 0; c < n_combos(); ++c) {
    double sum = 0, mx = 0;
    int count = 0;
    for (int i = 0; i < n_throws; ++i) {
      const int e = c * n_throws + i;
      if (h.status[i] || s.status[e]) {
        flagged_smooth += s.status[e] != 0;
        continue;
      }
      double d = 0;
      for (int k = 0; k < 3; ++k) d += std::pow(s.q[static_cast<size_t>(e) * cube.nq + k] - h.q[static_cast<size_t>(i) * cube.nq + k], 2);
      sum += std::sqrt(d);
      mx = std::max(mx, std::sqrt(d));
      ++count;
    }
    err[c] = 1e3 * sum / std::max(count, 1);
    worst[c] = 1e3 * mx;
  }
  std::printf("\n(c) %d cube throws, flagged: hard %d, smooth %d (of %d). Hard without the speculative contacts: "
              "mean error %.1f mm (the sensitivity of tumbling to any change of the contact model)\n",
              n_throws, flagged_hard, flagged_smooth, n_combos() * n_throws, plain_err);
  table("(c) cube throws: mean position error vs hard after 1 s", "mm", err, 0.0, "%.1f", "throws", "mean_error_mm");
  table("(c) cube throws: largest position error vs hard after 1 s", "mm", worst, 0.0, "%.0f", "throws",
        "max_error_mm");
}

// ---------------------------------------------------------------------------------------------
// (d) impulse on a foot before touchdown
void study_precontact() {
  const Model robot = load_model(asset("anymal_c.json"));
  auto state_at = [&](double gap) {
    std::vector<double> q = robot.qpos0, v(robot.nv, 0.0);
    q[2] += gap - lowest_gap(robot, q.data());
    v[2] = -0.5;
    return std::pair{q, v};
  };
  // mean normal impulse per foot of one physics step (decimation 1)
  auto impulse = [&](ContactMode mode, int n, double gap) {
    Simulator sim(robot, options(mode, n, 1));
    if (mode == ContactMode::Smooth) set_grid(sim, 1);
    const auto [q, v] = state_at(gap);
    set_states(sim, robot, q, v, n);
    sim.step(1);
    const double* p = static_cast<const double*>(sim.contact_impulse().data);
    std::vector<double> out(n, 0.0);
    for (int e = 0; e < n; ++e)
      for (int k = 0; k < robot.ncon; ++k) out[e] += p[static_cast<size_t>(k) * n + e] / robot.ncon;
    return out;
  };
  SimulatorOptions o = options(ContactMode::Hard, 1, 1);
  o.contact.speculative = false;
  Simulator touch(robot, o);
  {
    const auto [q, v] = state_at(0.0);
    touch.set_state(q.data(), v.data(), 1);
    touch.step(1);
  }
  double ref = 0;
  for (int k = 0; k < robot.ncon; ++k) ref += static_cast<const double*>(touch.contact_impulse().data)[k] / robot.ncon;
  std::printf("\n(d) ANYmal C, feet moving down at 0.5 m/s: hard impulse per foot at touchdown (gap 0) %.4f N s\n", ref);
  for (double gap : {0.005, 0.01}) {
    const std::vector<double> h = impulse(ContactMode::Hard, 1, gap);
    std::vector<double> s = impulse(ContactMode::Smooth, n_combos(), gap);
    for (double& x : s) x /= ref;
    const std::string title = "(d) normal impulse per foot " + std::to_string(static_cast<int>(std::lround(gap * 1e3))) +
                              " mm above the ground, / hard's at touchdown";
    table(title.c_str(), "1", s, h[0] / ref, "%.3f", "precontact_" + std::to_string(static_cast<int>(std::lround(gap * 1e3))) + "mm",
          "impulse_fraction");
  }
}

// ---------------------------------------------------------------------------------------------
// (e) finite-difference sensitivity of z(0.5 s) to z(0)
void study_fd(int n_throws) {
  const Model cube = load_model(asset("cube.json"));
  std::vector<double> q0, v0;
  cube_throws(cube, n_throws, 11, q0, v0);
  const std::vector<double> eps = {1e-2, 1e-3, 1e-4};
  const int per = 2 * static_cast<int>(eps.size());  // ± each ε
  std::vector<double> q(static_cast<size_t>(n_throws) * per * cube.nq), v(static_cast<size_t>(n_throws) * per * cube.nv);
  for (int i = 0; i < n_throws; ++i)
    for (int j = 0; j < per; ++j) {
      const size_t e = static_cast<size_t>(i) * per + j;
      std::copy_n(q0.data() + static_cast<size_t>(i) * cube.nq, cube.nq, q.data() + e * cube.nq);
      std::copy_n(v0.data() + static_cast<size_t>(i) * cube.nv, cube.nv, v.data() + e * cube.nv);
      q[e * cube.nq + 2] += (j % 2 ? -1 : 1) * eps[j / 2];
    }
  const int steps = static_cast<int>(std::lround(0.5 / cube.timestep));
  // per combination: median over throws of the spread (max − min over ε of the central
  // difference), the fraction of throws whose three estimates agree within 0.05, the median |d|
  auto analyse = [&](const State& s, int c, double& spread, double& agree, double& median_d, int& flagged) {
    std::vector<double> spreads, ds;
    for (int i = 0; i < n_throws; ++i) {
      double lo = 1e300, hi = -1e300;
      bool ok = true;
      for (size_t k = 0; k < eps.size(); ++k) {
        const size_t ep = static_cast<size_t>(c) * n_throws * per + static_cast<size_t>(i) * per + 2 * k;
        ok = ok && !s.status[ep] && !s.status[ep + 1];
        const double d = (s.q[ep * cube.nq + 2] - s.q[(ep + 1) * cube.nq + 2]) / (2 * eps[k]);
        lo = std::min(lo, d);
        hi = std::max(hi, d);
        if (k == eps.size() - 1) ds.push_back(std::abs(d));
      }
      if (!ok) {
        ++flagged;
        ds.pop_back();
        continue;
      }
      spreads.push_back(hi - lo);
    }
    auto median = [](std::vector<double> x) {
      if (x.empty()) return static_cast<double>(NAN);
      std::nth_element(x.begin(), x.begin() + x.size() / 2, x.end());
      return x[x.size() / 2];
    };
    spread = median(spreads);
    agree = spreads.empty() ? NAN : static_cast<double>(std::count_if(spreads.begin(), spreads.end(), [](double x) { return x < 0.05; })) / spreads.size();
    median_d = median(ds);
  };
  const auto [h, s] = hard_and_smooth(cube, q, v, steps);
  double hs, ha, hd;
  int hf = 0, sf = 0;
  analyse(h, 0, hs, ha, hd, hf);
  std::vector<double> spread(n_combos()), agree(n_combos()), md(n_combos());
  for (int c = 0; c < n_combos(); ++c) analyse(s, c, spread[c], agree[c], md[c], sf);
  std::printf("\n(e) d z(0.5 s) / d z(0) of %d cube throws, central differences with ε = 1e-2, 1e-3, 1e-4 m "
              "(flagged throws left out: hard %d, smooth %d)\n", n_throws, hf, sf);
  table("(e) median over throws of the spread (max − min over ε) of the FD derivative", "1", spread, hs, "%.3f", "fd",
        "median_spread");
  table("(e) fraction of throws whose three FD estimates agree within 0.05", "1", agree, ha, "%.2f", "fd",
        "agree_fraction");
  table("(e) median |d z(0.5)/d z(0)| at ε = 1e-4", "1", md, hd, "%.3f", "fd", "median_abs_derivative");
}

// (e') the same derivative for flat drops landing around t = 0.5 s: z(0) from 1.15 to 1.35 m
// (landing at 0.48–0.52 s), no velocity, 41 points
void study_fd_flat() {
  const Model cube = load_model(asset("cube.json"));
  const std::vector<double> eps = {1e-2, 1e-3, 1e-4};
  const int n_points = 41, per = 2 * static_cast<int>(eps.size());
  std::vector<double> q(static_cast<size_t>(n_points) * per * cube.nq), v(static_cast<size_t>(n_points) * per * cube.nv, 0.0);
  for (int i = 0; i < n_points; ++i)
    for (int j = 0; j < per; ++j) {
      const size_t e = static_cast<size_t>(i) * per + j;
      std::copy_n(cube.qpos0.data(), cube.nq, q.data() + e * cube.nq);
      q[e * cube.nq + 2] = 1.15 + 0.2 * i / (n_points - 1) + (j % 2 ? -1 : 1) * eps[j / 2];
    }
  const int steps = static_cast<int>(std::lround(0.5 / cube.timestep));
  const int n_per_combo = n_points * per;
  const auto [h, s] = hard_and_smooth(cube, q, v, steps);
  // per combination: the largest spread over the sweep, the largest |d| at ε = 1e-4, and the
  // fraction of points whose derivative at ε = 1e-4 is strictly between 0.02 and 0.98 (neither
  // "not landed" = 1 nor "landed" = 0: the landing is felt)
  auto analyse = [&](const State& st, int c, double& spread, double& dmax, double& between) {
    spread = 0;
    dmax = 0;
    between = 0;
    for (int i = 0; i < n_points; ++i) {
      double lo = 1e300, hi = -1e300, d = 0;
      for (size_t k = 0; k < eps.size(); ++k) {
        const size_t ep = static_cast<size_t>(c) * n_per_combo + static_cast<size_t>(i) * per + 2 * k;
        d = (st.q[ep * cube.nq + 2] - st.q[(ep + 1) * cube.nq + 2]) / (2 * eps[k]);
        if (st.status[ep] || st.status[ep + 1]) d = NAN;
        lo = std::min(lo, d);
        hi = std::max(hi, d);
      }
      spread = std::max(spread, hi - lo);
      dmax = std::max(dmax, std::abs(d));
      between += (d > 0.02 && d < 0.98) ? 1.0 / n_points : 0.0;
    }
  };
  double hs, hd, hb;
  analyse(h, 0, hs, hd, hb);
  std::vector<double> spread(n_combos()), dmax(n_combos()), between(n_combos());
  for (int c = 0; c < n_combos(); ++c) analyse(s, c, spread[c], dmax[c], between[c]);
  std::printf("\n(e') d z(0.5 s) / d z(0) of the cube dropped flat from z(0) in [1.15, 1.35] m (lands at 0.48–0.52 s), "
              "41 points, ε = 1e-2, 1e-3, 1e-4 m\n");
  table("(e') largest spread over ε of the FD derivative along the sweep", "1", spread, hs, "%.3f", "fd_flat",
        "max_spread");
  table("(e') largest |FD derivative| along the sweep at ε = 1e-4", "1", dmax, hd, "%.3f", "fd_flat", "max_abs_derivative");
  table("(e') fraction of the sweep with a derivative in (0.02, 0.98) at ε = 1e-4", "1", between, hb, "%.2f", "fd_flat",
        "fraction_between");
}

}  // namespace

int main(int argc, char** argv) {
  int n_throws = 200;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--csv" && i + 1 < argc) {
      csv.out.open(argv[++i]);
      if (!csv.out) {
        std::fprintf(stderr, "cannot write %s\n", argv[i]);
        return 1;
      }
      csv.out << "study,mode,k,gmax,metric,value\n";
    } else if (a == "--throws" && i + 1 < argc) {
      n_throws = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: %s [--csv PATH] [--throws N]\n", argv[0]);
      return 2;
    }
  }
  std::printf("moreau-smooth-study: k [1/m] x g_max [m]; CPU float64; solver stop 1e-4 m/s, 2000 sweeps\n");
  study_rest();
  study_creep();
  study_throws(n_throws);
  study_precontact();
  study_fd(std::max(1, n_throws / 4));
  study_fd_flat();
  return 0;
}
