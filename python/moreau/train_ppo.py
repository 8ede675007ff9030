"""PPO (rsl_rl's OnPolicyRunner) on a moreau task.

    python3 -m moreau.train_ppo --task locomotion --iterations 1500 --num-envs 4096 --device cuda --contact hard
    python3 -m moreau.train_ppo --task cartpole --iterations 50 --num-envs 64 --log-dir logs/ppo_cartpole

Writes tensorboard logs and checkpoints (model_<it>.pt) under ``--log-dir`` (none without it)
and prints the evaluation return (mean undiscounted return of each environment's first
episode, deterministic policy) before and after training. Locomotion rewards are clipped at 0
per step by default (legged_gym's ``only_positive_rewards``; ``--no-only-positive-rewards``).
"""
from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any, Dict, Optional

import torch

__all__ = ["train", "evaluate", "main"]


def _make_env(task: str, num_envs: int, device: str, contact: str, seed: int, n_threads: int, **task_kwargs):
    from .tasks import make
    kw = dict(num_envs=num_envs, device=device, seed=seed, n_threads=n_threads, **task_kwargs)
    if contact:
        kw["contact"] = contact
    return make(task, **kw)


def evaluate(policy, env, steps: Optional[int] = None, stochastic: bool = False) -> Dict[str, float]:
    """Runs ``policy`` (an rsl_rl model: TensorDict -> actions, or a callable on the observation
    tensor) in the DiffEnv ``env`` from ``env.reset()`` for ``steps`` control steps (default
    ``env.max_episode_length``), gradients off. Returns the mean over environments of the
    return of each environment's first episode (cut at ``steps``), the fraction of environments
    whose first episode ended by a failure, and the mean reward per step over all steps."""
    from tensordict import TensorDict
    n = env.num_envs
    steps = int(steps or env.max_episode_length)
    obs = env.reset()
    ret = torch.zeros(n, dtype=torch.float64, device=env.device)
    alive = torch.ones(n, dtype=torch.bool, device=env.device)
    failed = torch.zeros(n, dtype=torch.bool, device=env.device)
    total = 0.0
    with torch.no_grad():
        for _ in range(steps):
            try:
                a = policy(TensorDict({"policy": obs}, batch_size=[n], device=env.device), stochastic_output=stochastic)
            except TypeError:
                a = policy(obs)
            obs, rew, done, info = env.step(a)
            ret += rew.double() * alive
            total += rew.double().mean().item()
            failed |= alive & done & ~info["time_outs"]
            alive &= ~done
    return {"return": ret.mean().item(), "failure_rate": failed.double().mean().item(),
            "reward_per_step": total / steps}


def train(task: str = "locomotion", iterations: int = 100, num_envs: int = 64, contact: Optional[str] = "hard",
          device: str = "cpu", seed: int = 0, log_dir: Optional[str] = None, n_threads: int = 0,
          torch_threads: Optional[int] = None, train_cfg: Optional[Dict[str, Any]] = None,
          task_kwargs: Optional[Dict[str, Any]] = None, eval_seed: int = 12345, eval_steps: Optional[int] = None,
          verbose: bool = True) -> Dict[str, Any]:
    """Trains PPO on ``task``; returns {"runner", "env", "initial", "final", "seconds"} where
    initial/final are ``evaluate`` results (deterministic policy) on a separate env seeded with
    ``eval_seed``. ``train_cfg``: overrides of moreau.rl.rsl_rl.default_train_cfg."""
    if torch_threads is None and torch.device(device).type == "cpu":
        torch_threads = 1  # small MLPs; more threads only contend with the simulator's workers
    threads_before = torch.get_num_threads()
    if torch_threads:
        torch.set_num_threads(int(torch_threads))
    try:
        return _train(task, iterations, num_envs, contact, device, seed, log_dir, n_threads, train_cfg, task_kwargs,
                      eval_seed, eval_steps, verbose)
    finally:
        torch.set_num_threads(threads_before)


def _train(task, iterations, num_envs, contact, device, seed, log_dir, n_threads, train_cfg, task_kwargs, eval_seed,
           eval_steps, verbose):
    from rsl_rl.runners import OnPolicyRunner

    from .rl.rsl_rl import RslRlVecEnv, default_train_cfg

    torch.manual_seed(seed)
    task_kwargs = dict(task_kwargs or {})
    env = _make_env(task, num_envs, device, contact, seed, n_threads, **task_kwargs)
    eval_env = _make_env(task, num_envs, device, contact, eval_seed, n_threads, **task_kwargs)
    vec = RslRlVecEnv(env)
    cfg = default_train_cfg(**(train_cfg or {}))
    cfg["seed"] = seed
    runner = OnPolicyRunner(vec, cfg, log_dir=log_dir, device=str(env.device))
    policy = runner.alg.get_policy()
    initial = evaluate(policy, eval_env, eval_steps)
    if verbose:
        print(f"[train_ppo] {task} contact={contact} envs={num_envs}: initial {json.dumps(initial)}", flush=True)
    t0 = time.time()
    runner.learn(int(iterations), init_at_random_ep_len=False)
    seconds = time.time() - t0
    final = evaluate(runner.alg.get_policy(), eval_env, eval_steps)
    if verbose:
        print(f"[train_ppo] after {iterations} iterations ({seconds:.1f} s): final {json.dumps(final)}", flush=True)
    if log_dir:
        os.makedirs(log_dir, exist_ok=True)
        with open(os.path.join(log_dir, "summary.json"), "w") as f:
            json.dump({"task": task, "contact": contact, "task_kwargs": {k: repr(v) for k, v in task_kwargs.items()}, "num_envs": num_envs, "iterations": iterations, "seed": seed,
                       "samples": iterations * cfg["num_steps_per_env"] * num_envs, "seconds": seconds,
                       "initial": initial, "final": final}, f, indent=2)
    return {"runner": runner, "env": env, "initial": initial, "final": final, "seconds": seconds}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m moreau.train_ppo", description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="locomotion", choices=["locomotion", "cartpole"])
    p.add_argument("--iterations", type=int, default=100)
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--contact", default=None, help="hard, soft, smooth, hard_smooth_grad (default: the task's)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-dir", default=None, help="tensorboard logs, checkpoints and summary.json")
    p.add_argument("--steps-per-env", type=int, default=None, help="rollout length per iteration (default 24)")
    p.add_argument("--n-threads", type=int, default=0, help="simulator CPU threads (0 = all)")
    p.add_argument("--torch-threads", type=int, default=None, help="torch CPU threads (default 1 on the CPU)")
    p.add_argument("--zero-command", action="store_true", help="locomotion: stand still (commands 0)")
    p.add_argument("--episode-length-s", type=float, default=None, help="locomotion: episode length [s]")
    p.add_argument("--only-positive-rewards", action=argparse.BooleanOptionalAction, default=True,
                   help="locomotion: clip the per-step reward at 0 as legged_gym's PPO setup does (default on); "
                        "without it, early on PPO learns to fall (negative rewards under action noise)")
    a = p.parse_args(argv)
    task_kwargs: Dict[str, Any] = {}
    if a.task == "locomotion":
        if a.zero_command:
            task_kwargs["command_ranges"] = ((0.0, 0.0), (0.0, 0.0), (0.0, 0.0))
        if a.episode_length_s:
            task_kwargs["episode_length_s"] = a.episode_length_s
        task_kwargs["only_positive_rewards"] = a.only_positive_rewards
    contact = a.contact or ("hard" if a.task == "locomotion" else None)
    train_cfg = {"num_steps_per_env": a.steps_per_env} if a.steps_per_env else None
    train(a.task, a.iterations, a.num_envs, contact, a.device, a.seed, a.log_dir, a.n_threads, a.torch_threads,
          train_cfg, task_kwargs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
