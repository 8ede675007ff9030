"""moreau.tasks: batched differentiable environments (DiffEnv) built on moreau.torch.

``make(name, **kwargs)``: "locomotion" (ANYmal C velocity tracking, moreau.tasks.locomotion)
or "cartpole" (moreau.tasks.cartpole). ``make_env``: the same with the trainers' common
arguments, or rebuilt from the task configuration a checkpoint carries (``env_config``).
Named task configurations and training recipes: moreau.tasks.presets."""
from __future__ import annotations

import dataclasses
from typing import Dict, Optional

from .base import DiffEnv  # noqa: F401

__all__ = ["DiffEnv", "make", "make_env", "env_config"]


def make(name: str, **kwargs) -> DiffEnv:
    """A task by name: 'locomotion' or 'cartpole'; kwargs go to its constructor."""
    if name in ("locomotion", "anymal", "anymal_c"):
        from .locomotion import Locomotion
        return Locomotion(**kwargs)
    if name == "cartpole":
        from .cartpole import CartPole
        return CartPole(**kwargs)
    raise ValueError(f"moreau.tasks.make: unknown task {name!r} (have: 'locomotion', 'cartpole')")


def make_env(task: str, num_envs: int, contact: Optional[str] = None, device="cpu", seed: int = 0,
             task_config: Optional[Dict] = None, **kwargs) -> DiffEnv:
    """A DiffEnv by task name (``make``) with the common arguments. ``task_config``: a checkpoint's
    task configuration (``env_config``) to rebuild; ``kwargs`` override it. ``contact`` None (or
    empty): the task's default."""
    kw = dict(task_config or {})
    if task_config and task in ("locomotion", "anymal", "anymal_c"):
        from .locomotion import config_from_dict
        kw = {"cfg": config_from_dict(kw)}
    kw.update(num_envs=num_envs, device=device, seed=seed, **kwargs)
    if contact:
        kw["contact"] = contact
    return make(task, **kw)


def env_config(env: DiffEnv) -> Dict:
    """The task configuration a checkpoint carries (JSON-able), or {} for a task without one."""
    cfg = getattr(env, "cfg", None)
    if cfg is None or not dataclasses.is_dataclass(cfg):
        return {}
    from .locomotion import LocomotionConfig, config_to_dict
    if isinstance(cfg, LocomotionConfig):
        return config_to_dict(cfg)
    return {k: v for k, v in dataclasses.asdict(cfg).items() if isinstance(v, (int, float, str, bool, list, tuple))}
