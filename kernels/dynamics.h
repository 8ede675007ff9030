// moreau kernels — rigid-body dynamics in reduced coordinates (Featherstone, RBDA):
// forward kinematics, recursive Newton–Euler (RNEA), composite-rigid-body mass matrix
// (CRBA) and its branch-sparse H = Lᵀ L factorisation (RBDA §6.5).
#pragma once

#include "kernels/joints.h"

namespace moreau {
namespace kern {

// Per-environment scratch (registers/local memory on the GPU, stack on the CPU).
template <class S>
struct Workspace {
  Transform<S> Xup[kMaxBodies];  // parent → body
  Inertia<S> I[kMaxBodies];      // body inertias (body coordinates)
  Motion<S> Sdof[kMaxNv];        // motion subspace column of each dof (its body's coordinates)
  Motion<S> vel[kMaxBodies];
  Motion<S> acc[kMaxBodies];
  Force<S> f[kMaxBodies];
  Inertia<S> Ic[kMaxBodies];     // composite inertias
  S H[kMaxNv * kMaxNv];          // mass matrix, row stride nv; after factorisation L (lower)
};

// Body inertias; `added_base_mass` goes to body 0 at its centre of mass.
template <class S>
MOREAU_HD void body_inertias(const ModelView<S>& m, S added_base_mass, Workspace<S>& ws) {
  for (int i = 0; i < m.nbody; ++i) {
    const S* I6 = m.body_inertia + 6 * i;
    S mass = m.body_mass[i] + (i == 0 ? added_base_mass : S(0));
    ws.I[i] = inertia_from_com(mass, vec3(m.body_com + 3 * i), Sym3<S>{I6[0], I6[1], I6[2], I6[3], I6[4], I6[5]});
  }
}

// Xup and motion subspaces at configuration q.
template <class S>
MOREAU_HD void forward_kinematics(const ModelView<S>& m, const S* q, Workspace<S>& ws) {
  for (int i = 0; i < m.nbody; ++i) {
    ws.Xup[i] = joint_transform(m, i, q);
    const int d = m.jnt_dofadr[i], n = joint_nv(m.jnt_type[i]);
    for (int k = 0; k < n; ++k) ws.Sdof[d + k] = joint_motion(m, i, k, ws.Xup[i]);
  }
}

// τ = RNEA(q, v, v̇) = H(q) v̇ + b(q, v), gravity included; v̇ may be null (= 0, giving b).
// Needs forward_kinematics and body_inertias at q.
template <class S>
MOREAU_HD void rnea(const ModelView<S>& m, const S* v, const S* vdot, Workspace<S>& ws, S* tau_out) {
  // forward pass over bodies: v_i = X v_λ + S q̇;  a_i = X a_λ + S q̈ + c_J + v_i × S q̇;
  // f_i = I a_i + v_i ×* I v_i. The world accelerates at −g (gravity as a fictitious force).
  const Motion<S> a_world{{0, 0, 0}, {-m.gravity[0], -m.gravity[1], -m.gravity[2]}};
  for (int i = 0; i < m.nbody; ++i) {
    const int par = m.body_parent[i], d = m.jnt_dofadr[i], n = joint_nv(m.jnt_type[i]);
    const Transform<S>& X = ws.Xup[i];
    Motion<S> vJ{{0, 0, 0}, {0, 0, 0}}, aJ = joint_bias(m, i, v, X);
    for (int k = 0; k < n; ++k) {
      vJ += v[d + k] * ws.Sdof[d + k];
      if (vdot) aJ += vdot[d + k] * ws.Sdof[d + k];
    }
    ws.vel[i] = par < 0 ? vJ : apply(X, ws.vel[par]) + vJ;
    ws.acc[i] = apply(X, par < 0 ? a_world : ws.acc[par]) + aJ + cross_m(ws.vel[i], vJ);
    ws.f[i] = ws.I[i] * ws.acc[i] + cross_f(ws.vel[i], ws.I[i] * ws.vel[i]);
  }
  // backward pass over bodies: τ_i = Sᵀ f_i;  f_λ += Xᵀ f_i
  for (int i = m.nbody - 1; i >= 0; --i) {
    const int par = m.body_parent[i], d = m.jnt_dofadr[i], n = joint_nv(m.jnt_type[i]);
    for (int k = 0; k < n; ++k) tau_out[d + k] = dot(ws.f[i], ws.Sdof[d + k]);
    if (par >= 0) ws.f[par] += apply_t(ws.Xup[i], ws.f[i]);
  }
}

// H(q) by the composite-rigid-body algorithm, full (both triangles), plus armature and
// `diag_extra[k]` on the diagonal (may be null). Needs forward_kinematics and body_inertias.
template <class S>
MOREAU_HD void crba(const ModelView<S>& m, const S* diag_extra, Workspace<S>& ws) {
  const int nv = m.nv;
  for (int i = 0; i < m.nbody; ++i) ws.Ic[i] = ws.I[i];
  // backward pass over bodies: I^c_λ += Xᵀ I^c_i X
  for (int i = m.nbody - 1; i >= 0; --i)
    if (m.body_parent[i] >= 0) ws.Ic[m.body_parent[i]] += transform_t(ws.Xup[i], ws.Ic[i]);
  for (int k = 0; k < nv * nv; ++k) ws.H[k] = 0;
  for (int i = 0; i < m.nbody; ++i) {
    const int di = m.jnt_dofadr[i], ni = joint_nv(m.jnt_type[i]);
    for (int a = di; a < di + ni; ++a) {
      // F = I^c_i S_a, carried to each ancestor j: H_ab = F · S_b for the dofs b of j
      Force<S> F = ws.Ic[i] * ws.Sdof[a];
      for (int b = di; b < di + ni; ++b) ws.H[a * nv + b] = dot(F, ws.Sdof[b]);
      for (int j = i; m.body_parent[j] >= 0;) {
        F = apply_t(ws.Xup[j], F);
        j = m.body_parent[j];
        const int dj = m.jnt_dofadr[j], nj = joint_nv(m.jnt_type[j]);
        for (int b = dj; b < dj + nj; ++b) ws.H[a * nv + b] = ws.H[b * nv + a] = dot(F, ws.Sdof[b]);
      }
    }
  }
  for (int k = 0; k < nv; ++k) ws.H[k * nv + k] += m.dof_armature[k] + (diag_extra ? diag_extra[k] : S(0));
}

// In-place H = Lᵀ L exploiting branch-induced sparsity (L_kj ≠ 0 only for j an ancestor
// dof of k, via dof_parent). Uses and overwrites the lower triangle. False if H is not
// positive definite.
template <class S>
MOREAU_HD bool ltl_factor(const ModelView<S>& m, S* H) {
  const int nv = m.nv;
  const int* lambda = m.dof_parent;
  for (int k = nv - 1; k >= 0; --k) {
    S d = H[k * nv + k];
    if (!(d > 0)) return false;
    d = msqrt(d);
    H[k * nv + k] = d;
    for (int i = lambda[k]; i >= 0; i = lambda[i]) H[k * nv + i] /= d;
    for (int i = lambda[k]; i >= 0; i = lambda[i])
      for (int j = i; j >= 0; j = lambda[j]) H[i * nv + j] -= H[k * nv + i] * H[k * nv + j];
  }
  return true;
}

// x ← L⁻ᵀ x (solves Lᵀ y = x), from the leaves up.
template <class S>
MOREAU_HD void ltl_solve_t(const ModelView<S>& m, const S* L, S* x) {
  const int nv = m.nv;
  for (int i = nv - 1; i >= 0; --i) {
    x[i] /= L[i * nv + i];
    for (int j = m.dof_parent[i]; j >= 0; j = m.dof_parent[j]) x[j] -= L[i * nv + j] * x[i];
  }
}

// x ← L⁻¹ x (solves L y = x), from the root down.
template <class S>
MOREAU_HD void ltl_solve_l(const ModelView<S>& m, const S* L, S* x) {
  const int nv = m.nv;
  for (int i = 0; i < nv; ++i) {
    for (int j = m.dof_parent[i]; j >= 0; j = m.dof_parent[j]) x[i] -= L[i * nv + j] * x[j];
    x[i] /= L[i * nv + i];
  }
}

// x ← H⁻¹ x = L⁻¹ L⁻ᵀ x with H = Lᵀ L from ltl_factor.
template <class S>
MOREAU_HD void ltl_solve(const ModelView<S>& m, const S* L, S* x) {
  ltl_solve_t(m, L, x);
  ltl_solve_l(m, L, x);
}

}  // namespace kern
}  // namespace moreau
