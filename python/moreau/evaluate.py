"""moreau.evaluate: runs a saved policy (a moreau.shac checkpoint) under any contact mode.

    python3 -m moreau.evaluate runs/anymal_smooth/model_final.pt --task locomotion --contact hard --seconds 20
    python3 -m moreau.evaluate runs/cartpole/model_final.pt --task cartpole --seconds 10

Locomotion: mean velocity-tracking error (planar |cmd_xy − v_xy| [m/s] and yaw-rate
|cmd_ωz − ω_z| [rad/s], base frame, over all environments and control steps), falls per minute
(failures — base too low or tilted, or a fatal simulator status — per environment-minute;
time-outs are not falls), mean reward per control step, and a PNG plot (``--plot``, default
next to the checkpoint) of commanded vs achieved v_x, v_y, ω_z of the first environments.
Cart-pole: mean reward per control step, the fraction of environment-steps with the pole within
``CartPole.balanced_angle`` (0.2 rad) of upright, and failures per minute.

Environments that end are reset inside the env's step, as in training, so every environment
is simulated for the whole ``--seconds``. Runs without gradients (torch.no_grad).
"""
from __future__ import annotations

import argparse
import json
import os
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
             plot: Optional[str] = None, plot_envs: int = 3, seed: Optional[int] = None) -> Dict[str, float]:
    """Runs ``policy`` on ``env`` for ``seconds`` of simulated time; returns the metrics (see
    the module docstring) and writes the plot (locomotion) when ``plot`` is a path."""
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
    trace = {"cmd": [], "vel": []}
    for _ in range(steps):
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
        elif task == "cartpole":
            ob = info["obs_before_reset"]
            balanced += (ob[:, 1].abs() < env.balanced_angle).double().sum().item()
    samples = steps * n
    minutes = samples * env.dt / 60.0
    res["env_steps"] = samples
    res["seconds"] = steps * env.dt
    res["mean_reward"] = rew_sum / samples
    res["falls_per_minute"] = falls / minutes
    res["time_outs"] = timeouts
    if task == "locomotion":
        res["lin_vel_error"] = lin_err / samples
        res["yaw_rate_error"] = ang_err / samples
        if plot:
            _plot(plot, torch.stack(trace["cmd"]), torch.stack(trace["vel"]), env.dt)
            res["plot"] = plot
    elif task == "cartpole":
        res["balanced_fraction"] = balanced / samples
    return res


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


def main(argv=None) -> int:
    from .shac import load_policy, make_env

    p = argparse.ArgumentParser(prog="python3 -m moreau.evaluate", description="Evaluate a SHAC checkpoint")
    p.add_argument("checkpoint")
    p.add_argument("--task", default=None, choices=["cartpole", "locomotion"], help="default: the checkpoint's")
    p.add_argument("--contact", default=None, help="contact mode (locomotion; default hard)")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--plot", default=None, help="PNG path (locomotion); default <checkpoint>_<contact>.png")
    p.add_argument("--json", action="store_true", help="print the metrics as JSON")
    p.add_argument("--torch-threads", type=int, default=1)
    p.add_argument("--sim-threads", type=int, default=0, help="simulator CPU worker threads (0 = all cores)")
    a = p.parse_args(argv)
    if a.torch_threads > 0 and a.device == "cpu":
        torch.set_num_threads(a.torch_threads)

    policy = load_policy(a.checkpoint, device=a.device)
    task = a.task or policy.meta["env"].get("task") or "cartpole"
    contact = a.contact or ("hard" if task == "locomotion" else None)
    env = make_env(task, a.num_envs, contact=contact, device=a.device, seed=a.seed, n_threads=a.sim_threads)
    if env.num_obs != policy.meta["env"]["num_obs"] or env.num_actions != policy.meta["env"]["num_actions"]:
        raise SystemExit(f"moreau.evaluate: the checkpoint's policy has {policy.meta['env']['num_obs']} observations "
                         f"and {policy.meta['env']['num_actions']} actions; task {task} has {env.num_obs} and "
                         f"{env.num_actions}")
    plot = None
    if task == "locomotion":
        plot = a.plot or os.path.splitext(a.checkpoint)[0] + f"_{contact}.png"
    res = evaluate(env, policy, a.seconds, task, plot=plot)
    res.update(task=task, contact=contact or "none", checkpoint=a.checkpoint,
               trained_contact=policy.meta["env"].get("contact"), iteration=policy.meta.get("iteration"))
    if a.json:
        print(json.dumps(res, indent=2))
    else:
        print(f"{task} under {res['contact']} contact (policy trained with {res['trained_contact']}, iteration "
              f"{res['iteration']}), {a.num_envs} envs × {res['seconds']:.1f} s:")
        print(f"  mean reward per step   {res['mean_reward']:.4f}")
        print(f"  falls per minute       {res['falls_per_minute']:.2f}")
        if task == "locomotion":
            print(f"  lin. velocity error    {res['lin_vel_error']:.3f} m/s (|cmd_xy - v_xy|)")
            print(f"  yaw-rate error         {res['yaw_rate_error']:.3f} rad/s")
            print(f"  plot                   {plot}")
        else:
            print(f"  balanced fraction      {res['balanced_fraction']:.3f} (|θ| < {env.balanced_angle} rad)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
