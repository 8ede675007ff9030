// The contact stages' adjoints (kernels/contact.h) one by one against central differences in
// double: the contact kinematics (Jacobian rows and gaps), the soft model's normal impulses,
// and the implicit differentiation of the impulse solve with a separated, a sticking and a
// sliding contact, for hard contact, with the smooth model's gates and with given normal
// impulses (soft), and that implicit adjoint as the limit of the solver's own iterations
// differentiated (dual numbers). The whole physics step is checked in tests/gradient_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kernels/contact.h"
#include "support/dual.h"
#include "support/kernel_model.h"
#include "support/test_util.h"

namespace moreau {
namespace {

using Vec = std::vector<double>;
using test::Dual;

double dot(const Vec& a, const double* b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// |adjoint − fd| ≤ rel · max(scale, |fd|) for each entry, and some |fd| above scale / 1000.
void expect_gradient(const Vec& adjoint, const Vec& fd, double rel, const char* what, double scale = 1) {
  ASSERT_EQ(adjoint.size(), fd.size());
  double largest = 0;
  for (size_t k = 0; k < fd.size(); ++k) {
    EXPECT_NEAR(adjoint[k], fd[k], rel * std::max(scale, std::abs(fd[k]))) << what << "[" << k << "]";
    largest = std::max(largest, std::abs(fd[k]));
  }
  EXPECT_GT(largest, 1e-3 * scale) << what;
}

// ⟨J̄, J⟩ over the rows in cs, each over its chain (the rows' storage, stride kChain).
double dot_rows(const Vec& Jbar, const kern::ContactScratch<double>& cs) {
  constexpr int C = MaxDims::kChain;
  double s = 0;
  for (int r = 0; r < kern::solve_rows(cs); ++r)
    for (int t = 0; t < cs.nd[kern::row_block(cs, r)]; ++t) s += Jbar[r * C + t] * cs.J[r * C + t];
  return s;
}

// L = ⟨J̄, J(q)⟩ + ⟨ḡ, g(q)⟩ over the active contacts of ANYmal C's feet (all candidates) and
// their spin rows, through adj_contact_kinematics and adj_forward_kinematics, at random
// configurations, on the plane and on a heightfield of random heights (±0.3 m on a 0.37 m grid,
// facets sloped up to about 60°; the base placed over the grid's interior).
TEST(ContactAdjoint, KinematicsMatchFiniteDifferences) {
  const test::KernelModel km("anymal_c.json");
  const kern::ModelView<double>& m = km.m;
  const int nq = m.nq, nv = m.nv;
  std::mt19937 rng(31);
  std::normal_distribution<double> normal(0, 1);
  std::uniform_real_distribution<double> uniform(-0.3, 0.3);
  const int nx = 17, ny = 15;
  Vec heights(nx * ny);
  for (double& z : heights) z = uniform(rng);
  const kern::Ground<double> plane{0, 0, 0.0, 0.0, 0.0, 0.0, nullptr},
      terrain{nx, ny, -3.1, -2.6, 0.37, 0.37, heights.data()};
  Vec q(nq), v(nv);
  for (const kern::Ground<double>& ground : {plane, terrain}) {
  SCOPED_TRACE(ground.nx ? "heightfield" : "plane");
  auto kinematics = [&](const double* qq, kern::Workspace<double>& ws, kern::ContactScratch<double>& cs) {
    kern::body_inertias(m, 0.0, ws);
    kern::forward_kinematics(m, qq, ws);
    cs.nj = 0;
    kern::contact_candidates(m, ws, qq, ground, 1e3, cs, static_cast<double*>(nullptr), 0.02);
  };
  for (int s = 0; s < 3; ++s) {
    test::random_state(km.model, rng, q.data(), v.data());
    q[0] = 0.8 * uniform(rng) / 0.3;  // within ±0.8 m of the origin: the feet over the grid
    q[1] = 0.8 * uniform(rng) / 0.3;
    kern::Workspace<double> ws;
    kern::ContactScratch<double> cs;
    kinematics(q.data(), ws, cs);
    ASSERT_EQ(cs.n, m.ncon);
    ASSERT_EQ(cs.nj, cs.n);  // a spin row each
    Vec Jbar(kern::solve_rows(cs) * MaxDims::kChain, 0.0), gbar(cs.n);
    for (int r = 0; r < kern::solve_rows(cs); ++r) {
      const int b = kern::row_block(cs, r);
      ASSERT_EQ(cs.nd[b], 9);  // a foot's chain: the base's 6 dofs and its leg's 3
      for (int t = 0; t < cs.nd[b]; ++t) Jbar[r * MaxDims::kChain + t] = normal(rng);
    }
    for (double& x : gbar) x = normal(rng);
    auto loss = [&]() {
      kern::Workspace<double> w2;
      kern::ContactScratch<double> c2;
      kinematics(q.data(), w2, c2);
      return dot_rows(Jbar, c2) + dot(gbar, c2.gap);
    };
    kern::AdjWorkspace<double> aw;
    kern::adj_clear(m, aw);
    Vec gq(nq, 0.0), fd(nq);
    kern::adj_contact_kinematics(m, ws, cs, q.data(), ground, Jbar.data(), gbar.data(), gq.data(), aw);
    kern::adj_forward_kinematics(m, q.data(), ws, gq.data(), aw);
    for (int k = 0; k < nq; ++k) fd[k] = test::central(loss, q[k], 1e-6);
    expect_gradient(gq, fd, 1e-6, "q");
  }
  }
}

// P_n = h max(k_n (−g) − k_d min(v_n, 0), 0), v_n = J_n v_k, k_d = 2ζ sqrt(k_n / G_nn) or given:
// three penetrating contacts, two approaching (damped) and one separating.
TEST(ContactAdjoint, SoftNormalImpulsesMatchFiniteDifferences) {
  const test::KernelModel km("anymal_c.json");
  const kern::ModelView<double>& m = km.m;
  constexpr int C = MaxDims::kChain;
  const int nv = m.nv, n = 3, nr = 3 * n;
  std::mt19937 rng(37);
  std::normal_distribution<double> normal(0, 1);
  const double h = 0.005, zeta = 0.8;
  for (const double kd_given : {-1.0, 40.0}) {
    kern::ContactScratch<double> cs;
    cs.n = n;
    cs.nj = 0;
    for (int i = 0; i < n; ++i) kern::contact_chain(m, m.con_body[i], cs, i);  // three feet
    for (int r = 0; r < nr; ++r)
      for (int t = 0; t < C; ++t) cs.J[r * C + t] = t < cs.nd[r / 3] ? 0.3 * normal(rng) : 0.0;
    for (int k = 0; k < nr * nr; ++k) cs.G[k] = 0.1 * normal(rng);
    Vec v_k(nv), Pbar(n), gnn(n);
    for (double& x : v_k) x = normal(rng);
    for (double& x : Pbar) x = normal(rng);
    double kn = 2e4;
    for (int i = 0; i < n; ++i) {
      cs.gap[i] = -0.002 * (i + 1);
      cs.G[3 * i * nr + 3 * i] = 2.0 + i;
    }
    // v_n = −0.3, −0.3, +0.3 (contacts 0 and 1 approach, 2 separates): v_k projected onto each
    // normal row's constraint in turn until all hold
    for (int it = 0; it < 50; ++it)
      for (int i = 0; i < n; ++i) {
        const double* Jn = cs.J + 3 * i * C;
        double jj = 0;
        for (int t = 0; t < C; ++t) jj += Jn[t] * Jn[t];
        const double vn = kern::chain_dot(cs, i, Jn, v_k.data()), target = i < 2 ? -0.3 : 0.3;
        kern::chain_axpy(cs, i, (target - vn) / jj, Jn, v_k.data());
      }
    auto loss = [&]() {
      kern::soft_normal_impulses(v_k.data(), cs, h, kn, kd_given, zeta);
      double L = 0;
      for (int i = 0; i < n; ++i) L += Pbar[i] * cs.P[3 * i];
      return L;
    };
    loss();
    for (int i = 0; i < n; ++i) ASSERT_GT(cs.P[3 * i], 0);
    Vec adj_gap(n, 0.0), adj_J(nr * C, 0.0), adj_v(nv, 0.0), adj_gnn(n, 0.0);
    double adj_kn = 0;
    kern::adj_soft_normal_impulses(v_k.data(), cs, h, kn, kd_given, zeta, Pbar.data(), adj_gap.data(),
                                   adj_J.data(), adj_v.data(), adj_gnn.data(), adj_kn);
    const double eps = 1e-7;
    Vec fd_gap(n), fd_J(nr * C), fd_v(nv), fd_gnn(n);
    for (int i = 0; i < n; ++i) {
      fd_gap[i] = test::central(loss, cs.gap[i], eps);
      fd_gnn[i] = test::central(loss, cs.G[3 * i * nr + 3 * i], eps);
    }
    for (int k = 0; k < nr * C; ++k) fd_J[k] = test::central(loss, cs.J[k], eps);
    for (int d = 0; d < nv; ++d) fd_v[d] = test::central(loss, v_k[d], eps);
    const Vec fd_kn{test::central(loss, kn, 1e-3)};
    expect_gradient(adj_gap, fd_gap, 1e-6, "gap");
    expect_gradient(adj_J, fd_J, 1e-6, "J");
    expect_gradient(adj_v, fd_v, 1e-6, "v_k");
    expect_gradient(Vec{adj_kn}, fd_kn, 1e-6, "k_n", 1e-5);  // ∂P_n/∂k_n = h (−g) ~ 1e-5
    if (kd_given < 0) {
      expect_gradient(adj_gnn, fd_gnn, 1e-6, "G_nn");
    } else {
      for (double x : adj_gnn) EXPECT_EQ(x, 0);
    }
  }
}

// A three-contact impulse solve built around a chosen solution: contact 0 sticking (γ_0 = 0),
// contact 1 sliding (P_t = −μ P_n u with γ_t = s u, γ_n = 0), contact 2 separated (P = 0,
// γ_n > 0; with given normal impulses sticking instead: a given P_n = 0 is a switch);
// c = γ − (W ∘ G) P for a random positive definite G, and a random seed P̄.
struct ChosenSolve {
  static constexpr int n = 3, nr = 3 * n;
  bool gated, fixed_normal;
  kern::ContactScratch<double> cs;
  double mu = 0.5;
  Vec given = Vec(n), Pbar = Vec(nr);
  double P_target[nr];
  ChosenSolve(bool gated_, bool fixed_normal_) : gated(gated_), fixed_normal(fixed_normal_) {
    std::mt19937 rng(41 + 2 * gated + fixed_normal);
    std::normal_distribution<double> normal(0, 1);
    cs.n = n;
    cs.nj = 0;
    double A[nr][nr];
    for (auto& row : A)
      for (double& x : row) x = 0.4 * normal(rng);
    for (int r = 0; r < nr; ++r)
      for (int s = 0; s < nr; ++s) {
        double g = r == s ? 0.5 : 0.0;
        for (int k = 0; k < nr; ++k) g += A[r][k] * A[s][k];
        cs.G[r * nr + s] = g;
      }
    for (int i = 0; i < n; ++i) cs.w[i] = gated ? 0.3 + 0.2 * i : 1.0;
    const double target[nr] = {1.0, 0.1, -0.05, 0.8, -mu * 0.8 * 0.6, -mu * 0.8 * 0.8, 0, 0, 0};
    double gamma[nr] = {0, 0, 0, 0, 0.3 * 0.6, 0.3 * 0.8, 0.4, 0.1, -0.2};
    std::copy(target, target + nr, P_target);
    if (fixed_normal) {
      const double sticking[3] = {0.6, -0.05, 0.12};
      for (int a = 0; a < 3; ++a) {
        P_target[6 + a] = sticking[a];
        gamma[6 + a] = 0;
      }
    }
    for (int r = 0; r < nr; ++r) {
      double g = gamma[r];
      for (int s = 0; s < nr; ++s) g -= (s / 3 == r / 3 ? 1.0 : cs.w[s / 3]) * cs.G[r * nr + s] * P_target[s];
      cs.c[r] = g;
    }
    for (int i = 0; i < n; ++i) given[i] = P_target[3 * i];
    for (double& x : Pbar) x = normal(rng);
  }
  // The converged solve of cs (given normal impulses from `given`).
  void solve() {
    if (fixed_normal)
      for (int i = 0; i < n; ++i) cs.P[3 * i] = given[i];
    double residual = 0;
    kern::pgs_solve(cs, mu, fixed_normal, 100000, 1e-15, &residual);
    EXPECT_LT(residual, 1e-12);
  }
  // The implicit adjoint of L = ⟨P̄, P⟩ at the converged solve: c̄ (= γ̄), Ḡ = W ∘ (γ̄ Pᵀ), μ̄,
  // w̄ (gated) and the given normal impulses' adjoint (fixed_normal).
  struct Adjoint {
    Vec c, G, w, pn;
    double mu = 0;
  };
  Adjoint adjoint() {
    solve();
    for (int r = 0; r < nr; ++r)
      EXPECT_NEAR(cs.P[r], P_target[r], 1e-10) << "the solve found another solution, row " << r;
    kern::PgsAdjoint<double> pa;
    kern::adj_pgs_setup(cs, mu, fixed_normal, pa);
    Adjoint a{Vec(nr), Vec(nr * nr), Vec(n, 0.0), Vec(n, 0.0)};
    EXPECT_TRUE(kern::adj_pgs_solve(cs, mu, fixed_normal, pa, Pbar.data(), a.c.data(), gated ? a.w.data() : nullptr,
                                    a.mu, a.pn.data()));
    EXPECT_EQ(pa.cls[0], kern::kSticking);
    EXPECT_EQ(pa.cls[1], kern::kSliding);
    EXPECT_EQ(pa.cls[2], fixed_normal ? kern::kSticking : kern::kSeparated);
    for (int r = 0; r < nr; ++r)
      for (int s = 0; s < nr; ++s) a.G[r * nr + s] = (s / 3 == r / 3 ? 1.0 : cs.w[s / 3]) * a.c[r] * cs.P[s];
    return a;
  }
};

// L = ⟨P̄, P⟩ through adj_pgs_setup / adj_pgs_solve against central differences of the
// converged solve in c, G (every symmetric pair G_rs = G_sr together: pgs_solve takes G
// symmetric, so the pair's derivative is Ḡ_rs + Ḡ_sr), μ, the gates w (smooth) and the given
// normal impulses (soft).
void expect_impulse_solve_matches_fd(bool gated, bool fixed_normal) {
  ChosenSolve S(gated, fixed_normal);
  const ChosenSolve::Adjoint adj = S.adjoint();
  const int n = S.n, nr = S.nr;
  auto loss = [&]() {
    S.solve();
    return dot(S.Pbar, S.cs.P);
  };
  Vec fd_c(nr), fd_G, adj_G;
  const double eps = 1e-7;
  for (int r = 0; r < nr; ++r) fd_c[r] = test::central(loss, S.cs.c[r], eps);
  for (int r = 0; r < nr; ++r)
    for (int s = r; s < nr; ++s) {
      double& g_rs = S.cs.G[r * nr + s];
      double& g_sr = S.cs.G[s * nr + r];
      const double g = g_rs;
      auto pair = [&](double x) {
        g_rs = g_sr = x;
        const double L = loss();
        g_rs = g_sr = g;
        return L;
      };
      fd_G.push_back((pair(g + eps) - pair(g - eps)) / (2 * eps));
      adj_G.push_back(r == s ? adj.G[r * nr + r] : adj.G[r * nr + s] + adj.G[s * nr + r]);
    }
  expect_gradient(adj.c, fd_c, 1e-6, "c");
  expect_gradient(adj_G, fd_G, 1e-6, "G");
  expect_gradient(Vec{adj.mu}, Vec{test::central(loss, S.mu, eps)}, 1e-6, "mu");
  if (gated) {
    Vec fd_w(n);
    for (int i = 0; i < n; ++i) fd_w[i] = test::central(loss, S.cs.w[i], eps);
    expect_gradient(adj.w, fd_w, 1e-6, "w");
  }
  if (fixed_normal) {
    Vec fd_pn(n);
    for (int i = 0; i < n; ++i) fd_pn[i] = test::central(loss, S.given[i], eps);
    expect_gradient(adj.pn, fd_pn, 1e-6, "given P_n");
  }
}

TEST(ContactAdjoint, ImpulseSolveMatchesFiniteDifferences) {
  for (bool gated : {false, true})
    for (bool fixed_normal : {false, true}) {
      if (gated && fixed_normal) continue;  // soft contact has no gates
      SCOPED_TRACE(std::string(gated ? "gated" : "hard") + (fixed_normal ? ", given normals" : ""));
      expect_impulse_solve_matches_fd(gated, fixed_normal);
    }
}

// The cross-check of the implicit adjoint (docs/contact.md, "The adjoint of the contact solve"): the derivative of the solver's own
// iterations (pgs_solve on dual numbers, `sweeps` sweeps from the cold start), along a random
// direction in c, G, μ, w and the given normal impulses, against the implicit adjoint's
// ⟨adjoint, direction⟩ on the chosen problem. Returns |unrolled − implicit| / |implicit| and
// the solve's residual after those sweeps.
struct UnrolledError {
  double relative, residual;
};
UnrolledError unrolled_vs_implicit(ChosenSolve& S, const ChosenSolve::Adjoint& adj, int sweeps) {
  const int n = S.n, nr = S.nr;
  std::mt19937 rng(7);
  std::normal_distribution<double> normal(0, 1);
  kern::ContactScratch<Dual> cs;
  cs.n = n;
  cs.nj = 0;
  double implicit = 0;
  auto seed = [&](double x, double adjoint) {
    const double dx = normal(rng);
    implicit += adjoint * dx;
    return Dual(x, dx);
  };
  for (int r = 0; r < nr; ++r) cs.c[r] = seed(S.cs.c[r], adj.c[r]);
  for (int r = 0; r < nr; ++r)  // a symmetric direction in G (pgs_solve takes G symmetric)
    for (int s = r; s < nr; ++s) {
      cs.G[r * nr + s] = seed(S.cs.G[r * nr + s], r == s ? adj.G[r * nr + r] : adj.G[r * nr + s] + adj.G[s * nr + r]);
      cs.G[s * nr + r] = cs.G[r * nr + s];
    }
  for (int i = 0; i < n; ++i) {
    cs.w[i] = S.gated ? seed(S.cs.w[i], adj.w[i]) : Dual(S.cs.w[i]);
    if (S.fixed_normal) cs.P[3 * i] = seed(S.given[i], adj.pn[i]);
  }
  const Dual mu = seed(S.mu, adj.mu);
  Dual residual;
  kern::pgs_solve(cs, mu, S.fixed_normal, sweeps, Dual(0), &residual);
  double unrolled = 0;
  for (int r = 0; r < nr; ++r) unrolled += S.Pbar[r] * cs.P[r].d;
  return {std::abs(unrolled - implicit) / std::abs(implicit), residual.v};
}

// The unrolled derivative converges to the implicit adjoint as the solver converges (to 1e-9
// relative), and is far from it after one sweep: the implicit adjoint is the limit of what
// differentiating the iterations gives, without storing them. The error against the sweep
// count goes to docs/gradients.md ("Why implicit"); `ctest --preset release -R Unrolled -V`
// prints it.
TEST(ContactAdjoint, ImplicitAdjointIsTheLimitOfTheUnrolledSolver) {
  for (bool gated : {false, true})
    for (bool fixed_normal : {false, true}) {
      if (gated && fixed_normal) continue;
      const std::string name = std::string(gated ? "gated" : "hard") + (fixed_normal ? ", given normals" : "");
      SCOPED_TRACE(name);
      ChosenSolve S(gated, fixed_normal);
      const ChosenSolve::Adjoint adj = S.adjoint();
      std::printf("%-20s sweeps: relative error of the unrolled derivative (solve residual [m/s])\n", name.c_str());
      for (int sweeps : {1, 2, 4, 8, 16, 32, 64}) {
        const UnrolledError e = unrolled_vs_implicit(S, adj, sweeps);
        std::printf("  %3d: %.1e (%.1e)\n", sweeps, e.relative, e.residual);
        if (sweeps == 1) EXPECT_GT(e.relative, 1e-3);
      }
      const UnrolledError converged = unrolled_vs_implicit(S, adj, 1000);
      EXPECT_LT(converged.residual, 1e-13);
      EXPECT_LT(converged.relative, 1e-9);
    }
}

}  // namespace
}  // namespace moreau
