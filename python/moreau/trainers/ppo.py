"""PPO (rsl_rl's OnPolicyRunner) on a moreau task.

    python3 -m moreau.trainers.ppo --task locomotion --iterations 1500 --num-envs 4096 --device cuda --contact hard
    python3 -m moreau.trainers.ppo --task cartpole --iterations 50 --num-envs 64 --log-dir logs/ppo_cartpole

Writes tensorboard logs and checkpoints (model_<it>.pt) under ``--log-dir`` (none without it)
and prints the evaluation return (mean undiscounted return of each environment's first
episode, deterministic policy) before and after training. Locomotion rewards are clipped at 0
per step by default (legged_gym's ``only_positive_rewards``; ``--no-only-positive-rewards``).

    torchrun --standalone --nproc_per_node 2 -m moreau.trainers.ppo --task cartpole --num-envs 32

runs one data-parallel PPO (moreau.trainers.distributed): ``--num-envs`` per rank, rsl_rl's multi-GPU
gradient all-reduce (gloo on the CPU), rank 0 evaluating, logging and saving.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any, Dict, Optional

import torch

from ..evaluation.metrics import first_episodes
from ..tasks import env_config, make_env
from ..tasks.presets import preset_kwargs
from . import distributed
from .checkpoints import PPO_FORMAT, RUN_STATE, is_stripped, latest_checkpoint, run_finished, write_policy
from .meters import Stopwatch, host_values
from .runlog import CsvLog

__all__ = ["train", "evaluate", "main"]


def _runner_class():
    from rsl_rl.runners import OnPolicyRunner

    class Runner(OnPolicyRunner):
        """rsl_rl's OnPolicyRunner on moreau.trainers.distributed's process group: its multi-GPU code
        (gradients all-reduced, KL and learning rate shared) with gloo on the CPU as well as NCCL."""

        def _configure_multi_gpu(self) -> None:
            n = distributed.world_size()
            self.gpu_world_size, self.is_distributed = n, n > 1
            self.gpu_global_rank = distributed.rank()
            self.gpu_local_rank = int(os.environ.get("LOCAL_RANK", "0")) if n > 1 else 0
            self.cfg["multi_gpu"] = ({"global_rank": self.gpu_global_rank, "local_rank": self.gpu_local_rank,
                                      "world_size": n} if n > 1 else None)

        def learn(self, num_learning_iterations: int, init_at_random_ep_len: bool = False) -> None:
            super().learn(num_learning_iterations, init_at_random_ep_len)
            # rsl_rl broadcasts rank 0's parameters at every learn(); once is enough (averaged
            # gradients keep the ranks equal), and moreau calls learn(1) per iteration.
            self.is_distributed = False

    return Runner


def evaluate(policy, env, steps: Optional[int] = None, stochastic: bool = False) -> Dict[str, float]:
    """moreau.evaluation.metrics.first_episodes of ``policy`` (an rsl_rl model: TensorDict ->
    actions, sampled when ``stochastic``, or a callable on the observation tensor) in the DiffEnv
    ``env`` for ``steps`` control steps (default ``env.max_episode_length``), gradients off: the
    mean first-episode return, the fraction of first episodes that ended by a failure, and the
    mean reward per step."""
    from tensordict import TensorDict

    def act(obs: torch.Tensor) -> torch.Tensor:
        try:
            return policy(TensorDict({"policy": obs}, batch_size=[env.num_envs], device=env.device),
                          stochastic_output=stochastic)
        except TypeError:
            return policy(obs)
    return first_episodes(env, act, steps)


def train(task: str = "locomotion", iterations: int = 100, num_envs: int = 64, contact: Optional[str] = "hard",
          device: str = "cpu", seed: int = 0, log_dir: Optional[str] = None, n_threads: int = 0,
          torch_threads: Optional[int] = None, train_cfg: Optional[Dict[str, Any]] = None,
          task_kwargs: Optional[Dict[str, Any]] = None, eval_seed: int = 12345, eval_steps: Optional[int] = None,
          verbose: bool = True, save_interval: int = 50, resume: Optional[str] = None,
          meta: Optional[Dict[str, Any]] = None, until: Optional[int] = None,
          max_seconds: Optional[float] = None) -> Dict[str, Any]:
    """Trains PPO on ``task``; returns {"runner", "env", "initial", "final", "seconds"} where
    initial/final are ``evaluate`` results (deterministic policy) on a separate env seeded with
    ``eval_seed`` (None with ``eval_steps`` = 0). ``train_cfg``: overrides of
    moreau.rl.rsl_rl.default_train_cfg.

    With ``log_dir``: a checkpoint ``model_<it>.pt`` every ``save_interval`` iterations and
    ``model_final.pt`` at the end, with its policy file ``policy.pt`` (the actor alone:
    moreau.trainers.checkpoints.strip_checkpoint); rsl_rl's format, whose ``infos["moreau"]`` carries the task, the
    contact, the task configuration, the training configuration, iterations, environment samples,
    training seconds, the task's schedule state and the initial evaluation, so that
    moreau.evaluation.evaluate rebuilds the task and a resume goes on (without evaluating again: its
    "initial" is the run's, of the policy before training); also ``log.csv`` (one row per iteration: samples, training seconds,
    samples/s, rsl_rl's mean return and length of the last 100 episodes, action std, learning
    rate, command scale) and ``summary.json``. ``resume``: a checkpoint to continue from, or
    "auto" (the newest in ``log_dir``; a finished run is not trained again). ``meta``: extra
    entries for the checkpoints' ``infos["moreau"]``. ``until``: stop after this iteration with a
    ``model_<it>.pt`` (no model_final.pt, no final evaluation), a run to resume later; nothing in
    rsl_rl's PPO depends on ``iterations``, so the first ``until`` iterations are those of the
    whole run. ``max_seconds``: stop as ``until`` does after the first iteration that ends past
    this many seconds of training (wall clock), and write the policy file of that checkpoint.

    The rollout reads nothing back from the device (moreau.rl.rsl_rl with ``episode_extras``
    off; rsl_rl's per-step NaN check replaced by one per iteration, ``RslRlVecEnv.check_finite``);
    the log row's values are read once per iteration (moreau.trainers.meters); the iteration is
    timed with CUDA events on a GPU. rsl_rl's own update still reads its losses per mini-batch."""
    if torch_threads is None and torch.device(device).type == "cpu":
        torch_threads = 1  # small MLPs; more threads only contend with the simulator's workers
    threads_before = torch.get_num_threads()
    if torch_threads:
        torch.set_num_threads(int(torch_threads))
    try:
        return _train(task, iterations, num_envs, contact, device, seed, log_dir, n_threads, train_cfg, task_kwargs,
                      eval_seed, eval_steps, verbose, save_interval, resume, meta or {}, until, max_seconds)
    finally:
        torch.set_num_threads(threads_before)


def _train(task, iterations, num_envs, contact, device, seed, log_dir, n_threads, train_cfg, task_kwargs, eval_seed,
           eval_steps, verbose, save_interval, resume, meta, until=None, max_seconds=None):
    from ..rl.rsl_rl import RslRlVecEnv, default_train_cfg

    rank, world, device = distributed.init(device)  # under torchrun: one rank of a data-parallel run
    verbose = verbose and rank == 0
    log_dir_all, log_dir = log_dir, (log_dir if rank == 0 else None)  # rank 0 alone evaluates, logs and saves
    torch.manual_seed(seed + rank)
    task_kwargs = dict(task_kwargs or {})
    env = make_env(task, num_envs, contact, device, seed + rank, n_threads=n_threads, **task_kwargs)
    eval_env = None if eval_steps == 0 or rank else make_env(task, num_envs, contact, device, eval_seed,
                                                             n_threads=n_threads, **task_kwargs)
    vec = RslRlVecEnv(env, episode_extras=False)  # rsl_rl's Logger writes nothing here (log_dir None)
    cfg = default_train_cfg(**(train_cfg or {}))
    cfg["seed"] = seed
    check_nan = cfg.get("check_for_nan", True)  # once per iteration below, not once per step
    # rsl_rl's own logging and checkpoints off (log_dir None): moreau writes log.csv and checkpoints
    runner = _runner_class()(vec, dict(cfg, check_for_nan=False), log_dir=None, device=str(env.device))
    contact_name = contact or (str(getattr(env.cfg, "contact", "none")) if hasattr(env, "cfg") else "none")
    info = {"format": PPO_FORMAT, **meta, "task": task, "contact": contact_name, "num_obs": env.num_obs,
            "num_actions": env.num_actions, "task_config": env_config(env), "train_cfg": cfg, "num_envs": num_envs,
            "seed": seed, "iterations": iterations, "world_size": world}
    it, steps, wall = 0, 0, 0.0
    if resume == "auto":  # (every rank reads rank 0's folder)
        resume = latest_checkpoint(log_dir_all) if log_dir_all else None
    if resume:
        if is_stripped(torch.load(resume, map_location="cpu", weights_only=False)):
            raise ValueError(f"{resume}: a policy file (no critic or optimizer state): it evaluates, it does not "
                             f"resume training; resume from the run's model_<it>.pt")
        done = runner.load(resume, map_location=str(env.device)).get("moreau", {})
        it, steps, wall = int(done["iteration"]), int(done["env_steps"]), float(done["wall_time"])
        initial = done.get("initial")  # the run's first evaluation, of the policy before training
        if hasattr(env, "load_schedule_state") and done.get("env_schedule"):
            env.load_schedule_state(done["env_schedule"])
        if verbose:
            print(f"[ppo] resumed from {resume} (iteration {it}, {steps} env steps)", flush=True)
    else:
        initial = evaluate(runner.alg.get_policy(), eval_env, eval_steps) if eval_env is not None else None
        if verbose:
            print(f"[ppo] {task} contact={contact} envs={num_envs}: initial {json.dumps(initial)}", flush=True)

    def save(path):
        runner.save(path, infos={"moreau": {**info, "iteration": it, "env_steps": steps, "wall_time": wall,
                                            "initial": initial,
                                            "env_schedule": env.schedule_state() if hasattr(env, "schedule_state")
                                            else None}})

    log = CsvLog(os.path.join(log_dir, "log.csv"), it) if log_dir else None
    per_it = cfg["num_steps_per_env"] * num_envs * world
    t_start = time.time()
    stop = iterations if until is None else min(until, iterations)
    watch = Stopwatch(env.device)
    timed_out = False
    try:
        while it < stop:  # one rsl_rl iteration at a time: log.csv rows and checkpoints
            t0 = watch.mark()
            runner.learn(1, init_at_random_ep_len=False)
            watch.add("iteration", t0, watch.mark())
            curricula = env.curriculum_stats() if hasattr(env, "curriculum_stats") else {}
            row = host_values({  # the iteration's one read of the device
                "episode_return": vec.episode_returns.mean(), "episode_length": vec.episode_lengths.mean(),
                "action_std": runner.alg.get_policy().output_std.detach().mean(),
                "learning_rate": runner.alg.learning_rate,
                "nonfinite": vec.nonfinite,
                **curricula})
            if check_nan:
                vec.check_finite(row["nonfinite"] > 0)
            dt = watch.read()["iteration"]
            it, steps, wall = it + 1, steps + per_it, wall + dt
            timed_out = it < stop and max_seconds is not None and distributed.any_rank(
                time.time() - t_start >= max_seconds, env.device)
            if log is not None:
                log.write({"iteration": it, "env_steps": steps, "wall_time": wall, "fps": per_it / max(dt, 1e-9),
                           "episode_return": row["episode_return"], "episode_length": row["episode_length"],
                           "action_std": row["action_std"], "learning_rate": row["learning_rate"],
                           **{k: row[k] for k in curricula}})
                if (save_interval > 0 and it % save_interval == 0) or (it == stop < iterations) or timed_out:
                    save(os.path.join(log_dir, f"model_{it}.pt"))
            if timed_out:
                if log_dir:
                    write_policy(os.path.join(log_dir, f"model_{it}.pt"), os.path.join(log_dir, "policy.pt"))
                break
        if log_dir and it >= iterations:
            save(os.path.join(log_dir, "model_final.pt"))
            write_policy(os.path.join(log_dir, "model_final.pt"), os.path.join(log_dir, "policy.pt"))
    finally:
        if log is not None:
            log.close()
    seconds = time.time() - t_start
    if it < iterations:
        if verbose:
            why = f"--max-minutes, {seconds:.0f} s" if timed_out else "--until"
            print(f"[ppo] stopped at iteration {it} of {iterations} ({why}); resume to go on", flush=True)
        return {"runner": runner, "env": env, "initial": initial, "final": None, "seconds": seconds}
    final = evaluate(runner.alg.get_policy(), eval_env, eval_steps) if eval_env is not None else None
    if verbose:
        print(f"[ppo] after {iterations} iterations ({seconds:.1f} s): final {json.dumps(final)}", flush=True)
    if log_dir:
        with open(os.path.join(log_dir, "summary.json"), "w") as f:
            json.dump({"task": task, "contact": contact_name, "task_config": info["task_config"], "num_envs": num_envs,
                       "iterations": iterations, "seed": seed, "samples": steps, "seconds": wall,
                       "initial": initial, "final": final}, f, indent=2)
    return {"runner": runner, "env": env, "initial": initial, "final": final, "seconds": seconds}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m moreau.trainers.ppo", description=__doc__.split("\n\n")[0])
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
    p.add_argument("--task-preset", default=None, help="locomotion: a task preset (moreau.tasks.presets "
                   "TASK_PRESETS, e.g. trot_gated)")
    p.add_argument("--task-config", default=None, metavar="JSON", help="locomotion: LocomotionConfig overrides")
    p.add_argument("--eval-steps", type=int, default=None, help="control steps of the evaluation before and "
                   "after training (default: an episode; 0: none)")
    p.add_argument("--save-interval", type=int, default=50, help="checkpoint every this many iterations")
    p.add_argument("--resume", default=None, help="a checkpoint to continue from, or 'auto': the newest in --log-dir")
    p.add_argument("--until", type=int, default=None, help="stop after this iteration (a model_<it>.pt, not "
                   "model_final.pt, is saved): a run to continue later with --resume")
    p.add_argument("--max-minutes", type=float, default=None, help="stop after the iteration that ends past this "
                   "many minutes of training, as --until does, with the policy file of that checkpoint")
    a = p.parse_args(argv)
    task_kwargs: Dict[str, Any] = {}
    if a.task == "locomotion":
        try:
            task_kwargs.update(preset_kwargs(a.task_preset, json.loads(a.task_config) if a.task_config else None))
        except ValueError as e:
            raise SystemExit(f"moreau.trainers.ppo: --task-preset: {e}")
        if a.zero_command:
            task_kwargs["command_ranges"] = ((0.0, 0.0), (0.0, 0.0), (0.0, 0.0))
        if a.episode_length_s:
            task_kwargs["episode_length_s"] = a.episode_length_s
        task_kwargs["only_positive_rewards"] = a.only_positive_rewards
    if a.resume == "auto" and a.log_dir and latest_checkpoint(a.log_dir) is None and run_finished(a.log_dir):
        # a finished run's record, restored without its checkpoints
        print(f"moreau.trainers.ppo: {os.path.join(a.log_dir, RUN_STATE)} says the run is finished")
        return 0
    contact = a.contact or ("hard" if a.task == "locomotion" else None)
    train_cfg = {"num_steps_per_env": a.steps_per_env} if a.steps_per_env else None
    train(a.task, a.iterations, a.num_envs, contact, a.device, a.seed, a.log_dir, a.n_threads, a.torch_threads,
          train_cfg, task_kwargs, eval_steps=a.eval_steps, save_interval=a.save_interval, resume=a.resume,
          meta={"task_preset": a.task_preset}, until=a.until,
          max_seconds=None if a.max_minutes is None else 60.0 * a.max_minutes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
