"""moreau.tasks.base: the batched, differentiable environment interface (DiffEnv).

A ``DiffEnv`` holds ``num_envs`` copies of one task on the simulator's device, as torch tensors.
It is written once and consumed by two kinds of trainers:

- gradient-based ones (SHAC, moreau.trainers.shac): torch grad mode on, actions produced by a policy that
  requires grad; ``obs`` and ``reward`` returned by ``step`` are then differentiable with respect
  to the actions and to the state before the step (through ``moreau.torch.step``), across any
  number of steps until ``detach()`` cuts the graph (SHAC's horizon boundary);
- sample-based ones (PPO via rsl_rl, moreau.rl.rsl_rl): grad mode off (``torch.no_grad()``), the
  same code path, no graph is built.

State that carries gradients
----------------------------
The environment's state is the pair of regular torch tensors ``self.q`` (num_envs, nq) and
``self.v`` (num_envs, nv) held by the env (not the simulator's zero-copy views). Every control
step feeds them to ``moreau.torch.step(sim, q, v, action_target)`` and replaces them by its
outputs, so they are nodes of the autograd graph when grad mode is on. The simulator's own
buffers (``sim.q``, ``sim.v``) are unused scratch: ``moreau.torch.step`` neither reads nor
writes them. ``detach()`` replaces ``q``, ``v`` (and any other differentiable state the task
keeps, e.g. the previous action) by detached copies.

Resets
------
Environments that end in a step (failure or time-out) are reset inside ``step``: their final
observation is returned in ``info["obs_before_reset"]`` (differentiable like ``obs``; rows of
environments that did not end equal ``obs``), and ``obs`` holds the first observation of the new
episode for them. The reset writes new values with ``torch.where``, which cuts the gradient of
those environments only.

Conventions: actions are in [-1, 1] (clipped inside ``step``); rewards are per control step
(already multiplied by ``dt`` where a task scales them so); ``done`` is a bool tensor;
``info["time_outs"]`` marks ends by the episode-length limit (bootstrap the value there),
as opposed to failures (terminal). ``info["log"]`` may carry scalars for logging (keys starting
with "/", rsl_rl's convention), ``info["episode"]`` the means of per-episode statistics (sums
of reward terms, lengths) over the environments that ended in the step.

No host reads: a step reads nothing back from the device (no ``.item()``, ``bool(t)``, boolean
indexing), so that on a GPU the control loop never waits for the kernels it queued. Hence every
step runs the reset code under the ``done`` mask (``torch.where``), drawing the reset's random
numbers whether or not an environment ended, and the scalars of ``info["log"]`` and
``info["episode"]`` are 0-dim tensors, NaN for ``info["episode"]`` in a step where no
environment ended (a consumer that wants them only then tests ``done.any()`` itself, once per
log row at best: ``ended_mean``).
"""
from __future__ import annotations

from typing import Any, Dict, Tuple

import torch

__all__ = ["DiffEnv", "ended_mean"]


def ended_mean(values: torch.Tensor, done: torch.Tensor) -> torch.Tensor:
    """The mean over the last dimension of ``values`` (..., num_envs) of the environments in
    ``done`` (num_envs,) bool, without a host read: NaN where none is."""
    picked = torch.where(done, values, torch.zeros_like(values))
    return picked.sum(-1) / done.sum()


class DiffEnv:
    """Batched, differentiable environment on torch (the simulator's device).

    Attributes:
        num_envs: number of environments.
        num_obs: observation width.
        num_actions: action width (actions in [-1, 1]).
        device: torch device of every tensor the env returns.
        max_episode_length: episode limit in control steps (time-out).
        dt: control step in seconds.
        episode_length_buf: (num_envs,) int64 control steps since each environment's reset
            (rsl_rl reads and may randomise it at the start of training).
        q, v: the differentiable state (see the module docstring).
    """

    num_envs: int
    num_obs: int
    num_actions: int
    device: torch.device
    max_episode_length: int
    dt: float
    episode_length_buf: torch.Tensor

    def reset(self) -> torch.Tensor:
        """Resets every environment; returns the observation (num_envs, num_obs)."""
        raise NotImplementedError

    def step(self, actions: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, Dict[str, Any]]:
        """One control step.

        Args:
            actions: (num_envs, num_actions) in [-1, 1] (clipped).

        Returns:
            obs (num_envs, num_obs), reward (num_envs,), done (num_envs,) bool, info with
            ``"obs_before_reset"`` (num_envs, num_obs) and ``"time_outs"`` (num_envs,) bool.
            With grad mode on and actions requiring grad, obs, reward and
            info["obs_before_reset"] are differentiable w.r.t. the actions and the pre-step state.
        """
        raise NotImplementedError

    def detach(self) -> None:
        """Cuts the autograd graph at the current state (the next step starts a new graph)."""
        raise NotImplementedError

    def get_observations(self) -> torch.Tensor:
        """The current observation (num_envs, num_obs), as the last ``step``/``reset`` returned it."""
        raise NotImplementedError

    def seed(self, seed: int) -> None:
        """Seeds the env's own random generator (commands, randomisation, pushes, resets)."""
        raise NotImplementedError
