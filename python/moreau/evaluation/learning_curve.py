"""moreau.evaluation.learning_curve: evaluates every checkpoint of a SHAC or PPO run with one fixed protocol and
plots tracking error against environment samples.

    python3 -m moreau.evaluation.learning_curve runs/walk_s0 --contact hard smooth

For each ``model_<it>.pt`` (and ``model_final.pt``) of the run and each contact mode, runs
moreau.evaluation.evaluate's protocol (the checkpoint's task, curriculum off: commands uniform in the
training ranges, friction and base mass randomised, pushes on; ``--num-envs`` × ``--seconds``,
``--seed``) and appends the metrics to ``<run>/curve_<contact>.json`` (checkpoints already
there are skipped, so the command resumes). Then writes ``<run>/curve.png``: planar and yaw
tracking error and falls per minute against environment samples, one line per contact mode,
with the bars of the tracking criterion (moreau.evaluation.metrics.BARS: 0.2 m/s, 0.25 rad/s,
1 fall per minute).
"""
from __future__ import annotations

import argparse
import json
import math
import os
from typing import Dict, List

import torch

from ..trainers.checkpoints import checkpoint_iteration, list_checkpoints, load_policy
from . import metrics
from .evaluate import eval_env, evaluate

__all__ = ["log_spaced", "evaluate_run", "plot_curves", "main"]


def log_spaced(n: int, points: int) -> List[int]:
    """About ``points`` indices of 0..n-1, evenly spaced in log(index + 1), the last included."""
    if points <= 0 or n <= points:
        return list(range(n))
    return sorted({int(round(math.exp(math.log(n) * k / (points - 1)))) - 1 for k in range(points)})


def evaluate_run(run: str, contact: str, num_envs: int = 128, seconds: float = 20.0, seed: int = 1,
                 sim_threads: int = 1, every: int = 1, points: int = 0, until_bar: bool = False,
                 start: int = 0, stop: float = math.inf, cached: bool = False, device="cpu") -> List[Dict]:
    """Evaluates the run's checkpoints (every ``every``-th, and the last; ``every`` = 0: only the
    last; ``points`` > 0: about that many, log-spaced in checkpoint order, the last included)
    under ``contact``; with ``until_bar`` none after the first at the bar (but the last); none
    of an iteration below ``start`` or above ``stop`` (but the last); with ``cached`` none (the
    evaluations already there only); on ``device`` (the policy and the task);
    returns the rows of ``curve_<contact>.json``, sorted by environment samples."""
    path = os.path.join(run, f"curve_{contact}.json")
    rows: List[Dict] = json.load(open(path)) if os.path.exists(path) else []
    # a GPU's random numbers are not the CPU's: its evaluations say so ("device"; none: the CPU)
    dev = torch.device(device).type
    done = {(r["iteration"], r["protocol"]["num_envs"], r["protocol"]["seconds"], r["protocol"]["seed"],
             r["protocol"].get("device", "cpu")) for r in rows}
    cks = [] if cached else list_checkpoints(run)
    chosen = set(log_spaced(len(cks), points)) if points > 0 else None
    for i, ck in enumerate(cks):
        if i != len(cks) - 1 and ((until_bar and metrics.first_at_bar(rows) is not None)
                                  or not start <= checkpoint_iteration(ck) <= stop):
            continue
        if chosen is not None:
            if i not in chosen:
                continue
        elif (every == 0 or i % every) and i != len(cks) - 1:
            continue
        policy = load_policy(ck, device=device)
        it = policy.meta.get("iteration")
        if (it, num_envs, seconds, seed, dev) in done:
            continue
        env = eval_env(policy.meta["env"], "locomotion", num_envs, contact, device=device, seed=seed,
                       sim_threads=sim_threads)
        res = evaluate(env, policy, seconds, "locomotion", seed=seed)
        res.update(iteration=it, env_steps_trained=policy.meta.get("env_steps"), checkpoint=os.path.basename(ck),
                   wall_time_trained=policy.meta.get("wall_time"),
                   protocol={"num_envs": num_envs, "seconds": seconds, "seed": seed, "contact": contact,
                             **({"device": dev} if dev != "cpu" else {})})
        rows = [r for r in rows if r["iteration"] != it] + [res]
        done.add((it, num_envs, seconds, seed, dev))  # model_final.pt repeats the last numbered checkpoint
        rows.sort(key=lambda r: r["env_steps_trained"])
        with open(path + ".tmp", "w") as f:
            json.dump(rows, f, indent=1)
        os.replace(path + ".tmp", path)
        print(f"{os.path.basename(run)} {contact} it {it} ({res['env_steps_trained'] / 1e6:.2f} M samples): planar "
              f"{res['lin_vel_error']:.3f} m/s, yaw {res['yaw_rate_error']:.3f} rad/s, "
              f"falls {res['falls_per_minute']:.2f}/min", flush=True)
    return rows


def plot_curves(path: str, curves: Dict[str, List[Dict]], title: str = "") -> None:
    """curves: label -> rows (evaluate_run's); one panel per metric against samples."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = {"lin_vel_error": "planar error [m/s]", "yaw_rate_error": "yaw-rate error [rad/s]",
             "falls_per_minute": "falls per minute"}
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for ax, (k, label) in zip(axes, names.items()):
        for name, rows in curves.items():
            x = [r["env_steps_trained"] / 1e6 for r in rows]
            ax.plot(x, [r[k] for r in rows], "o-", ms=3, lw=1.2, label=name)
        ax.axhline(metrics.BARS[k], color="k", ls="--", lw=0.8, label="bar")
        ax.set_xlabel("environment samples [M]")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m moreau.evaluation.learning_curve",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", help="run folders (moreau.trainers.shac --logdir, moreau.trainers.ppo --log-dir)")
    p.add_argument("--contact", nargs="+", default=["hard"])
    p.add_argument("--num-envs", type=int, default=128)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--every", type=int, default=1, help="evaluate every n-th checkpoint (and the last)")
    p.add_argument("--points", type=int, default=0, help="evaluate about this many checkpoints, log-spaced (and "
                   "the last); overrides --every")
    p.add_argument("--until-bar", action="store_true", help="skip the checkpoints after the first at the bar "
                   "(the last is evaluated all the same)")
    p.add_argument("--start", type=int, default=0, help="skip the checkpoints of iterations below this (the last "
                   "is evaluated all the same)")
    p.add_argument("--stop", type=float, default=math.inf, help="skip the checkpoints of iterations above this "
                   "(the last is evaluated all the same); with --start, a window to refine a curve")
    p.add_argument("--last", action="store_true", help="evaluate only each run's last checkpoint")
    p.add_argument("--cached", action="store_true", help="evaluate no checkpoint: plot and summarise the "
                   "evaluations cached in curve_<contact>.json (a run folder restored without its checkpoints)")
    p.add_argument("--sim-threads", type=int, default=1)
    p.add_argument("--device", default="cpu", help="where the policies and the task run (cpu, cuda)")
    p.add_argument("--plot", default=None, help="PNG path (default <run>/curve.png for one run; 'none': no plot)")
    p.add_argument("--summary", default=None, help="JSON path: per run and contact, the last checkpoint's metrics "
                   "and the first checkpoint at the bar (samples, training seconds)")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    curves = {}
    summary = {}
    for run in a.runs:
        name = os.path.basename(os.path.normpath(run))
        for c in a.contact:
            rows = evaluate_run(run, c, a.num_envs, a.seconds, a.seed, a.sim_threads, 0 if a.last else a.every,
                                0 if a.last else a.points, a.until_bar, a.start, a.stop, a.cached, a.device)
            curves[f"{name} ({c})" if len(a.runs) > 1 else c] = rows
            first = metrics.first_at_bar(rows)
            keep = ("iteration", "env_steps_trained", "wall_time_trained", "lin_vel_error", "yaw_rate_error",
                    "falls_per_minute", "trot_fraction")
            summary.setdefault(name, {})[c] = {
                "last": {k: rows[-1].get(k) for k in keep} if rows else None,
                "first_at_bar": {k: first.get(k) for k in keep} if first else None}
            f = summary[name][c]["first_at_bar"]
            print(f"{name} {c}: " + (f"at the bar from {f['env_steps_trained'] / 1e6:.2f} M samples "
                                     f"({(f['wall_time_trained'] or 0) / 60:.1f} min of training)" if f else
                                     "not at the bar"))
    if a.summary:
        with open(a.summary, "w") as fh:
            json.dump({"bars": metrics.BARS, "protocol": {"num_envs": a.num_envs, "seconds": a.seconds, "seed": a.seed},
                       "runs": summary}, fh, indent=2)
    plot = a.plot or (os.path.join(a.runs[0], "curve.png") if len(a.runs) == 1 else None)
    plot = None if plot == "none" else plot
    if plot:
        plot_curves(plot, curves, title=", ".join(os.path.basename(os.path.normpath(r)) for r in a.runs))
        print(f"plot: {plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
