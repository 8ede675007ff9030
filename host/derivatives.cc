// moreau host — analytic derivatives of RNEA and forward dynamics through the kernels/
// reverse sweeps, and the transition Jacobians of a control step through step_adjoint_rows (on
// the simulator's device; the seeds and the assembly of A and B on the host).
#include "moreau/derivatives.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "host/arg_check.h"
#include "host/backend.h"
#include "kernels/dynamics.h"
#include "moreau/dynamics.h"

namespace moreau {
namespace {

using MatX = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapX = Eigen::Map<MatX>;

// The model packed in double with its kernel view; workspaces on the heap (they are large).
struct HostModel {
  PackedModel<double> packed;
  kern::ModelView<double> m;
  std::unique_ptr<kern::Workspace<double>> ws = std::make_unique<kern::Workspace<double>>();
  std::unique_ptr<kern::AdjWorkspace<double>> aw = std::make_unique<kern::AdjWorkspace<double>>();
  explicit HostModel(const Model& model) : packed(model), m(packed.view(packed.reals.data(), packed.ints.data())) {}
};

// dtau_dq (nv x nq raw) and dtau_dv (nv x nv), either may be null.
void rnea_rows(const Model& model, const double* q, const double* v, const double* a, double* dtau_dq,
               double* dtau_dv, double* tau_out) {
  const int nq = model.nq, nv = model.nv;
  HostModel h(model);
  kern::Workspace<double>& ws = *h.ws;
  kern::body_inertias(h.m, 0.0, ws);
  kern::forward_kinematics(h.m, q, ws);
  std::vector<double> tau(nv), tau_adj(nv, 0.0), adj_q(nq), adj_v(nv);
  kern::rnea(h.m, v, a, ws, tau.data());  // leaves vel/acc/f for the reverse sweeps
  if (tau_out) std::copy(tau.begin(), tau.end(), tau_out);
  // row i: the reverse sweep with τ̄ = e_i gives (∂τ_i/∂q, ∂τ_i/∂v)
  for (int i = 0; i < nv; ++i) {
    std::fill(adj_q.begin(), adj_q.end(), 0.0);
    std::fill(adj_v.begin(), adj_v.end(), 0.0);
    tau_adj[i] = 1;
    kern::adj_clear(h.m, *h.aw);
    kern::adj_rnea(h.m, v, a, ws, adj_v.data(), static_cast<double*>(nullptr), tau_adj.data(), *h.aw);
    kern::adj_forward_kinematics(h.m, q, ws, adj_q.data(), *h.aw);
    tau_adj[i] = 0;
    if (dtau_dq) std::copy(adj_q.begin(), adj_q.end(), dtau_dq + static_cast<size_t>(i) * nq);
    if (dtau_dv) std::copy(adj_v.begin(), adj_v.end(), dtau_dv + static_cast<size_t>(i) * nv);
  }
}

// out (rows x nv) = raw (rows x nq) · tangent_map(q)
void to_tangent(const Model& model, const double* q, const double* raw, int rows, double* out) {
  MatX T(model.nq, model.nv);
  tangent_map(model, q, T.data());
  MapX(out, rows, model.nv) = Eigen::Map<const MatX>(raw, rows, model.nq) * T;
}

// A simulator buffer's pointers (on its device).
template <class S>
struct Buffers {
  const S *q_in, *v_in, *u;
  S *A, *B;
};

// `count` elements on the simulator's device (a given buffer, or one of its own) and their host
// image: one and the same memory on the CPU; copied on demand with CUDA.
template <class T>
class Staged {
 public:
  Staged(Memory& mem, size_t count, const T* given = nullptr)
      : mem_(mem), count_(count), same_(mem.device() == Device::CPU), owned_(given == nullptr),
        device_(owned_ ? static_cast<T*>(mem.alloc(sizeof(T) * std::max<size_t>(count, 1))) : const_cast<T*>(given)) {
    if (!same_) host_.resize(count);
  }
  ~Staged() {
    if (owned_) mem_.release(device_);
  }
  Staged(const Staged&) = delete;
  Staged& operator=(const Staged&) = delete;
  T* device() { return device_; }
  T* host() { return same_ ? device_ : host_.data(); }
  void to_host() {
    if (!same_) mem_.download(host_.data(), device_, sizeof(T) * count_);
  }
  void to_device() {
    if (!same_) mem_.upload(device_, host_.data(), sizeof(T) * count_);
  }

 private:
  Memory& mem_;
  size_t count_;
  bool same_, owned_;
  T* device_;
  std::vector<T> host_;
};

// The adjoint rows of all output coordinates in one step_adjoint_rows call (one recompute):
// with adj_q_out/adj_v_out of row r set by `seed(r, e, aq, av)` (field-major, row r's batch
// given, zeroed), row r of environment e of A and B is `place(r, e, grad_q, grad_v, grad_u)`
// (row r's batches given); seed and place work on host images. status: device buffer.
template <class S, class Seed, class Place>
void adjoint_rows(Simulator& sim, const Buffers<S>& b, int rows, bool want_u, Seed&& seed, Place&& place,
                  int32_t* status) {
  const Model& m = sim.model();
  Memory& mem = SimulatorAccess::backend(sim).memory();
  const size_t n = sim.n_env(), sq = n * m.nq, sv = n * m.nv, su = n * m.nu;
  Staged<S> aq(mem, rows * sq), av(mem, rows * sv), gq(mem, rows * sq), gv(mem, rows * sv), gu(mem, rows * su);
  std::fill(aq.host(), aq.host() + rows * sq, S(0));
  std::fill(av.host(), av.host() + rows * sv, S(0));
  for (int r = 0; r < rows; ++r)
    for (size_t e = 0; e < n; ++e) seed(r, static_cast<int>(e), aq.host() + r * sq, av.host() + r * sv);
  aq.to_device();
  av.to_device();
  Simulator::Gradients grads;
  grads.q = gq.device();
  grads.v = gv.device();
  grads.action = want_u && m.nu > 0 ? gu.device() : nullptr;
  sim.step_adjoint_rows(b.q_in, b.v_in, b.u, rows, aq.device(), av.device(), grads, status);
  gq.to_host();
  gv.to_host();
  if (grads.action) gu.to_host();
  for (int r = 0; r < rows; ++r)
    for (size_t e = 0; e < n; ++e)
      place(r, static_cast<int>(e), gq.host() + r * sq, gv.host() + r * sv, gu.host() + r * su);
}

template <class S>
void transition_raw(Simulator& sim, const Buffers<S>& b, int32_t* status) {
  const Model& m = sim.model();
  Memory& mem = SimulatorAccess::backend(sim).memory();
  const int n = sim.n_env(), nq = m.nq, nv = m.nv, nu = m.nu, N = nq + nv;
  Staged<S> A(mem, static_cast<size_t>(n) * N * N, b.A), B(mem, b.B ? static_cast<size_t>(n) * N * nu : 0, b.B);
  auto seed = [&](int r, int e, S* aq, S* av) { (r < nq ? aq[r * n + e] : av[(r - nq) * n + e]) = 1; };
  auto place = [&](int r, int e, const S* gq, const S* gv, const S* gu) {
    S* row = A.host() + (static_cast<size_t>(e) * N + r) * N;
    for (int c = 0; c < nq; ++c) row[c] = gq[c * n + e];
    for (int c = 0; c < nv; ++c) row[nq + c] = gv[c * n + e];
    if (b.B)
      for (int c = 0; c < nu; ++c) B.host()[(static_cast<size_t>(e) * N + r) * nu + c] = gu[c * n + e];
  };
  adjoint_rows(sim, b, N, b.B != nullptr, seed, place, status);
  A.to_device();
  if (b.B) B.to_device();
}

template <class S>
void transition_tangent(Simulator& sim, const Buffers<S>& b, int32_t* status) {
  const Model& m = sim.model();
  Memory& mem = SimulatorAccess::backend(sim).memory();
  const int n = sim.n_env(), nq = m.nq, nv = m.nv, nu = m.nu, N = 2 * nv;
  Staged<S> A(mem, static_cast<size_t>(n) * N * N, b.A), B(mem, b.B ? static_cast<size_t>(n) * N * nu : 0, b.B);
  Staged<S> q_in(mem, static_cast<size_t>(n) * nq, b.q_in), q_out(mem, static_cast<size_t>(n) * nq),
      v_out(mem, static_cast<size_t>(n) * nv);
  Staged<int32_t> st_fwd(mem, n, status), st_adj(mem, n);
  // the nominal outputs, and per environment T_in = tangent_map(q_in), P_out = pinv(tangent_map(q_out))
  sim.step_pure(b.q_in, b.v_in, b.u, q_out.device(), v_out.device(), st_fwd.device());
  q_in.to_host();
  q_out.to_host();
  // their nonzeros (k, c, value): at most 4 per column (a quaternion), so 4 nv per matrix
  struct Entry {
    int k, c;
    double value;
  };
  std::vector<std::vector<Entry>> T_in(n), P_out(n);
  std::vector<double> qe(nq);
  MatX T(nq, nv), P(nv, nq);
  auto nonzeros = [](const MatX& M, bool transpose, std::vector<Entry>& out) {
    for (int i = 0; i < M.rows(); ++i)
      for (int j = 0; j < M.cols(); ++j)
        if (M(i, j) != 0) out.push_back(transpose ? Entry{j, i, M(i, j)} : Entry{i, j, M(i, j)});
  };
  for (int e = 0; e < n; ++e) {
    for (int k = 0; k < nq; ++k) qe[k] = static_cast<double>(q_in.host()[k * n + e]);
    tangent_map(m, qe.data(), T.data());
    nonzeros(T, false, T_in[e]);  // (k, c): ∂q_k/∂δ_c
    for (int k = 0; k < nq; ++k) qe[k] = static_cast<double>(q_out.host()[k * n + e]);
    tangent_map(m, qe.data(), T.data());
    P = T.completeOrthogonalDecomposition().pseudoInverse();
    nonzeros(P, true, P_out[e]);  // (k, c): ∂δ_c/∂q_k
  }
  // output row r < nv: the adjoint on q_out is row r of P_out; r ≥ nv: unit on v_out
  auto seed = [&](int r, int e, S* aq, S* av) {
    if (r < nv) {
      for (const Entry& x : P_out[e])
        if (x.c == r) aq[x.k * n + e] = static_cast<S>(x.value);
    } else {
      av[(r - nv) * n + e] = 1;
    }
  };
  auto place = [&](int r, int e, const S* gq, const S* gv, const S* gu) {
    S* row = A.host() + (static_cast<size_t>(e) * N + r) * N;
    double t[kMaxNv] = {};  // (∂/∂q_raw) · T_in
    for (const Entry& x : T_in[e]) t[x.c] += static_cast<double>(gq[x.k * n + e]) * x.value;
    for (int c = 0; c < nv; ++c) {
      row[c] = static_cast<S>(t[c]);
      row[nv + c] = gv[c * n + e];
    }
    if (b.B)
      for (int c = 0; c < nu; ++c) B.host()[(static_cast<size_t>(e) * N + r) * nu + c] = gu[c * n + e];
  };
  adjoint_rows(sim, b, N, b.B != nullptr, seed, place, st_adj.device());
  A.to_device();
  if (b.B) B.to_device();
  st_fwd.to_host();
  st_adj.to_host();
  for (int e = 0; e < n; ++e) st_fwd.host()[e] |= st_adj.host()[e];
  st_fwd.to_device();
}

template <class F>
void dispatch(const char* fn, Simulator& sim, const void* q_in, const void* v_in, const void* action, void* A, void* B,
              int32_t* status, F&& f) {
  require(q_in, fn, "q_in");
  require(v_in, fn, "v_in");
  require(action, fn, "action", sim.model().nu);
  require(A, fn, "A");
  require(status, fn, "status");
  if (sim.options().dtype == DType::Float64) {
    f(Buffers<double>{static_cast<const double*>(q_in), static_cast<const double*>(v_in),
                      static_cast<const double*>(action), static_cast<double*>(A), static_cast<double*>(B)});
  } else {
    f(Buffers<float>{static_cast<const float*>(q_in), static_cast<const float*>(v_in),
                     static_cast<const float*>(action), static_cast<float*>(A), static_cast<float*>(B)});
  }
}

}  // namespace

void tangent_map(const Model& model, const double* q, double* dq_ddelta) {
  require_q("tangent_map", model, q);
  require(dq_ddelta, "tangent_map", "dq_ddelta");
  const int nq = model.nq, nv = model.nv;
  MapX T(dq_ddelta, nq, nv);
  T.setZero();
  for (int i = 0; i < model.nbody; ++i) {
    int qa = model.jnt_qposadr[i], da = model.jnt_dofadr[i];
    const int type = model.jnt_type[i];
    if (type == static_cast<int>(JointType::Free)) {  // position: + δ_lin (world frame)
      for (int k = 0; k < 3; ++k) T(qa + k, da + k) = 1;
      qa += 3;
      da += 3;
    }
    if (type == static_cast<int>(JointType::Free) || type == static_cast<int>(JointType::Ball)) {
      // ∂(quat ⊗ exp(δ))/∂δ_k = quat ⊗ (0, e_k / 2)
      const double w = q[qa], x = q[qa + 1], y = q[qa + 2], z = q[qa + 3];
      const double c[3][4] = {{-x, w, z, -y}, {-y, -z, w, x}, {-z, y, -x, w}};
      for (int k = 0; k < 3; ++k)
        for (int j = 0; j < 4; ++j) T(qa + j, da + k) = 0.5 * c[k][j];
    } else {
      T(qa, da) = 1;
    }
  }
}

void rnea_derivatives(const Model& model, const double* q, const double* v, const double* a, double* dtau_dq,
                      double* dtau_dv, double* tau_out) {
  require_qv("rnea_derivatives", model, q, v);
  if (a) require_finite(a, model.nv, "rnea_derivatives", "a");  // a may be null: 0
  rnea_rows(model, q, v, a, dtau_dq, dtau_dv, tau_out);
}

void rnea_derivatives_tangent(const Model& model, const double* q, const double* v, const double* a,
                              double* dtau_dq_tangent, double* dtau_dv, double* tau_out) {
  require_qv("rnea_derivatives_tangent", model, q, v);
  if (a) require_finite(a, model.nv, "rnea_derivatives_tangent", "a");  // a may be null: 0
  std::vector<double> raw(static_cast<size_t>(model.nv) * model.nq);
  rnea_rows(model, q, v, a, raw.data(), dtau_dv, tau_out);
  if (dtau_dq_tangent) to_tangent(model, q, raw.data(), model.nv, dtau_dq_tangent);
}

void forward_dynamics_derivatives(const Model& model, const double* q, const double* v, const double* tau,
                                  double* da_dq, double* da_dv, double* da_dtau, double* a_out) {
  require_qv("forward_dynamics_derivatives", model, q, v);
  require_finite(tau, model.nv, "forward_dynamics_derivatives", "tau");
  const int nq = model.nq, nv = model.nv;
  MatX H(nv, nv);
  mass_matrix(model, q, H.data());
  Eigen::VectorXd b(nv);
  bias_forces(model, q, v, b.data());
  const Eigen::LLT<MatX> llt(H);
  if (llt.info() != Eigen::Success) throw Error(model.source + ": forward_dynamics_derivatives: H(q) is not positive definite");
  const Eigen::VectorXd a = llt.solve(Eigen::Map<const Eigen::VectorXd>(tau, nv) - b);
  if (a_out) Eigen::Map<Eigen::VectorXd>(a_out, nv) = a;
  // τ = RNEA(q, v, a) + armature a is an identity in (q, v, τ); differentiate it at a(q, v, τ):
  // H da = dτ − ∂RNEA/∂q dq − ∂RNEA/∂v dv (armature is constant).
  MatX dq(nv, nq), dv(nv, nv);
  rnea_rows(model, q, v, a.data(), dq.data(), dv.data(), nullptr);
  if (da_dq) MapX(da_dq, nv, nq) = -llt.solve(dq);
  if (da_dv) MapX(da_dv, nv, nv) = -llt.solve(dv);
  if (da_dtau) MapX(da_dtau, nv, nv) = llt.solve(MatX::Identity(nv, nv));
}

void forward_dynamics_derivatives_tangent(const Model& model, const double* q, const double* v, const double* tau,
                                          double* da_dq_tangent, double* da_dv, double* da_dtau, double* a_out) {
  require_qv("forward_dynamics_derivatives_tangent", model, q, v);
  require_finite(tau, model.nv, "forward_dynamics_derivatives_tangent", "tau");
  std::vector<double> raw(static_cast<size_t>(model.nv) * model.nq);
  forward_dynamics_derivatives(model, q, v, tau, raw.data(), da_dv, da_dtau, a_out);
  if (da_dq_tangent) to_tangent(model, q, raw.data(), model.nv, da_dq_tangent);
}

void transition_jacobians(Simulator& sim, const void* q_in, const void* v_in, const void* action, void* A, void* B,
                          int32_t* status) {
  dispatch("transition_jacobians", sim, q_in, v_in, action, A, B, status,
           [&](const auto& b) { transition_raw(sim, b, status); });
}

void transition_jacobians_tangent(Simulator& sim, const void* q_in, const void* v_in, const void* action, void* A,
                                  void* B, int32_t* status) {
  dispatch("transition_jacobians_tangent", sim, q_in, v_in, action, A, B, status,
           [&](const auto& b) { transition_tangent(sim, b, status); });
}

}  // namespace moreau
