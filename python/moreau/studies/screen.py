"""moreau.studies.screen: does a change to SHAC's "walk" preset make more seeds find the trot?

    python3 -m moreau.studies.screen --name noise03 --seeds 0 1 2 3 4 -- --action-noise 0.3
    python3 -m moreau.studies.screen --name noise03 --report        # evaluate what is there, the table

The reliability question (does a preset meet the tracking criterion, moreau.evaluation.metrics.BARS,
in at least 4 of 5 seeds?) costs about 1,100 iterations a seed to answer at the bar. In every
seed run so far the outcome was decided much earlier: a seed either "jumps" from standing (mean
step reward ≈ 0.016) to trotting (≈ 0.027) or stays standing, and every seed that jumped reached
the bar. So a screen trains each seed to ``--until`` (default 600: the end of the fixed-command
warm-up plus 100 iterations, with the schedules of the full 2,500-iteration run) and reports two
signs of the jump: the first iteration where the mean step reward averaged over the last 50
iterations exceeds 0.02 (a training statistic: exploration noise lowers it), and the planar
tracking error of the deterministic policy at ``--until`` under hard contact with
moreau.evaluation.learning_curve's protocol (standing scores 0.72-0.81 m/s; the seeds that jumped
by iteration 600 scored 0.24-0.32 there), counted as trotting below ``TROTTING`` = 0.5 m/s.
Runs are resumable (``--resume auto``); each seed's record (moreau.studies.locomotion.archive_run:
configuration, log.csv.xz, evaluation, and checkpoint.json naming the newest checkpoint, which
stays in ``--runs``) is written to ``--out``/<name>/walk_s<seed>/ with a ``screen.json`` summary,
so a promising configuration goes on to the bar with ``moreau.trainers.shac --resume`` from its
run folder. A seed missing under ``--runs`` (a fresh clone) is restored from that record when it
reached ``--until`` (not trained again) or for ``--report`` (the summary needs its log and
evaluation); otherwise it trains from scratch, with a message naming the ``git show`` that
brings its checkpoint back to resume from.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional

from ..trainers.checkpoints import list_checkpoints, run_state
from ..trainers.runlog import find_log, read_log
from .locomotion import archive_run, restore_run

__all__ = ["jump_iteration", "summarize", "main"]

THRESHOLD = 0.02  # between standing's mean step reward (≈ 0.016) and a trot's (≈ 0.027)
WINDOW = 50
TROTTING = 0.5    # [m/s] planar error under hard contact: standing 0.72-0.81, trotting seeds at 600 0.24-0.32


def _mean_rewards(log_csv: str) -> Dict[int, float]:
    """iteration -> mean step reward, the last row of an iteration winning (a resume repeats rows)."""
    return {int(r["iteration"]): float(r["mean_reward"]) for r in read_log(log_csv)}


def jump_iteration(log_csv: str, threshold: float = THRESHOLD, window: int = WINDOW) -> Optional[int]:
    """The first iteration at which the mean of the last ``window`` iterations' mean step reward
    exceeds ``threshold``; None if none does."""
    rew = _mean_rewards(log_csv)
    its = sorted(rew)
    total = 0.0
    for k, it in enumerate(its):
        total += rew[it]
        if k >= window:
            total -= rew[its[k - window]]
        if k >= window - 1 and total / window > threshold:
            return it
    return None


def summarize(run_dirs: Dict[int, str], until: int) -> Dict:
    """Per seed: iterations run, the jump iteration, the last 50 iterations' mean step reward and
    the newest evaluation in curve_hard.json; of the seeds trained to ``until``, how many jumped
    and how many trot."""
    seeds = {}
    for seed, d in sorted(run_dirs.items()):
        log = find_log(d)  # log.csv, or the archive's log.csv.xz
        if log is None:
            seeds[str(seed)] = {"iterations": 0}
            continue
        rew = _mean_rewards(log)
        its = sorted(rew)
        tail = [rew[i] for i in its[-WINDOW:]]
        row = {"iterations": its[-1], "jump_iteration": jump_iteration(log), "last_mean_reward": sum(tail) / len(tail)}
        curve = os.path.join(d, "curve_hard.json")
        if os.path.exists(curve):
            last = max(json.load(open(curve)), key=lambda r: r["iteration"])
            row.update(eval_iteration=last["iteration"], hard_lin_vel_error=last["lin_vel_error"],
                       hard_yaw_rate_error=last["yaw_rate_error"], hard_falls_per_minute=last["falls_per_minute"],
                       trotting=last["lin_vel_error"] < TROTTING)
        seeds[str(seed)] = row
    done = [s for s in seeds.values() if s["iterations"] >= until]
    return {"until": until, "threshold": THRESHOLD, "window": WINDOW, "trotting_below": TROTTING, "seeds": seeds,
            "finished": len(done), "jumped": sum(s["jump_iteration"] is not None for s in done),
            "trotting": sum(bool(s.get("trotting")) for s in done)}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: List[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(prog="python3 -m moreau.studies.screen", description=__doc__.split("\n\n")[0],
                                epilog="arguments after -- go to moreau.trainers.shac (over the preset)")
    p.add_argument("--name", required=True, help="the configuration's name (folder under --runs and --out)")
    p.add_argument("--preset", default="walk", help="moreau.trainers.shac preset to change (default walk)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    p.add_argument("--until", type=int, default=600, help="iterations each seed trains (default 600)")
    p.add_argument("--jobs", type=int, default=2, help="seeds trained side by side, one core each")
    p.add_argument("--runs", default="runs/screen", help="where the runs train (default runs/screen)")
    p.add_argument("--out", default="results/shac_walk/ablations",
                   help="where logs, newest checkpoints and screen.json go (default results/shac_walk/ablations)")
    p.add_argument("--report", action="store_true", help="no training: evaluate what is there and summarize it")
    p.add_argument("--eval-envs", type=int, default=128, help="environments of the evaluation (default 128)")
    p.add_argument("--eval-seconds", type=float, default=20.0, help="its length (default 20 s)")
    a = p.parse_args(argv)
    dirs = {s: os.path.join(a.runs, a.name, f"walk_s{s}") for s in a.seeds}
    out = os.path.join(a.out, a.name)
    if a.report and not extra and os.path.exists(os.path.join(out, "screen.json")):
        with open(os.path.join(out, "screen.json")) as f:  # a report keeps the options the seeds trained with
            extra = json.load(f).get("shac_args", [])
    def reached(d: str) -> bool:  # trained to --until (a restored record: its checkpoint.json says so)
        state = run_state(d)
        return bool(state and (state.get("iteration") or 0) >= a.until)

    for s, d in dirs.items():  # a fresh clone goes on from what was committed
        src = os.path.join(out, f"walk_s{s}")
        restore_run(src, d, training=not a.report, done=reached(src))

    def one(seed: int) -> int:
        d = dirs[seed]
        os.makedirs(d, exist_ok=True)
        train = [sys.executable, "-m", "moreau.trainers.shac", "--preset", a.preset, "--seed", str(seed), "--logdir", d,
                 "--sim-threads", "1", "--torch-threads", "1", "--resume", "auto", "--until", str(a.until),
                 "--no-progress"] + extra
        evaluate = [sys.executable, "-m", "moreau.evaluation.learning_curve", d, "--last", "--contact", "hard",
                    "--sim-threads", "1", "--plot", "none", "--num-envs", str(a.eval_envs),
                    "--seconds", str(a.eval_seconds)]  # cached in curve_hard.json: evaluated once
        with open(d + ".out", "a") as f:
            def run(cmd):
                env = dict(os.environ, OMP_NUM_THREADS="1")
                return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env).returncode
            rc = 0 if a.report or (not list_checkpoints(d) and reached(d)) else run(train)
            if rc == 0 and list_checkpoints(d):
                rc = run(evaluate)
        archive_run(d, os.path.join(out, f"walk_s{seed}"))
        return rc

    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        rcs = list(pool.map(one, a.seeds))
    # the summary covers every seed of the configuration trained so far, not only this call's
    base = os.path.join(a.runs, a.name)
    every = {int(d[6:]): os.path.join(base, d) for d in os.listdir(base)
             if d.startswith("walk_s") and d[6:].isdigit() and os.path.isdir(os.path.join(base, d))}
    summary = dict(summarize({**every, **dirs}, a.until), name=a.name, preset=a.preset, shac_args=extra)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "screen.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(f"{a.name} ({a.preset} {' '.join(extra)}): of {summary['finished']} seeds at iteration {a.until}, "
          f"{summary['jumped']} jumped (mean step reward), {summary['trotting']} trot (hard-contact evaluation)")
    for s, r in summary["seeds"].items():
        print(f"  seed {s}: {r['iterations']} iterations, jump {r.get('jump_iteration')}, last mean step reward "
              f"{r.get('last_mean_reward', float('nan')):.4f}, planar error under hard contact "
              f"{r.get('hard_lin_vel_error', float('nan')):.3f} m/s")
    failed = [s for s, rc in zip(a.seeds, rcs) if rc != 0]
    if failed:
        print(f"moreau.studies.screen: seeds {failed} failed (see {a.runs}/{a.name}/walk_s<seed>.out)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
