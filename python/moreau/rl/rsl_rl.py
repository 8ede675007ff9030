"""moreau.rl.rsl_rl: a moreau DiffEnv as an rsl_rl VecEnv (rsl-rl-lib >= 3, TensorDict observations).

    from moreau.tasks import make
    from moreau.rl.rsl_rl import RslRlVecEnv, default_train_cfg
    from rsl_rl.runners import OnPolicyRunner
    env = RslRlVecEnv(make("locomotion", num_envs=4096, device="cuda", contact="hard"))
    runner = OnPolicyRunner(env, default_train_cfg(), log_dir="logs/ppo", device="cuda")
    runner.learn(1500)

The adapter steps the env with gradients off (no autograd graph is built; rsl_rl's runner
also collects under ``torch.inference_mode``). Observations come back as a TensorDict with
one group, ``"policy"``, which rsl_rl's default observation sets ("actor", "critic") resolve
to. ``extras``: ``"time_outs"`` (bool (num_envs,), for PPO's value bootstrapping),
``"episode"`` (per-episode means of the reward terms of the environments that ended, when any
did) or else ``"log"`` (the env's ``info["log"]``), both logged by rsl_rl's Logger.
``episode_returns`` / ``episode_lengths``: the last 100 finished episodes' summed reward and
length in steps, kept by the adapter itself (rsl_rl's Logger keeps them only when it writes
logs) on the env's device (moreau.trainers.meters.RecentValues: ``mean()`` a tensor, ``list()``
a host read). moreau.trainers.ppo trains with it (checkpoints, logs, resumes, torchrun);
moreau.trainers.checkpoints.load_ppo_policy loads a trained policy.

A step reads nothing back from the device, except that deciding whether an environment ended,
for ``"episode"``, is a host read: ``RslRlVecEnv(env, episode_extras=False)`` skips it and
passes ``"log"`` alone (moreau.trainers.ppo does: its runner's Logger writes nothing).
"""
from __future__ import annotations

import copy
import dataclasses
from typing import Any, Dict, Optional

import torch
from rsl_rl.env import VecEnv
from tensordict import TensorDict

from ..tasks.base import DiffEnv
from ..trainers.meters import RecentValues

__all__ = ["RslRlVecEnv", "default_train_cfg"]


class RslRlVecEnv(VecEnv):
    """rsl_rl VecEnv around a moreau DiffEnv (``env``), gradients off."""

    def __init__(self, env: DiffEnv, obs_group: str = "policy", episode_extras: bool = True):
        self.env = env
        self.obs_group = obs_group
        self.episode_extras = episode_extras
        self.num_envs = int(env.num_envs)
        self.num_actions = int(env.num_actions)
        self.num_obs = int(env.num_obs)
        self.max_episode_length = int(env.max_episode_length)
        self.device = env.device
        cfg = getattr(env, "cfg", None)
        if dataclasses.is_dataclass(cfg):
            cfg = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
        self.cfg = cfg if cfg is not None else {"task": type(env).__name__}
        self.episode_returns = RecentValues(100, self.device)
        self.episode_lengths = RecentValues(100, self.device)
        self._return = torch.zeros(self.num_envs, device=self.device)
        self._length = torch.zeros(self.num_envs, dtype=torch.long, device=self.device)
        self.nonfinite = torch.zeros((), dtype=torch.bool, device=self.device)  # a NaN returned since check_finite

    # rsl_rl reads and (init_at_random_ep_len) writes the episode lengths: forward to the env.
    @property
    def episode_length_buf(self) -> torch.Tensor:
        return self.env.episode_length_buf

    @episode_length_buf.setter
    def episode_length_buf(self, value: torch.Tensor) -> None:
        self.env.episode_length_buf = value.to(self.env.episode_length_buf.device, self.env.episode_length_buf.dtype)

    def _wrap(self, obs: torch.Tensor) -> TensorDict:
        return TensorDict({self.obs_group: obs.detach()}, batch_size=[self.num_envs], device=self.device)

    def get_observations(self) -> TensorDict:
        return self._wrap(self.env.get_observations())

    def reset(self) -> TensorDict:
        with torch.no_grad():
            return self._wrap(self.env.reset())

    def step(self, actions: torch.Tensor):
        with torch.no_grad():
            obs, rew, done, info = self.env.step(actions.to(self.device))
        extras: Dict[str, Any] = {"time_outs": info["time_outs"].detach()}
        if info.get("episode") and self.episode_extras and bool(done.any()):  # a host read
            extras["episode"] = info["episode"]
        elif info.get("log"):
            extras["log"] = info["log"]
        self._return += rew.detach().to(self._return.dtype)
        self._length += 1
        self.episode_returns.extend(self._return, done)
        self.episode_lengths.extend(self._length, done)
        self._return.masked_fill_(done, 0)
        self._length.masked_fill_(done, 0)
        self.nonfinite |= torch.isnan(obs).any() | torch.isnan(rew).any()
        return self._wrap(obs), rew.detach(), done.detach().to(torch.long), extras

    def check_finite(self, seen: Optional[bool] = None) -> None:
        """Raises ValueError if an observation or reward returned since the last call held a NaN
        (rsl_rl's ``check_for_nan``, once per call instead of once per step: a host read, or
        ``seen``, the flag ``nonfinite`` as a log row already read it)."""
        if bool(self.nonfinite) if seen is None else seen:
            raise ValueError("the environment returned NaN observations or rewards (a bug in the task's step or "
                             "reset)")
        self.nonfinite.zero_()

    def close(self) -> None:
        pass


def default_train_cfg(**overrides) -> Dict[str, Any]:
    """OnPolicyRunner configuration: legged_gym's ANYmal C PPO settings (actor and critic MLPs
    [128, 64, 32], ELU, 24 steps per env, 5 epochs x 4 mini-batches, lr 1e-3 adaptive on KL 0.01,
    γ 0.99, λ 0.95, entropy 0.01, initial std 1). Top-level keys are replaced by ``overrides``;
    nested dicts ("algorithm", "actor", "critic") are merged one level deep."""
    cfg: Dict[str, Any] = {
        "num_steps_per_env": 24,
        "save_interval": 50,
        "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
        "logger": "tensorboard",
        "check_for_nan": True,
        "algorithm": {
            "class_name": "PPO",
            "num_learning_epochs": 5,
            "num_mini_batches": 4,
            "clip_param": 0.2,
            "gamma": 0.99,
            "lam": 0.95,
            "value_loss_coef": 1.0,
            "entropy_coef": 0.01,
            "learning_rate": 1e-3,
            "max_grad_norm": 1.0,
            "use_clipped_value_loss": True,
            "schedule": "adaptive",
            "desired_kl": 0.01,
        },
        "actor": {
            "class_name": "MLPModel",
            "hidden_dims": [128, 64, 32],
            "activation": "elu",
            "obs_normalization": False,
            "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": 1.0, "std_type": "scalar"},
        },
        "critic": {
            "class_name": "MLPModel",
            "hidden_dims": [128, 64, 32],
            "activation": "elu",
            "obs_normalization": False,
        },
    }
    for k, v in overrides.items():
        if isinstance(v, dict) and isinstance(cfg.get(k), dict):
            cfg[k] = {**cfg[k], **copy.deepcopy(v)}
        else:
            cfg[k] = copy.deepcopy(v)
    return cfg
