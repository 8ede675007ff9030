// Adjoints of kernels/spatial.h against finite differences, the dot-product test and (for
// quaternions) perturbations on the unit sphere; see support/adjoint_check.h.
#include "kernels/spatial.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "support/adjoint_check.h"
#include "support/test_util.h"

namespace moreau {
namespace {

using kern::Force;
using kern::Inertia;
using kern::Mat3;
using kern::Motion;
using kern::Quat;
using kern::Sym3;
using kern::Transform;
using kern::Vec3;
using test::AdjointCase;
using test::AdjointStats;
using test::load;
using test::store;
using V = std::vector<double>;

constexpr int kTrials = 6;

// One named part of an input struct: n consecutive doubles.
struct Part {
  const char* name;
  int n;
  bool affine;
  bool unit_quat = false;
};

// Builds an AdjointCase: inputs are appended (as blocks) and their offsets returned.
struct Builder {
  AdjointCase c;
  explicit Builder(std::string name) { c.name = std::move(name); }
  template <class T>
  int add(const T& v, const std::vector<Part>& parts) {
    const int off = static_cast<int>(c.x.size());
    c.x.resize(off + test::flat_size<T>());
    store(v, &c.x[off]);
    int o = off;
    for (const Part& p : parts) {
      c.blocks.push_back({p.name, o, p.n, p.affine, p.unit_quat});
      o += p.n;
    }
    EXPECT_EQ(o - off, test::flat_size<T>()) << c.name;
    return off;
  }
};

template <class T>
V flat(const T& t) {
  V y(test::flat_size<T>());
  store(t, y.data());
  return y;
}

// adj_x[off..] += a's adjoint, updated in place through the adj_ function (accumulation).
template <class T>
struct Slot {
  V& adj;
  int off;
  T val;
  Slot(V& a, int o) : adj(a), off(o), val(load<T>(&a[o])) {}
  ~Slot() { store(val, &adj[off]); }
};

struct Rand {
  std::mt19937 rng;
  std::normal_distribution<double> N{0, 1};
  explicit Rand(unsigned seed) : rng(seed) {}
  double s() { return N(rng); }
  Vec3<double> v() { return {s(), s(), s()}; }
  Mat3<double> M() {
    Mat3<double> A;
    for (double& a : A.m) a = s();
    return A;
  }
  Sym3<double> sym() { return {s(), s(), s(), s(), s(), s()}; }
  Quat<double> q() {
    double p[4];
    test::random_quat(rng, p);
    return kern::quat(p);
  }
  Motion<double> mo() { return {v(), v()}; }
  Force<double> fo() { return {v(), v()}; }
  Transform<double> X() { return {M(), v()}; }
};

const std::vector<Part> kVec{{"v", 3, true}};
const std::vector<Part> kMat{{"M", 9, true}};
const std::vector<Part> kMotion{{"w", 3, true}, {"v", 3, true}};
const std::vector<Part> kForce{{"n", 3, true}, {"f", 3, true}};
const std::vector<Part> kTransform{{"E", 9, true}, {"r", 3, true}};

void run(AdjointCase c, Rand& r, AdjointStats& stats) { test::check_adjoint(c, r.rng, stats); }

TEST(SpatialAdjoint, Dot) {
  Rand r(11);
  AdjointStats st;
  for (int t = 0; t < kTrials; ++t) {
    Builder b("dot");
    const int oa = b.add(r.v(), kVec), ob = b.add(r.v(), kVec);
    b.c.f = [=](const V& x) { return V{kern::dot(load<Vec3<double>>(&x[oa]), load<Vec3<double>>(&x[ob]))}; };
    b.c.adj = [=](const V& x, const V& w, V& adj) {
      Slot<Vec3<double>> a(adj, oa), bb(adj, ob);
      kern::adj_dot(load<Vec3<double>>(&x[oa]), load<Vec3<double>>(&x[ob]), a.val, bb.val, w[0]);
    };
    run(b.c, r, st);
  }
  test::print_stats("dot", st);
}

TEST(SpatialAdjoint, Cross) {
  Rand r(12);
  AdjointStats st;
  for (int t = 0; t < kTrials; ++t) {
    Builder b("cross");
    const int oa = b.add(r.v(), kVec), ob = b.add(r.v(), kVec);
    b.c.f = [=](const V& x) { return flat(kern::cross(load<Vec3<double>>(&x[oa]), load<Vec3<double>>(&x[ob]))); };
    b.c.adj = [=](const V& x, const V& w, V& adj) {
      Slot<Vec3<double>> a(adj, oa), bb(adj, ob);
      kern::adj_cross(load<Vec3<double>>(&x[oa]), load<Vec3<double>>(&x[ob]), a.val, bb.val, load<Vec3<double>>(&w[0]));
    };
    run(b.c, r, st);
  }
  test::print_stats("cross", st);
}

TEST(SpatialAdjoint, MatVec) {
  Rand r(13);
  AdjointStats st, st_t;
  for (int t = 0; t < kTrials; ++t) {
    for (int transposed = 0; transposed < 2; ++transposed) {
      Builder b(transposed ? "mul_t" : "mul");
      const int oA = b.add(r.M(), kMat), oa = b.add(r.v(), kVec);
      b.c.f = [=](const V& x) {
        const auto A = load<Mat3<double>>(&x[oA]);
        const auto a = load<Vec3<double>>(&x[oa]);
        return flat(transposed ? kern::mul_t(A, a) : A * a);
      };
      b.c.adj = [=](const V& x, const V& w, V& adj) {
        Slot<Mat3<double>> aA(adj, oA);
        Slot<Vec3<double>> aa(adj, oa);
        const auto A = load<Mat3<double>>(&x[oA]);
        const auto a = load<Vec3<double>>(&x[oa]);
        if (transposed)
          kern::adj_mul_t(A, a, aA.val, aa.val, load<Vec3<double>>(&w[0]));
        else
          kern::adj_mul(A, a, aA.val, aa.val, load<Vec3<double>>(&w[0]));
      };
      run(b.c, r, transposed ? st_t : st);
    }
  }
  test::print_stats("mul", st);
  test::print_stats("mul_t", st_t);
}

TEST(SpatialAdjoint, SymMatVec) {
  Rand r(14);
  AdjointStats st;
  for (int t = 0; t < kTrials; ++t) {
    Builder b("mul (Sym3)");
    const int oI = b.add(r.sym(), {{"I", 6, true}}), oa = b.add(r.v(), kVec);
    b.c.f = [=](const V& x) { return flat(load<Sym3<double>>(&x[oI]) * load<Vec3<double>>(&x[oa])); };
    b.c.adj = [=](const V& x, const V& w, V& adj) {
      Slot<Sym3<double>> aI(adj, oI);
      Slot<Vec3<double>> aa(adj, oa);
      kern::adj_mul(load<Sym3<double>>(&x[oI]), load<Vec3<double>>(&x[oa]), aI.val, aa.val, load<Vec3<double>>(&w[0]));
    };
    run(b.c, r, st);
  }
  test::print_stats("mul (Sym3)", st);
}

TEST(SpatialAdjoint, MatMulTranspose) {
  Rand r(15);
  AdjointStats st_mm, st_tr;
  for (int t = 0; t < kTrials; ++t) {
    Builder b("matmul");
    const int oA = b.add(r.M(), kMat), oB = b.add(r.M(), kMat);
    b.c.f = [=](const V& x) { return flat(load<Mat3<double>>(&x[oA]) * load<Mat3<double>>(&x[oB])); };
    b.c.adj = [=](const V& x, const V& w, V& adj) {
      Slot<Mat3<double>> aA(adj, oA), aB(adj, oB);
      kern::adj_matmul(load<Mat3<double>>(&x[oA]), load<Mat3<double>>(&x[oB]), aA.val, aB.val,
                       load<Mat3<double>>(&w[0]));
    };
    run(b.c, r, st_mm);

    Builder bt("transpose");
    const int oT = bt.add(r.M(), kMat);
    bt.c.f = [=](const V& x) { return flat(kern::transpose(load<Mat3<double>>(&x[oT]))); };
    bt.c.adj = [=](const V& x, const V& w, V& adj) {
      Slot<Mat3<double>> aT(adj, oT);
      kern::adj_transpose(load<Mat3<double>>(&x[oT]), aT.val, load<Mat3<double>>(&w[0]));
    };
    run(bt.c, r, st_tr);
  }
  test::print_stats("matmul", st_mm);
  test::print_stats("transpose", st_tr);
}

TEST(SpatialAdjoint, QuatMul) {
  Rand r(16);
  AdjointStats st;
  for (int t = 0; t < kTrials; ++t) {
    Builder b("quat_mul");
    const int oa = b.add(r.q(), {{"a", 4, true, true}}), ob = b.add(r.q(), {{"b", 4, true, true}});
    b.c.f = [=](const V& x) { return flat(load<Quat<double>>(&x[oa]) * load<Quat<double>>(&x[ob])); };
    b.c.adj = [=](const V& x, const V& w, V& adj) {
      Slot<Quat<double>> aa(adj, oa), ab(adj, ob);
      kern::adj_quat_mul(load<Quat<double>>(&x[oa]), load<Quat<double>>(&x[ob]), aa.val, ab.val,
                         load<Quat<double>>(&w[0]));
    };
    run(b.c, r, st);
  }
  test::print_stats("quat_mul", st);
}

// Unit quaternions (also perturbed on the manifold) and, ambient only, scaled ones.
Quat<double> scaled(const Quat<double>& q, double s) { return {s * q.w, s * q.x, s * q.y, s * q.z}; }

TEST(SpatialAdjoint, Normalized) {
  Rand r(17);
  AdjointStats st;
  for (int t = 0; t < 2 * kTrials; ++t) {
    const bool unit = t % 2 == 0;
    Builder b(unit ? "normalized (unit)" : "normalized (|q| = 1.7)");
    const int oq = b.add(unit ? r.q() : scaled(r.q(), 1.7), {{"q", 4, false, unit}});
    b.c.f = [=](const V& x) { return flat(kern::normalized(load<Quat<double>>(&x[oq]))); };
    b.c.adj = [=](const V& x, const V& w, V& adj) {
      Slot<Quat<double>> aq(adj, oq);
      kern::adj_normalized(load<Quat<double>>(&x[oq]), aq.val, load<Quat<double>>(&w[0]));
    };
    run(b.c, r, st);
  }
  test::print_stats("normalized", st);
}

TEST(SpatialAdjoint, QuatToMat) {
  Rand r(18);
  AdjointStats st;
  for (int t = 0; t < 2 * kTrials; ++t) {
    const bool unit = t % 2 == 0;
    Builder b(unit ? "quat_to_mat (unit)" : "quat_to_mat (|q| = 0.6)");
    const int oq = b.add(unit ? r.q() : scaled(r.q(), 0.6), {{"q", 4, false, unit}});
    b.c.f = [=](const V& x) { return flat(kern::quat_to_mat(load<Quat<double>>(&x[oq]))); };
    b.c.adj = [=](const V& x, const V& w, V& adj) {
      Slot<Quat<double>> aq(adj, oq);
      kern::adj_quat_to_mat(load<Quat<double>>(&x[oq]), aq.val, load<Mat3<double>>(&w[0]));
    };
    run(b.c, r, st);
  }
  test::print_stats("quat_to_mat", st);
}

AdjointCase quat_exp_case(const std::string& name, const Vec3<double>& w0) {
  Builder b(name);
  const int ow = b.add(w0, {{"w", 3, false}});
  b.c.f = [=](const V& x) { return flat(kern::quat_exp(load<Vec3<double>>(&x[ow]))); };
  b.c.adj = [=](const V& x, const V& w, V& adj) {
    Slot<Vec3<double>> aw(adj, ow);
    kern::adj_quat_exp(load<Vec3<double>>(&x[ow]), aw.val, load<Quat<double>>(&w[0]));
  };
  return b.c;
}

Vec3<double> with_norm(Vec3<double> u, double n) { return (n / std::sqrt(kern::dot(u, u))) * u; }

TEST(SpatialAdjoint, QuatExp) {
  Rand r(19);
  AdjointStats st;
  for (int t = 0; t < kTrials; ++t) {
    run(quat_exp_case("quat_exp", r.v()), r, st);
    run(quat_exp_case("quat_exp |w| = 3", with_norm(r.v(), 3.0)), r, st);
    // either side of the forward's Taylor branch (θ < 1e-4)
    run(quat_exp_case("quat_exp |w| = 0.9e-4", with_norm(r.v(), 0.9e-4)), r, st);
    run(quat_exp_case("quat_exp |w| = 1.1e-4", with_norm(r.v(), 1.1e-4)), r, st);
  }
  test::print_stats("quat_exp", st);
}

TEST(SpatialAdjoint, QuatExpNearZero) {
  Rand r(20);
  AdjointStats st;
  for (int t = 0; t < kTrials; ++t) {
    run(quat_exp_case("quat_exp |w| = 0", {0, 0, 0}), r, st);
    run(quat_exp_case("quat_exp |w| = 1e-6", with_norm(r.v(), 1e-6)), r, st);
  }
  test::print_stats("quat_exp (|w| <= 1e-6)", st);
  // At w = 0 the Jacobian is exactly (0; ½ 1): no NaN from θ = 0.
  Vec3<double> adj{0, 0, 0};
  kern::adj_quat_exp(Vec3<double>{0, 0, 0}, adj, Quat<double>{0.3, 1.0, -2.0, 0.5});
  EXPECT_EQ(adj.x, 0.5);
  EXPECT_EQ(adj.y, -1.0);
  EXPECT_EQ(adj.z, 0.25);
  // At |w| = 1e-6 it is ½ 1 − (1/4) w wᵀ... to O(θ²): compare with the closed form.
  const Vec3<double> w = with_norm(r.v(), 1e-6);
  const Quat<double> g{r.s(), r.s(), r.s(), r.s()};
  Vec3<double> a{0, 0, 0};
  kern::adj_quat_exp(w, a, g);
  const double t2 = kern::dot(w, w), k = 0.5 - t2 / 48, gg = -1.0 / 24;
  const Vec3<double> gv{g.x, g.y, g.z};
  const Vec3<double> expect = (-0.5 * k * g.w + gg * kern::dot(w, gv)) * w + k * gv;
  const double got[3] = {a.x, a.y, a.z}, want[3] = {expect.x, expect.y, expect.z};
  EXPECT_NEAR_REL(got, want, 3, 1e-14, 0.0, "adj_quat_exp at |w| = 1e-6");
}

TEST(SpatialAdjoint, CrossMotionForce) {
  Rand r(21);
  AdjointStats st_m, st_f;
  for (int t = 0; t < kTrials; ++t) {
    Builder b("cross_m");
    const int oa = b.add(r.mo(), kMotion), ob = b.add(r.mo(), kMotion);
    b.c.f = [=](const V& x) { return flat(kern::cross_m(load<Motion<double>>(&x[oa]), load<Motion<double>>(&x[ob]))); };
    b.c.adj = [=](const V& x, const V& w, V& adj) {
      Slot<Motion<double>> aa(adj, oa), ab(adj, ob);
      kern::adj_cross_m(load<Motion<double>>(&x[oa]), load<Motion<double>>(&x[ob]), aa.val, ab.val,
                        load<Motion<double>>(&w[0]));
    };
    run(b.c, r, st_m);

    Builder bf("cross_f");
    const int om = bf.add(r.mo(), kMotion), of = bf.add(r.fo(), kForce);
    bf.c.f = [=](const V& x) { return flat(kern::cross_f(load<Motion<double>>(&x[om]), load<Force<double>>(&x[of]))); };
    bf.c.adj = [=](const V& x, const V& w, V& adj) {
      Slot<Motion<double>> am(adj, om);
      Slot<Force<double>> af(adj, of);
      kern::adj_cross_f(load<Motion<double>>(&x[om]), load<Force<double>>(&x[of]), am.val, af.val,
                        load<Force<double>>(&w[0]));
    };
    run(bf.c, r, st_f);
  }
  test::print_stats("cross_m", st_m);
  test::print_stats("cross_f", st_f);
}

TEST(SpatialAdjoint, ApplyTransform) {
  Rand r(22);
  AdjointStats st, st_t;
  for (int t = 0; t < kTrials; ++t) {
    Builder b("apply");
    const int oX = b.add(r.X(), kTransform), om = b.add(r.mo(), kMotion);
    b.c.f = [=](const V& x) { return flat(kern::apply(load<Transform<double>>(&x[oX]), load<Motion<double>>(&x[om]))); };
    b.c.adj = [=](const V& x, const V& w, V& adj) {
      Slot<Transform<double>> aX(adj, oX);
      Slot<Motion<double>> am(adj, om);
      kern::adj_apply(load<Transform<double>>(&x[oX]), load<Motion<double>>(&x[om]), aX.val, am.val,
                      load<Motion<double>>(&w[0]));
    };
    run(b.c, r, st);

    Builder bt("apply_t");
    const int oY = bt.add(r.X(), kTransform), of = bt.add(r.fo(), kForce);
    bt.c.f = [=](const V& x) { return flat(kern::apply_t(load<Transform<double>>(&x[oY]), load<Force<double>>(&x[of]))); };
    bt.c.adj = [=](const V& x, const V& w, V& adj) {
      Slot<Transform<double>> aX(adj, oY);
      Slot<Force<double>> af(adj, of);
      kern::adj_apply_t(load<Transform<double>>(&x[oY]), load<Force<double>>(&x[of]), aX.val, af.val,
                        load<Force<double>>(&w[0]));
    };
    run(bt.c, r, st_t);
  }
  test::print_stats("apply", st);
  test::print_stats("apply_t", st_t);
}

TEST(SpatialAdjoint, Compose) {
  Rand r(23);
  AdjointStats st;
  for (int t = 0; t < kTrials; ++t) {
    Builder b("compose");
    const int obc = b.add(r.X(), kTransform), oab = b.add(r.X(), kTransform);
    b.c.f = [=](const V& x) {
      return flat(kern::compose(load<Transform<double>>(&x[obc]), load<Transform<double>>(&x[oab])));
    };
    b.c.adj = [=](const V& x, const V& w, V& adj) {
      Slot<Transform<double>> abc(adj, obc), aab(adj, oab);
      kern::adj_compose(load<Transform<double>>(&x[obc]), load<Transform<double>>(&x[oab]), abc.val, aab.val,
                        load<Transform<double>>(&w[0]));
    };
    run(b.c, r, st);
  }
  test::print_stats("compose", st);
}

TEST(SpatialAdjoint, Inertia) {
  Rand r(24);
  AdjointStats st_mul, st_com;
  for (int t = 0; t < kTrials; ++t) {
    Builder b("mul_inertia");
    const Inertia<double> I{std::fabs(r.s()) + 0.5, r.v(), r.sym()};
    const int oI = b.add(I, {{"m", 1, true}, {"h", 3, true}, {"I", 6, true}}), oa = b.add(r.mo(), kMotion);
    b.c.f = [=](const V& x) { return flat(load<Inertia<double>>(&x[oI]) * load<Motion<double>>(&x[oa])); };
    b.c.adj = [=](const V& x, const V& w, V& adj) {
      Slot<Inertia<double>> aI(adj, oI);
      Slot<Motion<double>> aa(adj, oa);
      kern::adj_mul_inertia(load<Inertia<double>>(&x[oI]), load<Motion<double>>(&x[oa]), &aI.val, aa.val,
                            load<Force<double>>(&w[0]));
    };
    run(b.c, r, st_mul);
    {  // a constant inertia (adj_I null): the same ā
      const Motion<double> a = r.mo();
      const Force<double> w{r.v(), r.v()};
      Inertia<double> adj_I{0, {0, 0, 0}, {0, 0, 0, 0, 0, 0}};
      Motion<double> full{{0, 0, 0}, {0, 0, 0}}, only_a = full;
      kern::adj_mul_inertia(I, a, &adj_I, full, w);
      kern::adj_mul_inertia(I, a, static_cast<Inertia<double>*>(nullptr), only_a, w);
      for (int k = 0; k < 3; ++k) {
        EXPECT_NEAR(only_a.w[k], full.w[k], 1e-12 * (1 + std::abs(full.w[k])));
        EXPECT_NEAR(only_a.v[k], full.v[k], 1e-12 * (1 + std::abs(full.v[k])));
      }
      EXPECT_GT(std::abs(full.w[0]) + std::abs(full.v[0]), 0);
    }

    Builder bc("inertia_from_com");
    const int om = bc.add(std::fabs(r.s()) + 0.5, {{"m", 1, true}});
    const int oc = bc.add(r.v(), {{"c", 3, false}});
    const int oIc = bc.add(r.sym(), {{"Ic", 6, true}});
    bc.c.f = [=](const V& x) {
      return flat(kern::inertia_from_com(x[om], load<Vec3<double>>(&x[oc]), load<Sym3<double>>(&x[oIc])));
    };
    bc.c.adj = [=](const V& x, const V& w, V& adj) {
      Slot<Vec3<double>> ac(adj, oc);
      Slot<Sym3<double>> aIc(adj, oIc);
      kern::adj_inertia_from_com(x[om], load<Vec3<double>>(&x[oc]), load<Sym3<double>>(&x[oIc]), adj[om], ac.val,
                                 aIc.val, load<Inertia<double>>(&w[0]));
    };
    run(bc.c, r, st_com);
  }
  test::print_stats("mul_inertia", st_mul);
  test::print_stats("inertia_from_com", st_com);
}

}  // namespace
}  // namespace moreau
