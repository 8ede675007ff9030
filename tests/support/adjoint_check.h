// Test helper for hand-written adjoints (docs/architecture.md, "Adjoints"): a function under test is seen
// as y = f(x) on flat double vectors, its adjoint as x̄ += Jᵀ w. check_adjoint compares them
// by finite differences (per coordinate, and along random directions), by the dot-product
// test ⟨w, J u⟩ = ⟨Jᵀ w, u⟩ (J u exact for inputs the function is affine in), along the
// unit-quaternion manifold q ⊕ ε δ = q exp(ε δ), checks that the adjoint accumulates (+=),
// and that gradients are non-zero.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/spatial.h"
#include "support/test_util.h"

namespace moreau::test {

// The kernel structs are plain arrays of doubles: flatten them for the checks.
template <class T>
constexpr int flat_size() {
  static_assert(sizeof(T) % sizeof(double) == 0, "not a struct of doubles");
  return static_cast<int>(sizeof(T) / sizeof(double));
}
template <class T>
T load(const double* p) {
  T t;
  std::memcpy(&t, p, sizeof(T));
  return t;
}
template <class T>
void store(const T& t, double* p) {
  std::memcpy(p, &t, sizeof(T));
}
template <class T>
void add_to(const T& t, double* p) {
  const double* s = reinterpret_cast<const double*>(&t);
  for (int k = 0; k < flat_size<T>(); ++k) p[k] += s[k];
}

// One input of the function under test: x[off, off + n).
struct InputBlock {
  std::string name;
  int off, n;
  bool affine;             // f is affine in this block given the others: J u = f(x_b = u) − f(x_b = 0)
  bool unit_quat = false;  // a unit quaternion (n = 4): also perturbed on the manifold
  bool nonzero = true;     // its gradient must be non-zero (else it must be exactly zero)
};

struct AdjointCase {
  std::string name;
  std::vector<double> x;
  std::vector<InputBlock> blocks;
  std::function<std::vector<double>(const std::vector<double>&)> f;
  // adj_x += Jᵀ w, through the adj_ function under test
  std::function<void(const std::vector<double>& x, const std::vector<double>& w, std::vector<double>& adj_x)> adj;
  double eps = 1e-3;      // step of the 5-point stencil (error O(ε⁴))
  double eps_dir = 1e-6;  // step of the central difference along random directions
};

// Largest relative errors seen, over pairs not both below the absolute floor.
struct AdjointStats {
  double fd = 0, dir = 0, dot_exact = 0, dot_fd = 0, manifold = 0;
};

inline double rel_err(double a, double b) {
  const double s = std::max(std::fabs(a), std::fabs(b));
  return s == 0 ? 0.0 : std::fabs(a - b) / s;
}

inline double inner(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t k = 0; k < a.size(); ++k) s += a[k] * b[k];
  return s;
}

// d/dε ⟨w, f(x(ε))⟩ at 0 by the 5-point stencil, x(ε) given by `at`.
inline double fd5(const std::function<std::vector<double>(double)>& f_at, const std::vector<double>& w, double h) {
  return (8 * (inner(w, f_at(h)) - inner(w, f_at(-h))) - (inner(w, f_at(2 * h)) - inner(w, f_at(-2 * h)))) /
         (12 * h);
}

inline ::testing::AssertionResult scalar_near(double a, double b, double rel, double abs_floor, const std::string& what,
                                              double* worst) {
  const double e = rel_err(a, b);
  if (std::max(std::fabs(a), std::fabs(b)) > abs_floor) *worst = std::max(*worst, e);
  if ((e <= rel || std::fabs(a - b) <= abs_floor) && std::isfinite(a) && std::isfinite(b))
    return ::testing::AssertionSuccess();
  char buf[256];
  std::snprintf(buf, sizeof buf, ": %.17g vs %.17g (relative error %.3g)", a, b, e);
  return ::testing::AssertionFailure() << what << buf;
}

inline void check_adjoint(const AdjointCase& c, std::mt19937& rng, AdjointStats& stats, double rel = 1e-6,
                          double abs_floor = 1e-10) {
  SCOPED_TRACE(c.name);
  std::normal_distribution<double> N(0, 1);
  const std::vector<double>& x = c.x;
  const int nx = static_cast<int>(x.size());
  const std::vector<double> y = c.f(x);
  std::vector<double> w(y.size());
  for (double& wi : w) wi = N(rng);

  // the adjoint, on top of random values (it must accumulate)
  std::vector<double> adj0(nx), adj;
  for (double& a : adj0) a = N(rng);
  adj = adj0;
  c.adj(x, w, adj);
  std::vector<double> g(nx);
  for (int k = 0; k < nx; ++k) {
    g[k] = adj[k] - adj0[k];
    ASSERT_TRUE(std::isfinite(g[k])) << c.name << ": gradient[" << k << "] = " << g[k];
  }

  auto along = [&](const std::vector<double>& d) {
    return [&, d](double e) {
      std::vector<double> xe = x;
      for (int k = 0; k < nx; ++k) xe[k] += e * d[k];
      return c.f(xe);
    };
  };

  // (1) per-coordinate finite differences
  std::vector<double> g_fd(nx);
  for (int k = 0; k < nx; ++k) {
    std::vector<double> e(nx, 0.0);
    e[k] = 1;
    g_fd[k] = fd5(along(e), w, c.eps);
  }
  EXPECT_NEAR_REL(g, g_fd, rel, abs_floor, c.name + ": adjoint vs finite-difference gradient");
  for (int k = 0; k < nx; ++k)
    if (std::max(std::fabs(g[k]), std::fabs(g_fd[k])) > abs_floor) stats.fd = std::max(stats.fd, rel_err(g[k], g_fd[k]));

  // (1') central differences along random directions
  for (int t = 0; t < 3; ++t) {
    std::vector<double> d(nx);
    for (double& di : d) di = N(rng);
    const auto fa = along(d);
    const double fd = (inner(w, fa(c.eps_dir)) - inner(w, fa(-c.eps_dir))) / (2 * c.eps_dir);
    EXPECT_TRUE(scalar_near(inner(g, d), fd, rel, abs_floor, c.name + ": directional derivative, direction " +
                            std::to_string(t) + " (adjoint vs central difference)", &stats.dir));
  }

  for (const InputBlock& b : c.blocks) {
    const std::string what = c.name + ", input " + b.name;
    // (2) dot-product test ⟨w, J u⟩ = ⟨Jᵀ w, u⟩ for a random u on the block
    std::vector<double> u(nx, 0.0);
    for (int k = b.off; k < b.off + b.n; ++k) u[k] = N(rng);
    double wJu;
    if (b.affine) {
      std::vector<double> xu = x, x0 = x;
      for (int k = b.off; k < b.off + b.n; ++k) {
        xu[k] = u[k];
        x0[k] = 0;
      }
      const std::vector<double> yu = c.f(xu), y0 = c.f(x0);
      wJu = 0;
      double scale = 0;  // the roundoff of yu − y0 is relative to |yu| + |y0|
      for (size_t k = 0; k < y.size(); ++k) {
        wJu += w[k] * (yu[k] - y0[k]);
        scale += std::fabs(w[k]) * (std::fabs(yu[k]) + std::fabs(y0[k]));
      }
      EXPECT_TRUE(scalar_near(wJu, inner(g, u), 1e-12, 1e-13 * scale, what + ": <w, J u> (exact) vs <J^T w, u>",
                              &stats.dot_exact));
    } else {
      wJu = fd5(along(u), w, c.eps);
      EXPECT_TRUE(scalar_near(wJu, inner(g, u), rel, abs_floor, what + ": <w, J u> (finite differences) vs <J^T w, u>",
                              &stats.dot_fd));
    }

    // (3) gradients non-zero (or exactly zero where f does not depend on the block)
    double gmax = 0;
    int kmax = b.off;
    for (int k = b.off; k < b.off + b.n; ++k)
      if (std::fabs(g[k]) > gmax) gmax = std::fabs(g[k]), kmax = k;
    if (b.nonzero) {
      EXPECT_GT(gmax, 1e-8) << what << ": gradient is zero";
    } else {
      EXPECT_EQ(gmax, 0.0) << what << ": gradient[" << kmax << "] = " << g[kmax] << ", expected 0";
    }

    // (4) on the manifold: d/dε f(q exp(ε δ)) = ⟨q̄, q (0, δ/2)⟩
    if (b.unit_quat) {
      using Q = kern::Quat<double>;
      const Q q = load<Q>(&x[b.off]);
      for (int t = 0; t < 3; ++t) {
        const kern::Vec3<double> delta{N(rng), N(rng), N(rng)};
        auto f_at = [&](double e) {
          std::vector<double> xe = x;
          store(q * kern::quat_exp(e * delta), &xe[b.off]);
          return c.f(xe);
        };
        const Q dq = q * Q{0, 0.5 * delta.x, 0.5 * delta.y, 0.5 * delta.z};
        const double adj_dir = g[b.off] * dq.w + g[b.off + 1] * dq.x + g[b.off + 2] * dq.y + g[b.off + 3] * dq.z;
        EXPECT_TRUE(scalar_near(fd5(f_at, w, c.eps), adj_dir, rel, abs_floor,
                                what + ": along q exp(e delta), direction " + std::to_string(t), &stats.manifold));
      }
    }
  }
}

inline void print_stats(const std::string& name, const AdjointStats& s) {
  std::printf("[ adjoint  ] %-28s max rel. error: fd %.2e  dir %.2e  dot(exact) %.2e  dot(fd) %.2e  manifold %.2e\n",
              name.c_str(), s.fd, s.dir, s.dot_exact, s.dot_fd, s.manifold);
}

}  // namespace moreau::test
