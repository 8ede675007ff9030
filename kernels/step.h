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

// Differentiable parameters of a step, and their adjoints.
template <class S>
struct ParamAdjoint {
  S kp[kMaxNu];
  S kd[kMaxNu];
  S added_base_mass;
  ContactParamAdjoint<S> contact;
};

template <class S>
MOREAU_HD void adj_clear(const ModelView<S>& m, ParamAdjoint<S>& adj) {
  for (int a = 0; a < m.nu; ++a) adj.kp[a] = adj.kd[a] = 0;
  adj.added_base_mass = 0;
  adj.contact = {S(0), S(0), S(0)};
}

// Clamps pass the gradient where they do not bind (bounds inclusive) and send it to the bound
// otherwise: the control clamp to nothing, the force clamp to the torque–speed line's slope
// −peak/vmax in l̇ where that line binds.
template <class S>
MOREAU_HD void adj_actuator_forces(const ModelView<S>& m, const Params<S>& p, int env, const S* q, const S* v,
                                   const S* ctrl, S* adj_q, S* adj_v, S* adj_ctrl, ParamAdjoint<S>& adj_p,
                                   const S* adj_tau) {
  for (int a = 0; a < m.nu; ++a) {
    const S g = m.actuator_gear[a];
    const int dof = m.actuator_dof[a], qa = m.actuator_qposadr[a];
    const S l = g * q[qa], ldot = g * v[dof];
    const S u = actuator_ctrl(m, a, ctrl[a]);
    const bool servo = m.actuator_type[a] == kActPosition;
    const S kp = p.kp.get(env, a), kd = p.kd.get(env, a);
    const S f = servo ? kp * (u - l) - kd * ldot : u;
    const S big = S(1e30);
    const S lo0 = m.actuator_forcelimited[a] ? m.actuator_forcerange[2 * a] : -big;
    const S hi0 = m.actuator_forcelimited[a] ? m.actuator_forcerange[2 * a + 1] : big;
    const S peak = m.actuator_peakforce[a];
    S lo = lo0, hi = hi0, dlo = 0, dhi = 0;  // bounds and their derivatives in l̇
    if (peak > 0) {
      const S vmax = m.actuator_maxvel[a], r = ldot / vmax;
      hi = clamp(peak * (1 - r), S(0), hi0);
      lo = -clamp(peak * (1 + r), S(0), -lo0);
      if (peak * (1 - r) > 0 && peak * (1 - r) < hi0) dhi = -peak / vmax;
      if (peak * (1 + r) > 0 && peak * (1 + r) < -lo0) dlo = -peak / vmax;
    }
    const S adj_out = g * adj_tau[dof];
    S adj_f = 0, adj_ldot = 0;
    if (f < lo) {
      adj_ldot += dlo * adj_out;
    } else if (f > hi) {
      adj_ldot += dhi * adj_out;
    } else {
      adj_f = adj_out;
    }
    S adj_u = adj_f;
    if (servo) {  // f = kp (u − l) − kd l̇
      adj_u = kp * adj_f;
      adj_q[qa] -= g * kp * adj_f;
      adj_ldot -= kd * adj_f;
      adj_p.kp[a] += (u - l) * adj_f;
      adj_p.kd[a] -= ldot * adj_f;
    }
    adj_v[dof] += g * adj_ldot;
    const bool passes = !m.actuator_ctrllimited[a] ||
                        (ctrl[a] >= m.actuator_ctrlrange[2 * a] && ctrl[a] <= m.actuator_ctrlrange[2 * a + 1]);
    if (passes) adj_ctrl[a] += adj_u;
  }
}

// Contact information of one physics step (per contact point), and solver statistics.
template <class S>
struct ContactInfo {
  S gap[kMaxContacts];
  S impulse[kMaxContacts];
  int active[kMaxContacts];
};

// The smooth part of a physics step: q_M = q ⊕ (h/2) v and the free velocity change Δv from
// (H(q_M) + h D) Δv = h (τ − b − D v). Leaves the kinematics at q_M and the factorised
// H + hD in ws. False if the mass matrix is not positive definite.
template <class S>
MOREAU_HD bool free_velocity(const ModelView<S>& m, const Params<S>& p, int env, S h, const S* q, const S* v,
                             const S* ctrl, Workspace<S>& ws, S* qM, S* dv) {
  const int nv = m.nv;
  S hD[kMaxNv];
  integrate(m, q, v, h / 2, qM);
  body_inertias(m, p.added_base_mass.get(env), ws);
  forward_kinematics(m, qM, ws);
  rnea(m, v, static_cast<const S*>(nullptr), ws, dv);  // dv = b
  for (int k = 0; k < nv; ++k) {
    hD[k] = h * m.dof_damping[k];
    dv[k] = -dv[k] - m.dof_damping[k] * v[k];
  }
  actuator_forces(m, p, env, qM, v, ctrl, dv);
  for (int k = 0; k < nv; ++k) dv[k] *= h;
  crba(m, hD, ws);
  if (!ltl_factor(m, ws.H)) return false;
  ltl_solve(m, ws.H, dv);
  return true;
}

// One physics step of size h, in place on (q, v). Returns the contact stage's result; its
// status bits are 0 when all went well.
template <class S>
MOREAU_HD ContactResult<S> physics_step(const ModelView<S>& m, const ContactSettings<S>& cfg, const Params<S>& p,
                                        int env, S h, S* q, S* v, const S* ctrl, Workspace<S>& ws,
                                        ContactScratch<S>& cs, ContactInfo<S>& info) {
  S qM[kMaxNq], dv[kMaxNv], v_k[kMaxNv];
  for (int k = 0; k < m.nv; ++k) v_k[k] = v[k];
  if (!free_velocity(m, p, env, h, q, v, ctrl, ws, qM, dv)) return {kStatusSingularMass, 0, S(0)};
  for (int k = 0; k < m.nv; ++k) v[k] += dv[k];
  ContactResult<S> result{0, 0, S(0)};
  if (cfg.mode != kContactNone && m.ncon > 0)
    result = contact_stage(m, cfg, p, env, qM, v_k, h, PlaneGround<S>{}, ws, cs, v, info.gap, info.impulse,
                           info.active);
  integrate(m, qM, v, h / 2, q);
  return result;
}

// Adjoint of physics_step (recomputed from the step's input state q, v). With the residual
// r = h RNEA(q_M, v, a) + (armature + hD) Δv + h D v − h τ(q_M, v, u) = 0, a = Δv/h, and
// λ = (H + hD)⁻¹ v̄_free (the same factorisation; ARCHITECTURE.md §4):
//   x̄ −= (∂r/∂x)ᵀ λ  for x = q_M, v, u, parameters:
// adj_rnea with τ̄ = −h λ, v̄ −= h D λ, adj_actuator_forces with τ̄ = +h λ. The contact stage's
// adjoint (adj_contact_stage) comes first; hard_smooth_grad returns the smooth model's
// gradient at the hard forward's inputs. Accumulates into adj_q, adj_v, adj_ctrl, adj_p.
// Returns status bits (0 = ok).
template <class S>
MOREAU_HD int adj_physics_step(const ModelView<S>& m, const ContactSettings<S>& cfg, const Params<S>& p, int env,
                               S h, const S* q, const S* v, const S* ctrl, S* adj_q, S* adj_v, S* adj_ctrl,
                               ParamAdjoint<S>& adj_p, const S* adj_q_out, const S* adj_v_out, Workspace<S>& ws,
                               AdjWorkspace<S>& aw, ContactScratch<S>& cs, ContactInfo<S>& info) {
  const bool contact = cfg.mode != kContactNone && m.ncon > 0;
  const int nv = m.nv;
  S qM[kMaxNq], dv[kMaxNv], v1[kMaxNv], v2[kMaxNv], adj_qM[kMaxNq], lambda[kMaxNv], adj_v2[kMaxNv], a[kMaxNv],
      tau_adj[kMaxNv];
  if (!free_velocity(m, p, env, h, q, v, ctrl, ws, qM, dv)) return kStatusSingularMass;
  for (int k = 0; k < nv; ++k) v1[k] = v2[k] = v[k] + dv[k];
  if (contact) contact_stage(m, cfg, p, env, qM, v, h, PlaneGround<S>{}, ws, cs, v2, info.gap, info.impulse, info.active);
  // q_out = q_M ⊕ (h/2) v_{k+1}
  for (int k = 0; k < m.nq; ++k) adj_qM[k] = 0;
  for (int k = 0; k < nv; ++k) adj_v2[k] = adj_v_out[k];
  adj_integrate(m, qM, v2, h / 2, adj_qM, adj_v2, adj_q_out);
  adj_clear(m, aw);
  // v_{k+1} = v_free + H⁻¹ Jᵀ P_applied
  for (int k = 0; k < nv; ++k) lambda[k] = contact ? S(0) : adj_v2[k];
  if (contact) {  // v_k = v: the soft model's explicit velocity gets its part in adj_v
    const int st = adj_contact_stage(m, cfg, p, env, qM, v, h, PlaneGround<S>{}, ws, cs, v1, adj_v2, lambda, adj_v,
                                     adj_qM, aw, adj_p.contact);
    if (st) return st;
  }
  // v_free = v + Δv
  for (int k = 0; k < nv; ++k) adj_v[k] += lambda[k];
  ltl_solve(m, ws.H, lambda);
  for (int k = 0; k < nv; ++k) {
    a[k] = dv[k] / h;
    tau_adj[k] = -h * lambda[k];
    adj_v[k] -= h * m.dof_damping[k] * lambda[k];
  }
  rnea(m, v, a, ws, dv);  // the kinematic quantities at (q_M, v, a) for the reverse sweep
  adj_rnea(m, v, a, ws, adj_v, static_cast<S*>(nullptr), tau_adj, aw);
  for (int k = 0; k < nv; ++k) tau_adj[k] = h * lambda[k];
  adj_actuator_forces(m, p, env, qM, v, ctrl, adj_qM, adj_v, adj_ctrl, adj_p, tau_adj);
  adj_forward_kinematics(m, qM, adj_qM, aw);
  adj_body_inertias(m, p.added_base_mass.get(env), adj_p.added_base_mass, aw);
  // q_M = q ⊕ (h/2) v
  adj_integrate(m, q, v, h / 2, adj_q, adj_v, adj_qM);
  return 0;
}

template <class S>
MOREAU_HD bool all_finite(const S* x, int n) {
  for (int k = 0; k < n; ++k)
    if (!is_finite(x[k])) return false;
  return true;
}

// Status bits of an input state and action (0 if all finite).
template <class S>
MOREAU_HD int input_status(const ModelView<S>& m, const S* q, const S* v, const S* u) {
  int status = 0;
  if (!all_finite(u, m.nu)) status |= kStatusNanAction;
  if (!all_finite(q, m.nq) || !all_finite(v, m.nv)) status |= kStatusNanState;
  return status;
}

// Solver statistics over the physics steps of a control step.
template <class S>
struct StepStats {
  int iterations;
  S residual;
};

// One control step on local arrays: decimation × substeps physics steps with the action held,
// in place on (q, v). Returns status bits (a fatal bit stops it); stats and info (the last
// physics step's contact information) may be null.
template <class S>
MOREAU_HD int advance(const ModelView<S>& m, const ContactSettings<S>& cfg, const Params<S>& p, int env, S* q, S* v,
                      const S* u, Workspace<S>& ws, ContactScratch<S>& cs, ContactInfo<S>& info, StepStats<S>* stats) {
  int status = input_status(m, q, v, u);
  const S h = m.timestep / cfg.substeps;
  StepStats<S> st{0, S(0)};
  for (int s = 0; s < m.decimation * cfg.substeps && !(status & kStatusFatal); ++s) {
    const ContactResult<S> r = physics_step(m, cfg, p, env, h, q, v, u, ws, cs, info);
    status |= r.status;
    st.iterations = r.iterations > st.iterations ? r.iterations : st.iterations;
    st.residual = mmax(st.residual, r.residual);
    if (!(status & kStatusFatal) && (!all_finite(q, m.nq) || !all_finite(v, m.nv))) status |= kStatusNanState;
  }
  if (stats) *stats = st;
  return status;
}

// Checkpoints for the adjoint of a control step: the boundary states of every `stride`-th
// physics step are kept, and each segment is recomputed from its checkpoint (at most
// kCheckpoints² physics steps per control step).
constexpr int kCheckpoints = 16;

// Adjoint of advance: from the control step's input (q0, v0, u) and the adjoints of its output
// (adj_q1, adj_v1), writes adj_q0, adj_v0 and accumulates adj_u and adj_p. Returns status bits
// (warnings included: a contact solve that stopped on its cap is differentiated at its last
// iterate).
template <class S>
MOREAU_HD int adj_advance(const ModelView<S>& m, const ContactSettings<S>& cfg, const Params<S>& p, int env,
                          const S* q0, const S* v0, const S* u, S* adj_q0, S* adj_v0, S* adj_u, ParamAdjoint<S>& adj_p,
                          const S* adj_q1, const S* adj_v1, Workspace<S>& ws, AdjWorkspace<S>& aw,
                          ContactScratch<S>& cs, ContactInfo<S>& info) {
  const int nq = m.nq, nv = m.nv, n_steps = m.decimation * cfg.substeps;
  const int stride = (n_steps + kCheckpoints - 1) / kCheckpoints;
  if (stride > kCheckpoints) return kStatusNoGradient;
  int status = input_status(m, q0, v0, u);
  if (status) return status;
  const S h = m.timestep / cfg.substeps;
  S cq[kCheckpoints][kMaxNq], cv[kCheckpoints][kMaxNv];  // checkpoints, then a segment's states
  S q[kMaxNq], v[kMaxNv];
  for (int k = 0; k < nq; ++k) q[k] = q0[k];
  for (int k = 0; k < nv; ++k) v[k] = v0[k];
  // forward, keeping every stride-th input state (the last step's output is not needed)
  for (int s = 0; s < n_steps; ++s) {
    if (s % stride == 0) {
      for (int k = 0; k < nq; ++k) cq[s / stride][k] = q[k];
      for (int k = 0; k < nv; ++k) cv[s / stride][k] = v[k];
    }
    if (s + 1 == n_steps) break;
    status |= physics_step(m, cfg, p, env, h, q, v, u, ws, cs, info).status;
    if (status & kStatusFatal) return status;
  }
  S aq[kMaxNq], av[kMaxNv], nq_adj[kMaxNq], nv_adj[kMaxNv];
  for (int k = 0; k < nq; ++k) aq[k] = adj_q1[k];
  for (int k = 0; k < nv; ++k) av[k] = adj_v1[k];
  S sq[kCheckpoints][kMaxNq], sv[kCheckpoints][kMaxNv];
  for (int seg = (n_steps - 1) / stride; seg >= 0; --seg) {
    const int begin = seg * stride, end = mmin(n_steps, begin + stride);
    for (int k = 0; k < nq; ++k) q[k] = cq[seg][k];
    for (int k = 0; k < nv; ++k) v[k] = cv[seg][k];
    for (int j = begin; j < end; ++j) {  // the segment's input states
      for (int k = 0; k < nq; ++k) sq[j - begin][k] = q[k];
      for (int k = 0; k < nv; ++k) sv[j - begin][k] = v[k];
      if (j + 1 < end) physics_step(m, cfg, p, env, h, q, v, u, ws, cs, info);
    }
    for (int j = end - 1; j >= begin; --j) {
      for (int k = 0; k < nq; ++k) nq_adj[k] = 0;
      for (int k = 0; k < nv; ++k) nv_adj[k] = 0;
      const int st = adj_physics_step(m, cfg, p, env, h, sq[j - begin], sv[j - begin], u, nq_adj, nv_adj, adj_u,
                                      adj_p, aq, av, ws, aw, cs, info);
      if (st) return status | st;
      for (int k = 0; k < nq; ++k) aq[k] = nq_adj[k];
      for (int k = 0; k < nv; ++k) av[k] = nv_adj[k];
    }
  }
  for (int k = 0; k < nq; ++k) adj_q0[k] = aq[k];
  for (int k = 0; k < nv; ++k) adj_v0[k] = av[k];
  if (!all_finite(aq, nq) || !all_finite(av, nv) || !all_finite(adj_u, m.nu)) status |= kStatusNanGradient;
  return status;
}

// One control step of environment `env` of the batch, in place. An environment with a fatal
// status bit is skipped. On a fatal failure the state is left as it was before the control
// step; every new bit is added to the status.
template <class S>
MOREAU_HD void control_step(const ModelView<S>& m, const ContactSettings<S>& cfg, const Params<S>& p,
                            const Batch<S>& b, int env) {
  if (b.status[env] & kStatusFatal) return;
  const int n = b.n_env;
  S q[kMaxNq], v[kMaxNv], u[kMaxNu];
  for (int k = 0; k < m.nq; ++k) q[k] = b.q[k * n + env];
  for (int k = 0; k < m.nv; ++k) v[k] = b.v[k * n + env];
  for (int k = 0; k < m.nu; ++k) u[k] = b.action[k * n + env];
  Workspace<S> ws;
  ContactScratch<S> cs;
  ContactInfo<S> info;
  StepStats<S> stats;
  const int status = advance(m, cfg, p, env, q, v, u, ws, cs, info, &stats);
  if (b.solver_iterations) {
    b.solver_iterations[env] = stats.iterations;
    b.solver_residual[env] = stats.residual;
  }
  b.status[env] |= status;
  if (status & kStatusFatal) return;
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

// Buffers of the pure (stateless) control step and its adjoint, field-major over n_env.
// Adjoint outputs are overwritten, or added to when `accumulate`; parameter adjoints
// (n_env x width) may be null.
template <class S>
struct PureStep {
  int n_env;
  const S* q_in;       // (n_env x nq)
  const S* v_in;       // (n_env x nv)
  const S* action;     // (n_env x nu)
  S* q_out;            // forward
  S* v_out;
  const S* adj_q_out;  // adjoint
  const S* adj_v_out;
  S* adj_q_in;
  S* adj_v_in;
  S* adj_action;
  S* adj_kp;               // (n_env x nu)
  S* adj_kd;               // (n_env x nu)
  S* adj_added_base_mass;  // (n_env x 1)
  S* adj_friction;         // (n_env x 1)
  S* adj_contact_kn;       // (n_env x 1)
  S* adj_smooth_k;         // (n_env x 1)
  int* status;         // (n_env)
  int accumulate;
};

template <class S>
MOREAU_HD void load_env(const ModelView<S>& m, const PureStep<S>& b, int env, S* q, S* v, S* u) {
  const int n = b.n_env;
  for (int k = 0; k < m.nq; ++k) q[k] = b.q_in[k * n + env];
  for (int k = 0; k < m.nv; ++k) v[k] = b.v_in[k * n + env];
  for (int k = 0; k < m.nu; ++k) u[k] = b.action[k * n + env];
}

// (q_out, v_out) = control step of (q_in, v_in, action) for environment env; status set. With
// `accumulate`, an environment with a fatal status bit is carried through unchanged and new
// status bits are added (a recorded rollout).
template <class S>
MOREAU_HD void pure_step(const ModelView<S>& m, const ContactSettings<S>& cfg, const Params<S>& p,
                         const PureStep<S>& b, int env) {
  const int n = b.n_env;
  S q[kMaxNq], v[kMaxNv], u[kMaxNu];
  load_env(m, b, env, q, v, u);
  int status = b.accumulate ? b.status[env] : 0;
  if (!(status & kStatusFatal)) {
    Workspace<S> ws;
    ContactScratch<S> cs;
    ContactInfo<S> info;
    status |= advance(m, cfg, p, env, q, v, u, ws, cs, info, static_cast<StepStats<S>*>(nullptr));
    if (status & kStatusFatal) load_env(m, b, env, q, v, u);  // a failed step leaves the state as it was
  }
  b.status[env] = status;
  for (int k = 0; k < m.nq; ++k) b.q_out[k * n + env] = q[k];
  for (int k = 0; k < m.nv; ++k) b.v_out[k * n + env] = v[k];
}

// Adjoint of pure_step for environment env: adj_q_in, adj_v_in, adj_action (and parameter
// adjoints) from adj_q_out, adj_v_out; zero gradients and a status bit where it fails.
template <class S>
MOREAU_HD void adj_pure_step(const ModelView<S>& m, const ContactSettings<S>& cfg, const Params<S>& p,
                             const PureStep<S>& b, int env) {
  const int n = b.n_env;
  S q[kMaxNq], v[kMaxNv], u[kMaxNu], aq1[kMaxNq], av1[kMaxNv], aq0[kMaxNq], av0[kMaxNv], au[kMaxNu];
  load_env(m, b, env, q, v, u);
  for (int k = 0; k < m.nq; ++k) aq1[k] = b.adj_q_out[k * n + env];
  for (int k = 0; k < m.nv; ++k) av1[k] = b.adj_v_out[k * n + env];
  for (int k = 0; k < m.nu; ++k) au[k] = 0;
  ParamAdjoint<S> ap;
  adj_clear(m, ap);
  Workspace<S> ws;
  AdjWorkspace<S> aw;
  ContactScratch<S> cs;
  ContactInfo<S> info;
  // with `accumulate` (a recorded rollout), an environment whose forward failed keeps zero gradients
  const int prior = b.accumulate ? b.status[env] : 0;
  const int status =
      prior & kStatusFatal ? prior : prior | adj_advance(m, cfg, p, env, q, v, u, aq0, av0, au, ap, aq1, av1, ws, aw, cs, info);
  b.status[env] = status;
  const bool ok = !(status & (kStatusFatal | kStatusNoGradient | kStatusNanGradient));
  auto out = [&](S* dst, int k, S x) {
    S& d = dst[k * n + env];
    d = (b.accumulate ? d : S(0)) + (ok ? x : S(0));
  };
  for (int k = 0; k < m.nq; ++k) out(b.adj_q_in, k, aq0[k]);
  for (int k = 0; k < m.nv; ++k) out(b.adj_v_in, k, av0[k]);
  for (int k = 0; k < m.nu; ++k) out(b.adj_action, k, au[k]);
  for (int a = 0; a < m.nu; ++a) {
    if (b.adj_kp) out(b.adj_kp, a, ap.kp[a]);
    if (b.adj_kd) out(b.adj_kd, a, ap.kd[a]);
  }
  if (b.adj_added_base_mass) out(b.adj_added_base_mass, 0, ap.added_base_mass);
  if (b.adj_friction) out(b.adj_friction, 0, ap.contact.friction);
  if (b.adj_contact_kn) out(b.adj_contact_kn, 0, ap.contact.contact_kn);
  if (b.adj_smooth_k) out(b.adj_smooth_k, 0, ap.contact.smooth_k);
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
