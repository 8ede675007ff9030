// moreau kernels — actuators, the Moreau midpoint physics step and the control step.
//
//   q_M     = q_k ⊕ (h/2) v_k
//   (H(q_M) + h D) Δv = h (τ(q_M, v_k) − b(q_M, v_k) − D v_k)      (D: joint damping, implicit)
//   v_free  = v_k + Δv
//   v_{k+1} = v_free + H⁻¹ Jᵀ P                                      (contact impulses, if any)
//   q_{k+1} = q_M ⊕ (h/2) v_{k+1}
#pragma once

#include "kernels/contact.h"

namespace moreau {
namespace kern {

// Control clamped to its range (when limited).
template <class S>
MOREAU_HD S actuator_ctrl(const ModelView<S>& m, int a, S ctrl) {
  return m.actuator_ctrllimited[a] ? clamp(ctrl, m.actuator_ctrlrange[2 * a], m.actuator_ctrlrange[2 * a + 1]) : ctrl;
}

// Actuator forces into τ (added). With gear g: l = g q, l̇ = g q̇, τ += g f;
// position servo f = kp (u − l) − kd l̇, motor f = u; f clamped to [f_min(l̇), f_max(l̇)] with
// f_max = clamp(peak (1 − l̇/vmax), 0, hi), f_min = −clamp(peak (1 + l̇/vmax), 0, −lo) when a
// torque–speed line is given, else [lo, hi] when force-limited.
template <class S>
MOREAU_HD void actuator_forces(const ModelView<S>& m, const Params<S>& p, int env, const S* q, const S* v,
                               const S* ctrl, S* tau) {
  for (int a = 0; a < m.nu; ++a) {
    const S g = m.actuator_gear[a];
    const S l = g * q[m.actuator_qposadr[a]], ldot = g * v[m.actuator_dof[a]];
    const S u = actuator_ctrl(m, a, ctrl[a]);
    S f = m.actuator_type[a] == kActPosition ? p.kp.get(env, a) * (u - l) - p.kd.get(env, a) * ldot : u;
    const S big = S(1e30);
    S lo = m.actuator_forcelimited[a] ? m.actuator_forcerange[2 * a] : -big;
    S hi = m.actuator_forcelimited[a] ? m.actuator_forcerange[2 * a + 1] : big;
    const S peak = m.actuator_peakforce[a];
    if (peak > 0) {
      const S r = ldot / m.actuator_maxvel[a];
      hi = clamp(peak * (1 - r), S(0), hi);
      lo = -clamp(peak * (1 + r), S(0), -lo);
    }
    tau[m.actuator_dof[a]] += g * clamp(f, lo, hi);
  }
}

// Contact information of one physics step (per contact point), and solver statistics.
template <class S>
struct ContactInfo {
  S gap[kMaxContacts];
  S impulse[kMaxContacts];
  int active[kMaxContacts];
};

// One physics step of size h, in place on (q, v). Returns the contact stage's result; its
// status bits are 0 when all went well.
template <class S>
MOREAU_HD ContactResult<S> physics_step(const ModelView<S>& m, const ContactSettings<S>& cfg, const Params<S>& p,
                                        int env, S h, S* q, S* v, const S* ctrl, Workspace<S>& ws,
                                        ContactScratch<S>& cs, ContactInfo<S>& info) {
  const int nv = m.nv;
  S qM[kMaxNq], rhs[kMaxNv], hD[kMaxNv], v_k[kMaxNv];
  for (int k = 0; k < nv; ++k) v_k[k] = v[k];
  integrate(m, q, v, h / 2, qM);
  body_inertias(m, p.added_base_mass.get(env), ws);
  forward_kinematics(m, qM, ws);
  rnea(m, v, static_cast<const S*>(nullptr), ws, rhs);  // rhs = b
  for (int k = 0; k < nv; ++k) {
    hD[k] = h * m.dof_damping[k];
    rhs[k] = -rhs[k] - m.dof_damping[k] * v[k];
  }
  actuator_forces(m, p, env, qM, v, ctrl, rhs);
  for (int k = 0; k < nv; ++k) rhs[k] *= h;
  crba(m, hD, ws);
  if (!ltl_factor(m, ws.H)) return {kStatusSingularMass, 0, S(0)};
  ltl_solve(m, ws.H, rhs);
  for (int k = 0; k < nv; ++k) v[k] += rhs[k];
  ContactResult<S> result{0, 0, S(0)};
  if (cfg.mode != kContactNone && m.ncon > 0)
    result = contact_stage(m, cfg, p, env, qM, v_k, h, PlaneGround<S>{}, ws, cs, v, info.gap, info.impulse,
                           info.active);
  integrate(m, qM, v, h / 2, q);
  return result;
}

template <class S>
MOREAU_HD bool all_finite(const S* x, int n) {
  for (int k = 0; k < n; ++k)
    if (!is_finite(x[k])) return false;
  return true;
}

// One control step of environment `env`: `decimation` physics steps with the action held.
// An environment with a non-zero status is skipped. On failure the state is left as it was
// before the control step and the status says why.
template <class S>
MOREAU_HD void control_step(const ModelView<S>& m, const ContactSettings<S>& cfg, const Params<S>& p,
                            const Batch<S>& b, int env) {
  if (b.status[env] != 0) return;
  const int n = b.n_env;
  S q[kMaxNq], v[kMaxNv], u[kMaxNu];
  for (int k = 0; k < m.nq; ++k) q[k] = b.q[k * n + env];
  for (int k = 0; k < m.nv; ++k) v[k] = b.v[k * n + env];
  for (int k = 0; k < m.nu; ++k) u[k] = b.action[k * n + env];
  int status = 0;
  if (!all_finite(u, m.nu)) status |= kStatusNanAction;
  if (!all_finite(q, m.nq) || !all_finite(v, m.nv)) status |= kStatusNanState;
  Workspace<S> ws;
  ContactScratch<S> cs;
  ContactInfo<S> info;
  const S h = m.timestep / cfg.substeps;
  int iterations = 0;
  S residual = 0;
  for (int s = 0; s < m.decimation * cfg.substeps && status == 0; ++s) {
    const ContactResult<S> r = physics_step(m, cfg, p, env, h, q, v, u, ws, cs, info);
    status = r.status;
    iterations = r.iterations > iterations ? r.iterations : iterations;
    residual = mmax(residual, r.residual);
    if (status == 0 && (!all_finite(q, m.nq) || !all_finite(v, m.nv))) status = kStatusNanState;
  }
  if (b.solver_iterations) {
    b.solver_iterations[env] = iterations;
    b.solver_residual[env] = residual;
  }
  if (status != 0) {
    b.status[env] = status;
    return;
  }
  for (int k = 0; k < m.nq; ++k) b.q[k * n + env] = q[k];
  for (int k = 0; k < m.nv; ++k) b.v[k * n + env] = v[k];
  if (cfg.mode != kContactNone && b.con_gap)
    for (int k = 0; k < m.ncon; ++k) {
      b.con_gap[k * n + env] = info.gap[k];
      b.con_impulse[k * n + env] = info.impulse[k];
      b.con_active[k * n + env] = info.active[k];
    }
  b.time[env] += m.decimation * m.timestep;
}

// Environment `env` back to the default state: q = qpos0, v = 0, time 0, status 0, and an
// action that holds the default pose (position servo: u = g q0; motor: u = 0).
template <class S>
MOREAU_HD void reset_env(const ModelView<S>& m, const Batch<S>& b, int env) {
  const int n = b.n_env;
  for (int k = 0; k < m.nq; ++k) b.q[k * n + env] = m.qpos0[k];
  for (int k = 0; k < m.nv; ++k) b.v[k * n + env] = 0;
  for (int a = 0; a < m.nu; ++a)
    b.action[a * n + env] =
        m.actuator_type[a] == kActPosition ? m.actuator_gear[a] * m.qpos0[m.actuator_qposadr[a]] : S(0);
  b.status[env] = 0;
  b.time[env] = 0;
}

}  // namespace kern
}  // namespace moreau
