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

MOREAU_HD int joint_nv(int type) {
  return type == kJointFree ? 6 : (type == kJointBall ? 3 : 1);
}

// Rot(a, θ) for a unit axis a (Rodrigues): cos θ 1 + sin θ [a]× + (1 − cos θ) a aᵀ
template <class S>
MOREAU_HD Mat3<S> axis_angle(const Vec3<S>& a, S theta) {
  S c = mcos(theta), s = msin(theta), t = 1 - c;
  return {{c + t * a.x * a.x, t * a.x * a.y - s * a.z, t * a.x * a.z + s * a.y,
           t * a.x * a.y + s * a.z, c + t * a.y * a.y, t * a.y * a.z - s * a.x,
           t * a.x * a.z - s * a.y, t * a.y * a.z + s * a.x, c + t * a.z * a.z}};
}

// Parent → body transform of body i at configuration q.
template <class S>
MOREAU_HD Transform<S> joint_transform(const ModelView<S>& m, int i, const S* q) {
  const int type = m.jnt_type[i];
  const S* qi = q + m.jnt_qposadr[i];
  if (type == kJointFree) return {transpose(quat_to_mat(quat(qi + 3))), vec3(qi)};
  Transform<S> tree{transpose(quat_to_mat(quat(m.body_quat + 4 * i))), vec3(m.body_pos + 3 * i)};
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

// Motion subspace column k (0 ≤ k < joint nv) of body i, given its parent → body transform X.
template <class S>
MOREAU_HD Motion<S> joint_motion(const ModelView<S>& m, int i, int k, const Transform<S>& X) {
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

// Velocity-product term c_J = (dS/dt) q̇ in body coordinates. Only the free joint's S
// depends on q: d(Rᵀ)/dt = −[ω]× Rᵀ, so c_J = (0, −ω × Rᵀ v_world).
template <class S>
MOREAU_HD Motion<S> joint_bias(const ModelView<S>& m, int i, const S* v, const Transform<S>& X) {
  const Vec3<S> zero{0, 0, 0};
  if (m.jnt_type[i] != kJointFree) return {zero, zero};
  const S* vi = v + m.jnt_dofadr[i];
  return {zero, -cross(vec3(vi + 3), X.E * vec3(vi))};
}

// q_out = q ⊕ dt v: positions add; quaternions are multiplied by exp(dt ω) on the right
// (ω in the body frame) and renormalised. q_out may alias q.
template <class S>
MOREAU_HD void integrate(const ModelView<S>& m, const S* q, const S* v, S dt, S* q_out) {
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

}  // namespace kern
}  // namespace moreau
