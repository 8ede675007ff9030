// moreau kernels — joint models: transforms, motion subspaces, and q ⊕ v integration.
//
// Body frame = joint frame after the joint's motion. For body i with tree placement
// (E_tree = R(body_quat)ᵀ, r_tree = body_pos) the parent→body transform is X_J X_tree with
//   revolute  (axis a, anchor p):  R_J = Rot(a, θ),   r_J = p − R_J p,   E_J = R_Jᵀ
//   prismatic (axis a):            R_J = 1,           r_J = a θ
//   ball      (anchor p):          R_J = R(quat),     r_J = p − R_J p
//   free:                          X = (R(quat)ᵀ, pos) directly (tree placement unused)
// Motion subspace columns in body coordinates:
//   revolute (a, p × a); prismatic (0, a); ball (e_k, p × e_k);
//   free: linear dofs (0, Rᵀ e_k) — world-frame velocity —, angular dofs (e_k, 0) — body frame.
#pragma once

#include "kernels/model_view.h"
#include "kernels/spatial.h"

namespace moreau {
namespace kern {

MOREAU_HD_SMALL int joint_nv(int type) {
  return type == kJointFree ? 6 : (type == kJointBall ? 3 : 1);
}

// Rot(a, θ) for a unit axis a (Rodrigues): cos θ 1 + sin θ [a]× + (1 − cos θ) a aᵀ
template <class S>
MOREAU_HD_SMALL Mat3<S> axis_angle(const Vec3<S>& a, S theta) {
  S s, c;
  msincos(theta, &s, &c);
  const S t = 1 - c;
  return {{c + t * a.x * a.x, t * a.x * a.y - s * a.z, t * a.x * a.z + s * a.y,
           t * a.x * a.y + s * a.z, c + t * a.y * a.y, t * a.y * a.z - s * a.x,
           t * a.x * a.z - s * a.y, t * a.y * a.z + s * a.x, c + t * a.z * a.z}};
}

// The tree placement of body i (its transform from the parent at q = 0).
template <class S>
MOREAU_HD_SMALL Transform<S> tree_transform(const ModelArrays<S>& m, int i) {
  const S* E = m.body_rot + 9 * i;
  return {{{E[0], E[1], E[2], E[3], E[4], E[5], E[6], E[7], E[8]}}, vec3(m.body_pos + 3 * i)};
}

// Parent → body transform of body i at configuration q.
template <class S>
MOREAU_HD_SMALL Transform<S> joint_transform(const ModelArrays<S>& m, int i, const S* q) {
  const int type = m.jnt_type[i];
  const S* qi = q + m.jnt_qposadr[i];
  if (type == kJointFree) return {transpose(quat_to_mat(quat(qi + 3))), vec3(qi)};
  const Transform<S> tree = tree_transform(m, i);
  Mat3<S> RJ;
  Vec3<S> rJ;
  if (type == kJointPrismatic) {
    RJ = identity3<S>();
    rJ = qi[0] * vec3(m.jnt_axis + 3 * i);
  } else {
    RJ = type == kJointBall ? quat_to_mat(quat(qi)) : axis_angle(vec3(m.jnt_axis + 3 * i), qi[0]);
    Vec3<S> p = vec3(m.jnt_pos + 3 * i);
    rJ = p - RJ * p;
  }
  return compose(Transform<S>{transpose(RJ), rJ}, tree);
}
// Accumulates into adj_q at the joint's coordinates, given X = joint_transform(m, i, q). A hinge
// (E = R_Jᵀ E_t, r = r_t + E_tᵀ (p − R_J p), R_J = exp(q [a]×), tree placement (E_t, r_t)) uses
//   dE/dq = −[a]× E,  dr/dq = −E_tᵀ (a × R_J p),  R_J = E_t Eᵀ;
// ball and slide joints recompute R_J and r_J.
template <class S>
MOREAU_HD_SMALL void adj_joint_transform(const ModelArrays<S>& m, int i, const S* q, const Transform<S>& X,
                                         S* adj_q, const Transform<S>& adj_ret) {
  const int type = m.jnt_type[i];
  const S* qi = q + m.jnt_qposadr[i];
  S* adj_qi = adj_q + m.jnt_qposadr[i];
  Quat<S> adj_quat{0, 0, 0, 0};
  if (type == kJointFree) {
    for (int k = 0; k < 3; ++k) adj_qi[k] += adj_ret.r[k];
    adj_quat_to_mat(quat(qi + 3), adj_quat, transpose(adj_ret.E));
    add_quat(adj_qi + 3, adj_quat);
    return;
  }
  if (type == kJointRevolute) {
    const Transform<S> tree = tree_transform(m, i);
    const Vec3<S> a = vec3(m.jnt_axis + 3 * i), p = vec3(m.jnt_pos + 3 * i);
    S g = 0;
    for (int c = 0; c < 3; ++c) {  // ⟨Ē, −[a]× E⟩ column by column
      const Vec3<S> col = cross(a, Vec3<S>{X.E(0, c), X.E(1, c), X.E(2, c)});
      g -= adj_ret.E(0, c) * col.x + adj_ret.E(1, c) * col.y + adj_ret.E(2, c) * col.z;
    }
    const Vec3<S> Rp = tree.E * mul_t(X.E, p);  // R_J p
    g -= dot(adj_ret.r, mul_t(tree.E, cross(a, Rp)));
    adj_qi[0] += g;
    return;
  }
  const Transform<S> tree = tree_transform(m, i);
  const Vec3<S> a = vec3(m.jnt_axis + 3 * i), p = vec3(m.jnt_pos + 3 * i);
  const Mat3<S> RJ = type == kJointPrismatic ? identity3<S>() : quat_to_mat(quat(qi));
  const Vec3<S> rJ = type == kJointPrismatic ? qi[0] * a : p - RJ * p;
  Transform<S> adj_XJ{{{0, 0, 0, 0, 0, 0, 0, 0, 0}}, {0, 0, 0}}, adj_tree = adj_XJ;
  adj_compose(Transform<S>{transpose(RJ), rJ}, tree, adj_XJ, adj_tree, adj_ret);
  if (type == kJointPrismatic) {
    adj_qi[0] += dot(a, adj_XJ.r);
    return;
  }
  // ball: E_J = R_Jᵀ, r_J = p − R_J p:  R̄_J = Ē_Jᵀ − r̄_J pᵀ
  Mat3<S> adj_RJ = transpose(adj_XJ.E);
  add_outer(adj_RJ, -adj_XJ.r, p);
  adj_quat_to_mat(quat(qi), adj_quat, adj_RJ);
  add_quat(adj_qi, adj_quat);
}

// Motion subspace column k (0 ≤ k < joint nv) of body i, given its parent → body transform X.
template <class S>
MOREAU_HD_SMALL Motion<S> joint_motion(const ModelArrays<S>& m, int i, int k, const Transform<S>& X) {
  const int type = m.jnt_type[i];
  const Vec3<S> zero{0, 0, 0};
  if (type == kJointFree) {
    if (k < 3) return {zero, Vec3<S>{X.E(0, k), X.E(1, k), X.E(2, k)}};
    Vec3<S> e = zero;
    e[k - 3] = 1;
    return {e, zero};
  }
  Vec3<S> a = vec3(m.jnt_axis + 3 * i);
  if (type == kJointPrismatic) return {zero, a};
  if (type == kJointBall) {
    a = zero;
    a[k] = 1;
  }
  return {a, cross(vec3(m.jnt_pos + 3 * i), a)};
}
// Only the free joint's linear columns (column k of E) depend on X.
template <class S>
MOREAU_HD_SMALL void adj_joint_motion(const ModelArrays<S>& m, int i, int k, const Transform<S>& /*X*/,
                                      Transform<S>& adj_X, const Motion<S>& adj_ret) {
  if (m.jnt_type[i] != kJointFree || k >= 3) return;
  for (int j = 0; j < 3; ++j) adj_X.E(j, k) += adj_ret.v[j];
}

// Velocity-product term c_J = (dS/dt) q̇ in body coordinates. Only the free joint's S
// depends on q: d(Rᵀ)/dt = −[ω]× Rᵀ, so c_J = (0, −ω × Rᵀ v_world).
template <class S>
MOREAU_HD_SMALL Motion<S> joint_bias(const ModelArrays<S>& m, int i, const S* v, const Transform<S>& X) {
  const Vec3<S> zero{0, 0, 0};
  if (m.jnt_type[i] != kJointFree) return {zero, zero};
  const S* vi = v + m.jnt_dofadr[i];
  return {zero, -cross(vec3(vi + 3), X.E * vec3(vi))};
}
// recomputes u = E v_world
template <class S>
MOREAU_HD_SMALL void adj_joint_bias(const ModelArrays<S>& m, int i, const S* v, const Transform<S>& X, S* adj_v,
                              Transform<S>& adj_X, const Motion<S>& adj_ret) {
  if (m.jnt_type[i] != kJointFree) return;
  const S* vi = v + m.jnt_dofadr[i];
  S* adj_vi = adj_v + m.jnt_dofadr[i];
  Vec3<S> adj_w{0, 0, 0}, adj_u{0, 0, 0}, adj_lin{0, 0, 0};
  adj_cross(vec3(vi + 3), X.E * vec3(vi), adj_w, adj_u, -adj_ret.v);
  adj_mul(X.E, vec3(vi), adj_X.E, adj_lin, adj_u);
  for (int k = 0; k < 3; ++k) {
    adj_vi[k] += adj_lin[k];
    adj_vi[3 + k] += adj_w[k];
  }
}

// q_out = q ⊕ dt v: positions add; quaternions are multiplied by exp(dt ω) on the right
// (ω in the body frame) and renormalised. q_out may alias q.
template <class S>
MOREAU_HD_SMALL void integrate(const ModelArrays<S>& m, const S* q, const S* v, S dt, S* q_out) {
  for (int i = 0; i < m.nbody; ++i) {
    const int type = m.jnt_type[i];
    const S* qi = q + m.jnt_qposadr[i];
    const S* vi = v + m.jnt_dofadr[i];
    S* qo = q_out + m.jnt_qposadr[i];
    if (type == kJointFree || type == kJointBall) {
      if (type == kJointFree) {
        for (int k = 0; k < 3; ++k) qo[k] = qi[k] + dt * vi[k];
        qi += 3;
        vi += 3;
        qo += 3;
      }
      Quat<S> r = normalized(quat(qi) * quat_exp(dt * vec3(vi)));
      qo[0] = r.w;
      qo[1] = r.x;
      qo[2] = r.y;
      qo[3] = r.z;
    } else {
      qo[0] = qi[0] + dt * vi[0];
    }
  }
}
// q_out = q ⊕ dt v with q the input (not the possibly aliased output); adj_q_out must not
// alias adj_q. Recomputes p = q exp(dt ω) for the renormalisation; dt is a constant.
template <class S>
MOREAU_HD_SMALL void adj_integrate(const ModelArrays<S>& m, const S* q, const S* v, S dt, S* adj_q, S* adj_v,
                             const S* adj_q_out) {
  for (int i = 0; i < m.nbody; ++i) {
    const int type = m.jnt_type[i];
    const S* qi = q + m.jnt_qposadr[i];
    const S* vi = v + m.jnt_dofadr[i];
    S* adj_qi = adj_q + m.jnt_qposadr[i];
    S* adj_vi = adj_v + m.jnt_dofadr[i];
    const S* adj_qo = adj_q_out + m.jnt_qposadr[i];
    if (type == kJointFree || type == kJointBall) {
      if (type == kJointFree) {
        for (int k = 0; k < 3; ++k) {
          adj_qi[k] += adj_qo[k];
          adj_vi[k] += dt * adj_qo[k];
        }
        qi += 3;
        vi += 3;
        adj_qi += 3;
        adj_vi += 3;
        adj_qo += 3;
      }
      const Quat<S> q0 = quat(qi), e = quat_exp(dt * vec3(vi));
      Quat<S> adj_p{0, 0, 0, 0}, adj_q0{0, 0, 0, 0}, adj_e{0, 0, 0, 0};
      adj_normalized(q0 * e, adj_p, quat(adj_qo));
      adj_quat_mul(q0, e, adj_q0, adj_e, adj_p);
      Vec3<S> adj_dtw{0, 0, 0};
      adj_quat_exp(dt * vec3(vi), adj_dtw, adj_e);
      add_quat(adj_qi, adj_q0);
      for (int k = 0; k < 3; ++k) adj_vi[k] += dt * adj_dtw[k];
    } else {
      adj_qi[0] += adj_qo[0];
      adj_vi[0] += dt * adj_qo[0];
    }
  }
}

}  // namespace kern
}  // namespace moreau
