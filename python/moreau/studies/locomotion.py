"""moreau.studies.locomotion: Study B, the locomotion study, end to end (its protocol: docs/studies.md).

    python3 -m moreau.studies.locomotion                       # the full protocol (hours; resumable)
    python3 -m moreau.studies.locomotion --quick --out /tmp/b  # every stage in a few minutes
    python3 -m moreau.studies.locomotion --methods shac_smooth ppo_hard --seeds 0 1 2 --jobs 2

Methods: SHAC (moreau.trainers.shac, ``--shac-preset``, default "walk_fast_1m": the
configuration "walk_fast" (moreau.tasks.presets.SHAC_PRESETS) with a 1 M-sample fixed-command
warm-up) through each contact model (shac_hard, shac_soft, shac_smooth, shac_hard_smooth_grad) and
rsl_rl's PPO (moreau.trainers.ppo: legged_gym's ANYmal settings, the same task preset and reward,
rewards clipped at 0 per step as legged_gym does) through hard and through smooth contact
(ppo_hard, ppo_smooth).

Stages, each resumable (a finished run or evaluation is skipped; run the command again to go on):
1. train every method × seed, ``--jobs`` at a time (one simulator and one torch thread each), in
   ``--runs``/<method>_s<seed> (logs in <run>.out); unfinished runs resume from their newest
   checkpoint;
2. evaluate about ``--points`` checkpoints of each run (log-spaced, the last included) with
   moreau.evaluation.learning_curve's protocol under hard contact (commands uniform in the
   training ranges, friction and base mass randomised, pushes on, ``--eval-envs`` ×
   ``--eval-seconds``, seed 1, deterministic actions), and the last checkpoint under the run's
   own training contact (the transfer gap);
3. write under ``--out``: ``runs.csv`` / ``study.json`` (per run: samples, training seconds, the
   first checkpoint at the bar of the tracking criterion, moreau.evaluation.metrics.BARS
   (``bar_censored`` when that is the first checkpoint evaluated: an upper bound, left out of the
   medians), the last checkpoint's errors under hard and own contact, the transfer gap; per
   method: seeds at the bar, median samples and seconds to it; the ratios of PPO's to
   SHAC-smooth's samples and seconds; the standing baseline), ``curves.png`` (tracking error
   against samples, log x, one colour per method),
   ``transfer.png`` (last errors, own contact vs hard), ``traces.png`` (commanded vs achieved
   velocities of the best SHAC-smooth policy under hard contact), ``policies/<method>.pt``
   (each method's best finished seed's policy file: its final checkpoint stripped to what
   evaluation loads, moreau.trainers.checkpoints.strip_checkpoint), and ``runs/<run>``: each
   run's record (archive_run: configuration, log.csv.xz, cached evaluations, and
   ``checkpoint.json`` naming its newest checkpoint; the checkpoints stay in ``--runs``).

A run folder missing under ``--runs`` (a fresh clone) is first restored from ``--out``/runs: a
finished run as finished (not trained again), and with ``--no-train`` every run, so that the
tables and figures are rebuilt from the committed evaluations alone. An unfinished run whose
archive holds no checkpoint is not restored for training: it trains from scratch, with a message
naming the ``git show`` that brings its checkpoint back to resume from instead. A
SHAC run started with another preset stops the study with an error rather than being resumed
under this one.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional

from ..evaluation.metrics import BARS, first_at_bar
from ..tasks.presets import SHAC_PRESETS
from ..trainers.checkpoints import (RUN_STATE, checkpoint_state, latest_checkpoint, list_checkpoints, load_policy,
                                    run_finished, run_state, write_policy)
from ..trainers.runlog import compress_log, find_log
from ..trainers.shac import SHACConfig

__all__ = ["METHODS", "PROTOCOLS", "Run", "plan", "check_presets", "archive_run", "archive", "checkpoint_hint",
           "restore_run", "restore", "train", "evaluate_runs", "summarize", "main"]

# method -> (trainer, contact model it trains through)
METHODS = {
    "shac_hard": ("shac", "hard"),
    "shac_soft": ("shac", "soft"),
    "shac_smooth": ("shac", "smooth"),
    "shac_hard_smooth_grad": ("shac", "hard_smooth_grad"),
    "ppo_hard": ("ppo", "hard"),
    "ppo_smooth": ("ppo", "smooth"),
}

# Budgets. full: SHAC's presets as shipped (2,500 iterations × 256 envs × 32 steps = 20.5 M
# samples); PPO with legged_gym's ANYmal iterations (1,500) at 2,048 envs × 24 steps = 73.7 M
# samples, more than 10× the samples SHAC-smooth needs to reach the bar (about 5 M with
# walk_fast_1m, 7 M with walk_fast).
PROTOCOLS = {
    "full": dict(shac_args=[], ppo_args=["--iterations", "1500", "--num-envs", "2048", "--steps-per-env", "24",
                                         "--save-interval", "25"],
                 shac_save=100, eval_envs=128, eval_seconds=20.0, points=12),
    "quick": dict(shac_args=["--iterations", "2", "--num-envs", "8", "--horizon", "4"],
                  ppo_args=["--iterations", "2", "--num-envs", "16", "--steps-per-env", "4", "--save-interval", "1"],
                  shac_save=1, eval_envs=4, eval_seconds=0.2, points=3),
}


class Run:
    """One method × seed: its folder and the command that trains it (or resumes it)."""

    def __init__(self, method: str, seed: int, runs_dir: str, protocol: Dict, shac_preset: str, task_preset: str,
                 device: str, until_samples: Optional[float] = None):
        self.method, self.seed = method, seed
        self.trainer, self.contact = METHODS[method]
        self.dir = os.path.join(runs_dir, f"{method}_s{seed}")
        py = [sys.executable, "-m"]
        if self.trainer == "shac":
            self.cmd = py + ["moreau.trainers.shac", "--preset", shac_preset, "--contact", self.contact,
                             "--seed", str(seed), "--logdir", self.dir, "--sim-threads", "1", "--torch-threads", "1",
                             "--resume", "auto", "--no-progress", "--device", device,
                             "--save-interval", str(protocol["shac_save"])]
            self.cmd += protocol["shac_args"]
        else:
            self.cmd = py + ["moreau.trainers.ppo", "--task", "locomotion", "--task-preset", task_preset, "--contact",
                             self.contact, "--seed", str(seed), "--log-dir", self.dir, "--n-threads", "1",
                             "--torch-threads", "1", "--resume", "auto", "--eval-steps", "0", "--device", device]
            self.cmd += protocol["ppo_args"]
        # --until: this call trains to the iteration that holds until_samples (a prefix of the run)
        self.until = None if until_samples is None else math.ceil(until_samples / self.samples_per_iteration(shac_preset))
        if self.until is not None:
            self.cmd += ["--until", str(self.until)]

    def samples_per_iteration(self, shac_preset: str) -> int:
        """Environment samples of one training iteration: envs × horizon (SHAC) or × steps (PPO)."""
        def arg(flag: str, default: int) -> int:
            return int(self.cmd[self.cmd.index(flag) + 1]) if flag in self.cmd else default
        if self.trainer == "shac":
            pre = SHAC_PRESETS[shac_preset]
            return arg("--num-envs", pre["num_envs"]) * arg("--horizon", pre["shac"].get("horizon", SHACConfig.horizon))
        from ..rl.rsl_rl import default_train_cfg
        return arg("--num-envs", 64) * arg("--steps-per-env", default_train_cfg()["num_steps_per_env"])

    @property
    def finished(self) -> bool:
        return run_finished(self.dir)

    @property
    def name(self) -> str:
        return os.path.basename(self.dir)


def plan(methods: List[str], seeds: List[int], runs_dir: str, protocol: Dict, shac_preset: str = "walk_fast_1m",
         device: str = "cpu", until_samples: Optional[float] = None) -> List[Run]:
    task_preset = SHAC_PRESETS[shac_preset]["task_preset"]  # PPO trains on SHAC's task
    return [Run(m, s, runs_dir, protocol, shac_preset, task_preset, device, until_samples)
            for s in seeds for m in methods]


def _state_files(run_dir: str) -> List[str]:
    """A run's record: its configuration and cached evaluations (the log and RUN_STATE apart)."""
    names = [f for f in sorted(os.listdir(run_dir)) if f == "config.json"
             or (f.startswith("curve_") and f.endswith(".json"))]
    return [os.path.join(run_dir, f) for f in names]


def archive_run(run_dir: str, dest: str) -> None:
    """``dest`` holds ``run_dir``'s record, replacing what was there: configuration, cached
    evaluations, the log as ``log.csv.xz`` (moreau.trainers.runlog.compress_log: tens of kB) and
    RUN_STATE (``checkpoint.json``) describing the newest checkpoint, which is not copied (the
    checkpoints, the resumable state, stay in ``run_dir``; a run without one, itself restored
    from an archive, keeps the RUN_STATE it came with)."""
    newest = latest_checkpoint(run_dir)
    state = checkpoint_state(newest) if newest else run_state(run_dir)
    log = find_log(run_dir)
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    for f in _state_files(run_dir):
        shutil.copy2(f, dest)
    if log:
        compress_log(log, os.path.join(dest, "log.csv.xz"))
    if state:
        with open(os.path.join(dest, RUN_STATE), "w") as f:
            json.dump(state, f, indent=1)
            f.write("\n")


def archive(runs: List[Run], dest: str) -> None:
    """archive_run of every run that has a folder, into ``dest``/<run>."""
    for r in runs:
        if os.path.isdir(r.dir):
            archive_run(r.dir, os.path.join(dest, r.name))


def checkpoint_hint(archive: str) -> str:
    """How to bring back the newest checkpoint an archived run was recorded with (RUN_STATE)."""
    state = run_state(archive) or {}
    name = state.get("checkpoint", "its newest checkpoint")
    if state.get("commit") and state.get("path"):
        return f"to resume instead: git show {state['commit']}:{state['path']} > {os.path.join(archive, name)}"
    return f"its newest checkpoint, {name}, stayed in the runs folder it trained in"


def restore_run(archive: str, run_dir: str, training: bool = True, done: bool = False) -> bool:
    """Copies ``archive`` (archive_run's) to ``run_dir`` when ``run_dir`` does not exist; returns
    whether it did. With ``training``, only a run with something to go on from is restored: a
    finished one (RUN_STATE), one whose archive has a checkpoint, or one ``done`` says has gone as
    far as asked; another trains from scratch, and a message says how to bring its checkpoint
    back. Without, any is (its cached evaluations and log are what a report needs)."""
    if not os.path.isdir(archive) or os.path.exists(run_dir):
        return False
    if training and not (done or run_finished(archive) or list_checkpoints(archive)):
        print(f"moreau.studies: {run_dir} is unfinished and its record {archive} holds no checkpoint to resume "
              f"from: it trains from scratch ({checkpoint_hint(archive)})", file=sys.stderr)
        return False
    shutil.copytree(archive, run_dir)
    return True


def restore(runs: List[Run], src: str, training: bool = True) -> List[Run]:
    """restore_run of every run from ``src``/<run>, so that a fresh clone goes on from the
    committed runs (with ``training``) or rebuilds the tables from them (without); returns the
    runs restored."""
    return [r for r in runs if restore_run(os.path.join(src, r.name), r.dir, training)]


def check_presets(runs: List[Run], shac_preset: str) -> None:
    """Stops before a SHAC run trained with another preset is resumed under ``shac_preset`` (its
    config.json, written by moreau.trainers.shac, names the preset it was started with)."""
    for r in runs:
        cfg = os.path.join(r.dir, "config.json")
        if r.trainer != "shac" or not os.path.exists(cfg):
            continue
        with open(cfg) as f:
            had = json.load(f)["args"].get("preset")
        if had != shac_preset:
            raise SystemExit(f"moreau.studies.locomotion: {r.dir} was trained with --shac-preset {had}, not "
                             f"{shac_preset}: pass --shac-preset {had}, or move the run (and its archive) away")


def _progress(total: int, desc: str):
    try:
        from tqdm import tqdm
        return tqdm(total=total, desc=desc, dynamic_ncols=True)
    except ImportError:  # tqdm comes with scripts/setup.sh; without it, no bar
        return None


def train(runs: List[Run], jobs: int = 2) -> List[Run]:
    """Trains (or resumes) the unfinished runs, ``jobs`` at a time; returns the runs that failed."""
    todo = [r for r in runs if not r.finished]
    bar = _progress(len(runs), "train")
    if bar is not None:
        bar.update(len(runs) - len(todo))
    failed = []

    def one(run: Run) -> None:
        os.makedirs(os.path.dirname(run.dir) or ".", exist_ok=True)
        with open(run.dir + ".out", "a") as out:
            rc = subprocess.run(run.cmd, stdout=out, stderr=subprocess.STDOUT).returncode
        if rc != 0 or (not run.finished and run.until is None):
            failed.append(run)
        if bar is not None:
            bar.update(1)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, todo))
    if bar is not None:
        bar.close()
    return failed


def evaluate_runs(runs: List[Run], protocol: Dict) -> Dict[str, Dict[str, List[Dict]]]:
    """run name -> {"hard": curve rows, "own": the last checkpoint's row under its own contact}
    (moreau.evaluation.learning_curve.evaluate_run; cached in each run's curve_<contact>.json)."""
    import torch
    from ..evaluation.learning_curve import evaluate_run
    torch.set_num_threads(1)
    out = {}
    bar = _progress(len(runs), "evaluate")
    for r in runs:
        if not os.path.isdir(r.dir):
            continue
        kw = dict(num_envs=protocol["eval_envs"], seconds=protocol["eval_seconds"], seed=1, sim_threads=1)
        hard = evaluate_run(r.dir, "hard", points=protocol["points"], **kw)
        own = hard if r.contact == "hard" else evaluate_run(r.dir, r.contact, every=0, **kw)
        out[r.name] = {"hard": hard, "own": own}
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return out


def _median(xs: List[float]) -> Optional[float]:
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarize(runs: List[Run], curves: Dict[str, Dict[str, List[Dict]]], baseline: Optional[Dict] = None) -> Dict:
    """The study's table: per run and per method (see the module docstring)."""
    keep = ("lin_vel_error", "yaw_rate_error", "falls_per_minute", "trot_fraction")
    rows, methods = [], {}
    for r in runs:
        c = curves.get(r.name)
        if not c or not c["hard"]:
            continue
        hard, own = c["hard"][-1], c["own"][-1] if c["own"] else None
        first = first_at_bar(c["hard"])
        # at the bar at its first evaluated checkpoint: the earlier checkpoints were lost (a run archived
        # before it was evaluated), so bar_samples is an upper bound, left out of the medians
        censored = first is not None and first is c["hard"][0]
        gap = (hard["lin_vel_error"] / own["lin_vel_error"] - 1.0) if own and own["lin_vel_error"] > 0 else None
        row = {"method": r.method, "seed": r.seed, "trainer": r.trainer, "contact": r.contact, "finished": r.finished,
               "samples": hard["env_steps_trained"], "seconds": hard.get("wall_time_trained"),
               "bar_samples": first["env_steps_trained"] if first else None,
               "bar_seconds": first.get("wall_time_trained") if first else None, "bar_censored": censored,
               **{f"hard_{k}": hard.get(k) for k in keep}, **{f"own_{k}": own.get(k) if own else None for k in keep},
               "transfer_gap": gap}
        rows.append(row)
        methods.setdefault(r.method, []).append(row)
    per_method = {}
    for m, rs in methods.items():
        per_method[m] = {
            "seeds": len(rs), "finished": sum(r["finished"] for r in rs),
            "at_bar": sum(r["bar_samples"] is not None for r in rs),
            "median_bar_samples": _median([r["bar_samples"] for r in rs if not r["bar_censored"]]),
            "median_bar_seconds": _median([r["bar_seconds"] for r in rs if not r["bar_censored"]]),
            **{f"median_hard_{k}": _median([r[f"hard_{k}"] for r in rs]) for k in keep},
            "median_transfer_gap": _median([r["transfer_gap"] for r in rs])}
    ratios = {}
    ref = per_method.get("shac_smooth", {})
    for m in ("ppo_hard", "ppo_smooth"):
        pm = per_method.get(m, {})
        for what in ("samples", "seconds"):
            a, b = pm.get(f"median_bar_{what}"), ref.get(f"median_bar_{what}")
            ratios[f"{m}_over_shac_smooth_{what}"] = a / b if a and b else None
    return {"bars": BARS, "runs": rows, "methods": per_method, "ratios": ratios, "standing_baseline": baseline}


def standing_baseline(run: Run, protocol: Dict, policy: Optional[str] = None) -> Optional[Dict]:
    """The protocol's metrics of zero actions (the default pose held) on the run's task, hard
    contact; the task from the run's newest checkpoint, else from ``policy`` (a policy file of
    the same method: an archived run has no checkpoint)."""
    import torch
    from ..evaluation.evaluate import eval_env, evaluate
    cks = list_checkpoints(run.dir) or [p for p in (os.path.join(run.dir, "policy.pt"), policy)
                                        if p and os.path.exists(p)]
    if not cks:
        return None
    meta = load_policy(cks[-1]).meta["env"]
    env = eval_env(meta, "locomotion", protocol["eval_envs"], "hard", seed=1, sim_threads=1)
    return evaluate(env, lambda obs: torch.zeros(obs.shape[0], env.num_actions), protocol["eval_seconds"],
                    "locomotion", seed=1)


def plot(out: str, runs: List[Run], curves: Dict, table: Dict) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = dict(zip(METHODS, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    names = {"lin_vel_error": "planar error [m/s]", "yaw_rate_error": "yaw-rate error [rad/s]",
             "falls_per_minute": "falls per minute"}
    seen = set()
    for r in runs:
        rows = curves.get(r.name, {}).get("hard")
        if not rows:
            continue
        for ax, k in zip(axes, names):
            ax.plot([max(x["env_steps_trained"], 1) for x in rows], [x[k] for x in rows], "o-", ms=2.5, lw=1.0,
                    color=colours[r.method], label=None if r.method in seen else r.method)
        seen.add(r.method)
    base = table.get("standing_baseline")
    for ax, (k, label) in zip(axes, names.items()):
        ax.axhline(BARS[k], color="k", ls="--", lw=0.8)
        if base:
            ax.axhline(base[k], color="0.6", ls=":", lw=1.0)
        ax.set_xscale("log")
        ax.set_xlabel("environment samples")
        ax.set_ylabel(label + ", hard contact")
    axes[0].legend(fontsize=7)
    fig.suptitle("Study B: evaluated under hard contact (dashed: bar; dotted: standing still)", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "curves.png"), dpi=100)
    plt.close(fig)

    ms = [m for m in METHODS if m in table["methods"]]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for i, m in enumerate(ms):
        rs = [r for r in table["runs"] if r["method"] == m]
        own = [r["own_lin_vel_error"] for r in rs if r["own_lin_vel_error"] is not None]
        hard = [r["hard_lin_vel_error"] for r in rs]
        ax.bar(i - 0.2, statistics.mean(own) if own else 0, 0.4, color="0.7", label="own contact" if i == 0 else None)
        ax.bar(i + 0.2, statistics.mean(hard), 0.4, color=colours[m], label="hard contact" if i == 0 else None)
    ax.set_xticks(range(len(ms)), ms, rotation=20, fontsize=8)
    ax.set_ylabel("planar error of the last checkpoint [m/s]")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "transfer.png"), dpi=100)
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m moreau.studies.locomotion", description=__doc__.split("\n\n")[0])
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--quick", action="store_true", help="tiny budgets: every stage end to end in minutes")
    p.add_argument("--runs", default=None, help="run folders (default runs/study_b_<preset>, "
                   "runs/study_b_<preset>_quick; runs/study_b for walk_fast)")
    p.add_argument("--out", default=None, help="results (default results/study_b_<preset>, "
                   "runs/study_b_<preset>_quick/results; results/study_b for walk_fast)")
    p.add_argument("--shac-preset", default="walk_fast_1m", help="SHAC preset (moreau.tasks.presets) of every SHAC "
                   "run (default walk_fast_1m: walk_fast with a 1 M-sample warm-up; its task "
                   "preset is PPO's too)")
    p.add_argument("--jobs", type=int, default=2, help="runs trained side by side (one core each)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--no-train", action="store_true", help="evaluate and summarise what is there")
    p.add_argument("--until-samples", type=float, default=None, metavar="N", help="this call trains each run to "
                   "the iteration that holds N environment samples and stops there (the schedules still run over "
                   "the whole budget): a prefix of the full run, to go on with a later call")
    a = p.parse_args(argv)
    protocol = PROTOCOLS["quick" if a.quick else "full"]
    name = "study_b" if a.shac_preset == "walk_fast" else f"study_b_{a.shac_preset}"
    runs_dir = a.runs or (f"runs/{name}_quick" if a.quick else f"runs/{name}")
    out = a.out or (os.path.join(runs_dir, "results") if a.quick else f"results/{name}")
    runs = plan(a.methods, a.seeds, runs_dir, protocol, a.shac_preset, a.device, a.until_samples)
    for r in restore(runs, os.path.join(out, "runs"), training=not a.no_train):
        print(f"moreau.studies.locomotion: {r.name} restored from {os.path.join(out, 'runs')}")
    check_presets(runs, a.shac_preset)
    if not a.no_train:
        failed = train(runs, a.jobs)
        for r in failed:
            print(f"moreau.studies.locomotion: {r.name} did not finish; see {r.dir}.out", file=sys.stderr)
    curves = evaluate_runs(runs, protocol)
    archive(runs, os.path.join(out, "runs"))
    ref = next((r for r in runs if r.method == "shac_smooth"), runs[0])
    table = summarize(runs, curves, standing_baseline(ref, protocol, os.path.join(out, "policies", f"{ref.method}.pt")))
    table["protocol"] = {"name": "quick" if a.quick else "full", **protocol, "shac_preset": a.shac_preset,
                         "seeds": a.seeds}
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "study.json"), "w") as f:
        json.dump(table, f, indent=1)
    if table["runs"]:
        import csv
        with open(os.path.join(out, "runs.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(table["runs"][0]))
            w.writeheader()
            w.writerows(table["runs"])
        plot(out, runs, curves, table)
    os.makedirs(os.path.join(out, "policies"), exist_ok=True)
    for m, rs in {m: [r for r in table["runs"] if r["method"] == m and r["finished"]] for m in a.methods}.items():
        if rs:  # the best finished seed: lowest planar + yaw error under hard contact
            best = min(rs, key=lambda r: r["hard_lin_vel_error"] + r["hard_yaw_rate_error"])
            run_dir, dst = os.path.join(runs_dir, f"{m}_s{best['seed']}"), os.path.join(out, "policies", f"{m}.pt")
            src = next((p for p in (os.path.join(run_dir, "policy.pt"), os.path.join(run_dir, "model_final.pt"))
                        if os.path.exists(p)), None)
            if src:
                write_policy(src, dst)  # stripped; a dst holding the same policy is left as it is
            elif not os.path.exists(dst):
                print(f"moreau.studies.locomotion: {m}: {run_dir} (restored from an archive) has no final checkpoint "
                      f"to write {dst} from", file=sys.stderr)
    best = os.path.join(out, "policies", "shac_smooth.pt")
    if os.path.exists(best):
        from ..evaluation.evaluate import main as evaluate_main
        evaluate_main([best, "--contact", "hard", "--num-envs", str(protocol["eval_envs"]), "--seconds",
                       str(protocol["eval_seconds"]), "--sim-threads", "1", "--plot", os.path.join(out, "traces.png"),
                       "--json", os.path.join(out, "shac_smooth_hard.json")])
    for m, s in table["methods"].items():
        bar = s["median_bar_samples"]
        print(f"{m:24s} seeds {s['seeds']} (finished {s['finished']}), at the bar {s['at_bar']}"
              + (f", median {bar / 1e6:.2f} M samples, {s['median_bar_seconds'] / 60:.1f} min" if bar else "")
              + f"; last under hard: planar {s['median_hard_lin_vel_error']:.3f} m/s, yaw "
              f"{s['median_hard_yaw_rate_error']:.3f} rad/s, falls {s['median_hard_falls_per_minute']:.2f}/min")
    for k, v in table["ratios"].items():
        if v is not None:
            print(f"{k}: {v:.2f}")
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
