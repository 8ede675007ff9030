"""moreau.rl.gymnasium: a moreau DiffEnv as a gymnasium ``VectorEnv`` (gymnasium >= 1.1).

    import gymnasium as gym
    import moreau.rl.gymnasium  # registers moreau/AnymalC-v0 and moreau/CartPole-v0
    envs = gym.make_vec("moreau/CartPole-v0", num_envs=256)          # numpy in, numpy out
    envs = gym.wrappers.vector.RecordEpisodeStatistics(envs)
    obs, infos = envs.reset(seed=0)
    obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())

or around an env you built: ``VectorEnv(moreau.tasks.make("locomotion", num_envs=4096,
device="cuda"), array="torch")`` (torch tensors on the env's device, no copies).

For trainers that speak gymnasium and need no gradients (CleanRL-style PPO, SAC, ...): the env
is stepped with autograd off. The batch is one env (not ``num_envs`` copies behind a
SyncVectorEnv), so it runs at the simulator's batched speed.

Conventions (gymnasium's, ``metadata["autoreset_mode"] = AutoresetMode.SAME_STEP``): an
environment that ends in a step is reset inside that step; ``obs`` holds its new episode's first
observation and ``infos["final_obs"]`` (num_envs, num_obs) its last one, valid where the mask
``infos["_final_obs"]`` is true (rows elsewhere equal ``obs``). ``terminations``: failures (do
not bootstrap); ``truncations``: time-outs (bootstrap from ``final_obs``); never both.
``infos["log"]``: the task's logged scalars (rsl_rl's "/key" names); ``infos["episode_terms"]``:
per-episode means of the reward terms of the environments that ended this step (the task's
``info["episode"]``; gymnasium's ``"episode"`` key is left to RecordEpisodeStatistics). With
``array="numpy"`` both are Python floats and ``episode_terms`` is there only in a step where an
environment ended; with ``array="torch"`` they are 0-dim tensors on the env's device, there in
every step (NaN where no environment ended), so that a step reads nothing back from the device.
gymnasium's observation wrappers (NormalizeObservation, ...) refuse same-step autoreset, as
they would not transform ``final_obs``: normalise observations in the trainer (as rsl_rl and
moreau.trainers.shac do); action, reward and statistics wrappers work. Actions: (num_envs,
num_actions) in [-1, 1] (clipped by the task); ``reset(seed=s)`` seeds the task's generator
(commands, randomisation, pushes, resets), so equal seeds give equal runs.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

import gymnasium
import numpy as np
import torch
from gymnasium.vector import AutoresetMode

from .._checks import fail
from ..tasks import make as make_task
from ..tasks.base import DiffEnv
from ..trainers.meters import host_values

__all__ = ["VectorEnv", "make_vec"]


class VectorEnv(gymnasium.vector.VectorEnv):
    """gymnasium VectorEnv around a moreau DiffEnv (``env``), gradients off.

    Args:
        env: the task (its ``num_envs`` environments are the vector's).
        array: "numpy" (arrays on the host, as gymnasium's own vector envs) or "torch" (tensors
            on the env's device: zero copies, for GPU trainers).
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, env: DiffEnv, array: str = "numpy"):
        if array not in ("numpy", "torch"):
            raise ValueError(f"moreau.rl.gymnasium.VectorEnv: array must be 'numpy' or 'torch', got {array!r}")
        self.env = env
        self.array = array
        self.num_envs = int(env.num_envs)
        self.single_observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (int(env.num_obs),), np.float32)
        self.single_action_space = gymnasium.spaces.Box(-1.0, 1.0, (int(env.num_actions),), np.float32)
        self.observation_space = gymnasium.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gymnasium.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self.metadata = {**self.metadata, "dt": float(env.dt), "max_episode_steps": int(env.max_episode_length)}

    def _out(self, x: torch.Tensor, dtype=None):
        x = x.detach() if dtype is None else x.detach().to(dtype)
        return x if self.array == "torch" else x.cpu().numpy()

    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None):
        """Resets every environment; ``seed`` seeds the task first. No options are accepted."""
        if options:
            raise ValueError(f"moreau.rl.gymnasium.VectorEnv.reset: options are not supported, got {sorted(options)}")
        if seed is not None:
            self.env.seed(int(seed))
        with torch.no_grad():
            obs = self.env.reset()
        return self._out(obs, torch.float32), {}

    def step(self, actions):
        fn = "moreau.rl.gymnasium.VectorEnv.step"
        a = torch.as_tensor(actions, device=self.env.device)
        if tuple(a.shape) != self.action_space.shape:
            fail(fn, "actions", "shape", self.action_space.shape, tuple(a.shape))
        if not a.is_floating_point():  # a non-finite action is the task's business: it flags that environment
            fail(fn, "actions", "dtype", "a floating-point array", a.dtype)
        with torch.no_grad():
            obs, reward, done, info = self.env.step(a)
        time_outs = info["time_outs"] & done
        infos: Dict[str, Any] = {"final_obs": self._out(info["obs_before_reset"], torch.float32),
                                 "_final_obs": self._out(done)}
        host = self.array == "numpy"
        if info.get("log"):
            infos["log"] = host_values(info["log"]) if host else info["log"]
        if info.get("episode") and (not host or bool(done.any())):
            infos["episode_terms"] = host_values(info["episode"]) if host else info["episode"]
        return (self._out(obs, torch.float32), self._out(reward, torch.float32), self._out(done & ~time_outs),
                self._out(time_outs), infos)

    def close_extras(self, **kwargs) -> None:
        pass


def make_vec(task: str, num_envs: int = 1, array: str = "numpy", **kwargs) -> VectorEnv:
    """``VectorEnv(moreau.tasks.make(task, num_envs=num_envs, **kwargs), array)``; gymnasium's
    ``make_vec`` calls it for the registered ids."""
    kwargs.pop("max_episode_steps", None)  # gymnasium passes the spec's; the task has its own limit
    return VectorEnv(make_task(task, num_envs=num_envs, **kwargs), array=array)


def _register() -> None:
    for env_id, task in (("moreau/AnymalC-v0", "locomotion"), ("moreau/CartPole-v0", "cartpole")):
        if env_id not in gymnasium.registry:
            gymnasium.register(env_id, vector_entry_point=lambda num_envs=1, _t=task, **kw: make_vec(_t, num_envs, **kw))


_register()
