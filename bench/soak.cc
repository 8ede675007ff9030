// moreau-soak: long random runs of every contact mode in float32 and float64 (not part of CI;
// bench/RESULTS.md records the runs). Each control step draws random actions (servo targets
// up to ±1.5 rad from the default pose); every 50 steps new per-environment parameters
// (friction 0 to 3, k_n 1e2 to 1e6 N/m log-uniform, gains 0.01 to 100 times the model's
// log-uniform, added base mass −0.5 to +2 times the base's); every 20 steps pushes (base
// velocity + N(0, 1 m/s) on a tenth of the environments); random resets (0.2 % of the
// environments per step) and a reset of every environment flagged fatal. Every 20 steps the
// adjoint of one control step at the current states with random seeds.
//
// --kn-bands B splits the run into B parts of equal env-steps, part b drawing k_n log-uniform
// in the b-th of B equal log-ranges of 1e2 to 1e6: together the same draw, but soft contact's
// automatic substeps (from the batch's largest k_n, docs/contact.md) follow each part's range.
//
// Reported per mode and dtype: environment-steps, non-finite states in environments not
// flagged fatal (a bug: must be 0), fatal flags by kind, solver-not-converged warnings, the
// worst solver residual (and the largest |v_k| of its environment), and for the adjoint:
// environment-adjoints, non-finite gradients in environments not flagged, NaN-gradient and
// no-gradient flags.
//
//   build/release/bench/moreau-soak --env-steps 1e8 --contact all --dtype all --json-out soak.json
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"

namespace {

using moreau::ContactMode;
using moreau::DType;
using moreau::Model;
using moreau::Simulator;

struct Tally {
  int64_t env_steps = 0, nonfinite = 0, nan_state = 0, nan_action = 0, singular_mass = 0, not_converged = 0;
  int64_t resets = 0, adjoints = 0, adj_nonfinite = 0, nan_gradient = 0, no_gradient = 0;
  double worst_residual = 0, seconds = 0;
  double worst_residual_speed = 0;  // max |v_k| of the environment at the worst residual

  void add(const Tally& o) {
    env_steps += o.env_steps, nonfinite += o.nonfinite, nan_state += o.nan_state, nan_action += o.nan_action;
    singular_mass += o.singular_mass, not_converged += o.not_converged, resets += o.resets;
    adjoints += o.adjoints, adj_nonfinite += o.adj_nonfinite, nan_gradient += o.nan_gradient;
    no_gradient += o.no_gradient, seconds += o.seconds;
    if (o.worst_residual > worst_residual) {
      worst_residual = o.worst_residual;
      worst_residual_speed = o.worst_residual_speed;
    }
  }
};

template <class S>
bool finite_env(const S* x, int width, int n, int e) {
  for (int k = 0; k < width; ++k)
    if (!std::isfinite(static_cast<double>(x[static_cast<size_t>(k) * n + e]))) return false;
  return true;
}

template <class S>
Tally soak(const Model& m, ContactMode mode, DType dtype, int64_t target, int n, int threads, unsigned seed,
            double kn_lo, double kn_hi) {
  moreau::SimulatorOptions o;
  o.n_env = n;
  o.dtype = dtype;
  o.n_threads = threads;
  o.contact.mode = mode;
  Simulator sim(m, o);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> gauss(0, 1);
  const auto log_uniform = [&](double lo, double hi) { return lo * std::pow(hi / lo, u(rng)); };
  const int nq = m.nq, nv = m.nv, nu = m.nu;
  const double base_mass = m.body_mass[0];
  std::vector<double> q(static_cast<size_t>(n) * nq), v(static_cast<size_t>(n) * nv), act(static_cast<size_t>(n) * nu);
  std::vector<double> kp(static_cast<size_t>(n) * nu), kd(static_cast<size_t>(n) * nu), scalar(n);
  std::vector<S> qa(q.size()), va(v.size()), aa(act.size()), q1(q.size()), v1(v.size()), sq(q.size()),
      sv(v.size()), gq(q.size()), gv(v.size()), ga(act.size());
  std::vector<int32_t> status(n), adj_status(n), ids;
  Tally t;
  const auto t0 = bench::Clock::now();
  for (int64_t it = 0; t.env_steps < target; ++it) {
    if (it % 50 == 0) {  // new parameters
      for (int e = 0; e < n; ++e)
        for (int a = 0; a < nu; ++a) {
          kp[e * nu + a] = m.actuator_kp[a] * log_uniform(0.01, 100);
          kd[e * nu + a] = (m.actuator_kd[a] > 0 ? m.actuator_kd[a] : 1.0) * log_uniform(0.01, 100);
        }
      sim.set_param("kp", kp.data(), n, nu);
      sim.set_param("kd", kd.data(), n, nu);
      for (double& x : scalar) x = 3 * u(rng);
      sim.set_param("friction", scalar.data(), n, 1);
      for (double& x : scalar) x = log_uniform(kn_lo, kn_hi);
      sim.set_param("contact_kn", scalar.data(), n, 1);
      for (double& x : scalar) x = base_mass * (-0.5 + 2.5 * u(rng));
      sim.set_param("added_base_mass", scalar.data(), n, 1);
    }
    for (int e = 0; e < n; ++e)
      for (int a = 0; a < nu; ++a) act[e * nu + a] = m.qpos0[m.actuator_qposadr[a]] + 1.5 * (2 * u(rng) - 1);
    sim.set_action(act.data(), n);
    if (it % 20 == 10) {  // pushes
      sim.get_state(q.data(), v.data(), n);
      for (int e = 0; e < n; ++e)
        if (u(rng) < 0.1)
          for (int k = 0; k < 3; ++k) v[e * nv + k] += gauss(rng);
      sim.set_state(q.data(), v.data(), n);
    }
    sim.step(1);
    t.env_steps += n;
    const moreau::View sq_view = sim.q(), sv_view = sim.v(), st_view = sim.status(), res = sim.solver_residual();
    const S* qd = static_cast<const S*>(sq_view.data);
    const S* vd = static_cast<const S*>(sv_view.data);
    auto* st = static_cast<int32_t*>(st_view.data);
    const S* rd = static_cast<const S*>(res.data);
    ids.clear();
    for (int e = 0; e < n; ++e) {
      const int32_t s = st[e];
      t.nan_state += (s & moreau::kStatusNanState) != 0;
      t.nan_action += (s & moreau::kStatusNanAction) != 0;
      t.singular_mass += (s & moreau::kStatusSingularMass) != 0;
      t.not_converged += (s & moreau::kStatusSolverNotConverged) != 0;
      if (!(s & moreau::kStatusFatal)) {
        if (!finite_env(qd, nq, n, e) || !finite_env(vd, nv, n, e)) ++t.nonfinite;
        if (static_cast<double>(rd[e]) > t.worst_residual) {
          t.worst_residual = static_cast<double>(rd[e]);
          t.worst_residual_speed = 0;
          for (int k = 0; k < nv; ++k)
            t.worst_residual_speed = std::max(t.worst_residual_speed, std::abs(static_cast<double>(vd[k * n + e])));
        }
        st[e] = 0;  // warnings counted: clear them so that the next one counts again
      }
      if ((s & moreau::kStatusFatal) || u(rng) < 0.002) ids.push_back(e);
    }
    if (!ids.empty()) {
      sim.reset(ids.data(), static_cast<int>(ids.size()));
      t.resets += static_cast<int64_t>(ids.size());
    }
    if (it % 20 == 5) {  // the adjoint at the current states, random seeds
      std::copy(qd, qd + q.size(), qa.begin());
      std::copy(vd, vd + v.size(), va.begin());
      const S* ad = static_cast<const S*>(sim.action().data);
      std::copy(ad, ad + act.size(), aa.begin());
      for (S& x : sq) x = static_cast<S>(gauss(rng));
      for (S& x : sv) x = static_cast<S>(gauss(rng));
      sim.step_pure(qa.data(), va.data(), aa.data(), q1.data(), v1.data(), status.data());
      Simulator::Gradients g;
      g.q = gq.data();
      g.v = gv.data();
      g.action = ga.data();
      sim.step_adjoint(qa.data(), va.data(), aa.data(), sq.data(), sv.data(), g, adj_status.data());
      t.adjoints += n;
      for (int e = 0; e < n; ++e) {
        const int32_t s = adj_status[e];
        t.nan_gradient += (s & moreau::kStatusNanGradient) != 0;
        t.no_gradient += (s & moreau::kStatusNoGradient) != 0;
        if (!(s & (moreau::kStatusFatal | moreau::kStatusNanGradient | moreau::kStatusNoGradient)) &&
            (!finite_env(gq.data(), nq, n, e) || !finite_env(gv.data(), nv, n, e) || !finite_env(ga.data(), nu, n, e)))
          ++t.adj_nonfinite;
      }
    }
  }
  t.seconds = bench::seconds_since(t0);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    bench::CommonOptions o;
    o.contact = bench::parse_contact_list("hard,soft,smooth,hard_smooth_grad");
    double target = 1e6;
    int n_env = 256;
    unsigned seed = 1;
    int kn_bands = 1;
    std::vector<DType> dtypes = {DType::Float32, DType::Float64};
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (bench::parse_common_option(argc, argv, i, o)) continue;
      if (a == "--env-steps" && i + 1 < argc) {
        target = std::atof(argv[++i]);
        if (!(target >= 1)) throw moreau::Error("--env-steps: expected a number >= 1");
      } else if (a == "--n-env" && i + 1 < argc) {
        n_env = std::atoi(argv[++i]);
        if (n_env <= 0) throw moreau::Error("--n-env: expected a positive integer");
      } else if (a == "--kn-bands" && i + 1 < argc) {
        kn_bands = std::atoi(argv[++i]);
        if (kn_bands < 1 || kn_bands > 100) throw moreau::Error("--kn-bands: expected an integer from 1 to 100");
      } else if (a == "--seed" && i + 1 < argc) {
        seed = static_cast<unsigned>(std::atoi(argv[++i]));
      } else if (a == "--dtype" && i + 1 < argc) {
        const std::string d = argv[++i];
        if (d == "float32") dtypes = {DType::Float32};
        else if (d == "float64") dtypes = {DType::Float64};
        else if (d != "all") throw moreau::Error("--dtype: expected float32, float64 or all");
      } else {
        throw moreau::Error("unknown option '" + a + "' (--env-steps N --n-env N --contact LIST --dtype D --seed S "
                            "--kn-bands B --threads N --robot FILE --json-out FILE)");
      }
    }
    if (o.threads <= 0) o.threads = static_cast<int>(std::thread::hardware_concurrency());
    const Model model = moreau::load_model(o.robot);
    nlohmann::json out = bench::json_header("soak", model, o, bench::command_line(argc, argv));
    std::printf("%-17s %-7s %12s %9s %8s %8s %8s %10s %9s %12s %9s %8s %8s %7s\n", "mode", "dtype", "env-steps",
                "nonfinite", "nanstate", "nanact", "singular", "notconverg", "residual", "env-adjoints", "adj-nonf",
                "nan-grad", "no-grad", "s");
    for (ContactMode mode : o.contact)
      for (DType dtype : dtypes) {
        Tally t;
        for (int b = 0; b < kn_bands; ++b) {  // part b: k_n in 1e2 · 1e4^(b/B) to 1e2 · 1e4^((b+1)/B)
          const int64_t steps = static_cast<int64_t>(target) * (b + 1) / kn_bands - t.env_steps;
          const double lo = 1e2 * std::pow(1e4, double(b) / kn_bands), hi = 1e2 * std::pow(1e4, double(b + 1) / kn_bands);
          const unsigned s = kn_bands == 1 ? seed : seed * kn_bands + b;
          t.add(dtype == DType::Float64 ? soak<double>(model, mode, dtype, steps, n_env, o.threads, s, lo, hi)
                                        : soak<float>(model, mode, dtype, steps, n_env, o.threads, s, lo, hi));
        }
        const char* dname = dtype == DType::Float64 ? "float64" : "float32";
        std::printf("%-17s %-7s %12lld %9lld %8lld %8lld %8lld %10lld %9.2e %12lld %9lld %8lld %8lld %7.1f\n",
                    moreau::contact_mode_name(mode), dname, static_cast<long long>(t.env_steps),
                    static_cast<long long>(t.nonfinite), static_cast<long long>(t.nan_state),
                    static_cast<long long>(t.nan_action), static_cast<long long>(t.singular_mass),
                    static_cast<long long>(t.not_converged), t.worst_residual, static_cast<long long>(t.adjoints),
                    static_cast<long long>(t.adj_nonfinite), static_cast<long long>(t.nan_gradient),
                    static_cast<long long>(t.no_gradient), t.seconds);
        std::fflush(stdout);
        out["rows"].push_back({{"contact", moreau::contact_mode_name(mode)}, {"dtype", dname},
                               {"env_steps", t.env_steps}, {"nonfinite_unflagged", t.nonfinite},
                               {"nan_state", t.nan_state}, {"nan_action", t.nan_action},
                               {"singular_mass", t.singular_mass}, {"not_converged", t.not_converged},
                               {"worst_residual", t.worst_residual},
                               {"worst_residual_speed", t.worst_residual_speed}, {"resets", t.resets},
                               {"env_adjoints", t.adjoints}, {"adjoint_nonfinite_unflagged", t.adj_nonfinite},
                               {"nan_gradient", t.nan_gradient}, {"no_gradient", t.no_gradient},
                               {"seconds", t.seconds}, {"n_env", n_env}, {"seed", seed}, {"kn_bands", kn_bands}});
      }
    bench::emit_json(out, o.json_out);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moreau-soak: %s\n", e.what());
    return 2;
  }
}
