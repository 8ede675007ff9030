// moreau kernels — contact against the ground: candidates, Jacobians, and the four models of
// shared/design/CONTACT.md (docs/contact.md gives the equations as implemented).
//
// At the midpoint configuration q_M, with H = Lᵀ L factorised and v_free = v_k + Δv:
//   G = J H⁻¹ Jᵀ = Yᵀ Y with Y = L⁻ᵀ Jᵀ,   c = J v_free,   γ = G P + c,
//   v_{k+1} = v_free + H⁻¹ Jᵀ P_applied.
#pragma once

#include "kernels/dynamics.h"

namespace moreau {
namespace kern {

// Contacts a solve can hold at once (the model may have more candidate points).
constexpr int kMaxActive = 16;

// The ground: height and unit normal at (x, y). The plane z = 0 for now; a heightfield can
// replace it without touching the solvers.
template <class S>
struct PlaneGround {
  MOREAU_HD S height(S /*x*/, S /*y*/) const { return 0; }
  MOREAU_HD Vec3<S> normal(S /*x*/, S /*y*/) const { return {0, 0, 1}; }
};

template <class S>
struct ContactScratch {
  int n;                         // active contacts
  int con[kMaxActive];           // their model contact index
  S gap[kMaxActive];
  S w[kMaxActive];               // smooth gate w(g); 1 otherwise
  S J[3 * kMaxActive * kMaxNv];  // rows (n, t1, t2) of each contact, row stride nv
  S G[9 * kMaxActive * kMaxActive];  // Delassus matrix, row stride 3n
  S c[3 * kMaxActive];
  S P[3 * kMaxActive];
};

// w(g) = 1 / (1 + exp(clamp(k g, −100, 50)))
template <class S>
MOREAU_HD S smooth_gate(S k, S g) {
  return S(1) / (S(1) + mexp(clamp(k * g, S(-100), S(50))));
}

// Body frames relative to the root's translation: world orientation, origin minus the base
// position. Positions in the Jacobians stay small however far the robot has walked.
template <class S>
MOREAU_HD void relative_world_transforms(const ModelView<S>& m, const Workspace<S>& ws, Transform<S>* X0) {
  for (int i = 0; i < m.nbody; ++i) {
    const int par = m.body_parent[i];
    if (par >= 0) {
      X0[i] = compose(ws.Xup[i], X0[par]);
    } else {
      X0[i] = ws.Xup[i];
      if (m.jnt_type[i] == kJointFree) X0[i].r = Vec3<S>{0, 0, 0};
    }
  }
}

// Tangent basis (t1, t2) of a unit normal n.
template <class S>
MOREAU_HD void tangents(const Vec3<S>& n, Vec3<S>& t1, Vec3<S>& t2) {
  const Vec3<S> a = mabs(n.x) < S(0.9) ? Vec3<S>{1, 0, 0} : Vec3<S>{0, 1, 0};
  t1 = cross(n, a);
  t1 = (S(1) / msqrt(dot(t1, t1))) * t1;
  t2 = cross(n, t1);
}

// Rows J (3 x nv, frame rows n, t1, t2) of the velocity of point p (relative coordinates) on
// body b: for each dof d of an ancestor j with S_d = (a, l) in j's frame,
// ω = R_j a, v_p = R_j l + ω × (p − o_j).
template <class S>
MOREAU_HD void point_jacobian(const ModelView<S>& m, const Workspace<S>& ws, const Transform<S>* X0, int b,
                              const Vec3<S>& p, const Vec3<S>* frame, S* J) {
  for (int k = 0; k < 3 * m.nv; ++k) J[k] = 0;
  for (int j = b; j >= 0; j = m.body_parent[j]) {
    const int d0 = m.jnt_dofadr[j], nd = joint_nv(m.jnt_type[j]);
    for (int d = d0; d < d0 + nd; ++d) {
      const Vec3<S> w = mul_t(X0[j].E, ws.Sdof[d].w);
      const Vec3<S> vp = mul_t(X0[j].E, ws.Sdof[d].v) + cross(w, p - X0[j].r);
      for (int r = 0; r < 3; ++r) J[r * m.nv + d] = dot(frame[r], vp);
    }
  }
}

// Candidates at q_M: gaps of every contact point into con_gap (may be null), and the active
// set with Jacobians. A point enters when its gap ≤ `threshold`.
template <class S, class Ground>
MOREAU_HD void contact_candidates(const ModelView<S>& m, const Workspace<S>& ws, const S* qM, const Ground& ground,
                                  S threshold, ContactScratch<S>& cs, S* gaps) {
  Transform<S> X0[kMaxBodies];
  relative_world_transforms(m, ws, X0);
  const Vec3<S> base = m.jnt_type[0] == kJointFree ? vec3(qM + m.jnt_qposadr[0]) : Vec3<S>{0, 0, 0};
  cs.n = 0;
  for (int k = 0; k < m.ncon; ++k) {
    const int b = m.con_body[k];
    const Vec3<S> centre = X0[b].r + mul_t(X0[b].E, vec3(m.con_pos + 3 * k));  // relative to the base
    const S x = centre.x + base.x, y = centre.y + base.y;
    Vec3<S> frame[3];
    frame[0] = ground.normal(x, y);
    // gap along the normal from the ground point (x, y, height) to the sphere surface
    const S gap = (centre.z + base.z - ground.height(x, y)) * frame[0].z - m.con_radius[k];
    if (gaps) gaps[k] = gap;
    if (gap > threshold || cs.n == kMaxActive) continue;
    tangents(frame[0], frame[1], frame[2]);
    const Vec3<S> p = centre - m.con_radius[k] * frame[0];
    const int i = cs.n++;
    cs.con[i] = k;
    cs.gap[i] = gap;
    cs.w[i] = 1;
    point_jacobian(m, ws, X0, b, p, frame, cs.J + 3 * i * m.nv);
  }
}

// G = J H⁻¹ Jᵀ = Yᵀ Y with Y = L⁻ᵀ Jᵀ (one triangular solve per row of J); c = J v.
template <class S>
MOREAU_HD void delassus(const ModelView<S>& m, const S* L, const S* v, ContactScratch<S>& cs) {
  const int nv = m.nv, nr = 3 * cs.n;
  S Y[3 * kMaxActive * kMaxNv];  // row r holds (L⁻ᵀ Jᵀ)[:, r]
  for (int r = 0; r < nr; ++r) {
    S c = 0;
    for (int d = 0; d < nv; ++d) {
      Y[r * nv + d] = cs.J[r * nv + d];
      c += cs.J[r * nv + d] * v[d];
    }
    cs.c[r] = c;
    ltl_solve_t(m, L, Y + r * nv);
  }
  for (int r = 0; r < nr; ++r)
    for (int s = 0; s <= r; ++s) {
      S g = 0;
      for (int d = 0; d < nv; ++d) g += Y[r * nv + d] * Y[s * nv + d];
      cs.G[r * nr + s] = cs.G[s * nr + r] = g;
    }
}

// Projected Gauss–Seidel on 3x3 blocks:  P_i ← prox_Cμ(P_i − R_i (Σ_j G_ij P_j + c_i)), with
// R_i = diag(1/G_nn, r_t, r_t), r_t = 1/max(G_t1t1, G_t2t2) (isotropic, so sliding opposes γ_t);
// prox: P_n ≤ 0 → 0; ‖P_t‖ > μ P_n → P_t μ P_n/‖P_t‖. Smooth mode couples contact j into i
// with weight w_j (j ≠ i). Residual: the largest impulse change of a sweep times G_nn [m/s].
// Returns the number of sweeps; *residual gets the last residual.
template <class S>
MOREAU_HD int pgs_solve(ContactScratch<S>& cs, S mu, int max_iterations, S tolerance, S* residual) {
  const int nr = 3 * cs.n;
  for (int r = 0; r < nr; ++r) cs.P[r] = 0;
  S res = 0;
  int it = 0;
  while (it < max_iterations) {
    ++it;
    res = 0;
    for (int i = 0; i < cs.n; ++i) {
      S gamma[3];
      for (int a = 0; a < 3; ++a) {
        const S* Grow = cs.G + (3 * i + a) * nr;
        S g = cs.c[3 * i + a];
        for (int j = 0; j < cs.n; ++j) {
          const S wj = j == i ? S(1) : cs.w[j];
          g += wj * (Grow[3 * j] * cs.P[3 * j] + Grow[3 * j + 1] * cs.P[3 * j + 1] + Grow[3 * j + 2] * cs.P[3 * j + 2]);
        }
        gamma[a] = g;
      }
      // guarded inverses: a contact that no dof can move gets no impulse
      const S* Gii = cs.G + 3 * i * nr + 3 * i;
      const S tiny = S(1e-12);
      const S gnn = mmax(Gii[0], tiny), gt = mmax(mmax(Gii[nr + 1], Gii[2 * nr + 2]), tiny);
      S* P = cs.P + 3 * i;
      S pn = mmax(P[0] - gamma[0] / gnn, S(0));
      S pt1 = P[1] - gamma[1] / gt, pt2 = P[2] - gamma[2] / gt;
      const S pt = msqrt(pt1 * pt1 + pt2 * pt2), limit = mu * pn;
      if (pt > limit) {
        const S scale = pt > 0 ? limit / pt : S(0);
        pt1 *= scale;
        pt2 *= scale;
      }
      const S change = mmax(mabs(pn - P[0]), mmax(mabs(pt1 - P[1]), mabs(pt2 - P[2])));
      res = mmax(res, change * gnn);
      P[0] = pn;
      P[1] = pt1;
      P[2] = pt2;
    }
    if (res <= tolerance) break;
  }
  *residual = res;
  return it;
}

// Soft (penalty) model: for each contact with g < 0,
//   f_n = k_n (−g) − k_d min(v_n, 0),   k_d = 2 ζ sqrt(k_n m_eff) unless given, m_eff = 1/G_nn,
//   P_n = h f_n,   P_t = −min(μ P_n, ‖v_t‖ / D_t) v_t / ‖v_t‖,
// with v_n = J_n v_k (the spring–damper is explicit) and v_t = J_t v_free (the tangential
// velocity this step would end with). D_t is the largest absolute row sum of G over the
// contact's tangent rows: the friction impulses of all contacts together can at most stop the
// sliding — min(k_f ‖v_t‖, μ f_n) with k_f = 1/(h D_t) — so a load inside the cone is held
// without creep, and the friction is stable at any step size.
template <class S>
MOREAU_HD void soft_impulses(const ModelView<S>& m, const S* v_k, ContactScratch<S>& cs, S h, S mu, S kn,
                             S kd_given, S zeta) {
  const int nr = 3 * cs.n;
  const S tiny = S(1e-12);
  for (int i = 0; i < cs.n; ++i) {
    const S* v = cs.c + 3 * i;
    S vn = 0;
    for (int d = 0; d < m.nv; ++d) vn += cs.J[3 * i * m.nv + d] * v_k[d];
    const S* Gii = cs.G + 3 * i * nr + 3 * i;
    const S kd = kd_given >= 0 ? kd_given : S(2) * zeta * msqrt(kn / mmax(Gii[0], tiny));
    const S pn = h * mmax(kn * (-cs.gap[i]) - kd * mmin(vn, S(0)), S(0));
    const S vt = msqrt(v[1] * v[1] + v[2] * v[2] + tiny * tiny);
    S Dt = tiny;
    for (int a = 1; a < 3; ++a) {
      S row = 0;
      for (int col = 0; col < nr; ++col) row += mabs(cs.G[(3 * i + a) * nr + col]);
      Dt = mmax(Dt, row);
    }
    const S pt = mmin(mu * pn, vt / Dt);
    cs.P[3 * i] = pn;
    cs.P[3 * i + 1] = -pt * v[1] / vt;
    cs.P[3 * i + 2] = -pt * v[2] / vt;
  }
}

template <class S>
struct ContactResult {
  int status;
  int iterations;
  S residual;
};

// The contact stage of a physics step: v (= v_free on entry) gets H⁻¹ Jᵀ P_applied; v_k is
// the velocity at the start of the step (the soft model's explicit velocity).
// ws holds the kinematics and the factorised H at q_M. Writes per-point contact information
// when `gaps` / `impulses` / `active` are not null.
template <class S, class Ground>
MOREAU_HD ContactResult<S> contact_stage(const ModelView<S>& m, const ContactSettings<S>& cfg, const Params<S>& p,
                                         int env, const S* qM, const S* v_k, S h, const Ground& ground,
                                         Workspace<S>& ws, ContactScratch<S>& cs, S* v, S* gaps, S* impulses,
                                         int* active) {
  ContactResult<S> result{0, 0, S(0)};
  const int mode = cfg.mode;
  const S mu = p.friction.get(env);
  S threshold = 0;
  if (mode == kContactSmooth) threshold = p.smooth_gmax.get(env);
  // speculative: a contact this far away cannot be reached at 10 m/s within the step
  if ((mode == kContactHard || mode == kContactHardSmoothGrad) && cfg.speculative) threshold = S(10) * h;
  contact_candidates(m, ws, qM, ground, threshold, cs, gaps);
  const int nr = 3 * cs.n;
  for (int r = 0; r < nr; ++r) cs.P[r] = 0;
  if (cs.n > 0) {
    delassus(m, ws.H, v, cs);
    if (mode == kContactSoft) {
      soft_impulses(m, v_k, cs, h, mu, p.contact_kn.get(env), p.contact_kd.get(env), p.contact_zeta.get(env));
    } else {
      if (mode == kContactSmooth) {
        const S k = p.smooth_k.get(env);
        for (int i = 0; i < cs.n; ++i) cs.w[i] = smooth_gate(k, cs.gap[i]);
      } else if (cfg.speculative) {
        // the next midpoint is q_M ⊕ h v_{k+1}: its gap g + h γ_n must not be negative
        for (int i = 0; i < cs.n; ++i) cs.c[3 * i] += mmax(cs.gap[i], S(0)) / h;
      }
      result.iterations = pgs_solve(cs, mu, cfg.max_iterations, cfg.tolerance, &result.residual);
      if (result.residual > cfg.tolerance) result.status = kStatusSolverNotConverged;
      for (int i = 0; i < cs.n; ++i)
        for (int a = 0; a < 3; ++a) cs.P[3 * i + a] *= cs.w[i];  // applied impulse w_i P_i
    }
    // v += H⁻¹ Jᵀ P
    S x[kMaxNv];
    for (int d = 0; d < m.nv; ++d) x[d] = 0;
    for (int r = 0; r < nr; ++r)
      for (int d = 0; d < m.nv; ++d) x[d] += cs.J[r * m.nv + d] * cs.P[r];
    ltl_solve(m, ws.H, x);
    for (int d = 0; d < m.nv; ++d) v[d] += x[d];
  }
  if (impulses) {
    for (int k = 0; k < m.ncon; ++k) {
      impulses[k] = 0;
      active[k] = gaps[k] <= 0;
    }
    for (int i = 0; i < cs.n; ++i) {
      impulses[cs.con[i]] = cs.P[3 * i];
      if (cs.P[3 * i] > 0) active[cs.con[i]] = 1;
    }
  }
  return result;
}

}  // namespace kern
}  // namespace moreau
