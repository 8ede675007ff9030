// moreau kernels — actuators, the Moreau midpoint physics step and the control step.
//
//   q_M     = q_k ⊕ (h/2) v_k
//   (H(q_M) + h D) Δv = h (τ(q_M, v_k) − b(q_M, v_k) − D v_k)      (D: joint damping, implicit;
//                                                                    τ: actuators, joint springs)
//   v_free  = v_k + Δv
//   v_{k+1} = v_free + H⁻¹ Jᵀ P                                      (contact impulses, if any)
//   q_{k+1} = q_M ⊕ (h/2) v_{k+1}
#pragma once

#include <cstddef>

#include "kernels/contact.h"

namespace moreau {
namespace kern {

// Control clamped to its range (when limited).
template <class S, class D>
MOREAU_HD S actuator_ctrl(const ModelView<S, D>& m, int a, S ctrl) {
  return m.actuator_ctrllimited[a] ? clamp(ctrl, m.actuator_ctrlrange[2 * a], m.actuator_ctrlrange[2 * a + 1]) : ctrl;
}

// Actuator forces into τ (added). With gear g and strength s: l = g q, l̇ = g q̇, τ += g s f;
// position servo f = kp (u − l) − kd l̇, motor f = u; f clamped to [f_min(l̇), f_max(l̇)] with
// f_max = clamp(peak (1 − l̇/vmax), 0, hi), f_min = −clamp(peak (1 + l̇/vmax), 0, −lo) when a
// torque–speed line is given, else [lo, hi] when force-limited.
template <class S, class D>
MOREAU_HD void actuator_forces(const ModelView<S, D>& m, const Params<S>& p, int env, const S* q, const S* v,
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
    if (any_lane(peak > S(0))) {  // (a model constant: the same in every lane)
      const S r = ldot / m.actuator_maxvel[a];
      hi = clamp(peak * (1 - r), S(0), hi);
      lo = -clamp(peak * (1 + r), S(0), -lo);
    }
    tau[m.actuator_dof[a]] += g * p.motor_strength.get(env, a) * clamp(f, lo, hi);
  }
}

// Passive joint forces into τ (added): damping −c D v (c: the environment's damping_scale) and
// springs −k (q − q_spring) on the revolute and prismatic joints that have one.
template <class S, class D>
MOREAU_HD void passive_forces(const ModelView<S, D>& m, S c, const S* q, const S* v, S* tau) {
  for (int k = 0; k < m.nv; ++k) tau[k] -= c * m.dof_damping[k] * v[k];
  if (m.has_springs)
    for (int j = 0; j < m.nbody; ++j)
      if (any_lane(m.jnt_stiffness[j] != S(0))) tau[m.jnt_dofadr[j]] -= m.jnt_stiffness[j] * (q[m.jnt_qposadr[j]] - m.jnt_springref[j]);
}

// Adjoint of passive_forces: q̄ += (∂τ/∂q)ᵀ τ̄, v̄ += (∂τ/∂v)ᵀ τ̄.
template <class S, class D>
MOREAU_HD void adj_passive_forces(const ModelView<S, D>& m, S c, const S* tau_adj, S* adj_q, S* adj_v) {
  for (int k = 0; k < m.nv; ++k) adj_v[k] -= c * m.dof_damping[k] * tau_adj[k];
  if (m.has_springs)
    for (int j = 0; j < m.nbody; ++j)
      if (m.jnt_stiffness[j] != 0) adj_q[m.jnt_qposadr[j]] -= m.jnt_stiffness[j] * tau_adj[m.jnt_dofadr[j]];
}

// Differentiable parameters of a step, and their adjoints.
template <class S, class D = MaxDims>
struct ParamAdjoint {
  S kp[D::kNu];
  S kd[D::kNu];
  S added_base_mass;
  ContactParamAdjoint<S> contact;
};

template <class S, class D>
MOREAU_HD void adj_clear(const ModelView<S, D>& m, ParamAdjoint<S, D>& adj) {
  for (int a = 0; a < m.nu; ++a) adj.kp[a] = adj.kd[a] = 0;
  adj.added_base_mass = 0;
  adj.contact = {S(0), S(0), S(0)};
}

// Clamps pass the gradient where they do not bind (bounds inclusive) and send it to the bound
// otherwise: the control clamp to nothing, the force clamp to the torque–speed line's slope
// −peak/vmax in l̇ where that line binds.
template <class S, class D>
MOREAU_HD void adj_actuator_forces(const ModelView<S, D>& m, const Params<S>& p, int env, const S* q, const S* v,
                                   const S* ctrl, S* adj_q, S* adj_v, S* adj_ctrl, ParamAdjoint<S, D>& adj_p,
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
    if (any_lane(peak > S(0))) {  // (a model constant: the same in every lane)
      const S vmax = m.actuator_maxvel[a], r = ldot / vmax;
      hi = clamp(peak * (1 - r), S(0), hi0);
      lo = -clamp(peak * (1 + r), S(0), -lo0);
      if (peak * (1 - r) > 0 && peak * (1 - r) < hi0) dhi = -peak / vmax;
      if (peak * (1 + r) > 0 && peak * (1 + r) < -lo0) dlo = -peak / vmax;
    }
    const S adj_out = g * p.motor_strength.get(env, a) * adj_tau[dof];
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

// Contact information of one physics step (per contact point): only the stateful step keeps
// it (the pure step and the adjoints pass none).
template <class S, class D = MaxDims>
struct ContactInfo {
  S gap[D::kContacts];
  S impulse[D::kContacts];
  int active[D::kContacts];
};
template <class S, class D = MaxDims>
MOREAU_HD ContactInfo<S, D>* no_info() { return nullptr; }

// The smooth part of a physics step: q_M = q ⊕ (h/2) v and the free velocity change Δv from
// (H(q_M) + h D) Δv = h (τ − b − D v). Leaves the kinematics at q_M and the factorised
// H + hD in ws. False if the mass matrix is not positive definite.
template <class S, class D>
MOREAU_HD MaskOf<S> free_velocity(const ModelView<S, D>& m, const Params<S>& p, int env, S h, const S* q, const S* v,
                                   const S* ctrl, Workspace<S, D>& ws, S* qM, S* dv) {
  const int nv = m.nv;
  const S c = p.damping_scale.get(env);
  TeamArray<D, S, D::kNv> hD;
  single(m, [&]() MOREAU_LAMBDA { integrate(m, q, v, h / 2, qM); });
  body_inertias(m, p.added_base_mass.get(env), ws);
  forward_kinematics(m, qM, ws);
  rnea(m, v, static_cast<const S*>(nullptr), ws, dv);  // dv = b
  single(m, [&]() MOREAU_LAMBDA {  // dv = h (τ − b)
    for (int k = 0; k < nv; ++k) {
      hD[k] = h * (c * m.dof_damping[k]);
      dv[k] = -dv[k];
    }
    passive_forces(m, c, qM, v, dv);
    actuator_forces(m, p, env, qM, v, ctrl, dv);
    for (int k = 0; k < nv; ++k) dv[k] *= h;
  });
  crba(m, hD.data, ws, p.armature_scale.get(env));
  const MaskOf<S> ok = ltl_factor(m, ws.H);
  ltl_solve<TeamFor<D>>(m, ws.H, dv);
  return ok;
}

// The intermediates of one physics step, as its adjoint reads them: the input state, q_M, Δv,
// v_free = v + Δv, v_next, the kinematics and the factorised H + hD at q_M (ws), and the contact
// solve (cs).
template <class S, class D = MaxDims>
struct StepTape {
  S q[D::kNq], v[D::kNv], qM[D::kNq], dv[D::kNv], v_free[D::kNv], v_next[D::kNv];
  Workspace<S, D> ws;
  ContactScratch<S, D> cs;
};

// A recorded physics step as its adjoint reads it: the step's tape and the seed-independent
// part of the adjoint (adj_setup).
template <class S, class D = MaxDims>
struct AdjTape {
  StepTape<S, D> step;
  S a[D::kNv];  // (v_next − v)/h (with the gradient's contact solve: adj_setup)
  ContactAdjoint<S, D> ca;
};

template <class S, class D>
MOREAU_HD StepTape<S, D>& step_tape(StepTape<S, D>& t) { return t; }
template <class S, class D>
MOREAU_HD StepTape<S, D>& step_tape(AdjTape<S, D>& t) { return t.step; }

// The rest of a physics step once t holds its input state and free_velocity's results (ok: the
// mass matrix was positive definite): v_free, the contact stage and q_next.
template <class S, class D>
MOREAU_HD ContactResult<S> finish_step(const ModelView<S, D>& m, const ContactSettings<S>& cfg, const Params<S>& p,
                                       int env, S h, bool ok, S* q, S* v, StepTape<S, D>& t, ContactInfo<S, D>* info) {
  if (!ok) return {kStatusSingularMass, 0, S(0)};
  single(m, [&]() MOREAU_LAMBDA {
    for (int k = 0; k < m.nv; ++k) v[k] = t.v_free[k] = t.v[k] + t.dv[k];
  });
  ContactResult<S> result{0, 0, S(0)};
  if (has_constraints(m, cfg))
    result = contact_stage(m, cfg, p, env, t.qM, t.v, h, ground_of(m, p, env), t.ws, t.cs, v, info ? info->gap : nullptr,
                           info ? info->impulse : nullptr, info ? info->active : nullptr);
  single(m, [&]() MOREAU_LAMBDA {
    for (int k = 0; k < m.nv; ++k) t.v_next[k] = v[k];
    integrate(m, t.qM, v, h / 2, q);
  });
  return result;
}

// One physics step of size h, in place on (q, v), recorded in t. Returns the contact stage's
// result; its status bits are 0 when all went well.
template <class S, class D>
MOREAU_HD ContactResult<S> physics_step(const ModelView<S, D>& m, const ContactSettings<S>& cfg, const Params<S>& p,
                                        int env, S h, S* q, S* v, const S* ctrl, StepTape<S, D>& t,
                                        ContactInfo<S, D>* info) {
  single(m, [&]() MOREAU_LAMBDA {
    for (int k = 0; k < m.nq; ++k) t.q[k] = q[k];
    for (int k = 0; k < m.nv; ++k) t.v[k] = v[k];
  });
  const bool ok = free_velocity(m, p, env, h, q, v, ctrl, t.ws, t.qM, t.dv);
  return finish_step(m, cfg, p, env, h, ok, q, v, t, info);
}

// The adjoint's part of a recorded step that does not depend on the seed: for
// hard_smooth_grad the smooth model's solve at the same inputs in its cs (a straight-through
// gradient), the contact adjoint's own part, and the RNEA quantities at (q_M, v, a) in the
// step's ws (free_velocity left them at (q_M, v, 0)) with a = (Δv + x)/h, x the velocity the
// contact impulses add (adj_contact_stage).
template <class S, class D>
MOREAU_HD void adj_setup(const ModelView<S, D>& m, const ContactSettings<S>& cfg, const Params<S>& p, int env, S h,
                         AdjTape<S, D>& at) {
  StepTape<S, D>& t = at.step;
  const bool contact = has_constraints(m, cfg);
  if (contact) {
    if (cfg.mode == kContactHardSmoothGrad) {  // the hard set holds the smooth one unless g_max reaches past it
      const bool from_active = p.smooth_gmax.get(env) <= contact_threshold(cfg, p, env, cfg.mode, h) &&
                               t.cs.n < D::kActive;
      contact_solve(m, cfg, p, env, kContactSmooth, t.qM, t.v, h, ground_of(m, p, env), t.ws, t.cs, t.v_free,
                    static_cast<S*>(nullptr), from_active);
    }
  }
  single(m, [&]() MOREAU_LAMBDA {
    if (contact) adj_contact_setup(m, cfg, p, env, t.ws, t.cs, t.v_free, t.v_next, at.ca);
    for (int k = 0; k < m.nv; ++k) at.a[k] = (t.dv[k] + (contact ? at.ca.x[k] : S(0))) / h;
  });
  rnea_add_acceleration(m, at.a, t.ws);
}

// Adjoint of a recorded physics step (after adj_setup). With the residual
// r = h RNEA(q_M, v, a) + (armature + hD)(v_next − v) + h D v − h τ(q_M, v, u) − Jᵀ P_app = 0,
// a = (v_next − v)/h, and λ = (H + hD)⁻¹ v̄_free (the same factorisation; docs/gradients.md, "How"):
//   x̄ −= (∂r/∂x)ᵀ λ  for x = q_M, v, u, parameters:
// adj_rnea with τ̄ = −h λ, v̄ −= h D λ, adj_actuator_forces with τ̄ = +h λ. The contact stage's
// adjoint (adj_contact_stage) comes first and gives λ with the rest of the contact terms.
// Accumulates into adj_q, adj_v, adj_ctrl, adj_p. Returns status bits (0 = ok).
template <class S, class D>
MOREAU_HD int adj_physics_step(const ModelView<S, D>& m, const ContactSettings<S>& cfg, const Params<S>& p, int env,
                               S h, const S* ctrl, const AdjTape<S, D>& at, S* adj_q, S* adj_v, S* adj_ctrl,
                               ParamAdjoint<S, D>& adj_p, const S* adj_q_out, const S* adj_v_out, AdjWorkspace<S, D>& aw) {
  const StepTape<S, D>& t = at.step;
  const bool contact = has_constraints(m, cfg);
  const int nv = m.nv;
  TeamArray<D, S, D::kNq> adj_qM;
  TeamArray<D, S, D::kNv> adj_v_free, lambda, adj_v2, tau_adj;
  single(m, [&]() MOREAU_LAMBDA {
    for (int k = 0; k < nv; ++k) tau_adj[k] = 0;
    // q_out = q_M ⊕ (h/2) v_{k+1}; hard_smooth_grad differentiates the smooth step, whose
    // v_{k+1} = v_free + x is not the hard one that was taken
    const S* v_next = t.v_next;
    S v_smooth[D::kNv];
    if (contact && cfg.mode == kContactHardSmoothGrad) {
      for (int k = 0; k < nv; ++k) v_smooth[k] = t.v_free[k] + at.ca.x[k];
      v_next = v_smooth;
    }
    for (int k = 0; k < m.nq; ++k) adj_qM[k] = 0;
    for (int k = 0; k < nv; ++k) adj_v2[k] = adj_v_out[k];
    adj_integrate(m, t.qM, v_next, h / 2, adj_qM.data, adj_v2.data, adj_q_out);
    adj_clear(m, aw);
  });
  if (contact) {  // v_k = v: the soft model's explicit velocity gets its part in adj_v
    const int st = adj_contact_stage(m, cfg, p, env, t.qM, t.v, h, t.ws, t.cs, at.ca, t.v_free, adj_v2.data,
                                     adj_v_free.data, lambda.data, adj_v, adj_qM.data, aw, adj_p.contact);
    if (st) return st;
  } else {
    single(m, [&]() MOREAU_LAMBDA {
      for (int k = 0; k < nv; ++k) adj_v_free[k] = lambda[k] = adj_v2[k];
    });
    ltl_solve<TeamFor<D>>(m, t.ws.H, lambda.data);
  }
  single(m, [&]() MOREAU_LAMBDA {  // v_free = v + Δv
    for (int k = 0; k < nv; ++k) {
      adj_v[k] += adj_v_free[k];
      tau_adj[k] = -h * lambda[k];
    }
  });
  adj_rnea(m, t.v, at.a, t.ws, adj_v, static_cast<S*>(nullptr), tau_adj.data, aw);
  single(m, [&]() MOREAU_LAMBDA {
    for (int k = 0; k < nv; ++k) tau_adj[k] = h * lambda[k];
    adj_passive_forces(m, p.damping_scale.get(env), tau_adj.data, adj_qM.data, adj_v);
    adj_actuator_forces(m, p, env, t.qM, t.v, ctrl, adj_qM.data, adj_v, adj_ctrl, adj_p, tau_adj.data);
  });
  adj_forward_kinematics(m, t.qM, t.ws, adj_qM.data, aw);
  single(m, [&]() MOREAU_LAMBDA {
    adj_body_inertias(m, p.added_base_mass.get(env), adj_p.added_base_mass, aw);
    // q_M = q ⊕ (h/2) v
    adj_integrate(m, t.q, t.v, h / 2, adj_q, adj_v, adj_qM.data);
  });
  return 0;
}

template <class S>
MOREAU_HD bool all_finite(const S* x, int n) {
  for (int k = 0; k < n; ++k)
    if (!is_finite(x[k])) return false;
  return true;
}

// A state coordinate beyond this is a blow-up, flagged like a non-finite one (MuJoCo's mjMAXVAL).
constexpr double kMaxStateValue = 1e10;

template <class S>
MOREAU_HD bool all_bounded(const S* x, int n) {
  for (int k = 0; k < n; ++k)
    if (!is_finite(x[k]) || mabs(x[k]) > S(kMaxStateValue)) return false;
  return true;
}

// Status bits of an input state and action (0 if all finite, and the state bounded).
template <class S, class D>
MOREAU_HD int input_status(const ModelView<S, D>& m, const S* q, const S* v, const S* u) {
  int status = 0;
  if (!all_finite(u, m.nu)) status |= kStatusNanAction;
  if (!all_bounded(q, m.nq) || !all_bounded(v, m.nv)) status |= kStatusNanState;
  return status;
}

// Solver statistics over the physics steps of a control step.
template <class S>
struct StepStats {
  int iterations;
  S residual;
};

// The status bits of a physics step that gave r and left (q, v); adds to the statistics (may be null).
template <class S, class D>
MOREAU_HD int step_status(const ModelView<S, D>& m, const ContactResult<S>& r, const S* q, const S* v,
                          StepStats<S>* stats) {
  int status = r.status;
  if (stats) {
    stats->iterations = r.iterations > stats->iterations ? r.iterations : stats->iterations;
    stats->residual = mmax(stats->residual, r.residual);
  }
  if (!(status & kStatusFatal) && (!all_bounded(q, m.nq) || !all_bounded(v, m.nv))) status |= kStatusNanState;
  return status;
}

// Physics steps of a control step from (q, v), in place: count of them, step s recorded in
// tapes[s * tape_stride] (tape_stride 0: all in tapes[0]). Returns status bits; a fatal bit
// stops it. stats may be null.
template <class S, class D, class Tape>
MOREAU_HD int record_steps(const ModelView<S, D>& m, const ContactSettings<S>& cfg, const Params<S>& p, int env, S* q,
                           S* v, const S* u, Tape* tapes, int count, int tape_stride, ContactInfo<S, D>* info,
                           StepStats<S>* stats) {
  const S h = m.timestep / cfg.substeps;
  int status = 0;
  for (int s = 0; s < count && !(status & kStatusFatal); ++s)
    status |= step_status(m, physics_step(m, cfg, p, env, h, q, v, u, step_tape(tapes[s * tape_stride]), info), q, v,
                          stats);
  return status;
}
// One control step on local arrays: decimation × substeps physics steps with the action held,
// in place on (q, v), each recorded in t (overwritten). Returns status bits (a fatal bit stops
// it); stats and info (the last physics step's contact information) may be null.
template <class S, class D>
MOREAU_HD int advance(const ModelView<S, D>& m, const ContactSettings<S>& cfg, const Params<S>& p, int env, S* q, S* v,
                      const S* u, StepTape<S, D>& t, ContactInfo<S, D>* info, StepStats<S>* stats) {
  int status = input_status(m, q, v, u);
  StepStats<S> st{0, S(0)};
  if (!(status & kStatusFatal)) status |= record_steps(m, cfg, p, env, q, v, u, &t, m.decimation * cfg.substeps, 0, info, &st);
  if (stats) single(m, [&]() MOREAU_LAMBDA { *stats = st; });
  return status;
}

// The adjoints of `count` recorded physics steps (after adj_setup on each), last to first:
// (aq, av) from the adjoint of the last one's output to that of the first one's input, in
// place; accumulates adj_u and adj_p. Returns status bits (0 = ok).
template <class S, class D>
MOREAU_HD int reverse_steps(const ModelView<S, D>& m, const ContactSettings<S>& cfg, const Params<S>& p, int env,
                            const S* u, const AdjTape<S, D>* tapes, int count, S* aq, S* av, S* adj_u,
                            ParamAdjoint<S, D>& adj_p, AdjWorkspace<S, D>& aw) {
  const S h = m.timestep / cfg.substeps;
  TeamArray<D, S, D::kNq> nq_adj;
  TeamArray<D, S, D::kNv> nv_adj;
  for (int j = count - 1; j >= 0; --j) {
    single(m, [&]() MOREAU_LAMBDA {
      for (int k = 0; k < m.nq; ++k) nq_adj[k] = 0;
      for (int k = 0; k < m.nv; ++k) nv_adj[k] = 0;
    });
    const int st =
        adj_physics_step(m, cfg, p, env, h, u, tapes[j], nq_adj.data, nv_adj.data, adj_u, adj_p, aq, av, aw);
    if (st) return st;
    single(m, [&]() MOREAU_LAMBDA {
      for (int k = 0; k < m.nq; ++k) aq[k] = nq_adj[k];
      for (int k = 0; k < m.nv; ++k) av[k] = nv_adj[k];
    });
  }
  return 0;
}

// The adjoints of `count` physics steps recorded in tapes, for `rows` seeds: adj_setup on each, then
// each row's (adj_q, adj_v) + r (nq, nv) from the adjoint of the last step's output to that of
// the first one's input, in place, accumulating adj_u + r nu and adj_p[r]. Returns status bits.
template <class S, class D>
MOREAU_HD int adj_recorded(const ModelView<S, D>& m, const ContactSettings<S>& cfg, const Params<S>& p, int env,
                           const S* u, AdjTape<S, D>* tapes, int count, int rows, S* adj_q, S* adj_v, S* adj_u,
                           ParamAdjoint<S, D>* adj_p, AdjWorkspace<S, D>& aw) {
  const S h = m.timestep / cfg.substeps;
  for (int j = 0; j < count; ++j) adj_setup(m, cfg, p, env, h, tapes[j]);
  for (int r = 0; r < rows; ++r) {
    const int st = reverse_steps(m, cfg, p, env, u, tapes, count, adj_q + r * m.nq, adj_v + r * m.nv,
                                 adj_u + r * m.nu, adj_p[r], aw);
    if (st) return st;
  }
  return 0;
}

// kStatusNanGradient if a gradient of `rows` seeds is not finite, else 0.
template <class S, class D>
MOREAU_HD int gradient_status(const ModelView<S, D>& m, int rows, const S* adj_q, const S* adj_v, const S* adj_u) {
  const bool finite =
      all_finite(adj_q, rows * m.nq) && all_finite(adj_v, rows * m.nv) && all_finite(adj_u, rows * m.nu);
  return finite ? 0 : kStatusNanGradient;
}

// Checkpoints for the adjoint of a control step when its physics steps do not all fit in the
// tapes: at most kCheckpoints segments, each recomputed from its input state.
constexpr int kCheckpoints = 16;

// Adjoint of advance for `rows` seeds at once, sharing the recompute: from the control step's
// input (q0, v0, u) and, for each row r, the adjoint of its output (adj_q1 + r nq, adj_v1 + r nv),
// writes adj_q0 + r nq, adj_v0 + r nv and accumulates adj_u + r nu and adj_p[r]. tapes holds
// n_tapes ≥ 1 physics steps: with one per physics step (the CPU) the control step is recomputed
// once, recorded, and run backward. With fewer (the GPU: one), a forward pass first finds the
// input states of segments of max(n_tapes, ⌈steps/kCheckpoints⌉) steps; each segment is then
// run backward in blocks of n_tapes steps, last block first, each recomputed from the
// segment's input (so more steps than kCheckpoints · n_tapes cost more recompute, never the
// gradient). Returns status bits (warnings included: a contact solve that stopped on its cap
// is differentiated at its last iterate).
template <class S, class D>
MOREAU_HD int adj_advance(const ModelView<S, D>& m, const ContactSettings<S>& cfg, const Params<S>& p, int env,
                          const S* q0, const S* v0, const S* u, int rows, S* adj_q0, S* adj_v0, S* adj_u,
                          ParamAdjoint<S, D>* adj_p, const S* adj_q1, const S* adj_v1, AdjTape<S, D>* tapes, int n_tapes,
                          AdjWorkspace<S, D>& aw) {
  const int nq = m.nq, nv = m.nv, n_steps = m.decimation * cfg.substeps;
  const int seg_len = mmax(n_tapes, (n_steps + kCheckpoints - 1) / kCheckpoints);
  const int n_seg = (n_steps + seg_len - 1) / seg_len;
  int status = input_status(m, q0, v0, u);
  if (status) return status;
  TeamArray<D, S[D::kNq], kCheckpoints> cq;  // each segment's input state
  TeamArray<D, S[D::kNv], kCheckpoints> cv;
  single(m, [&]() MOREAU_LAMBDA {
    for (int k = 0; k < nq; ++k) cq[0][k] = q0[k];
    for (int k = 0; k < nv; ++k) cv[0][k] = v0[k];
  });
  for (int seg = 1; seg < n_seg; ++seg) {
    single(m, [&]() MOREAU_LAMBDA {
      for (int k = 0; k < nq; ++k) cq[seg][k] = cq[seg - 1][k];
      for (int k = 0; k < nv; ++k) cv[seg][k] = cv[seg - 1][k];
    });
    status |= record_steps(m, cfg, p, env, cq[seg], cv[seg], u, tapes, seg_len, 0, no_info<S, D>(),
                           static_cast<StepStats<S>*>(nullptr));
    if (status & kStatusFatal) return status;
  }
  single(m, [&]() MOREAU_LAMBDA {
    for (int k = 0; k < rows * nq; ++k) adj_q0[k] = adj_q1[k];
    for (int k = 0; k < rows * nv; ++k) adj_v0[k] = adj_v1[k];
  });
  for (int seg = n_seg - 1; seg >= 0; --seg) {
    const int len = mmin(n_steps - seg * seg_len, seg_len);
    for (int b = (len - 1) / n_tapes * n_tapes; b >= 0; b -= n_tapes) {  // block of steps b .. b + count − 1
      const int count = mmin(len - b, n_tapes);
      TeamArray<D, S, D::kNq> q;
      TeamArray<D, S, D::kNv> v;
      single(m, [&]() MOREAU_LAMBDA {
        for (int k = 0; k < nq; ++k) q[k] = cq[seg][k];
        for (int k = 0; k < nv; ++k) v[k] = cv[seg][k];
      });
      status |= record_steps(m, cfg, p, env, q.data, v.data, u, tapes, b, 0, no_info<S, D>(),
                             static_cast<StepStats<S>*>(nullptr));
      status |= record_steps(m, cfg, p, env, q.data, v.data, u, tapes, count, 1, no_info<S, D>(),
                             static_cast<StepStats<S>*>(nullptr));
      if (status & kStatusFatal) return status;
      const int st = adj_recorded(m, cfg, p, env, u, tapes, count, rows, adj_q0, adj_v0, adj_u, adj_p, aw);
      if (st) return status | st;
    }
  }
  return status | gradient_status(m, rows, adj_q0, adj_v0, adj_u);
}

// The state and action of environment env of the batch.
template <class S, class D>
MOREAU_HD void load_env(const ModelView<S, D>& m, const Batch<S>& b, int env, S* q, S* v, S* u) {
  const int n = b.n_env;
  for (int k = 0; k < m.nq; ++k) q[k] = b.q[k * n + env];
  for (int k = 0; k < m.nv; ++k) v[k] = b.v[k * n + env];
  for (int k = 0; k < m.nu; ++k) u[k] = b.action[k * n + env];
}
// A control step's results for environment env into the batch (the state only without a fatal bit).
template <class S, class D>
MOREAU_HD void store_env(const ModelView<S, D>& m, const ContactSettings<S>& cfg, const Batch<S>& b, int env,
                         const S* q, const S* v, int status, const ContactInfo<S, D>& info, const StepStats<S>& stats) {
  const int n = b.n_env;
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

// One control step of environment `env` of the batch, in place. An environment with a fatal
// status bit is skipped. On a fatal failure the state is left as it was before the control
// step; every new bit is added to the status.
template <class S, class D>
MOREAU_HD void control_step(const ModelView<S, D>& m, const ContactSettings<S>& cfg, const Params<S>& p,
                            const Batch<S>& b, int env) {
  if (b.status[env] & kStatusFatal) return;
  TeamArray<D, S, D::kNq> q;
  TeamArray<D, S, D::kNv> v;
  TeamArray<D, S, D::kNu> u;
  single(m, [&]() MOREAU_LAMBDA { load_env(m, b, env, q.data, v.data, u.data); });
  TeamArray<D, StepTape<S, D>, 1> tape;
  TeamArray<D, ContactInfo<S, D>, 1> info;
  StepStats<S> stats;
  const int status = advance(m, cfg, p, env, q.data, v.data, u.data, tape[0], &info[0], &stats);
  single(m, [&]() MOREAU_LAMBDA { store_env(m, cfg, b, env, q.data, v.data, status, info[0], stats); });
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
  int rows;  // adjoint: seeds at the same inputs, each adjoint buffer holding `rows` stacked batches
};

template <class S, class D>
MOREAU_HD void load_env(const ModelView<S, D>& m, const PureStep<S>& b, int env, S* q, S* v, S* u) {
  const int n = b.n_env;
  for (int k = 0; k < m.nq; ++k) q[k] = b.q_in[k * n + env];
  for (int k = 0; k < m.nv; ++k) v[k] = b.v_in[k * n + env];
  for (int k = 0; k < m.nu; ++k) u[k] = b.action[k * n + env];
}

// A pure step's results for environment env (its input state again where a fatal bit is set:
// a failed step leaves the state as it was).
template <class S, class D>
MOREAU_HD void store_env(const ModelView<S, D>& m, const PureStep<S>& b, int env, S* q, S* v, int status) {
  const int n = b.n_env;
  if (status & kStatusFatal) {
    S u[D::kNu];
    load_env(m, b, env, q, v, u);
  }
  b.status[env] = status;
  for (int k = 0; k < m.nq; ++k) b.q_out[k * n + env] = q[k];
  for (int k = 0; k < m.nv; ++k) b.v_out[k * n + env] = v[k];
}

// (q_out, v_out) = control step of (q_in, v_in, action) for environment env; status set. With
// `accumulate`, an environment with a fatal status bit is carried through unchanged and new
// status bits are added (a recorded rollout).
template <class S, class D>
MOREAU_HD void pure_step(const ModelView<S, D>& m, const ContactSettings<S>& cfg, const Params<S>& p,
                         const PureStep<S>& b, int env) {
  TeamArray<D, S, D::kNq> q;
  TeamArray<D, S, D::kNv> v;
  TeamArray<D, S, D::kNu> u;
  single(m, [&]() MOREAU_LAMBDA { load_env(m, b, env, q.data, v.data, u.data); });
  int status = b.accumulate ? b.status[env] : 0;
  if (!(status & kStatusFatal)) {
    TeamArray<D, StepTape<S, D>, 1> tape;
    status |= advance(m, cfg, p, env, q.data, v.data, u.data, tape[0], no_info<S, D>(),
                      static_cast<StepStats<S>*>(nullptr));
  }
  single(m, [&]() MOREAU_LAMBDA { store_env(m, b, env, q.data, v.data, status); });
}

// What adj_pure_step reads of environment env: its input state and action, and each row's seed;
// au and ap cleared.
template <class S, class D>
MOREAU_HD void load_adjoint(const ModelView<S, D>& m, const PureStep<S>& b, int env, S* q, S* v, S* u, S* aq1, S* av1,
                            S* au, ParamAdjoint<S, D>* ap) {
  const int n = b.n_env, nq = m.nq, nv = m.nv, nu = m.nu;
  load_env(m, b, env, q, v, u);
  for (int r = 0; r < b.rows; ++r) {
    for (int k = 0; k < nq; ++k) aq1[r * nq + k] = b.adj_q_out[(r * nq + k) * n + env];
    for (int k = 0; k < nv; ++k) av1[r * nv + k] = b.adj_v_out[(r * nv + k) * n + env];
    for (int k = 0; k < nu; ++k) au[r * nu + k] = 0;
    adj_clear(m, ap[r]);
  }
}
// adj_pure_step's results for environment env (zero gradients where the status says it failed).
template <class S, class D>
MOREAU_HD void store_adjoint(const ModelView<S, D>& m, const PureStep<S>& b, int env, int status, const S* aq0,
                             const S* av0, const S* au, const ParamAdjoint<S, D>* ap) {
  const int n = b.n_env, nq = m.nq, nv = m.nv, nu = m.nu, rows = b.rows;
  b.status[env] = status;
  const bool ok = !(status & (kStatusFatal | kStatusNoGradient | kStatusNanGradient));
  for (int r = 0; r < rows; ++r) {
    auto out = [&](S* dst, int width, int k, S x) {
      S& d = dst[(r * width + k) * n + env];
      d = (b.accumulate ? d : S(0)) + (ok ? x : S(0));
    };
    for (int k = 0; k < nq; ++k) out(b.adj_q_in, nq, k, aq0[r * nq + k]);
    for (int k = 0; k < nv; ++k) out(b.adj_v_in, nv, k, av0[r * nv + k]);
    for (int k = 0; k < nu; ++k) out(b.adj_action, nu, k, au[r * nu + k]);
    for (int a = 0; a < nu; ++a) {
      if (b.adj_kp) out(b.adj_kp, nu, a, ap[r].kp[a]);
      if (b.adj_kd) out(b.adj_kd, nu, a, ap[r].kd[a]);
    }
    if (b.adj_added_base_mass) out(b.adj_added_base_mass, 1, 0, ap[r].added_base_mass);
    if (b.adj_friction) out(b.adj_friction, 1, 0, ap[r].contact.friction);
    if (b.adj_contact_kn) out(b.adj_contact_kn, 1, 0, ap[r].contact.contact_kn);
    if (b.adj_smooth_k) out(b.adj_smooth_k, 1, 0, ap[r].contact.smooth_k);
  }
}

// Adjoint of pure_step for environment env: adj_q_in, adj_v_in, adj_action (and parameter
// adjoints) from adj_q_out, adj_v_out, for each of b.rows ≤ kRows seeds (row r of a buffer of
// width w at offset r w n_env); zero gradients and a status bit where it fails. tapes: n_tapes ≥ 1
// of them (adj_advance).
template <class S, class D, int kRows = 1>
MOREAU_HD void adj_pure_step(const ModelView<S, D>& m, const ContactSettings<S>& cfg, const Params<S>& p,
                             const PureStep<S>& b, int env, AdjTape<S, D>* tapes, int n_tapes) {
  TeamArray<D, S, D::kNq> q;
  TeamArray<D, S, D::kNv> v;
  TeamArray<D, S, D::kNu> u;
  TeamArray<D, S, kRows * D::kNq> aq1, aq0;
  TeamArray<D, S, kRows * D::kNv> av1, av0;
  TeamArray<D, S, kRows * D::kNu> au;
  TeamArray<D, ParamAdjoint<S, D>, kRows> ap;
  single(m, [&]() MOREAU_LAMBDA { load_adjoint(m, b, env, q.data, v.data, u.data, aq1.data, av1.data, au.data, ap.data); });
  TeamArray<D, AdjWorkspace<S, D>, 1> aw;
  // with `accumulate` (a recorded rollout), an environment whose forward failed keeps zero gradients
  const int prior = b.accumulate ? b.status[env] : 0;
  const int status = prior & kStatusFatal ? prior
                                          : prior | adj_advance(m, cfg, p, env, q.data, v.data, u.data, b.rows,
                                                                aq0.data, av0.data, au.data, ap.data, aq1.data,
                                                                av1.data, tapes, n_tapes, aw[0]);
  single(m, [&]() MOREAU_LAMBDA { store_adjoint(m, b, env, status, aq0.data, av0.data, au.data, ap.data); });
}

// Upper bounds on the team arena (TeamArray) the kernels' entry points take for size class D:
// every TeamArray of the functions they call counted as if all were held at once, each slice
// aligned to 16 bytes. tests/team_test.cc checks them against the arena's high-water mark.
constexpr size_t arena_slice(size_t bytes) { return (bytes + 15) / 16 * 16; }

// A physics step's own: free_velocity's (with ltl_factor's), contact_candidates', pgs_solve's and
// contact_stage's.
template <class S, class D>
constexpr size_t physics_step_arena_bytes() {
  return 3 * arena_slice(sizeof(S) * D::kNv) + arena_slice(sizeof(MaskOf<S>)) + arena_slice(sizeof(Transform<S>) * D::kBodies) +
         arena_slice(sizeof(Vec3<S>) * 3 * D::kActive) + arena_slice(sizeof(Vec3<S>) * D::kActive) +
         arena_slice(sizeof(bool)) + 2 * arena_slice(sizeof(Vec3<S>) * D::kNv) + arena_slice(sizeof(S) * D::kRows);
}

// control_step or pure_step: the state, tape and contact information, and a physics step's.
template <class S, class D>
constexpr size_t step_arena_bytes() {
  return arena_slice(sizeof(S) * D::kNq) + arena_slice(sizeof(S) * D::kNv) + arena_slice(sizeof(S) * D::kNu) +
         arena_slice(sizeof(StepTape<S, D>)) + arena_slice(sizeof(ContactInfo<S, D>)) + physics_step_arena_bytes<S, D>();
}

// adj_pure_step with its one tape (the CUDA kernel's) and kRows seeds: its buffers, adj_advance's
// checkpoints, a physics step's, and the adjoint's (reverse_steps, adj_physics_step,
// adj_contact_stage, adj_contact_kinematics, rnea_add_acceleration).
template <class S, class D, int kRows = 1>
constexpr size_t adjoint_arena_bytes() {
  constexpr size_t nq = arena_slice(sizeof(S) * D::kNq), nv = arena_slice(sizeof(S) * D::kNv);
  const size_t pure = arena_slice(sizeof(AdjTape<S, D>)) + nq + nv + arena_slice(sizeof(S) * D::kNu) +
                      2 * arena_slice(sizeof(S) * kRows * D::kNq) + 2 * arena_slice(sizeof(S) * kRows * D::kNv) +
                      arena_slice(sizeof(S) * kRows * D::kNu) + arena_slice(sizeof(ParamAdjoint<S, D>) * kRows) +
                      arena_slice(sizeof(AdjWorkspace<S, D>));
  const size_t advance = arena_slice(sizeof(S) * D::kNq * kCheckpoints) + arena_slice(sizeof(S) * D::kNv * kCheckpoints) + nq + nv;
  const size_t backward = nq + nv + nq + 4 * nv +  // reverse_steps, adj_physics_step
                          arena_slice(sizeof(S) * (D::kRows + D::kPairRows) * D::kChain) + 2 * arena_slice(sizeof(S) * D::kRows) +
                          4 * arena_slice(sizeof(S) * D::kBlocks) + arena_slice(sizeof(bool)) + arena_slice(sizeof(S) * D::kNM) +
                          arena_slice(sizeof(Transform<S>) * D::kBodies) +                                   // adj_contact_kinematics
                          arena_slice(sizeof(Motion<S>) * D::kBodies) + arena_slice(sizeof(Force<S>) * D::kBodies);  // rnea_add_acceleration
  return pure + advance + physics_step_arena_bytes<S, D>() + backward;
}

// Environment `env` back to the default state: q = qpos0, v = 0, time 0, status 0, and an
// action that holds the default pose (position servo: u = g q0; motor: u = 0).
template <class S>
MOREAU_HD void reset_env(const ModelArrays<S>& m, const Batch<S>& b, int env) {
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
