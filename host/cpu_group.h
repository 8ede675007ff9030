// moreau host — W environments (lanes) stepped in lock-step on the CPU: each physics step's free
// velocity (kernels/step.h free_velocity: kinematics, RNEA, CRBA, factor and solve, branch-free)
// runs once for all lanes in Pack<S, W> (host/simd.h); the contact stage and the rest, whose
// work depends on the state, run lane by lane with the scalar kernels. The same physics source
// as the scalar path and the GPU; a lane's numbers never depend on the other lanes.
#pragma once

#include "host/simd.h"
#include "kernels/step.h"

namespace moreau {

// Lanes per group: one 256-bit register (AVX2) of S.
template <class S>
constexpr int kLanes = 32 / sizeof(S);

// advance (kernels/step.h) for the lanes l with run[l]: their states in place in q[l], v[l], the
// action u[l] held, env[l] their environments; status[l] the bits advance gives, stats[l] and
// info[l] (info may be null) as advance leaves them. Lanes without run[l] are padding and untouched.
// Physics step s of lane l is recorded in tape(l, s) (a StepTape&): with `full` the whole
// workspace (what the adjoint reads), else what finish_step reads (the forward alone).
template <class S, int W, class D, class TapeOf>
void advance_group(const kern::ModelView<S, D>& m, const kern::ModelView<kern::Pack<S, W>, D>& mp,
                   const kern::ContactSettings<S>& cfg, const kern::Params<S>& p, const int* env, bool* run,
                   S (*q)[D::kNq], S (*v)[D::kNv], const S (*u)[D::kNu], int* status, kern::StepStats<S>* stats,
                   kern::ContactInfo<S, D>* info, TapeOf tape, bool full) {
  using P = kern::Pack<S, W>;
  static_assert(sizeof(kern::Transform<P>) == 12 * sizeof(P) && sizeof(kern::Motion<P>) == 6 * sizeof(P) &&
                    sizeof(kern::Workspace<P, D>) == W * sizeof(kern::Workspace<S, D>),
                "the lanes of the workspace are read as arrays of packs");
  int src[W];  // lane l computes with lane src[l]'s numbers: its own if it runs, else a running lane's
  int first = -1;
  for (int l = 0; l < W; ++l) {
    stats[l] = {0, S(0)};
    status[l] = run[l] ? kern::input_status(m, q[l], v[l], u[l]) : 0;
    run[l] = run[l] && !(status[l] & kern::kStatusFatal);
    if (run[l] && first < 0) first = l;
  }
  if (first < 0) return;
  for (int l = 0; l < W; ++l) src[l] = run[l] ? l : first;
  // what the free velocity reads of the parameters, and the action, lane by lane
  P kp[D::kNu], kd[D::kNu], strength[D::kNu], added, damping, armature, up[D::kNu];
  for (int l = 0; l < W; ++l) {
    const int e = env[src[l]];
    for (int a = 0; a < m.nu; ++a) {
      kp[a].set(l, p.kp.get(e, a));
      kd[a].set(l, p.kd.get(e, a));
      strength[a].set(l, p.motor_strength.get(e, a));
    }
    added.set(l, p.added_base_mass.get(e));
    damping.set(l, p.damping_scale.get(e));
    armature.set(l, p.armature_scale.get(e));
    kern::set_lane(u[src[l]], m.nu, l, up);
  }
  kern::Params<P> pp{};
  pp.kp = {kp, 1};
  pp.kd = {kd, 1};
  pp.motor_strength = {strength, 1};
  pp.added_base_mass = {&added, 1};
  pp.damping_scale = {&damping, 1};
  pp.armature_scale = {&armature, 1};
  const S h = m.timestep / cfg.substeps;
  const int n_steps = m.decimation * cfg.substeps;
  P qp[D::kNq], vp[D::kNv], qMp[D::kNq], dvp[D::kNv];
  kern::Workspace<P, D> wsp;
  for (int s = 0; s < n_steps; ++s) {
    bool any = false;
    for (int l = 0; l < W; ++l) {
      any = any || run[l];
      kern::set_lane(q[src[l]], m.nq, l, qp);
      kern::set_lane(v[src[l]], m.nv, l, vp);
    }
    if (!any) break;
    const typename P::Mask ok = kern::free_velocity(mp, pp, 0, P(h), qp, vp, up, wsp, qMp, dvp);
    for (int l = 0; l < W; ++l) {
      if (!run[l]) continue;
      kern::StepTape<S, D>& t = tape(l, s);
      for (int k = 0; k < m.nq; ++k) t.q[k] = q[l][k];
      for (int k = 0; k < m.nv; ++k) t.v[k] = v[l][k];
      kern::get_lane(qMp, m.nq, l, t.qM);
      kern::get_lane(dvp, m.nv, l, t.dv);
      if (full) {
        kern::get_lane(&wsp.Xup[0].E.m[0], sizeof(wsp) / sizeof(P), l, &t.ws.Xup[0].E.m[0]);
      } else {
        kern::get_lane(&wsp.Xup[0].E.m[0], 12 * m.nbody, l, &t.ws.Xup[0].E.m[0]);
        kern::get_lane(&wsp.Sdof[0].w.x, 6 * m.nv, l, &t.ws.Sdof[0].w.x);
        kern::get_lane(wsp.H, m.nM, l, t.ws.H);
      }
      const kern::ContactResult<S> r =
          kern::finish_step(m, cfg, p, env[l], h, ok.lane(l), q[l], v[l], t, info ? &info[l] : nullptr);
      status[l] |= kern::step_status(m, r, q[l], v[l], &stats[l]);
      run[l] = !(status[l] & kern::kStatusFatal);
    }
  }
}

// control_step (kernels/step.h) for environments env0 .. env0 + W − 1 (those below n_env).
template <class S, int W, class D>
void control_step_group(const kern::ModelView<S, D>& m, const kern::ModelView<kern::Pack<S, W>, D>& mp,
                        const kern::ContactSettings<S>& cfg, const kern::Params<S>& p, const kern::Batch<S>& b,
                        int env0) {
  int env[W], status[W];
  bool run[W];
  S q[W][D::kNq], v[W][D::kNv], u[W][D::kNu];
  kern::StepStats<S> stats[W];
  kern::ContactInfo<S, D> info[W];
  for (int l = 0; l < W; ++l) {
    env[l] = env0 + l;
    run[l] = env[l] < b.n_env && !(b.status[env[l]] & kern::kStatusFatal);
    if (run[l]) kern::load_env(m, b, env[l], q[l], v[l], u[l]);
  }
  bool stepped[W];
  for (int l = 0; l < W; ++l) stepped[l] = run[l];
  kern::StepTape<S, D> t;  // lane by lane
  advance_group<S, W, D>(m, mp, cfg, p, env, run, q, v, u, status, stats, info,
                         [&](int, int) -> kern::StepTape<S, D>& { return t; }, false);
  for (int l = 0; l < W; ++l)
    if (stepped[l]) kern::store_env(m, cfg, b, env[l], q[l], v[l], status[l], info[l], stats[l]);
}

// pure_step (kernels/step.h) for environments env0 .. env0 + W − 1 (those below n_env).
template <class S, int W, class D>
void pure_step_group(const kern::ModelView<S, D>& m, const kern::ModelView<kern::Pack<S, W>, D>& mp,
                     const kern::ContactSettings<S>& cfg, const kern::Params<S>& p, const kern::PureStep<S>& b,
                     int env0) {
  int env[W], prior[W], status[W];
  bool run[W];
  S q[W][D::kNq], v[W][D::kNv], u[W][D::kNu];
  kern::StepStats<S> stats[W];
  for (int l = 0; l < W; ++l) {
    env[l] = env0 + l;
    prior[l] = env[l] < b.n_env && b.accumulate ? b.status[env[l]] : 0;
    run[l] = env[l] < b.n_env && !(prior[l] & kern::kStatusFatal);
    if (env[l] < b.n_env) kern::load_env(m, b, env[l], q[l], v[l], u[l]);
  }
  kern::StepTape<S, D> t;  // lane by lane
  advance_group<S, W, D>(m, mp, cfg, p, env, run, q, v, u, status, stats,
                         static_cast<kern::ContactInfo<S, D>*>(nullptr),
                         [&](int, int) -> kern::StepTape<S, D>& { return t; }, false);
  for (int l = 0; l < W; ++l)
    if (env[l] < b.n_env) kern::store_env(m, b, env[l], q[l], v[l], prior[l] | status[l]);
}

// adj_pure_step (kernels/step.h) for environments env0 .. env0 + count − 1 (count ≤ W) of b, with
// b.rows ≤ kRows seeds, when one tape per physics step fits (the CPU's case: adj_advance's single
// block): the control step is recomputed and recorded for the W lanes at once (advance_group, the
// whole workspace unpacked), then each environment's adjoint runs on its own tapes. tapes: W times
// the control step's physics steps.
template <class S, int W, class D, int kRows>
void adj_pure_step_group(const kern::ModelView<S, D>& m, const kern::ModelView<kern::Pack<S, W>, D>& mp,
                         const kern::ContactSettings<S>& cfg, const kern::Params<S>& p, const kern::PureStep<S>& b,
                         int env0, int count, kern::AdjTape<S, D>* tapes) {
  const int n_steps = m.decimation * cfg.substeps, nq = m.nq, nv = m.nv, rows = b.rows;
  int env[W], prior[W], status[W];
  bool run[W];
  S q[W][D::kNq], v[W][D::kNv], u[W][D::kNu], aq1[W][kRows * D::kNq], av1[W][kRows * D::kNv],
      aq0[W][kRows * D::kNq], av0[W][kRows * D::kNv], au[W][kRows * D::kNu];
  kern::ParamAdjoint<S, D> ap[W][kRows];
  kern::StepStats<S> stats[W];
  for (int l = 0; l < W; ++l) {
    env[l] = env0 + l;
    prior[l] = l < count && b.accumulate ? b.status[env[l]] : 0;
    run[l] = l < count && !(prior[l] & kern::kStatusFatal);
    if (l < count) kern::load_adjoint(m, b, env[l], q[l], v[l], u[l], aq1[l], av1[l], au[l], ap[l]);
  }
  // with `accumulate` (a recorded rollout), an environment whose forward failed keeps zero gradients
  bool adjoint[W];
  for (int l = 0; l < W; ++l) adjoint[l] = run[l];
  advance_group<S, W, D>(m, mp, cfg, p, env, run, q, v, u, status, stats,
                         static_cast<kern::ContactInfo<S, D>*>(nullptr),
                         [&](int l, int s) -> kern::StepTape<S, D>& { return tapes[l * n_steps + s].step; }, true);
  kern::AdjWorkspace<S, D> aw;
  for (int l = 0; l < count; ++l) {
    int st = prior[l];
    if (adjoint[l]) {  // adj_advance's steps for one block
      st |= status[l];
      if (!(status[l] & kern::kStatusFatal)) {
        for (int k = 0; k < rows * nq; ++k) aq0[l][k] = aq1[l][k];
        for (int k = 0; k < rows * nv; ++k) av0[l][k] = av1[l][k];
        const int r = kern::adj_recorded(m, cfg, p, env[l], u[l], tapes + l * n_steps, n_steps, rows, aq0[l],
                                         av0[l], au[l], ap[l], aw);
        st |= r ? r : kern::gradient_status(m, rows, aq0[l], av0[l], au[l]);
      }
    }
    kern::store_adjoint(m, b, env[l], st, aq0[l], av0[l], au[l], ap[l]);
  }
}

}  // namespace moreau
