"""moreau.evaluate: runs a saved policy (a moreau.shac or moreau.train_ppo checkpoint) under any
contact mode.

    python3 -m moreau.evaluate runs/anymal_smooth/model_final.pt --contact hard --json metrics.json \
        --video walk.gif
    python3 -m moreau.evaluate results/shac_walk/policy.pt --command 0.8 0 0 --no-push --friction 0.6
    python3 -m moreau.evaluate runs/cartpole/model_final.pt --task cartpole --seconds 10

The task is rebuilt from the configuration the checkpoint carries (observation terms, gait
clock, action scaling; its observation statistics are in the policy), with the command
curriculum off: commands uniform in the training ranges, or one fixed command
(``--command VX VY WZ``); friction, added base mass and pushes as in training unless
overridden (``--friction``, ``--added-mass``, ``--push-vel``, ``--push-interval``,
``--no-push``). The default protocol (the README's figures): 128 environments × 20 s, seed 1,
hard contact.

Locomotion: mean velocity-tracking error (planar |cmd_xy − v_xy| [m/s] and yaw-rate
|cmd_ωz − ω_z| [rad/s], base frame, over all environments and control steps), falls per minute
(failures — base too low or tilted, or a fatal simulator status — per environment-minute;
time-outs are not falls), mean reward per control step, and a PNG plot (``--plot``, default
next to the checkpoint) of commanded vs achieved v_x, v_y, ω_z of the first environments.
With a gait clock the metrics also say how the feet move (contact: clearance below the task's
``foot_contact_height``): ``trot_fraction``, the fraction of environment-steps whose contact
pattern is a trot (LF = RH ≠ RF = LH), ``diagonal_sync`` the fraction with LF = RH and RF = LH,
and ``stance_fraction`` the feet's mean time in contact. ``--video PATH`` (.gif, or .mp4 with
ffmpeg) renders the first ``--video-envs`` environments (a 3-D stick figure per frame from the
kinematics, matplotlib, no display needed).
Cart-pole: mean reward per control step, the fraction of environment-steps with the pole within
``CartPole.balanced_angle`` (0.2 rad) of upright, and failures per minute.

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

__all__ = ["evaluate", "episode_return", "main"]


@torch.no_grad()
def episode_return(env, policy: Callable[[torch.Tensor], torch.Tensor], steps: int, seed: Optional[int] = None) -> float:
    """Mean over environments of the undiscounted return of each environment's first episode
    from a fresh ``reset`` (truncated at ``steps`` control steps)."""
    if seed is not None:
        env.seed(seed)
    obs = env.reset()
    total = torch.zeros(env.num_envs, device=env.device, dtype=torch.float64)
    alive = torch.ones(env.num_envs, dtype=torch.bool, device=env.device)
    for _ in range(steps):
        obs, rew, done, _ = env.step(policy(obs))
        total += torch.where(alive, rew.to(torch.float64), torch.zeros_like(total))
        alive &= ~done
        if not bool(alive.any()):
            break
    return total.mean().item()


@torch.no_grad()
def evaluate(env, policy: Callable[[torch.Tensor], torch.Tensor], seconds: float, task: str,
             plot: Optional[str] = None, plot_envs: int = 3, seed: Optional[int] = None,
             video: Optional[str] = None, video_envs: int = 4, video_seconds: float = 6.0) -> Dict[str, float]:
    """Runs ``policy`` on ``env`` for ``seconds`` of simulated time; returns the metrics (see
    the module docstring), writes the plot (locomotion) when ``plot`` is a path and the video
    of the first ``video_envs`` environments' first ``video_seconds`` when ``video`` is."""
    if seed is not None:
        env.seed(seed)
    obs = env.reset()
    steps = max(1, int(round(seconds / env.dt)))
    n = env.num_envs
    rew_sum = 0.0
    falls = 0
    timeouts = 0
    res: Dict[str, float] = {}
    lin_err = ang_err = 0.0
    balanced = 0.0
    trot = sync = stance = 0.0
    clock = task == "locomotion" and env.cfg.gait_frequency > 0
    trace = {"cmd": [], "vel": [], "q": [], "frame_vel": []}
    video_steps = min(steps, int(round(video_seconds / env.dt))) if video else 0
    t_start = time.perf_counter()
    for t in range(steps):
        if task == "locomotion":
            cmd = env.commands.clone()
        obs, rew, done, info = env.step(policy(obs))
        rew_sum += rew.double().sum().item()
        time_outs = info.get("time_outs", torch.zeros_like(done))
        falls += int((done & ~time_outs).sum())
        timeouts += int(time_outs.sum())
        if task == "locomotion":
            # the achieved velocity of the step's end state (before any reset): from obs_before_reset
            ob = info["obs_before_reset"]
            s = env.cfg.obs_scales
            lin = ob[:, 0:3] / s["lin_vel"]
            ang = ob[:, 3:6] / s["ang_vel"]
            lin_err += (cmd[:, :2] - lin[:, :2]).norm(dim=1).double().sum().item()
            ang_err += (cmd[:, 2] - ang[:, 2]).abs().double().sum().item()
            k = min(plot_envs, n)
            trace["cmd"].append(cmd[:k].cpu())
            trace["vel"].append(torch.cat([lin[:k, :2], ang[:k, 2:3]], 1).cpu())
            if clock:
                c = env.foot_clearance(env.q) < env.cfg.foot_contact_height  # LF, RF, LH, RH
                diag = (c[:, 0] == c[:, 3]) & (c[:, 1] == c[:, 2])
                sync += diag.double().sum().item()
                trot += (diag & (c[:, 0] != c[:, 1])).double().sum().item()
                stance += c.double().mean(1).sum().item()
            if t < video_steps:
                k = min(video_envs, n)
                trace["q"].append(env.q[:k].detach().cpu().clone())
                trace["frame_vel"].append(torch.cat([cmd[:k], lin[:k, :2], ang[:k, 2:3]], 1).cpu())
        elif task == "cartpole":
            ob = info["obs_before_reset"]
            balanced += (ob[:, 1].abs() < env.balanced_angle).double().sum().item()
    samples = steps * n
    minutes = samples * env.dt / 60.0
    res["sim_wall_time"] = time.perf_counter() - t_start
    res["env_steps"] = samples
    res["num_envs"] = n
    res["seconds"] = steps * env.dt
    res["mean_reward"] = rew_sum / samples
    res["falls_per_minute"] = falls / minutes
    res["falls"] = falls
    res["time_outs"] = timeouts
    if task == "locomotion":
        res["lin_vel_error"] = lin_err / samples
        res["yaw_rate_error"] = ang_err / samples
        if clock:
            res["trot_fraction"] = trot / samples
            res["diagonal_sync"] = sync / samples
            res["stance_fraction"] = stance / samples
        if plot:
            _plot(plot, torch.stack(trace["cmd"]), torch.stack(trace["vel"]), env.dt)
            res["plot"] = plot
        if video:
            render_video(video, env, torch.stack(trace["q"]), torch.stack(trace["frame_vel"]))
            res["video"] = video
    elif task == "cartpole":
        res["balanced_fraction"] = balanced / samples
    return res


def render_video(path: str, env, qs: torch.Tensor, vel: torch.Tensor, fps: int = 25) -> None:
    """A GIF (or MP4, with ffmpeg) of configurations ``qs`` (T, k, nq) of ``env``'s robot: one 3-D
    panel per environment following its base, the legs as lines between the body origins and
    the feet, the ground as a grid; ``vel`` (T, k, 6): command then achieved (v_x, v_y, ω_z)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib import animation

    kin = env.kinematics
    T, k = qs.shape[0], qs.shape[1]
    flat = qs.reshape(T * k, -1).to(device=kin.tree_p.device, dtype=kin.tree_p.dtype)
    _, p = kin.body_poses(flat)
    feet = kin.contact_positions(flat)
    p, feet = p.reshape(T, k, -1, 3).cpu().numpy(), feet.reshape(T, k, -1, 3).cpu().numpy()
    parent = kin.parent
    con_body = kin.con_body.tolist()
    stride = max(1, int(round(1.0 / (fps * env.dt))))
    frames = list(range(0, T, stride))
    cols = min(k, 2)
    rows = (k + cols - 1) // cols
    fig = plt.figure(figsize=(4.2 * cols, 3.8 * rows))
    axes = [fig.add_subplot(rows, cols, i + 1, projection="3d") for i in range(k)]

    artists = []
    for ax in axes:
        ax.set_axis_off()  # the ground grid below stands for the axes
        ax.view_init(elev=20, azim=-60)
        artists.append((ax.plot([], [], [], color="0.8", lw=0.6)[0], ax.plot([], [], [], color="C0", lw=2.2)[0],
                        ax.plot([], [], [], "o", color="C3", ms=3)[0]))
    nan = [float("nan")] * 3
    hips = [b for b in range(p.shape[2]) if parent[b] == 0]

    def draw(fi):
        t = frames[fi]
        for e, ax in enumerate(axes):
            grid, legs_line, feet_dots = artists[e]
            c = p[t, e, 0]
            r = 0.6
            ax.set_xlim(c[0] - r, c[0] + r)
            ax.set_ylim(c[1] - r, c[1] + r)
            ax.set_zlim(0, 2 * r * 0.8)
            pts = []  # polylines of segments separated by NaN
            g0x, g0y = round(c[0] - r, 1), round(c[1] - r, 1)
            for i in range(8):
                pts += [[g0x + 0.2 * i, g0y, 0], [g0x + 0.2 * i, g0y + 1.4, 0], nan,
                        [g0x, g0y + 0.2 * i, 0], [g0x + 1.4, g0y + 0.2 * i, 0], nan]
            g = np.array(pts)
            grid.set_data_3d(g[:, 0], g[:, 1], g[:, 2])
            legs = []
            for b in range(1, p.shape[2]):
                if parent[b] >= 0:
                    legs += [p[t, e, parent[b]], p[t, e, b], nan]
            for j, b in enumerate(con_body):
                legs += [p[t, e, b], feet[t, e, j], nan]
            if len(hips) >= 3:  # the base as the outline through its children's origins
                legs += [p[t, e, h] for h in hips + hips[:1]]
            s_ = np.array(legs)
            legs_line.set_data_3d(s_[:, 0], s_[:, 1], s_[:, 2])
            feet_dots.set_data_3d(feet[t, e, :, 0], feet[t, e, :, 1], feet[t, e, :, 2])
            v = vel[t, e]
            ax.set_title(f"cmd ({v[0]:+.2f}, {v[1]:+.2f}, {v[2]:+.2f})\nvel ({v[3]:+.2f}, {v[4]:+.2f}, {v[5]:+.2f})",
                         fontsize=8)
        fig.suptitle(f"t = {t * env.dt:.2f} s", fontsize=9)

    anim = animation.FuncAnimation(fig, draw, frames=len(frames))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if path.endswith(".gif"):
        writer = animation.PillowWriter(fps=fps)
    elif path.endswith(".mp4"):
        if not animation.FFMpegWriter.isAvailable():
            raise SystemExit(f"moreau.evaluate: --video {path}: MP4 needs ffmpeg on PATH; write a .gif instead")
        writer = animation.FFMpegWriter(fps=fps)
    else:
        raise SystemExit(f"moreau.evaluate: --video {path}: expected a .gif or .mp4 path")
    anim.save(path, writer=writer, dpi=70)
    plt.close(fig)


def _plot(path: str, cmd: torch.Tensor, vel: torch.Tensor, dt: float) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = torch.arange(cmd.shape[0]) * dt
    k = cmd.shape[1]
    names = ["v_x [m/s]", "v_y [m/s]", "ω_z [rad/s]"]
    fig, axes = plt.subplots(3, k, figsize=(4 * k, 7), sharex=True, squeeze=False)
    for e in range(k):
        for j in range(3):
            ax = axes[j][e]
            ax.plot(t, cmd[:, e, j], "k--", lw=1, label="commanded")
            ax.plot(t, vel[:, e, j], lw=1, label="achieved")
            if e == 0:
                ax.set_ylabel(names[j])
            if j == 0:
                ax.set_title(f"environment {e}")
            if j == 2:
                ax.set_xlabel("t [s]")
    axes[0][0].legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def eval_env(checkpoint_meta: Dict, task: str, num_envs: int, contact: Optional[str], device="cpu", seed: int = 1,
             sim_threads: int = 0, command=None, friction=None, added_mass=None, push_vel=None, push_interval=None,
             push: bool = True):
    """The evaluation task of a checkpoint (its task configuration, curriculum off) with the
    overrides of the command line."""
    from .shac import make_env

    cfg = dict(checkpoint_meta.get("task_config") or {})
    kw: Dict = {}
    if task == "locomotion":
        cfg["curriculum_command"] = None
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


def load_checkpoint(path: str, device="cpu"):
    """The deterministic policy of a moreau.shac or a moreau.train_ppo (rsl_rl) checkpoint, with
    its ``meta`` ({"env": the task, contact and task configuration it was trained with, ...,
    "iteration", "env_steps", "wall_time"})."""
    ck = torch.load(path, map_location=device, weights_only=False)
    if isinstance(ck, dict) and "actor_state_dict" in ck:
        from .rl.rsl_rl import load_policy as load_ppo
        return load_ppo(path, device, checkpoint=ck)
    from .shac import load_policy
    return load_policy(path, device, checkpoint=ck)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m moreau.evaluate", description="Evaluate a SHAC or PPO checkpoint")
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
    p.add_argument("--plot", default=None, help="PNG path (locomotion); default <checkpoint>_<contact>.png; 'none': no plot")
    p.add_argument("--json", default=None, metavar="PATH", help="write the metrics as JSON to PATH ('-': stdout)")
    p.add_argument("--video", default=None, metavar="PATH", help="a .gif (or .mp4 with ffmpeg) of the first "
                   "environments (locomotion)")
    p.add_argument("--video-envs", type=int, default=4)
    p.add_argument("--video-seconds", type=float, default=6.0)
    p.add_argument("--stand", action="store_true", help="the standing baseline: zero actions (the default pose "
                   "held) instead of the policy, on the checkpoint's task")
    p.add_argument("--torch-threads", type=int, default=1)
    p.add_argument("--sim-threads", type=int, default=0, help="simulator CPU worker threads (0 = all cores)")
    a = p.parse_args(argv)
    if a.torch_threads > 0 and a.device == "cpu":
        torch.set_num_threads(a.torch_threads)

    policy = load_checkpoint(a.checkpoint, device=a.device)
    meta = policy.meta["env"]
    task = a.task or meta.get("task") or "cartpole"
    contact = a.contact or ("hard" if task == "locomotion" else None)
    env = eval_env(meta, task, a.num_envs, contact, device=a.device, seed=a.seed, sim_threads=a.sim_threads,
                   command=a.command, friction=a.friction, added_mass=a.added_mass, push_vel=a.push_vel,
                   push_interval=a.push_interval, push=not a.no_push)
    if env.num_obs != meta["num_obs"] or env.num_actions != meta["num_actions"]:
        raise SystemExit(f"moreau.evaluate: the checkpoint's policy has {meta['num_obs']} observations "
                         f"and {meta['num_actions']} actions; task {task} has {env.num_obs} and "
                         f"{env.num_actions}")
    plot = None
    if task == "locomotion":
        plot = a.plot or os.path.splitext(a.checkpoint)[0] + f"_{contact}.png"
        plot = None if plot == "none" else plot
    elif a.video:
        raise SystemExit("moreau.evaluate: --video is for the locomotion task")
    act = policy
    if a.stand:
        act = lambda obs: torch.zeros(obs.shape[0], env.num_actions, device=obs.device)  # noqa: E731
    res = evaluate(env, act, a.seconds, task, plot=plot, video=a.video, video_envs=a.video_envs,
                   video_seconds=a.video_seconds)
    res.update(task=task, contact=contact or "none", checkpoint=a.checkpoint, trained_contact=meta.get("contact"),
               iteration=policy.meta.get("iteration"), env_steps_trained=policy.meta.get("env_steps"),
               seed=a.seed, command=a.command, friction=a.friction, added_mass=a.added_mass,
               pushes=(not a.no_push) if task == "locomotion" else None, policy="stand" if a.stand else "checkpoint")
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
