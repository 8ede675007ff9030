"""moreau.evaluation.evaluate: runs a saved policy (a moreau.trainers.shac or moreau.trainers.ppo
checkpoint) under any contact mode.

    python3 -m moreau.evaluation.evaluate runs/anymal_smooth/model_final.pt --contact hard \
        --json metrics.json --video walk.gif
    python3 -m moreau.evaluation.evaluate results/shac_walk/policy.pt --command 0.8 0 0 --no-push --friction 0.6
    python3 -m moreau.evaluation.evaluate runs/cartpole/model_final.pt --task cartpole --seconds 10

The task is rebuilt from the configuration the checkpoint carries (observation terms, gait
clock, action scaling; its observation statistics are in the policy), with the command
curriculum off: commands uniform in the training ranges, or one fixed command
(``--command VX VY WZ``); friction, added base mass and pushes as in training unless
overridden (``--friction``, ``--added-mass``, ``--push-vel``, ``--push-interval``,
``--no-push``). The default protocol: 128 environments × 20 s, seed 1, hard contact.

The metrics (moreau.evaluation.metrics): mean reward per control step and falls per minute;
locomotion: the planar and yaw-rate velocity-tracking errors and, with a gait clock, the foot
pattern (trot fraction, diagonal sync, stance fraction); cart-pole: the balanced fraction. With
locomotion, a PNG plot (``--plot``, default next to the checkpoint) of commanded vs achieved
v_x, v_y, ω_z of the first environments, and with ``--video PATH`` (.gif, or .mp4 with ffmpeg)
a 3-D stick figure of the first ``--video-envs`` environments (moreau.evaluation.video). On a
generated terrain (a checkpoint of the ``rough`` presets) the environments are spread over every
level and stay on their tiles, and the metrics and a second plot (``*_terrain.png``) are also given
per terrain type and level.

Environments that end are reset inside the env's step, as in training, so every environment
is simulated for the whole ``--seconds``. Runs without gradients (torch.no_grad).
"""
from __future__ import annotations

import argparse
import json
import os
import time
from typing import Callable, Dict, Optional

import torch

from ..tasks import make_env
from ..trainers.checkpoints import load_policy
from .metrics import rollout_metrics
from .video import plot_terrain_metrics, plot_velocity_traces, render_video

__all__ = ["evaluate", "eval_env", "main"]


@torch.no_grad()
def evaluate(env, policy: Callable[[torch.Tensor], torch.Tensor], seconds: float, task: str,
             plot: Optional[str] = None, plot_envs: int = 3, seed: Optional[int] = None,
             video: Optional[str] = None, video_envs: int = 4, video_seconds: float = 6.0,
             video_fps: float = 25.0) -> Dict[str, float]:
    """Runs ``policy`` on ``env`` for ``seconds`` of simulated time; returns the metrics of ``task``
    (moreau.evaluation.metrics), writes the plot (locomotion) when ``plot`` is a path and the video
    of the first ``video_envs`` environments' first ``video_seconds`` at ``video_fps`` frames per
    second when ``video`` is."""
    if seed is not None:
        env.seed(seed)
    obs = env.reset()
    steps = max(1, int(round(seconds / env.dt)))
    n = env.num_envs
    locomotion = task == "locomotion"
    metrics = rollout_metrics(env, task)
    trace = {"cmd": [], "vel": [], "q": [], "frame_vel": []}
    video_steps = min(steps, int(round(video_seconds / env.dt))) if video else 0
    t_start = time.perf_counter()
    for t in range(steps):  # no host read inside: the traces stay on the device until the end
        cmd = env.commands.clone() if locomotion else None
        obs, rew, done, info = env.step(policy(obs))
        metrics.update(rew, done, info, cmd)
        if locomotion:
            lin, ang = metrics.velocity  # of the step's end state (before any reset)
            k = min(plot_envs, n)
            trace["cmd"].append(cmd[:k].clone())
            trace["vel"].append(torch.cat([lin[:k, :2], ang[:k, 2:3]], 1))
            if t < video_steps:
                k = min(video_envs, n)
                trace["q"].append(env.q[:k].detach().clone())
                trace["frame_vel"].append(torch.cat([cmd[:k], lin[:k, :2], ang[:k, 2:3]], 1))
    result = metrics.result()  # the rollout's read of the device: after it, the clock
    res: Dict[str, float] = {"sim_wall_time": time.perf_counter() - t_start}
    res.update(result)
    trace = {k: torch.stack(v).cpu() for k, v in trace.items() if v}
    if locomotion and plot:
        plot_velocity_traces(plot, trace["cmd"], trace["vel"], env.dt)
        res["plot"] = plot
        if "terrain" in res:
            res["terrain_plot"] = os.path.splitext(plot)[0] + "_terrain.png"
            plot_terrain_metrics(res["terrain_plot"], res["terrain"])
    if locomotion and video:
        render_video(video, env, trace["q"], trace["frame_vel"], fps=video_fps)
        res["video"] = video
    return res


def eval_env(checkpoint_meta: Dict, task: str, num_envs: int, contact: Optional[str], device="cpu", seed: int = 1,
             sim_threads: int = 0, command=None, friction=None, added_mass=None, push_vel=None, push_interval=None,
             push: bool = True, task_config: Optional[Dict] = None):
    """The evaluation task of a checkpoint (its task configuration, curriculum off) with the
    overrides of the command line; ``task_config``: task options over the checkpoint's (a robot or
    randomisation the policy was not trained with)."""

    cfg = dict(checkpoint_meta.get("task_config") or {})
    cfg.update(task_config or {})
    kw: Dict = {}
    if task == "locomotion":
        cfg["curriculum_command"] = None
        if cfg.get("terrain") is not None:  # every level, each environment staying on its tile
            levels = dict(cfg["terrain"]).get("num_levels", 10)
            cfg["terrain"] = dict(cfg["terrain"], max_init_level=levels - 1)
            cfg["terrain_curriculum"] = False
        if command is not None:
            kw["command_ranges"] = tuple((float(c), float(c)) for c in command)
            kw["small_command_threshold"] = 0.0
        if friction is not None:
            kw.update(randomize_friction=False)
        if added_mass is not None:
            kw.update(randomize_base_mass=False)
        if push_vel is not None:
            kw["max_push_vel"] = float(push_vel)
        if push_interval is not None:
            kw["push_interval_s"] = float(push_interval)
        if not push:
            kw["push_robots"] = False
    env = make_env(task, num_envs, contact=contact, device=device, seed=seed, n_threads=sim_threads,
                   task_config=cfg or None, **kw)
    if task == "locomotion":
        if friction is not None:
            env.friction = torch.full_like(env.friction, float(friction))
        if added_mass is not None:
            env.added_base_mass = torch.full_like(env.added_base_mass, float(added_mass))
    return env


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m moreau.evaluation.evaluate",
                                description="Evaluate a SHAC or PPO checkpoint")
    p.add_argument("checkpoint")
    p.add_argument("--task", default=None, choices=["cartpole", "locomotion"], help="default: the checkpoint's")
    p.add_argument("--contact", default=None, help="contact mode (locomotion; default hard)")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--num-envs", type=int, default=128)
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--command", type=float, nargs=3, default=None, metavar=("VX", "VY", "WZ"),
                   help="one fixed command for every environment [m/s, m/s, rad/s] (default: uniform in the "
                        "training ranges, resampled as in training)")
    p.add_argument("--friction", type=float, default=None, help="one friction coefficient (default: randomised)")
    p.add_argument("--added-mass", type=float, default=None, help="one added base mass [kg] (default: randomised)")
    p.add_argument("--push-vel", type=float, default=None, help="largest push [m/s] (default: the task's)")
    p.add_argument("--push-interval", type=float, default=None, help="seconds between pushes (default: the task's)")
    p.add_argument("--no-push", action="store_true", help="no pushes")
    p.add_argument("--task-config", default=None, metavar="JSON",
                   help="task options over the checkpoint's, e.g. '{\"joint_damping\": 0.5}'")
    p.add_argument("--plot", default=None, help="PNG path (locomotion); default <checkpoint>_<contact>.png; 'none': no plot")
    p.add_argument("--json", default=None, metavar="PATH", help="write the metrics as JSON to PATH ('-': stdout)")
    p.add_argument("--video", default=None, metavar="PATH", help="a .gif (or .mp4 with ffmpeg) of the first "
                   "environments (locomotion)")
    p.add_argument("--video-envs", type=int, default=4)
    p.add_argument("--video-seconds", type=float, default=6.0)
    p.add_argument("--video-fps", type=float, default=25.0, help="frames per second of the video (default 25; "
                   "12.5 halves a GIF's size)")
    p.add_argument("--stand", action="store_true", help="the standing baseline: zero actions (the default pose "
                   "held) instead of the policy, on the checkpoint's task")
    p.add_argument("--torch-threads", type=int, default=1)
    p.add_argument("--sim-threads", type=int, default=0, help="simulator CPU worker threads (0 = all cores)")
    a = p.parse_args(argv)
    if a.torch_threads > 0 and a.device == "cpu":
        torch.set_num_threads(a.torch_threads)

    policy = load_policy(a.checkpoint, device=a.device)
    meta = policy.meta["env"]
    task = a.task or meta.get("task") or "cartpole"
    contact = a.contact or ("hard" if task == "locomotion" else None)
    env = eval_env(meta, task, a.num_envs, contact, device=a.device, seed=a.seed, sim_threads=a.sim_threads,
                   command=a.command, friction=a.friction, added_mass=a.added_mass, push_vel=a.push_vel,
                   push_interval=a.push_interval, push=not a.no_push,
                   task_config=json.loads(a.task_config) if a.task_config else None)
    if env.num_obs != meta["num_obs"] or env.num_actions != meta["num_actions"]:
        raise SystemExit(f"moreau.evaluation.evaluate: the checkpoint's policy has {meta['num_obs']} observations "
                         f"and {meta['num_actions']} actions; task {task} has {env.num_obs} and "
                         f"{env.num_actions}")
    plot = None
    if task == "locomotion":
        plot = a.plot or os.path.splitext(a.checkpoint)[0] + f"_{contact}.png"
        plot = None if plot == "none" else plot
    elif a.video:
        raise SystemExit("moreau.evaluation.evaluate: --video is for the locomotion task")
    act = policy
    if a.stand:
        act = lambda obs: torch.zeros(obs.shape[0], env.num_actions, device=obs.device)  # noqa: E731
    res = evaluate(env, act, a.seconds, task, plot=plot, video=a.video, video_envs=a.video_envs,
                   video_seconds=a.video_seconds, video_fps=a.video_fps)
    res.update(task=task, contact=contact or "none", checkpoint=a.checkpoint, trained_contact=meta.get("contact"),
               iteration=policy.meta.get("iteration"), env_steps_trained=policy.meta.get("env_steps"),
               seed=a.seed, command=a.command, friction=a.friction, added_mass=a.added_mass,
               pushes=(not a.no_push) if task == "locomotion" else None, policy="stand" if a.stand else "checkpoint",
               task_config_overrides=json.loads(a.task_config) if a.task_config else None)
    if a.json:
        text = json.dumps(res, indent=2)
        if a.json == "-":
            print(text)
        else:
            os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
            with open(a.json, "w") as f:
                f.write(text + "\n")
    if a.json != "-":
        print(f"{task} under {res['contact']} contact (policy trained with {res['trained_contact']}, iteration "
              f"{res['iteration']}), {a.num_envs} envs × {res['seconds']:.1f} s:")
        print(f"  mean reward per step   {res['mean_reward']:.4f}")
        print(f"  falls per minute       {res['falls_per_minute']:.2f}")
        if task == "locomotion":
            print(f"  lin. velocity error    {res['lin_vel_error']:.3f} m/s (|cmd_xy - v_xy|)")
            print(f"  yaw-rate error         {res['yaw_rate_error']:.3f} rad/s")
            if "trot_fraction" in res:
                print(f"  trot fraction          {res['trot_fraction']:.3f} (diagonal pairs in sync "
                      f"{res['diagonal_sync']:.3f}, stance {res['stance_fraction']:.3f})")
            for r in res.get("terrain", []):
                print(f"  {r['type']:<13} level {r['level']} ({r['envs']} envs): {r['lin_vel_error']:.3f} m/s, "
                      f"{r['yaw_rate_error']:.3f} rad/s, {r['falls_per_minute']:.2f} falls/min")
            if plot:
                print(f"  plot                   {plot}")
            if a.video:
                print(f"  video                  {a.video}")
        else:
            print(f"  balanced fraction      {res['balanced_fraction']:.3f} (|θ| < {env.balanced_angle} rad)")
        print(f"  throughput             {res['env_steps'] / res['sim_wall_time']:.0f} env steps/s (policy and simulation)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
