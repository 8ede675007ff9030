// Analytic derivatives (moreau/derivatives.h) against central finite differences in double:
// RNEA and forward dynamics (raw and tangent q), and the transition Jacobians of a control step
// (against FD of step_pure and against single adjoint calls).
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#ifdef MOREAU_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

#include "moreau/derivatives.h"
#include "moreau/dynamics.h"
#include "moreau/simulator.h"
#include "support/test_util.h"

namespace moreau {
namespace {

using test::asset;
using test::central;
using Vec = std::vector<double>;

// Hamilton product r = a b, (w, x, y, z)
void quat_mul(const double* a, const double* b, double* r) {
  r[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
  r[1] = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
  r[2] = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
  r[3] = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
}

// q ⊕ δ written out independently of the library: positions add (free joint: world frame),
// quaternions ← quat ⊗ exp(δ) with exp(δ) = (cos |δ|/2, sin(|δ|/2) δ/|δ|).
Vec plus(const Model& m, const Vec& q, const double* d) {
  Vec out = q;
  for (int i = 0; i < m.nbody; ++i) {
    int qa = m.jnt_qposadr[i], da = m.jnt_dofadr[i];
    const int type = m.jnt_type[i];
    if (type == static_cast<int>(JointType::Free)) {
      for (int k = 0; k < 3; ++k) out[qa + k] += d[da + k];
      qa += 3;
      da += 3;
    }
    if (type == static_cast<int>(JointType::Free) || type == static_cast<int>(JointType::Ball)) {
      const double* w = d + da;
      const double th = std::sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
      const double s = th > 0 ? std::sin(th / 2) / th : 0.5;
      const double e[4] = {std::cos(th / 2), s * w[0], s * w[1], s * w[2]};
      quat_mul(&q[qa], e, &out[qa]);
    } else {
      out[qa] += d[da];
    }
  }
  return out;
}

// q_b ⊖ q_a: the δ with q_a ⊕ δ = q_b (quaternions: 2 log(q_a⁻¹ q_b), small angles).
Vec minus(const Model& m, const Vec& qb, const Vec& qa_) {
  Vec d(m.nv);
  for (int i = 0; i < m.nbody; ++i) {
    int qa = m.jnt_qposadr[i], da = m.jnt_dofadr[i];
    const int type = m.jnt_type[i];
    if (type == static_cast<int>(JointType::Free)) {
      for (int k = 0; k < 3; ++k) d[da + k] = qb[qa + k] - qa_[qa + k];
      qa += 3;
      da += 3;
    }
    if (type == static_cast<int>(JointType::Free) || type == static_cast<int>(JointType::Ball)) {
      const double inv[4] = {qa_[qa], -qa_[qa + 1], -qa_[qa + 2], -qa_[qa + 3]};
      double r[4];
      quat_mul(inv, &qb[qa], r);
      if (r[0] < 0)
        for (double& x : r) x = -x;
      const double sn = std::sqrt(r[1] * r[1] + r[2] * r[2] + r[3] * r[3]);
      const double k = sn > 0 ? 2 * std::atan2(sn, r[0]) / sn : 2;
      for (int j = 0; j < 3; ++j) d[da + j] = k * r[1 + j];
    } else {
      d[da] = qb[qa] - qa_[qa];
    }
  }
  return d;
}


// Column c of a row-major (rows x cols) matrix.
Vec column(const Vec& M, int rows, int cols, int c) {
  Vec out(rows);
  for (int r = 0; r < rows; ++r) out[r] = M[static_cast<size_t>(r) * cols + c];
  return out;
}

double norm2(const Vec& x) {
  double s = 0;
  for (double e : x) s += e * e;
  return s;
}

struct State {
  Vec q, v, a;
};

State random_state(const Model& m, std::mt19937& rng) {
  State s{Vec(m.nq), Vec(m.nv), Vec(m.nv)};
  test::random_state(m, rng, s.q.data(), s.v.data());
  std::normal_distribution<double> normal(0, 1);
  for (double& x : s.a) x = normal(rng);
  return s;
}

Vec rnea(const Model& m, const Vec& q, const Vec& v, const Vec& a) {
  Vec tau(m.nv);
  rnea_derivatives(m, q.data(), v.data(), a.data(), nullptr, nullptr, tau.data());
  return tau;
}

// a = H⁻¹ (τ − b), computed here independently of forward_dynamics_derivatives.
Vec forward_dynamics(const Model& m, const Vec& q, const Vec& v, const Vec& tau) {
  const int nv = m.nv;
  Eigen::MatrixXd H(nv, nv);
  mass_matrix(m, q.data(), H.data());  // symmetric: row/column order does not matter
  Eigen::VectorXd b(nv);
  bias_forces(m, q.data(), v.data(), b.data());
  const Eigen::VectorXd a = H.llt().solve(Eigen::Map<const Eigen::VectorXd>(tau.data(), nv) - b);
  return Vec(a.data(), a.data() + nv);
}

void check_rnea(const std::string& robot, unsigned seed) {
  const Model m = load_model(asset(robot));
  std::mt19937 rng(seed);
  const int nq = m.nq, nv = m.nv;
  for (int trial = 0; trial < 3; ++trial) {
    State s = random_state(m, rng);
    Vec dq(nv * nq), dv(nv * nv), dqt(nv * nv), dvt(nv * nv);
    rnea_derivatives(m, s.q.data(), s.v.data(), s.a.data(), dq.data(), dv.data());
    rnea_derivatives_tangent(m, s.q.data(), s.v.data(), s.a.data(), dqt.data(), dvt.data());
    EXPECT_EQ(dv, dvt);
    const double eps = 1e-6;
    auto f = [&] { return rnea(m, s.q, s.v, s.a); };
    for (int c = 0; c < nq; ++c)
      EXPECT_NEAR_REL(column(dq, nv, nq, c), central(f, s.q[c], eps), 1e-6, 1e-7,
                      robot + " dtau/dq column " + std::to_string(c));
    for (int c = 0; c < nv; ++c)
      EXPECT_NEAR_REL(column(dv, nv, nv, c), central(f, s.v[c], eps), 1e-6, 1e-7,
                      robot + " dtau/dv column " + std::to_string(c));
    // tangent: perturbation q ⊕ ε e_c on the manifold
    Vec delta(nv, 0.0);
    auto ft = [&] { return rnea(m, plus(m, s.q, delta.data()), s.v, s.a); };
    for (int c = 0; c < nv; ++c)
      EXPECT_NEAR_REL(column(dqt, nv, nv, c), central(ft, delta[c], eps), 1e-6, 1e-7,
                      robot + " dtau/dq tangent column " + std::to_string(c));
    EXPECT_GT(norm2(dq), 0);
    EXPECT_GT(norm2(dv), 0);
  }
}

TEST(RneaDerivatives, AnymalMatchesFiniteDifferences) { check_rnea("anymal_c.json", 1); }
TEST(RneaDerivatives, DoublePendulumMatchesFiniteDifferences) { check_rnea("double_pendulum.json", 2); }

// The value that is differentiated: RNEA(q, v, a) = (H − armature) a + b(q, v).
TEST(RneaDerivatives, ValueIsMassMatrixTimesAccelerationPlusBias) {
  const Model m = load_model(asset("anymal_c.json"));
  std::mt19937 rng(3);
  State s = random_state(m, rng);
  const int nv = m.nv;
  Vec H(nv * nv), b(nv), expected(nv);
  mass_matrix(m, s.q.data(), H.data());
  bias_forces(m, s.q.data(), s.v.data(), b.data());
  for (int i = 0; i < nv; ++i) {
    expected[i] = b[i] - m.dof_armature[i] * s.a[i];
    for (int j = 0; j < nv; ++j) expected[i] += H[i * nv + j] * s.a[j];
  }
  EXPECT_NEAR_REL(rnea(m, s.q, s.v, s.a), expected, 1e-12, 1e-10, "RNEA(q, v, a)");
}

void check_forward_dynamics(const std::string& robot, unsigned seed) {
  const Model m = load_model(asset(robot));
  std::mt19937 rng(seed);
  const int nq = m.nq, nv = m.nv;
  for (int trial = 0; trial < 3; ++trial) {
    State s = random_state(m, rng);
    Vec tau = s.a;  // random generalised forces
    Vec dq(nv * nq), dv(nv * nv), dtau(nv * nv), dqt(nv * nv), a(nv);
    forward_dynamics_derivatives(m, s.q.data(), s.v.data(), tau.data(), dq.data(), dv.data(), dtau.data(), a.data());
    forward_dynamics_derivatives_tangent(m, s.q.data(), s.v.data(), tau.data(), dqt.data(), nullptr, nullptr);
    EXPECT_NEAR_REL(a, forward_dynamics(m, s.q, s.v, tau), 1e-10, 1e-10, robot + " a");
    const double eps = 1e-6;
    auto f = [&] { return forward_dynamics(m, s.q, s.v, tau); };
    for (int c = 0; c < nq; ++c)
      EXPECT_NEAR_REL(column(dq, nv, nq, c), central(f, s.q[c], eps), 1e-6, 1e-7,
                      robot + " da/dq column " + std::to_string(c));
    for (int c = 0; c < nv; ++c) {
      EXPECT_NEAR_REL(column(dv, nv, nv, c), central(f, s.v[c], eps), 1e-6, 1e-7,
                      robot + " da/dv column " + std::to_string(c));
      EXPECT_NEAR_REL(column(dtau, nv, nv, c), central(f, tau[c], eps), 1e-6, 1e-7,
                      robot + " da/dtau column " + std::to_string(c));
    }
    Vec delta(nv, 0.0);
    auto ft = [&] { return forward_dynamics(m, plus(m, s.q, delta.data()), s.v, tau); };
    for (int c = 0; c < nv; ++c)
      EXPECT_NEAR_REL(column(dqt, nv, nv, c), central(ft, delta[c], eps), 1e-6, 1e-7,
                      robot + " da/dq tangent column " + std::to_string(c));
  }
}

TEST(ForwardDynamicsDerivatives, AnymalMatchesFiniteDifferences) { check_forward_dynamics("anymal_c.json", 4); }
TEST(ForwardDynamicsDerivatives, DoublePendulumMatchesFiniteDifferences) {
  check_forward_dynamics("double_pendulum.json", 5);
}

TEST(TangentMap, QuaternionColumnsAreOrthogonalToTheQuaternion) {
  const Model m = load_model(asset("anymal_c.json"));
  std::mt19937 rng(6);
  State s = random_state(m, rng);
  Vec T(m.nq * m.nv);
  tangent_map(m, s.q.data(), T.data());
  for (int c = 3; c < 6; ++c) {
    double d = 0;
    for (int k = 3; k < 7; ++k) d += s.q[k] * T[k * m.nv + c];
    EXPECT_NEAR(d, 0, 1e-15);
  }
}

// anymal_c airborne (no contact), base lifted 50 m, n_env = 3, float64 on the CPU.
struct Transition {
  Model model;
  Simulator sim;
  int n, nq, nv, nu, N;
  Vec q, v, u;  // field-major inputs
  Transition(DType dtype = DType::Float64)
      : model(load_model(asset("anymal_c.json"))), sim(model, options(dtype)), n(3), nq(model.nq), nv(model.nv),
        nu(model.nu), N(nq + nv), q(n * nq), v(n * nv), u(n * nu) {
    std::mt19937 rng(7);
    std::normal_distribution<double> normal(0, 1);
    Vec qe(nq), ve(nv);
    for (int e = 0; e < n; ++e) {
      test::random_state(model, rng, qe.data(), ve.data());
      qe[2] += 50;
      for (int k = 0; k < nq; ++k) q[k * n + e] = qe[k];
      for (int k = 0; k < nv; ++k) v[k * n + e] = 0.5 * ve[k];
      for (int a = 0; a < nu; ++a) u[a * n + e] = model.qpos0[model.actuator_qposadr[a]] + 0.3 * normal(rng);
    }
  }
  static SimulatorOptions options(DType dtype) {
    SimulatorOptions o;
    o.n_env = 3;
    o.dtype = dtype;
    o.n_threads = 1;
    o.contact.mode = ContactMode::None;
    return o;
  }
  // (q_out, v_out) of every environment, field-major, concatenated
  Vec step(const Vec& qi, const Vec& vi, const Vec& ui) {
    Vec qo(n * nq), vo(n * nv);
    std::vector<int32_t> st(n);
    sim.step_pure(qi.data(), vi.data(), ui.data(), qo.data(), vo.data(), st.data());
    for (int32_t s : st) EXPECT_EQ(s, 0);
    qo.insert(qo.end(), vo.begin(), vo.end());
    return qo;
  }
  // environment e's state (q then v) from a concatenated field-major output
  Vec env_state(const Vec& x, int e) const {
    Vec out(N);
    for (int k = 0; k < nq; ++k) out[k] = x[k * n + e];
    for (int k = 0; k < nv; ++k) out[nq + k] = x[n * nq + k * n + e];
    return out;
  }
  Vec env_q(const Vec& qf, int e) const {
    Vec out(nq);
    for (int k = 0; k < nq; ++k) out[k] = qf[k * n + e];
    return out;
  }
  // Central differences, column by column, of the Jacobians M (n_env blocks of rows x cols):
  // perturb(c, h) steps every environment with input coordinate c moved by h and returns the
  // concatenated outputs; coords(out, e) gives environment e's output coordinates (rows).
  void expect_columns(const Vec& M, int rows, int cols, const std::function<Vec(int, double)>& perturb,
                      const std::function<Vec(const Vec&, int)>& coords, const std::string& name) const {
    const double eps = 1e-6;
    for (int c = 0; c < cols; ++c) {
      const Vec fp = perturb(c, eps), fm = perturb(c, -eps);
      for (int e = 0; e < n; ++e) {
        const Vec dp = coords(fp, e), dm = coords(fm, e);
        Vec fd(rows);
        for (int i = 0; i < rows; ++i) fd[i] = (dp[i] - dm[i]) / (2 * eps);
        const Vec Me(M.begin() + e * rows * cols, M.begin() + (e + 1) * rows * cols);
        EXPECT_NEAR_REL(column(Me, rows, cols, c), fd, 1e-5, 1e-7,
                        name + "[" + std::to_string(e) + "] column " + std::to_string(c));
      }
    }
  }
  // the action of every environment with component c moved by h
  Vec step_action(int c, double h) {
    Vec ui = u;
    for (int e = 0; e < n; ++e) ui[c * n + e] += h;
    return step(q, v, ui);
  }
};

TEST(TransitionJacobians, MatchFiniteDifferencesOfStepPure) {
  Transition P;
  const int n = P.n, N = P.N, nq = P.nq, nu = P.nu;
  Vec A(n * N * N), B(n * N * nu);
  std::vector<int32_t> status(n, -1);
  transition_jacobians(P.sim, P.q.data(), P.v.data(), P.u.data(), A.data(), B.data(), status.data());
  for (int32_t s : status) ASSERT_EQ(s, 0);
  // perturbing coordinate c of every environment at once gives column c of each A[e]
  auto state = [&](int c, double h) {
    Vec qi = P.q, vi = P.v;
    for (int e = 0; e < n; ++e) (c < nq ? qi[c * n + e] : vi[(c - nq) * n + e]) += h;
    return P.step(qi, vi, P.u);
  };
  auto raw = [&](const Vec& out, int e) { return P.env_state(out, e); };
  P.expect_columns(A, N, N, state, raw, "A");
  P.expect_columns(B, N, nu, [&](int c, double h) { return P.step_action(c, h); }, raw, "B");
  EXPECT_GT(norm2(A), 0);
  EXPECT_GT(norm2(B), 0);
}

// Aᵀ w and Bᵀ w equal one adjoint call with (adj_q_out, adj_v_out) = w.
TEST(TransitionJacobians, TransposeTimesWeightsEqualsOneAdjoint) {
  Transition P;
  const int n = P.n, N = P.N, nq = P.nq, nv = P.nv, nu = P.nu;
  Vec A(n * N * N), B(n * N * nu);
  std::vector<int32_t> status(n);
  transition_jacobians(P.sim, P.q.data(), P.v.data(), P.u.data(), A.data(), B.data(), status.data());
  std::mt19937 rng(8);
  std::normal_distribution<double> normal(0, 1);
  Vec wq(n * nq), wv(n * nv);
  for (double& x : wq) x = normal(rng);
  for (double& x : wv) x = normal(rng);
  Vec gq(n * nq), gv(n * nv), gu(n * nu);
  Simulator::Gradients g;
  g.q = gq.data();
  g.v = gv.data();
  g.action = gu.data();
  P.sim.step_adjoint(P.q.data(), P.v.data(), P.u.data(), wq.data(), wv.data(), g, status.data());
  for (int32_t s : status) ASSERT_EQ(s, 0);
  for (int e = 0; e < n; ++e) {
    Vec w(N), Atw(N, 0.0), Btw(nu, 0.0), ge(N), gue(nu);
    for (int k = 0; k < nq; ++k) w[k] = wq[k * n + e], ge[k] = gq[k * n + e];
    for (int k = 0; k < nv; ++k) w[nq + k] = wv[k * n + e], ge[nq + k] = gv[k * n + e];
    for (int k = 0; k < nu; ++k) gue[k] = gu[k * n + e];
    for (int r = 0; r < N; ++r) {
      for (int c = 0; c < N; ++c) Atw[c] += A[(e * N + r) * N + c] * w[r];
      for (int c = 0; c < nu; ++c) Btw[c] += B[(e * N + r) * nu + c] * w[r];
    }
    EXPECT_NEAR_REL(Atw, ge, 1e-10, 1e-10, "A[" + std::to_string(e) + "]^T w");
    EXPECT_NEAR_REL(Btw, gue, 1e-10, 1e-10, "B[" + std::to_string(e) + "]^T w");
  }
}

// Tangent version: FD with q_in ⊕ ε e_c and outputs q_out ⊖ q̄_out.
TEST(TransitionJacobians, TangentMatchesManifoldFiniteDifferences) {
  Transition P;
  const int n = P.n, nq = P.nq, nv = P.nv, nu = P.nu, N = 2 * nv;
  Vec A(n * N * N), B(n * N * nu);
  std::vector<int32_t> status(n);
  transition_jacobians_tangent(P.sim, P.q.data(), P.v.data(), P.u.data(), A.data(), B.data(), status.data());
  for (int32_t s : status) ASSERT_EQ(s, 0);
  const Vec out0 = P.step(P.q, P.v, P.u);
  // tangent difference of a concatenated output from the nominal one, environment e
  auto diff = [&](const Vec& out, int e) {
    const Vec x = P.env_state(out, e), x0 = P.env_state(out0, e);
    const Vec qa(x.begin(), x.begin() + nq), qb(x0.begin(), x0.begin() + nq);
    Vec d = minus(P.model, qa, qb);
    for (int k = 0; k < nv; ++k) d.push_back(x[nq + k] - x0[nq + k]);
    return d;
  };
  auto state = [&](int c, double h) {
    Vec qi = P.q, vi = P.v;
    for (int e = 0; e < n; ++e) {
      if (c < nv) {
        Vec d(nv, 0.0);
        d[c] = h;
        const Vec qe = plus(P.model, P.env_q(P.q, e), d.data());
        for (int k = 0; k < nq; ++k) qi[k * n + e] = qe[k];
      } else {
        vi[(c - nv) * n + e] += h;
      }
    }
    return P.step(qi, vi, P.u);
  };
  P.expect_columns(A, N, N, state, diff, "tangent A");
  P.expect_columns(B, N, nu, [&](int c, double h) { return P.step_action(c, h); }, diff, "tangent B");
}

// Float32 simulators give the same Jacobians to float precision.
TEST(TransitionJacobians, Float32AgreesWithFloat64) {
  Transition P64, P32(DType::Float32);
  const int n = P64.n, N = P64.N, nu = P64.nu;
  Vec A(n * N * N), B(n * N * nu);
  std::vector<int32_t> status(n);
  transition_jacobians(P64.sim, P64.q.data(), P64.v.data(), P64.u.data(), A.data(), B.data(), status.data());
  std::vector<float> qf(P64.q.begin(), P64.q.end()), vf(P64.v.begin(), P64.v.end()), uf(P64.u.begin(), P64.u.end());
  std::vector<float> Af(A.size()), Bf(B.size());
  transition_jacobians(P32.sim, qf.data(), vf.data(), uf.data(), Af.data(), Bf.data(), status.data());
  for (int32_t s : status) ASSERT_EQ(s, 0);
  EXPECT_NEAR_REL(Vec(Af.begin(), Af.end()), A, 1e-2, 1e-3, "float32 A");
  EXPECT_NEAR_REL(Vec(Bf.begin(), Bf.end()), B, 1e-2, 1e-3, "float32 B");
}

}  // namespace
}  // namespace moreau

namespace moreau {
namespace {

// On a CUDA simulator (rows as separate passes, seeds and assembly through the host) the
// tangent transition Jacobians equal the CPU's in float32 (the Transition states, tiled to 512
// environments).
TEST(TransitionJacobians, CudaMatchesCpu) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: moreau built without CUDA or no GPU present";
#ifdef MOREAU_WITH_CUDA
  Transition P(DType::Float32);
  const int n = 512, nq = P.nq, nv = P.nv, nu = P.nu, N = 2 * nv;
  std::vector<float> q(n * nq), v(n * nv), u(n * nu);  // field-major
  for (int e = 0; e < n; ++e) {
    for (int k = 0; k < nq; ++k) q[k * n + e] = static_cast<float>(P.q[k * P.n + e % P.n]);
    for (int k = 0; k < nv; ++k) v[k * n + e] = static_cast<float>(P.v[k * P.n + e % P.n]);
    for (int k = 0; k < nu; ++k) u[k * n + e] = static_cast<float>(P.u[k * P.n + e % P.n]);
  }
  auto jacobians = [&](Device device, std::vector<float>& A, std::vector<float>& B, std::vector<int32_t>& status) {
    SimulatorOptions o = Transition::options(DType::Float32);
    o.n_env = n;
    o.n_threads = 0;
    o.device = device;
    Simulator sim(P.model, o);
    A.assign(static_cast<size_t>(n) * N * N, 0.0f);
    B.assign(static_cast<size_t>(n) * N * nu, 0.0f);
    status.assign(n, -1);
    if (device == Device::CPU) {
      transition_jacobians_tangent(sim, q.data(), v.data(), u.data(), A.data(), B.data(), status.data());
      return;
    }
    std::vector<void*> d(7);
    const size_t bytes[7] = {q.size() * 4, v.size() * 4, u.size() * 4, A.size() * 4, B.size() * 4, n * 4u, 0};
    for (int k = 0; k < 6; ++k) ASSERT_EQ(cudaMalloc(&d[k], bytes[k]), cudaSuccess);
    cudaMemcpy(d[0], q.data(), bytes[0], cudaMemcpyHostToDevice);
    cudaMemcpy(d[1], v.data(), bytes[1], cudaMemcpyHostToDevice);
    cudaMemcpy(d[2], u.data(), bytes[2], cudaMemcpyHostToDevice);
    transition_jacobians_tangent(sim, d[0], d[1], d[2], d[3], d[4], static_cast<int32_t*>(d[5]));
    cudaMemcpy(A.data(), d[3], bytes[3], cudaMemcpyDeviceToHost);
    cudaMemcpy(B.data(), d[4], bytes[4], cudaMemcpyDeviceToHost);
    cudaMemcpy(status.data(), d[5], bytes[5], cudaMemcpyDeviceToHost);
    for (int k = 0; k < 6; ++k) cudaFree(d[k]);
  };
  std::vector<float> Ac, Bc, Ag, Bg;
  std::vector<int32_t> sc, sg;
  jacobians(Device::CPU, Ac, Bc, sc);
  jacobians(Device::CUDA, Ag, Bg, sg);
  ASSERT_TRUE(test::statuses_match(sg, sc, 0.01, "CUDA vs CPU status"));
  EXPECT_NEAR_REL(Vec(Ag.begin(), Ag.end()), Vec(Ac.begin(), Ac.end()), 1e-3, 1e-3, "A CUDA vs CPU");
  EXPECT_NEAR_REL(Vec(Bg.begin(), Bg.end()), Vec(Bc.begin(), Bc.end()), 1e-3, 1e-3, "B CUDA vs CPU");
#endif
}

}  // namespace
}  // namespace moreau
