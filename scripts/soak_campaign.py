#!/usr/bin/env python3
"""A long soak in resumable chunks (not part of CI).

moreau-soak (bench/soak.cc) runs one contact mode and dtype for N environment-steps in one
process; 1e8 or 1e9 env-steps take hours to days of a core, longer than one sitting.
This runs it in chunks of --chunk env-steps, chunk k with seed k + 1 (so no two chunks repeat
a draw), appends each finished chunk's row to a ledger (JSON lines, one per chunk, with the
commit and date) and skips the chunks the ledger already holds: stop it at any time and run
the same command again to go on. A killed chunk is lost and rerun. --report (or the end of a
run) sums the ledger per mode and dtype: env-steps, non-finite states outside flagged
environments, fatal flags, warnings, the worst residual, adjoint counts and core-hours.

The binary is copied and its commit fixed when the campaign starts (HEAD's, refused while the
sources differ from HEAD: then pass --commit), so rebuilding or committing meanwhile changes
neither. Build it from HEAD first: cmake --build build/cpu --target moreau-soak.

  python3 scripts/soak_campaign.py --contact hard --dtype float32 --env-steps 5e7 --chunk 1e7
  python3 scripts/soak_campaign.py --report
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COUNTS = ["env_steps", "nonfinite_unflagged", "nan_state", "nan_action", "singular_mass", "not_converged",
          "resets", "env_adjoints", "adjoint_nonfinite_unflagged", "nan_gradient", "no_gradient", "seconds"]


def read_ledger(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def commit():
    r = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or "unknown"


def source_changes():
    """Tracked files that differ from HEAD among those moreau-soak is built from."""
    r = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no", "--", "kernels", "host",
                        "include", "bench", "cuda", "CMakeLists.txt", ":!*.md", ":!*.jsonl"],
                       capture_output=True, text=True)
    return [line[3:] for line in r.stdout.splitlines()]


def run_chunk(binary, mode, dtype, steps, n_env, seed, threads, kn_bands, built_from):
    """One moreau-soak process; returns its row with the run's date, commit and machine."""
    with tempfile.TemporaryDirectory() as tmp:
        js = os.path.join(tmp, "soak.json")
        cmd = [binary, "--contact", mode, "--dtype", dtype, "--env-steps", str(int(steps)), "--n-env", str(n_env),
               "--seed", str(seed), "--threads", str(threads), "--kn-bands", str(kn_bands), "--json-out", js]
        subprocess.run(cmd, check=True, stdout=sys.stdout, stderr=sys.stderr)
        with open(js) as f:
            out = json.load(f)
    (row,) = out["rows"]
    return {**row, "chunk_env_steps": int(steps), "date": out["date"], "commit": built_from,
            "cpu": out["machine"]["cpu"], "robot": out["robot"]}


def report(ledger):
    """Sums per (contact, dtype): the counts add, the worst residual is the largest."""
    total = {}
    for r in ledger:
        t = total.setdefault((r["contact"], r["dtype"]), {**{k: 0 for k in COUNTS}, "worst_residual": 0.0,
                                                           "worst_residual_speed": None, "chunks": 0})
        for k in COUNTS:
            t[k] += r[k]
        if r["worst_residual"] >= t["worst_residual"]:  # the speed there (chunks before it was recorded: none)
            t["worst_residual"], t["worst_residual_speed"] = r["worst_residual"], r.get("worst_residual_speed")
        t["chunks"] += 1
    print("| mode | dtype | chunks | env-steps | non-finite, unflagged | NaN-state flags | not converged | "
          "worst residual (unflagged) [m/s] | its max abs(v) | env-adjoints | non-finite gradients, unflagged | "
          "NaN/no-gradient flags | core-hours |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for (mode, dtype), t in sorted(total.items()):
        print(f"| {mode} | {dtype} | {t['chunks']} | {t['env_steps']:,} | {t['nonfinite_unflagged']} | "
              f"{t['nan_state']} | {t['not_converged']:,} | {t['worst_residual']:.2g} | "
              f"{'—' if t['worst_residual_speed'] is None else format(t['worst_residual_speed'], '.2g')} | "
              f"{t['env_adjoints']:,} | "
              f"{t['adjoint_nonfinite_unflagged']} | {t['nan_gradient']} / {t['no_gradient']} | "
              f"{t['seconds'] / 3600:.2f} |")
    return total


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--contact", nargs="+", default=["hard", "smooth", "hard_smooth_grad", "soft"])
    p.add_argument("--dtype", nargs="+", default=["float32", "float64"], choices=["float32", "float64"])
    p.add_argument("--env-steps", type=float, default=1e8, help="per mode and dtype, all chunks together")
    p.add_argument("--chunk", type=float, default=1e7, help="env-steps per moreau-soak process")
    p.add_argument("--n-env", type=int, default=128)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--kn-bands", type=int, default=1, help="moreau-soak --kn-bands: k_n drawn in B log-ranges one "
                   "after another, so soft contact's substeps follow each range (chunks already in the ledger count "
                   "whatever their bands)")
    p.add_argument("--shard", default="0/1", help="K/N: run only the chunks whose number is K modulo N, so that N "
                   "campaigns side by side share the work")
    p.add_argument("--binary", default=os.path.join(ROOT, "build/cpu/bench/moreau-soak"))
    p.add_argument("--ledger", default=os.path.join(ROOT, "bench/soak_ledger.jsonl"))
    p.add_argument("--commit", default=None, help="the commit --binary was built from (default: HEAD's at the "
                   "start, when the sources are HEAD's)")
    p.add_argument("--report", action="store_true", help="only sum the ledger")
    a = p.parse_args(argv)
    if not a.report:
        if not os.access(a.binary, os.X_OK):
            p.error(f"--binary: expected the moreau-soak executable, found nothing runnable at {a.binary} "
                    "(cmake --build build/cpu --target moreau-soak)")
        if not (a.chunk >= 1 and a.env_steps >= a.chunk):
            p.error(f"--chunk: expected 1 <= chunk <= --env-steps, got {a.chunk:g} and {a.env_steps:g}")
        n_chunks = int(round(a.env_steps / a.chunk))
        try:
            shard, n_shards = (int(x) for x in a.shard.split("/"))
            assert 0 <= shard < n_shards
        except (ValueError, AssertionError):
            p.error(f"--shard: expected K/N with 0 <= K < N, got {a.shard!r}")
        # The binary and its commit are pinned at the start: a rebuild or a new commit while the
        # campaign runs changes neither what runs nor what the ledger says it was built from.
        built_from = a.commit
        if built_from is None:
            changed = source_changes()
            if changed:
                p.error("--commit: expected the commit the binary was built from; the sources differ from HEAD ("
                        + ", ".join(changed[:5]) + "), so HEAD's is not it")
            built_from = commit()
        with tempfile.TemporaryDirectory() as pinned:
            binary = shutil.copy(a.binary, os.path.join(pinned, "moreau-soak"))
            for mode in a.contact:
                for dtype in a.dtype:
                    done = {r["seed"] for r in read_ledger(a.ledger) if r["contact"] == mode and r["dtype"] == dtype
                            and r["n_env"] == a.n_env and r["chunk_env_steps"] == int(a.chunk)}
                    for seed in range(1, n_chunks + 1):
                        if seed in done or seed % n_shards != shard:
                            continue
                        row = run_chunk(binary, mode, dtype, a.chunk, a.n_env, seed, a.threads, a.kn_bands,
                                        built_from)
                        with open(a.ledger, "a") as f:
                            f.write(json.dumps(row) + "\n")
    report(read_ledger(a.ledger))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
