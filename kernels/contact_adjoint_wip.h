// WORK IN PROGRESS: adjoints of kernels/contact.h, to be moved next to their forwards.
#pragma once

#include "kernels/contact.h"

namespace moreau {
namespace kern {

// Contact parameters that carry gradients.
template <class S>
struct ContactParamAdjoint {
  S friction;
  S contact_kn;
  S smooth_k;
};

// The solve of contact_stage for `mode` (hard or smooth) at the same inputs, without applying
// it: cs gets the active set, G, c (with any bias), the gates w and the solver's P.
template <class S, class Ground>
MOREAU_HD void contact_solve(const ModelView<S>& m, const ContactSettings<S>& cfg, const Params<S>& p, int env,
                             int mode, const S* qM, S h, const Ground& ground, Workspace<S>& ws, ContactScratch<S>& cs,
                             const S* v_free) {
  S threshold = mode == kContactSmooth ? p.smooth_gmax.get(env) : (cfg.speculative ? S(10) * h : S(0));
  contact_candidates(m, ws, qM, ground, threshold, cs, static_cast<S*>(nullptr));
  if (cs.n == 0) return;
  delassus(m, ws.H, v_free, cs);
  if (mode == kContactSmooth) {
    const S k = p.smooth_k.get(env);
    for (int i = 0; i < cs.n; ++i) cs.w[i] = smooth_gate(k, cs.gap[i]);
  } else if (cfg.speculative) {
    for (int i = 0; i < cs.n; ++i) cs.c[3 * i] += mmax(cs.gap[i], S(0)) / h;
  }
  S residual;
  pgs_solve(cs, p.friction.get(env), cfg.max_iterations, cfg.tolerance, &residual);
}

// x ← A⁻¹ x for a dense n x n row-major A (overwritten), Gaussian elimination with partial
// pivoting. False if A is singular to working precision.
template <class S>
MOREAU_HD bool dense_solve(S* A, S* x, int n) {
  for (int c = 0; c < n; ++c) {
    int piv = c;
    for (int r = c + 1; r < n; ++r)
      if (mabs(A[r * n + c]) > mabs(A[piv * n + c])) piv = r;
    if (!(mabs(A[piv * n + c]) > S(1e-300))) return false;
    if (piv != c) {
      for (int k = 0; k < n; ++k) {
        const S t = A[c * n + k];
        A[c * n + k] = A[piv * n + k];
        A[piv * n + k] = t;
      }
      const S t = x[c];
      x[c] = x[piv];
      x[piv] = t;
    }
    for (int r = c + 1; r < n; ++r) {
      const S f = A[r * n + c] / A[c * n + c];
      if (f == 0) continue;
      for (int k = c; k < n; ++k) A[r * n + k] -= f * A[c * n + k];
      x[r] -= f * x[c];
    }
  }
  for (int r = n - 1; r >= 0; --r) {
    S s = x[r];
    for (int k = r + 1; k < n; ++k) s -= A[r * n + k] * x[k];
    x[r] = s / A[r * n + r];
  }
  return true;
}

// Classification of a converged contact (CONTACT.md, "Adjoint of the contact solve").
enum : int { kSeparated = 0, kSticking = 1, kSliding = 2 };

// γ = (W ∘ G) P + c at the solution, W_ij = 1 for i = j and w_j otherwise.
template <class S>
MOREAU_HD void contact_velocity(const ContactScratch<S>& cs, S* gamma) {
  const int nr = 3 * cs.n;
  for (int r = 0; r < nr; ++r) {
    const int i = r / 3;
    S g = cs.c[r];
    for (int s = 0; s < nr; ++s) g += (s / 3 == i ? S(1) : cs.w[s / 3]) * cs.G[r * nr + s] * cs.P[s];
    gamma[r] = g;
  }
}

// Implicit differentiation of the solve at its converged P (cs.P, before the gate w is
// applied). Per contact, the conditions F = 0 that fix P:
//   separated (P_n = 0):                   P_i = 0
//   sticking (P_n > 0, ‖P_t‖ < μ P_n):      γ_i = 0
//   sliding (‖P_t‖ = μ P_n, ‖γ_t‖ > 0):     γ_n = 0,  P_t + μ P_n γ_t/‖γ_t‖ = 0
// With M = ∂F/∂P, y = M⁻ᵀ P̄ and θ̄ = −(∂F/∂θ)ᵀ y for θ = c, G, w, μ. At a switch the
// contact takes the class its solution has (separated when P_n = 0; sticking unless ‖P_t‖
// reaches the cone within 1e-6 relative and the slip velocity is non-zero). False if M is
// singular (no gradient).
template <class S>
MOREAU_HD bool adj_pgs_solve(ContactScratch<S>& cs, S mu, const S* adj_P, S* adj_c, S* adj_G, S* adj_w, S& adj_mu) {
  const int n = cs.n, nr = 3 * n;
  S gamma[3 * kMaxActive], y[3 * kMaxActive];
  S M[9 * kMaxActive * kMaxActive];  // holds Mᵀ
  int cls[kMaxActive];
  contact_velocity(cs, gamma);
  const S tiny = S(1e-12);
  for (int i = 0; i < n; ++i) {
    const S* P = cs.P + 3 * i;
    const S pt = msqrt(P[1] * P[1] + P[2] * P[2]);
    const S gt = msqrt(gamma[3 * i + 1] * gamma[3 * i + 1] + gamma[3 * i + 2] * gamma[3 * i + 2]);
    cls[i] = !(P[0] > 0) ? kSeparated : (pt >= mu * P[0] * (1 - S(1e-6)) && gt > tiny ? kSliding : kSticking);
  }
  // Mᵀ[s][r] = ∂F_r/∂P_s
  for (int r = 0; r < nr; ++r) {
    const int i = r / 3, a = r % 3;
    S row[3 * kMaxActive];
    for (int s = 0; s < nr; ++s) row[s] = 0;
    if (cls[i] == kSeparated) {
      row[r] = 1;
    } else if (cls[i] == kSticking || a == 0) {  // ∂γ_r/∂P = (W ∘ G)_r
      for (int s = 0; s < nr; ++s) row[s] = (s / 3 == i ? S(1) : cs.w[s / 3]) * cs.G[r * nr + s];
    } else {  // sliding tangent row: P_ta + μ P_n u_a, u = γ_t/‖γ_t‖
      const S g1 = gamma[3 * i + 1], g2 = gamma[3 * i + 2], gt = msqrt(g1 * g1 + g2 * g2);
      const S u[2] = {g1 / gt, g2 / gt};
      const S pn = cs.P[3 * i];
      row[r] += 1;
      row[3 * i] += mu * u[a - 1];
      // μ P_n (1 − u uᵀ)/‖γ_t‖ ∂γ_t/∂P
      for (int b = 1; b < 3; ++b) {
        const S k = mu * pn * ((a == b ? S(1) : S(0)) - u[a - 1] * u[b - 1]) / gt;
        const int rb = 3 * i + b;
        for (int s = 0; s < nr; ++s) row[s] += k * (s / 3 == i ? S(1) : cs.w[s / 3]) * cs.G[rb * nr + s];
      }
    }
    for (int s = 0; s < nr; ++s) M[s * nr + r] = row[s];
  }
  // Mᵀ y = P̄ by least squares, (M Mᵀ + δ) y = M P̄, with a tiny Tikhonov term δ: redundant contacts (four
  // corners of a box on the ground) make M singular, with P̄ in its range (P̄ = w ∘ J z); the
  // minimum-norm y then gives the gradient of the unique velocities.
  S MMt[9 * kMaxActive * kMaxActive];
  S diag_max = 0;
  for (int a = 0; a < nr; ++a) {
    S b = 0;
    for (int k = 0; k < nr; ++k) b += M[k * nr + a] * adj_P[k];  // (the array M holds Mᵀ)
    y[a] = b;
    for (int c = 0; c < nr; ++c) {
      S t = 0;
      for (int k = 0; k < nr; ++k) t += M[k * nr + a] * M[k * nr + c];
      MMt[a * nr + c] = t;
    }
    diag_max = mmax(diag_max, MMt[a * nr + a]);
  }
  const S delta = diag_max * S(sizeof(S) == 4 ? 1e-7 : 1e-14);
  for (int a = 0; a < nr; ++a) MMt[a * nr + a] += delta;
  if (!dense_solve(MMt, y, nr)) return false;
  // γ̄ = −(∂F/∂γ)ᵀ y, μ̄ from the sliding rows
  S adj_gamma[3 * kMaxActive];
  for (int r = 0; r < nr; ++r) adj_gamma[r] = 0;
  for (int i = 0; i < n; ++i) {
    if (cls[i] == kSeparated) continue;
    adj_gamma[3 * i] = -y[3 * i];
    if (cls[i] == kSticking) {
      adj_gamma[3 * i + 1] = -y[3 * i + 1];
      adj_gamma[3 * i + 2] = -y[3 * i + 2];
      continue;
    }
    const S g1 = gamma[3 * i + 1], g2 = gamma[3 * i + 2], gt = msqrt(g1 * g1 + g2 * g2);
    const S u[2] = {g1 / gt, g2 / gt};
    const S pn = cs.P[3 * i];
    for (int b = 0; b < 2; ++b) {
      S acc = 0;
      for (int a = 0; a < 2; ++a) acc += ((a == b ? S(1) : S(0)) - u[a] * u[b]) * y[3 * i + 1 + a];
      adj_gamma[3 * i + 1 + b] = -mu * pn * acc / gt;
    }
    adj_mu -= pn * (u[0] * y[3 * i + 1] + u[1] * y[3 * i + 2]);
  }
  // γ = (W ∘ G) P + c
  for (int r = 0; r < nr; ++r) {
    const int i = r / 3;
    adj_c[r] += adj_gamma[r];
    if (adj_gamma[r] == 0) continue;
    for (int s = 0; s < nr; ++s) {
      const int j = s / 3;
      const S wij = j == i ? S(1) : cs.w[j];
      adj_G[r * nr + s] += wij * adj_gamma[r] * cs.P[s];
      if (j != i) adj_w[j] += adj_gamma[r] * cs.G[r * nr + s] * cs.P[s];
    }
  }
  return true;
}

// Adjoint of the contact kinematics (contact_candidates' gaps and point_jacobian's rows) for
// the active contacts: adj_J (3n x nv) and adj_gap (n) into aw.Xup, aw.Sdof and adj_qM.
template <class S>
MOREAU_HD void adj_contact_kinematics(const ModelView<S>& m, const Workspace<S>& ws, const ContactScratch<S>& cs,
                                      const S* adj_J, const S* adj_gap, S* adj_qM, AdjWorkspace<S>& aw) {
  Transform<S> X0[kMaxBodies], adj_X0[kMaxBodies];
  relative_world_transforms(m, ws, X0);
  const Mat3<S> Z{{0, 0, 0, 0, 0, 0, 0, 0, 0}};
  for (int i = 0; i < m.nbody; ++i) adj_X0[i] = {Z, {0, 0, 0}};
  for (int i = 0; i < cs.n; ++i) {
    const int k = cs.con[i], b = m.con_body[k];
    const Vec3<S> pl = vec3(m.con_pos + 3 * k);
    const Vec3<S> centre = X0[b].r + mul_t(X0[b].E, pl);
    Vec3<S> frame[3];
    frame[0] = PlaneGround<S>{}.normal(0, 0);
    tangents(frame[0], frame[1], frame[2]);
    const Vec3<S> p = centre - m.con_radius[k] * frame[0];
    Vec3<S> adj_p{0, 0, 0};
    const S* aJ = adj_J + 3 * i * m.nv;
    for (int j = b; j >= 0; j = m.body_parent[j]) {
      const int d0 = m.jnt_dofadr[j], nd = joint_nv(m.jnt_type[j]);
      for (int d = d0; d < d0 + nd; ++d) {
        // J_rd = frame_r · (E_jᵀ S.v + w × (p − o_j)), w = E_jᵀ S.w
        const Vec3<S> adj_vp = aJ[d] * frame[0] + aJ[m.nv + d] * frame[1] + aJ[2 * m.nv + d] * frame[2];
        const Vec3<S> w = mul_t(X0[j].E, ws.Sdof[d].w);
        Vec3<S> adj_w{0, 0, 0}, adj_rel{0, 0, 0};
        adj_cross(w, p - X0[j].r, adj_w, adj_rel, adj_vp);
        adj_p += adj_rel;
        adj_X0[j].r += -adj_rel;
        adj_mul_t(X0[j].E, ws.Sdof[d].v, adj_X0[j].E, aw.Sdof[d].v, adj_vp);
        adj_mul_t(X0[j].E, ws.Sdof[d].w, adj_X0[j].E, aw.Sdof[d].w, adj_w);
      }
    }
    // gap = (centre + base)·n − r on the plane; p = centre − r n
    Vec3<S> adj_centre = adj_p + adj_gap[i] * frame[0];
    if (m.jnt_type[0] == kJointFree) adj_qM[m.jnt_qposadr[0] + 2] += adj_gap[i] * frame[0].z;
    adj_X0[b].r += adj_centre;
    Vec3<S> unused{0, 0, 0};
    adj_mul_t(X0[b].E, pl, adj_X0[b].E, unused, adj_centre);
  }
  // reverse of relative_world_transforms, children first
  for (int i = m.nbody - 1; i >= 0; --i) {
    const int par = m.body_parent[i];
    if (par >= 0) {
      adj_compose(ws.Xup[i], X0[par], aw.Xup[i], adj_X0[par], adj_X0[i]);
    } else {
      aw.Xup[i].E += adj_X0[i].E;
      if (m.jnt_type[i] != kJointFree) aw.Xup[i].r += adj_X0[i].r;
    }
  }
}

// ⟨τ̄, H(q) x⟩ differentiated in q (into aw) by a reverse RNEA sweep without velocity and
// gravity: H(q) x = RNEA(q, 0, x) − g(q). Uses and overwrites ws.vel/acc/f.
template <class S>
MOREAU_HD void adj_mass_times(const ModelView<S>& m, const S* x, const S* tau_adj, Workspace<S>& ws,
                              AdjWorkspace<S>& aw) {
  ModelView<S> m0 = m;
  m0.gravity[0] = m0.gravity[1] = m0.gravity[2] = 0;
  S zero[kMaxNv], scratch[kMaxNv];
  for (int k = 0; k < m.nv; ++k) zero[k] = scratch[k] = 0;
  rnea(m0, zero, x, ws, scratch);
  for (int k = 0; k < m.nv; ++k) scratch[k] = 0;
  adj_rnea(m0, zero, x, ws, scratch, static_cast<S*>(nullptr), tau_adj, aw);
}

// Adjoint of the contact stage (hard, smooth, and hard-smooth-grad's smooth backward): cs holds
// the forward's active set, G, c (with any bias), w and the solver's P before gating; v_free
// is the velocity the stage started from. Given adj_v_next, accumulates adj_v_free, adj_qM,
// aw and the parameter adjoints. Returns status bits.
template <class S>
MOREAU_HD int adj_contact_solve(const ModelView<S>& m, const ContactSettings<S>& cfg, const Params<S>& p, int env,
                                S h, int mode, Workspace<S>& ws, ContactScratch<S>& cs, const S* v_free,
                                const S* adj_v_next, S* adj_v_free, S* adj_qM, AdjWorkspace<S>& aw,
                                ContactParamAdjoint<S>& adj_p) {
  const int nv = m.nv, n = cs.n, nr = 3 * n;
  for (int d = 0; d < nv; ++d) adj_v_free[d] += adj_v_next[d];
  if (n == 0) return 0;
  const S mu = p.friction.get(env);
  // applied impulse P_app = w ∘ P; v_next = v_free + Hd⁻¹ Jᵀ P_app
  S z[kMaxNv], x[kMaxNv], adj_Papp[3 * kMaxActive];
  for (int d = 0; d < nv; ++d) {
    z[d] = adj_v_next[d];
    x[d] = 0;
  }
  ltl_solve(m, ws.H, z);
  for (int r = 0; r < nr; ++r) {
    S s = 0;
    for (int d = 0; d < nv; ++d) {
      s += cs.J[r * nv + d] * z[d];
      x[d] += cs.J[r * nv + d] * cs.P[r] * cs.w[r / 3];
    }
    adj_Papp[r] = s;
  }
  ltl_solve(m, ws.H, x);
  S adj_J[3 * kMaxActive * kMaxNv], adj_G[9 * kMaxActive * kMaxActive], adj_c[3 * kMaxActive];
  S adj_P[3 * kMaxActive], adj_w[kMaxActive], adj_gap[kMaxActive];
  for (int r = 0; r < nr; ++r) {
    for (int d = 0; d < nv; ++d) adj_J[r * nv + d] = cs.P[r] * cs.w[r / 3] * z[d];
    for (int s = 0; s < nr; ++s) adj_G[r * nr + s] = 0;
    adj_c[r] = 0;
    adj_P[r] = cs.w[r / 3] * adj_Papp[r];
  }
  for (int i = 0; i < n; ++i) {
    adj_w[i] = cs.P[3 * i] * adj_Papp[3 * i] + cs.P[3 * i + 1] * adj_Papp[3 * i + 1] +
               cs.P[3 * i + 2] * adj_Papp[3 * i + 2];
    adj_gap[i] = 0;
  }
  S tau_adj[kMaxNv];
  for (int d = 0; d < nv; ++d) tau_adj[d] = -z[d];
  adj_mass_times(m, x, tau_adj, ws, aw);
  if (!adj_pgs_solve(cs, mu, adj_P, adj_c, adj_G, adj_w, adj_p.friction)) return kStatusNoGradient;
  if (mode == kContactSmooth) {  // w = 1/(1 + exp(clamp(k g))): ∂w/∂g = −k w (1 − w), ∂w/∂k = −g w (1 − w)
    const S k = p.smooth_k.get(env);
    for (int i = 0; i < n; ++i) {
      const S kg = k * cs.gap[i];
      if (kg <= S(-100) || kg >= S(50)) continue;
      const S dw = -cs.w[i] * (1 - cs.w[i]) * adj_w[i];
      adj_gap[i] += k * dw;
      adj_p.smooth_k += cs.gap[i] * dw;
    }
  } else if (cfg.speculative) {  // c_n += max(g, 0)/h
    for (int i = 0; i < n; ++i)
      if (cs.gap[i] > 0) adj_gap[i] += adj_c[3 * i] / h;
  }
  // c = J v_free
  for (int r = 0; r < nr; ++r)
    for (int d = 0; d < nv; ++d) {
      adj_J[r * nv + d] += adj_c[r] * v_free[d];
      adj_v_free[d] += cs.J[r * nv + d] * adj_c[r];
    }
  // G = J Hd⁻¹ Jᵀ: J̄ += (Ḡ + Ḡᵀ) J Hd⁻¹, and ⟨−K Ḡ Kᵀ, dH⟩ with K = Hd⁻¹ Jᵀ column by column
  S K[3 * kMaxActive * kMaxNv];  // row s holds K[:, s]
  for (int s = 0; s < nr; ++s) {
    for (int d = 0; d < nv; ++d) K[s * nv + d] = cs.J[s * nv + d];
    ltl_solve(m, ws.H, K + s * nv);
  }
  for (int r = 0; r < nr; ++r)
    for (int s = 0; s < nr; ++s) {
      const S g = adj_G[r * nr + s] + adj_G[s * nr + r];
      if (g == 0) continue;
      for (int d = 0; d < nv; ++d) adj_J[r * nv + d] += g * K[s * nv + d];
    }
  for (int s = 0; s < nr; ++s) {
    for (int d = 0; d < nv; ++d) {
      S t = 0;
      for (int r = 0; r < nr; ++r) t += K[r * nv + d] * adj_G[r * nr + s];
      tau_adj[d] = -t;
    }
    adj_mass_times(m, K + s * nv, tau_adj, ws, aw);
  }
  adj_contact_kinematics(m, ws, cs, adj_J, adj_gap, adj_qM, aw);
  return 0;
}

}  // namespace kern
}  // namespace moreau
