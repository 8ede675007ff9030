"""moreau.evaluation.metrics: what an evaluation measures, and the tracking criterion.

Over every environment and control step of a rollout (environments that end are reset inside
the env's step, so each is simulated for the whole rollout):

- every task: ``mean_reward`` per control step, ``falls`` (failures: base too low or tilted, a
  fatal simulator status, a dropped pole; time-outs are not falls), ``falls_per_minute`` per
  environment-minute, ``time_outs``;
- locomotion (``LocomotionMetrics``): ``lin_vel_error`` the mean planar |cmd_xy − v_xy| [m/s] and
  ``yaw_rate_error`` the mean |cmd_ωz − ω_z| [rad/s] (base frame, the velocity of each step's end
  state, before any reset); with a gait clock, how the feet move (a foot is in contact when its
  clearance is below the task's ``foot_contact_height``): ``trot_fraction`` the fraction of
  environment-steps whose contact pattern is a trot (LF = RH ≠ RF = LH), ``diagonal_sync`` the
  fraction with LF = RH and RF = LH, ``stance_fraction`` the feet's mean time in contact;
- cart-pole (``CartPoleMetrics``): ``balanced_fraction``, the fraction of environment-steps with
  the pole within ``CartPole.balanced_angle`` (0.2 rad) of upright;
- locomotion on a generated terrain: ``terrain``, the tracking errors and falls per minute per
  terrain type and level (``LocomotionMetrics.terrain_rows``).

The tracking criterion (``BARS``) a walking policy meets: planar error ≤ 0.2 m/s, yaw-rate error
≤ 0.25 rad/s and at most 1 fall per minute (``meets_bars``; ``first_at_bar`` of a learning curve).

``first_episodes`` / ``episode_return``: the return of each environment's first episode from a
reset (training-time checks of a policy).

The sums are kept on the env's device (float64 and int64 tensors, summed in the order the
Python numbers were) and read back once, by ``result()``: a rollout on a GPU does not wait for
the device at every step.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Tuple

import torch

from ..trainers.meters import host_values

__all__ = ["BARS", "meets_bars", "first_at_bar", "achieved_velocity", "foot_contacts", "RolloutMetrics",
           "LocomotionMetrics", "CartPoleMetrics", "rollout_metrics", "first_episodes", "episode_return"]

# The tracking criterion: metric -> largest value that meets it.
BARS = {"lin_vel_error": 0.2, "yaw_rate_error": 0.25, "falls_per_minute": 1.0}


def meets_bars(metrics: Dict, bars: Optional[Dict[str, float]] = None) -> bool:
    """Whether ``metrics`` meet every bar of ``bars`` (default ``BARS``, the tracking criterion)."""
    bars = BARS if bars is None else bars
    return all(metrics[k] <= v for k, v in bars.items())


def first_at_bar(rows: List[Dict], bars: Optional[Dict[str, float]] = None) -> Optional[Dict]:
    """The first row (fewest samples, in the rows' order) that meets every bar, or None."""
    for r in rows:
        if meets_bars(r, bars):
            return r
    return None


def achieved_velocity(env, obs: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """The base's linear and angular velocity (num_envs, 3) each, base frame, read back from a
    locomotion observation (its first six entries, scaled by ``env.cfg.obs_scales``)."""
    s = env.cfg.obs_scales
    return obs[:, 0:3] / s["lin_vel"], obs[:, 3:6] / s["ang_vel"]


def foot_contacts(env) -> torch.Tensor:
    """(num_envs, 4) bool: which feet (LF, RF, LH, RH) of the env's current state are in contact
    (clearance below ``foot_contact_height``)."""
    return env.foot_clearance(env.q) < env.cfg.foot_contact_height


class RolloutMetrics:
    """Sums over the environment-steps of a rollout of ``env``: ``update`` after each step with
    what it returned (no host read), ``result()`` the metrics (every task's; the one host read)."""

    def __init__(self, env):
        self.env = env
        self.steps = 0
        self.sums: Dict[str, torch.Tensor] = {}

    def add(self, name: str, value: torch.Tensor) -> None:
        """Adds the 0-dim ``value`` (float64, or int64 for counts) to the sum ``name``."""
        self.sums[name] = self.sums[name] + value if name in self.sums else value

    def totals(self) -> Dict[str, float]:
        """The sums as Python numbers (counts as ints): one read of the device."""
        vals = host_values(self.sums)
        return {k: v if self.sums[k].is_floating_point() else int(v) for k, v in vals.items()}

    def update(self, rew: torch.Tensor, done: torch.Tensor, info: Dict, cmd: Optional[torch.Tensor] = None) -> None:
        """One control step: its reward, done and info; ``cmd`` the commands the step ran under."""
        self.steps += 1
        self.add("rew", rew.double().sum())
        time_outs = info.get("time_outs", torch.zeros_like(done))
        self.add("falls", (done & ~time_outs).sum())
        self.add("time_outs", time_outs.sum())

    @property
    def samples(self) -> int:
        return self.steps * self.env.num_envs

    def result(self, t: Optional[Dict[str, float]] = None) -> Dict[str, float]:
        """The metrics; ``t``: ``totals()`` when a subclass has read them already."""
        samples = self.samples
        minutes = samples * self.env.dt / 60.0
        t = self.totals() if t is None else t
        return {"env_steps": samples, "num_envs": self.env.num_envs, "seconds": self.steps * self.env.dt,
                "mean_reward": t["rew"] / samples, "falls_per_minute": t["falls"] / minutes,
                "falls": t["falls"], "time_outs": t["time_outs"]}


class LocomotionMetrics(RolloutMetrics):
    """RolloutMetrics with the velocity-tracking errors and, with a gait clock, the foot pattern
    (see the module docstring). ``velocity``: the last step's achieved (linear, angular) velocity.
    On a generated terrain (``env.terrain``) also ``terrain``: the errors and falls per terrain type
    and level, each environment counted on its tile (the level curriculum off)."""

    def __init__(self, env):
        super().__init__(env)
        self.clock = env.cfg.gait_frequency > 0
        self.velocity: Optional[Tuple[torch.Tensor, torch.Tensor]] = None
        self.per_env: Dict[str, torch.Tensor] = {}

    def update(self, rew, done, info, cmd=None) -> None:
        super().update(rew, done, info)
        lin, ang = self.velocity = achieved_velocity(self.env, info["obs_before_reset"])
        lin_err = (cmd[:, :2] - lin[:, :2]).norm(dim=1).double()
        ang_err = (cmd[:, 2] - ang[:, 2]).abs().double()
        self.add("lin_err", lin_err.sum())
        self.add("ang_err", ang_err.sum())
        if getattr(self.env, "terrain", None) is not None:
            falls = (done & ~info.get("time_outs", torch.zeros_like(done))).double()
            for k, x in (("lin_err", lin_err), ("ang_err", ang_err), ("falls", falls)):
                self.per_env[k] = self.per_env[k] + x if k in self.per_env else x
        if self.clock:
            c = foot_contacts(self.env)  # LF, RF, LH, RH
            diag = (c[:, 0] == c[:, 3]) & (c[:, 1] == c[:, 2])
            self.add("sync", diag.double().sum())
            self.add("trot", (diag & (c[:, 0] != c[:, 1])).double().sum())
            self.add("stance", c.double().mean(1).sum())

    def result(self, t: Optional[Dict[str, float]] = None) -> Dict[str, float]:
        t = self.totals() if t is None else t
        res = super().result(t)
        samples = self.samples
        res["lin_vel_error"] = t["lin_err"] / samples
        res["yaw_rate_error"] = t["ang_err"] / samples
        if self.clock:
            res["trot_fraction"] = t["trot"] / samples
            res["diagonal_sync"] = t["sync"] / samples
            res["stance_fraction"] = t["stance"] / samples
        if self.per_env:
            res["terrain"] = self.terrain_rows()
        return res

    def terrain_rows(self) -> List[Dict]:
        """One row per (terrain type, level) that has environments: type, level, difficulty,
        environments, lin_vel_error, yaw_rate_error, falls_per_minute."""
        env, terrain = self.env, self.env.terrain
        per = {k: v.cpu() for k, v in self.per_env.items()}
        levels, cols = env.levels.cpu(), env.cols.cpu()
        minutes = self.steps * env.dt / 60.0
        rows = []
        for kind in dict.fromkeys(terrain.types):
            in_type = torch.tensor([terrain.types[c] == kind for c in cols.tolist()], dtype=torch.bool)
            for level in range(terrain.cfg.num_levels):
                sel = in_type & (levels == level)
                k = int(sel.sum())
                if k == 0:
                    continue
                rows.append({"type": kind, "level": level, "difficulty": level / max(terrain.cfg.num_levels - 1, 1),
                             "envs": k, "lin_vel_error": float(per["lin_err"][sel].sum()) / (k * self.steps),
                             "yaw_rate_error": float(per["ang_err"][sel].sum()) / (k * self.steps),
                             "falls_per_minute": float(per["falls"][sel].sum()) / (k * minutes)})
        return rows


class CartPoleMetrics(RolloutMetrics):
    """RolloutMetrics with the balanced fraction (pole within ``env.balanced_angle`` of upright)."""

    def update(self, rew, done, info, cmd=None) -> None:
        super().update(rew, done, info)
        ob = info["obs_before_reset"]
        self.add("balanced", (ob[:, 1].abs() < self.env.balanced_angle).double().sum())

    def result(self, t: Optional[Dict[str, float]] = None) -> Dict[str, float]:
        t = self.totals() if t is None else t
        res = super().result(t)
        res["balanced_fraction"] = t["balanced"] / self.samples
        return res


def rollout_metrics(env, task: str) -> RolloutMetrics:
    """The metrics of ``task`` ("locomotion", "cartpole", or another: every task's only) on ``env``."""
    cls = {"locomotion": LocomotionMetrics, "cartpole": CartPoleMetrics}.get(task, RolloutMetrics)
    return cls(env)


@torch.no_grad()
def first_episodes(env, policy: Callable[[torch.Tensor], torch.Tensor], steps: Optional[int] = None,
                   seed: Optional[int] = None) -> Dict[str, float]:
    """Runs ``policy`` (observations -> actions) on ``env`` from a fresh ``reset`` (after
    ``env.seed(seed)`` when given) for ``steps`` control steps (default ``env.max_episode_length``).
    Returns the mean over environments of the undiscounted return of each environment's first
    episode (cut at ``steps``), the fraction of environments whose first episode ended by a
    failure, and the mean reward per step over all steps."""
    if seed is not None:
        env.seed(seed)
    n = env.num_envs
    steps = int(steps or env.max_episode_length)
    obs = env.reset()
    ret = torch.zeros(n, dtype=torch.float64, device=env.device)
    alive = torch.ones(n, dtype=torch.bool, device=env.device)
    failed = torch.zeros(n, dtype=torch.bool, device=env.device)
    total = torch.zeros((), dtype=torch.float64, device=env.device)
    for _ in range(steps):
        obs, rew, done, info = env.step(policy(obs))
        ret += torch.where(alive, rew.double(), torch.zeros_like(ret))
        total += rew.double().mean()
        failed |= alive & done & ~info["time_outs"]
        alive &= ~done
    res = host_values({"return": ret.mean(), "failure_rate": failed.double().mean(), "reward_per_step": total})
    res["reward_per_step"] /= steps
    return res


def episode_return(env, policy: Callable[[torch.Tensor], torch.Tensor], steps: int,
                   seed: Optional[int] = None) -> float:
    """``first_episodes(env, policy, steps, seed)["return"]``."""
    return first_episodes(env, policy, steps, seed)["return"]
