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

// x_a ← L⁻ᵀ x_a for the three rows (n, t1, t2) of one contact at once (ltl_solve_t of
// kernels/dynamics.h, three independent chains for the pipeline), skipping the dofs where all
// three are zero: a point's rows vanish outside its body's ancestors, and the solve only moves
// values towards the root, so those dofs stay zero (a foot touches the base's 6 and its leg's 3
// of ANYmal's 18 dofs).
template <class S>
MOREAU_HD void ltl_solve_t3(const ModelView<S>& m, const S* L, S* x0, S* x1, S* x2) {
  const int nv = m.nv;
  for (int i = nv - 1; i >= 0; --i) {
    if (x0[i] == 0 && x1[i] == 0 && x2[i] == 0) continue;
    const S inv = S(1) / L[i * nv + i];
    const S a = x0[i] *= inv, b = x1[i] *= inv, c = x2[i] *= inv;
    for (int j = m.dof_parent[i]; j >= 0; j = m.dof_parent[j]) {
      const S l = L[i * nv + j];
      x0[j] -= l * a;
      x1[j] -= l * b;
      x2[j] -= l * c;
    }
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
  }
  for (int i = 0; i < cs.n; ++i) ltl_solve_t3(m, L, Y + 3 * i * nv, Y + (3 * i + 1) * nv, Y + (3 * i + 2) * nv);
  for (int r = 0; r < nr; ++r)
    for (int s = 0; s <= r; ++s) {
      S g = 0;
      for (int d = 0; d < nv; ++d) g += Y[r * nv + d] * Y[s * nv + d];
      cs.G[r * nr + s] = cs.G[s * nr + r] = g;
    }
}

// How far contact i's velocity γ is from satisfying Signorini–Coulomb with its impulse P [m/s]:
// normal |γ_n| when pushing (P_n > 0), else max(−γ_n, 0); tangential ‖γ_t‖ inside the cone,
// and on its boundary the part of γ_t not opposing P_t. Velocity level, so that impulses that
// keep moving without changing any velocity (four corners of a box, statically indeterminate)
// do not count.
template <class S>
MOREAU_HD S contact_violation(const S* P, const S* gamma, S mu) {
  if (!(P[0] > 0)) return mmax(-gamma[0], S(0));
  const S pt = msqrt(P[1] * P[1] + P[2] * P[2]), gt = msqrt(gamma[1] * gamma[1] + gamma[2] * gamma[2]);
  S vt = gt;
  if (pt >= mu * P[0] * (1 - S(1e-6)) && pt > 0) {  // sliding: γ_t = −‖γ_t‖ P_t/‖P_t‖
    const S e1 = gamma[1] + gt * P[1] / pt, e2 = gamma[2] + gt * P[2] / pt;
    vt = msqrt(e1 * e1 + e2 * e2);
  }
  return mmax(mabs(gamma[0]), vt);
}

// Projected Gauss–Seidel on 3x3 blocks (block Gauss–Seidel with a local solve per contact).
// For contact i, with γ_i = Σ_j G_ij P_j + c_i (smooth mode: j ≠ i weighted by w_j):
//  1. sticking step: P_i* = P_i − G_ii⁻¹ γ_i (the exact local solve when contact i sticks); taken
//     when P_i*_n > 0 and ‖P_i*_t‖ ≤ μ P_i*_n;
//  2. otherwise 4 local projected steps P_i ← prox_Cμ(P_i − r_i γ_i), γ_i ← γ_i + G_ii ΔP_i, with
//     one isotropic step r_i = 1/‖G_ii‖_∞ ≤ 1/λ_max(G_ii) (so a sliding contact's friction opposes
//     γ_t: maximal dissipation, and the local iteration cannot overshoot);
//  prox: P_n ≤ 0 → 0; ‖P_t‖ > μ P_n → P_t μ P_n/‖P_t‖.
// A fixed point satisfies Signorini–Coulomb with maximal dissipation whichever step produced it
// (step 1: γ_i = 0 inside the cone; step 2: the prox fixed point), the same fixed point as the
// diagonal PGS P_i ← prox(P_i − diag(1/G_nn, r_t, r_t) γ_i) of the seed. That one needed ~170
// sweeps for a standing quadruped (the normal and tangential rows of an articulated foot are
// strongly coupled inside G_ii) and could cycle for good (a foot alternating between two
// impulses); this one needs ~5 (docs/contact.md gives the figures). Cold start (P = 0): the
// solve is a function of the current problem only.
// Residual: the largest contact_violation of a sweep (each contact measured before its update)
// [m/s]. Returns the number of sweeps; *residual gets the last residual.
template <class S>
MOREAU_HD int pgs_solve(ContactScratch<S>& cs, S mu, int max_iterations, S tolerance, S* residual) {
  const int nr = 3 * cs.n;
  const S tiny = S(1e-12);
  for (int r = 0; r < nr; ++r) cs.P[r] = 0;
  // per contact: G_ii⁻¹ (symmetric; zero when G_ii is singular) and the isotropic step r_i
  S Binv[6 * kMaxActive], step[kMaxActive];
  for (int i = 0; i < cs.n; ++i) {
    const S* Gii = cs.G + 3 * i * nr + 3 * i;
    const S a = Gii[0], b = Gii[1], c = Gii[2], d = Gii[nr + 1], e = Gii[nr + 2], f = Gii[2 * nr + 2];
    S* B = Binv + 6 * i;  // (00, 01, 02, 11, 12, 22)
    B[0] = d * f - e * e;
    B[1] = c * e - b * f;
    B[2] = b * e - c * d;
    B[3] = a * f - c * c;
    B[4] = b * c - a * e;
    B[5] = a * d - b * b;
    const S det = a * B[0] + b * B[1] + c * B[2];
    // guarded: a contact no dof can move (or a nearly singular block) takes the projected steps
    const S s = det > S(1e-6) * mabs(a * d * f) && det > tiny ? S(1) / det : S(0);
    for (int k = 0; k < 6; ++k) B[k] *= s;
    S norm = 0;
    for (int r = 0; r < 3; ++r) norm = mmax(norm, mabs(Gii[r * nr]) + mabs(Gii[r * nr + 1]) + mabs(Gii[r * nr + 2]));
    step[i] = norm > tiny ? S(1) / norm : S(0);
  }
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
      S g0 = gamma[0], g1 = gamma[1], g2 = gamma[2];
      const S* Gii = cs.G + 3 * i * nr + 3 * i;
      const S* B = Binv + 6 * i;
      S* P = cs.P + 3 * i;
      // 1. sticking step
      S pn = P[0] - (B[0] * g0 + B[1] * g1 + B[2] * g2);
      S pt1 = P[1] - (B[1] * g0 + B[3] * g1 + B[4] * g2);
      S pt2 = P[2] - (B[2] * g0 + B[4] * g1 + B[5] * g2);
      if (!(B[0] > 0 && pn > 0 && pt1 * pt1 + pt2 * pt2 <= mu * mu * pn * pn)) {
        // 2. projected steps
        const S r = step[i];
        S q0 = P[0], q1 = P[1], q2 = P[2];
        for (int k = 0; k < 4; ++k) {
          pn = mmax(q0 - r * g0, S(0));
          pt1 = q1 - r * g1;
          pt2 = q2 - r * g2;
          const S pt = msqrt(pt1 * pt1 + pt2 * pt2), limit = mu * pn;
          if (pt > limit) {
            const S scale = pt > 0 ? limit / pt : S(0);
            pt1 *= scale;
            pt2 *= scale;
          }
          const S d0 = pn - q0, d1 = pt1 - q1, d2 = pt2 - q2;
          g0 += Gii[0] * d0 + Gii[1] * d1 + Gii[2] * d2;
          g1 += Gii[nr] * d0 + Gii[nr + 1] * d1 + Gii[nr + 2] * d2;
          g2 += Gii[2 * nr] * d0 + Gii[2 * nr + 1] * d1 + Gii[2 * nr + 2] * d2;
          q0 = pn;
          q1 = pt1;
          q2 = pt2;
        }
      }
      res = mmax(res, contact_violation(P, gamma, mu));
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
//   P_n = h f_n,
// with v_n = J_n v_k (the spring–damper is explicit). Friction is implicit, with the normal
// impulses fixed: the tangential impulses P_t,i ∈ {‖P_t,i‖ ≤ μ P_n,i} such that each point
// sticks (γ_t,i = 0, γ = G P + c, c = J v_free) or slides against γ_t,i (maximal dissipation)
// — Coulomb friction at the end of the step. For fixed P_n this is a convex problem; it is solved
// by the block Gauss–Seidel of pgs_solve restricted to the tangent rows (2x2 sticking step, else
// isotropic projected steps). A tangential load inside the cone is held exactly, at any step
// size. (The seed's rule P_t = −min(μ P_n, ‖v_t‖/D_t) v_t/‖v_t‖, D_t a row sum of G, stopped
// only a fraction of the sliding per step when the feet are coupled through the body: a standing
// quadruped's feet crept apart and it sank to the ground.) Every iterate is inside the cones and
// every local step lowers the convex objective ½ P_tᵀ G_tt P_t + P_tᵀ b_t (the kinetic energy
// after the step), so a solve stopped by the cap still only dissipates: the caller reports it
// but does not flag it. Slow cases: a statically indeterminate body (a box on 4 corners) with
// some points exactly at the cone limit (cube on a slope, k_n = 1e3: up to ~2700 sweeps).
// Returns the sweeps; *residual gets the largest tangential impulse change of the last sweep
// times max(G_t1t1, G_t2t2) [m/s].
template <class S>
MOREAU_HD int soft_impulses(const ModelView<S>& m, const S* v_k, ContactScratch<S>& cs, S h, S mu, S kn,
                            S kd_given, S zeta, int max_iterations, S tolerance, S* residual) {
  const int nr = 3 * cs.n;
  const S tiny = S(1e-12);
  S Binv[3 * kMaxActive], step[kMaxActive];  // per contact: G_tt⁻¹ (00, 01, 11) and 1/‖G_tt‖∞
  bool any = false;
  for (int i = 0; i < cs.n; ++i) {
    S vn = 0;
    for (int d = 0; d < m.nv; ++d) vn += cs.J[3 * i * m.nv + d] * v_k[d];
    const S* Gii = cs.G + 3 * i * nr + 3 * i;
    const S kd = kd_given >= 0 ? kd_given : S(2) * zeta * msqrt(kn / mmax(Gii[0], tiny));
    const S pn = h * mmax(kn * (-cs.gap[i]) - kd * mmin(vn, S(0)), S(0));
    cs.P[3 * i] = pn;
    cs.P[3 * i + 1] = cs.P[3 * i + 2] = 0;
    any |= pn > 0;
    const S a = Gii[nr + 1], b = Gii[nr + 2], d = Gii[2 * nr + 2], det = a * d - b * b;
    const S s = det > S(1e-6) * mabs(a * d) && det > tiny ? S(1) / det : S(0);
    Binv[3 * i] = d * s;
    Binv[3 * i + 1] = -b * s;
    Binv[3 * i + 2] = a * s;
    const S norm = mmax(mabs(a) + mabs(b), mabs(b) + mabs(d));
    step[i] = norm > tiny ? S(1) / norm : S(0);
  }
  S res = 0;
  int it = 0;
  while (any && it < max_iterations) {
    ++it;
    res = 0;
    for (int i = 0; i < cs.n; ++i) {
      S* P = cs.P + 3 * i;
      if (!(P[0] > 0)) continue;
      S g1 = cs.c[3 * i + 1], g2 = cs.c[3 * i + 2];
      const S* row1 = cs.G + (3 * i + 1) * nr;
      const S* row2 = cs.G + (3 * i + 2) * nr;
      for (int col = 0; col < nr; ++col) {
        g1 += row1[col] * cs.P[col];
        g2 += row2[col] * cs.P[col];
      }
      const S* B = Binv + 3 * i;
      const S limit = mu * P[0];
      S pt1 = P[1] - (B[0] * g1 + B[1] * g2), pt2 = P[2] - (B[1] * g1 + B[2] * g2);
      if (!(B[0] > 0 && pt1 * pt1 + pt2 * pt2 <= limit * limit)) {
        const S r = step[i];
        const S G11 = row1[3 * i + 1], G12 = row1[3 * i + 2], G22 = row2[3 * i + 2];
        S q1 = P[1], q2 = P[2];
        for (int k = 0; k < 4; ++k) {
          pt1 = q1 - r * g1;
          pt2 = q2 - r * g2;
          const S pt = msqrt(pt1 * pt1 + pt2 * pt2);
          if (pt > limit) {
            const S scale = pt > 0 ? limit / pt : S(0);
            pt1 *= scale;
            pt2 *= scale;
          }
          const S d1 = pt1 - q1, d2 = pt2 - q2;
          g1 += G11 * d1 + G12 * d2;
          g2 += G12 * d1 + G22 * d2;
          q1 = pt1;
          q2 = pt2;
        }
      }
      const S change = mmax(mabs(pt1 - P[1]), mabs(pt2 - P[2]));
      res = mmax(res, change * mmax(mmax(row1[3 * i + 1], row2[3 * i + 2]), tiny));
      P[1] = pt1;
      P[2] = pt2;
    }
    if (res <= tolerance) break;
  }
  *residual = res;
  return it;
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
      result.iterations = soft_impulses(m, v_k, cs, h, mu, p.contact_kn.get(env), p.contact_kd.get(env),
                                        p.contact_zeta.get(env), cfg.max_iterations, cfg.tolerance, &result.residual);
      // no status flag: an unconverged friction iterate is still inside the cones and dissipative
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
