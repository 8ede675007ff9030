"""moreau.torch: differentiable control steps and rollouts as torch.autograd functions.

``step(sim, q, v, action, kp=None, ...)`` is one control step (Simulator::step_pure) whose
backward is the hand-written adjoint (Simulator::step_adjoint, docs/gradients.md); ``rollout``
chains it over H steps. Both run on the simulator's device and stream and never touch the
simulator's own state (``sim.q``, ``sim.v``); they do use its parameters and contact options.

Inputs are (n_env, width) tensors on the simulator's device in its dtype. moreau's kernels
read the field-major layout, strides (1, n_env) — ``x.t().contiguous().t()`` for a row-major
x; tensors in any other layout are accepted and copied into it (one copy per argument per
call; outputs come back field-major, so a chain of steps copies nothing). A wrong dtype,
device or shape raises moreau.TensorError naming the argument, the expected and the received.

Parameters with gradients — ``kp``, ``kd`` (n_env, nu) and ``added_base_mass``, ``friction``,
``contact_kn``, ``smooth_k`` (n_env,) or (n_env, 1) — may be passed per environment: they are
written into the simulator (its parameter of that name then holds them) before the step and
again before its backward, and their gradients are returned. Parameters that are not passed
are read from the simulator as they are at the time of the forward and of the backward: do not
change them in between.

Gradients with respect to q are with respect to the raw coordinates (a quaternion's 4
numbers; docs/gradients.md). Environments whose step failed (status bits, ``return_status``)
get zero gradients. The backward is not itself differentiable (no double backward).
"""
from __future__ import annotations

import time
from typing import Callable, Optional, Union

import torch
from torch.autograd.function import once_differentiable

from ._checks import as_bool, as_int, check_tensor, empty_field_major, fail, field_major
from .simulator import ACTUATOR_PARAMS, GRAD_PARAMS, Simulator

# Per-environment parameters a step takes without a gradient: applied in the forward and again in
# the backward (the values of that forward, whatever the simulator holds by then).
FIXED_PARAMS = ("motor_strength", "frictionloss_scale", "spin_friction", "rolling_friction", "damping_scale",
                "armature_scale", "terrain_x", "terrain_y")
STEP_PARAMS = GRAD_PARAMS + FIXED_PARAMS

__all__ = ["Step", "step", "rollout", "timing"]

# Seconds spent in the simulator by Step's forward (step_pure) and backward (step_adjoint), summed
# over every call in this process (trainers read differences for their time breakdowns).
timing = {"forward": 0.0, "adjoint": 0.0}


def _param_width(sim: Simulator, name: str) -> int:
    return sim.nu if name in ACTUATOR_PARAMS else 1


def _apply_params(sim: Simulator, params) -> None:
    """Writes per-environment parameters (field-major (n_env, width) tensors) into the simulator."""
    for name, value in params:
        buf = sim.param(name)
        # contact_kn decides the soft model's automatic substeps: it goes through set_param.
        if name == "contact_kn" or buf.shape[0] != sim.n_env:
            sim.set_param(name, value)
        else:
            buf.copy_(value)


class Step(torch.autograd.Function):
    """(sim, q, v, action, kp, kd, added_base_mass, friction, contact_kn, smooth_k, motor_strength,
    frictionloss_scale, spin_friction, rolling_friction, damping_scale, armature_scale, terrain_x, terrain_y) ->
    (q_next, v_next, status), the autograd function behind
    ``moreau.torch.step`` (whose arguments it checks again); parameters may be None or left out."""

    @staticmethod
    def forward(ctx, sim: Simulator, q, v, action, *params):
        q, v, action, params = _step_inputs("moreau.torch.Step", sim, q, v, action, params)
        named = [(n, p) for n, p in zip(STEP_PARAMS, params) if p is not None]
        _apply_params(sim, named)
        q_out = empty_field_major(sim.n_env, sim.nq, dtype=sim.dtype, device=sim.device)
        v_out = empty_field_major(sim.n_env, sim.nv, dtype=sim.dtype, device=sim.device)
        status = empty_field_major(sim.n_env, 1, dtype=torch.int32, device=sim.device)
        t0 = time.perf_counter()
        sim._sim.step_pure(q, v, action, q_out, v_out, status)
        timing["forward"] += time.perf_counter() - t0
        ctx.sim = sim
        ctx.param_names = [n for n, _ in named]
        ctx.save_for_backward(q, v, action, *[p for _, p in named])
        ctx.mark_non_differentiable(status)
        return q_out, v_out, status

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_q_out, grad_v_out, _grad_status):
        sim: Simulator = ctx.sim
        q, v, action, *param_values = ctx.saved_tensors
        n = sim.n_env

        def adjoint(g, width):
            if g is None:
                return torch.zeros((width, n), dtype=sim.dtype, device=sim.device).t()
            return field_major(g.to(dtype=sim.dtype))

        adj_q = adjoint(grad_q_out, sim.nq)
        adj_v = adjoint(grad_v_out, sim.nv)
        _apply_params(sim, list(zip(ctx.param_names, param_values)))  # the forward's parameters
        gq = empty_field_major(n, sim.nq, dtype=sim.dtype, device=sim.device)
        gv = empty_field_major(n, sim.nv, dtype=sim.dtype, device=sim.device)
        gu = empty_field_major(n, sim.nu, dtype=sim.dtype, device=sim.device)
        status = empty_field_major(n, 1, dtype=torch.int32, device=sim.device)
        param_grads = {}
        for i, name in enumerate(GRAD_PARAMS):
            if name in ctx.param_names and ctx.needs_input_grad[4 + i]:
                param_grads[name] = empty_field_major(n, _param_width(sim, name), dtype=sim.dtype, device=sim.device)
        t0 = time.perf_counter()
        sim._sim.step_adjoint(q, v, action, adj_q, adj_v, gq, gv, gu, status,
                              **{"grad_" + k: t for k, t in param_grads.items()})
        timing["adjoint"] += time.perf_counter() - t0
        out = [None,
               gq if ctx.needs_input_grad[1] else None,
               gv if ctx.needs_input_grad[2] else None,
               gu if ctx.needs_input_grad[3] else None]
        out += [param_grads.get(name) for name in STEP_PARAMS]
        return tuple(out)


def _check_param(fn: str, sim: Simulator, name: str, value) -> Optional[torch.Tensor]:
    if value is None:
        return None
    width = _param_width(sim, name)
    shapes = [(sim.n_env, width)] if width > 1 else [(sim.n_env,), (sim.n_env, 1)]
    check_tensor(fn, name, value, dtype=sim.dtype, device=sim.device, shapes=shapes)
    return field_major(value.reshape(sim.n_env, width))


def _step_inputs(fn: str, sim: Simulator, q, v, action, params):
    """q, v, action and the per-environment parameters (STEP_PARAMS' order, None where not
    given) checked, field-major and (parameters) of shape (n_env, width)."""
    if not isinstance(sim, Simulator):
        fail(fn, "sim", "type", "a moreau.Simulator", type(sim).__name__)
    if len(params) > len(STEP_PARAMS):
        fail(fn, "params", "count", f"at most {len(STEP_PARAMS)} ({', '.join(STEP_PARAMS)})", len(params))
    params = list(params) + [None] * (len(STEP_PARAMS) - len(params))
    return (sim._input(fn, "q", q, sim.nq), sim._input(fn, "v", v, sim.nv), sim._input(fn, "action", action, sim.nu),
            [_check_param(fn, sim, name, value) for name, value in zip(STEP_PARAMS, params)])


def step(sim: Simulator, q: torch.Tensor, v: torch.Tensor, action: torch.Tensor, *,
         kp: Optional[torch.Tensor] = None, kd: Optional[torch.Tensor] = None,
         added_base_mass: Optional[torch.Tensor] = None, friction: Optional[torch.Tensor] = None,
         contact_kn: Optional[torch.Tensor] = None, smooth_k: Optional[torch.Tensor] = None,
         motor_strength: Optional[torch.Tensor] = None, frictionloss_scale: Optional[torch.Tensor] = None,
         spin_friction: Optional[torch.Tensor] = None, rolling_friction: Optional[torch.Tensor] = None,
         damping_scale: Optional[torch.Tensor] = None,
         armature_scale: Optional[torch.Tensor] = None, terrain_x: Optional[torch.Tensor] = None,
         terrain_y: Optional[torch.Tensor] = None, return_status: bool = False):
    """One differentiable control step: returns (q_next, v_next), or (q_next, v_next, status)
    with ``return_status`` (status: (n_env, 1) int32 bits, moreau.STATUS_*).

    q (n_env, nq), v (n_env, nv), action (n_env, nu): on ``sim.device``, dtype ``sim.dtype``.
    kp, kd (n_env, nu); added_base_mass, friction, contact_kn, smooth_k (n_env,) or (n_env, 1):
    optional per-environment parameters whose gradients are returned by autograd;
    motor_strength (n_env, nu), frictionloss_scale, spin_friction, rolling_friction, damping_scale,
    armature_scale, terrain_x, terrain_y (n_env,): per-environment parameters without a gradient (the backward uses the
    forward's values)."""
    fn = "moreau.torch.step"
    return_status = as_bool(fn, "return_status", return_status)
    given = dict(kp=kp, kd=kd, added_base_mass=added_base_mass, friction=friction, contact_kn=contact_kn,
                 smooth_k=smooth_k, motor_strength=motor_strength, frictionloss_scale=frictionloss_scale,
                 spin_friction=spin_friction, rolling_friction=rolling_friction, damping_scale=damping_scale, armature_scale=armature_scale,
                 terrain_x=terrain_x, terrain_y=terrain_y)
    q, v, action, params = _step_inputs(fn, sim, q, v, action, [given[name] for name in STEP_PARAMS])
    q_out, v_out, status = Step.apply(sim, q, v, action, *params)
    return (q_out, v_out, status) if return_status else (q_out, v_out)


def rollout(sim: Simulator, q0: torch.Tensor, v0: torch.Tensor,
            actions: Union[torch.Tensor, Callable, None] = None, *, horizon: Optional[int] = None,
            return_status: bool = False, **params):
    """H differentiable control steps from (q0, v0).

    ``actions``: a (H, n_env, nu) tensor, or a callable ``policy(t, q, v) -> action`` (then
    ``horizon`` = H is required), which may itself be differentiable. ``params``: the
    per-environment parameters of ``step``, held over the horizon.

    Returns ``qs`` (H+1, n_env, nq) and ``vs`` (H+1, n_env, nv), the states from q0, v0 on
    (and, with ``return_status``, the OR of the steps' status bits, (n_env, 1) int32). The
    backward runs each step's adjoint in reverse order; each recomputes its step from its
    input state (nothing but the boundary states is kept), like Simulator.rollout_backward."""
    fn = "moreau.torch.rollout"
    if not isinstance(sim, Simulator):
        fail(fn, "sim", "type", "a moreau.Simulator", type(sim).__name__)
    return_status = as_bool(fn, "return_status", return_status)
    horizon = None if horizon is None else as_int(fn, "horizon", horizon)
    if callable(actions):
        if horizon is None:
            fail(fn, "horizon", "value", "an int H with a policy", None)
        policy = actions
    else:
        check_tensor(fn, "actions", actions, dtype=sim.dtype, device=sim.device,
                     shapes=[(actions.shape[0] if isinstance(actions, torch.Tensor) and actions.dim() == 3 else 1,
                              sim.n_env, sim.nu)])
        if horizon is not None and horizon != actions.shape[0]:
            fail(fn, "horizon", "value", f"len(actions) = {actions.shape[0]}", horizon)
        horizon = actions.shape[0]
        policy = lambda t, q, v: actions[t]  # noqa: E731
    q, v = q0, v0
    qs, vs = [q0], [v0]
    status = torch.zeros((sim.n_env, 1), dtype=torch.int32, device=sim.device)
    for t in range(int(horizon)):
        q, v, st = step(sim, q, v, policy(t, q, v), return_status=True, **params)
        status |= st
        qs.append(q)
        vs.append(v)
    out = (torch.stack(qs), torch.stack(vs))
    return out + (status,) if return_status else out
