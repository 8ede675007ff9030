#!/usr/bin/env bash
# results/shac_walk/README.md, end to end and resumable: trains the preset "walk_fast" (SHAC
# through smooth contact with a stochastic actor and 4 critic epochs, trot clock, swing-foot
# height, command curriculum; 2,500 iterations x 8,192 samples) for each seed in runs/, two seeds
# side by side on one core each; evaluates every other checkpoint under hard contact with
# moreau.evaluation.evaluate's protocol (and the last one under smooth contact, for the transfer
# gap); records each run in results/shac_walk/runs/ (moreau.studies.locomotion.archive_run:
# configuration, log.csv.xz, cached evaluations, checkpoint.json naming the newest checkpoint,
# which stays in runs/); then writes the best seed's policy file (its final checkpoint stripped to
# what evaluation loads), log and curves into results/shac_walk/, and the tables, plot and video.
# Finished runs and evaluated checkpoints are skipped, so run it again to resume. A run missing
# under runs/ (a fresh clone) is restored from its record when finished; an unfinished one trains
# from scratch, with a message giving the git command that brings its checkpoint back to resume.
# --report trains and evaluates no checkpoint: seeds_*.json, curve_seeds.png, curve.png,
# eval_*.json, walk_*.png and walk_hard.gif again from what results/shac_walk/ holds (the records'
# cached evaluations and policy.pt).
# Usage: bash scripts/shac_walk.sh [--report] [SEED ...]   (default: 0 1 2 3 4)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=train
if [ "${1:-}" = "--report" ]; then
  mode=report
  shift
fi
cached=()
[ "$mode" = report ] && cached=(--cached)  # the cached evaluations alone
[ $# -eq 0 ] && set -- 0 1 2 3 4
seeds=("$@")
preset=walk_fast
out=results/shac_walk
mkdir -p runs
restore() {  # a run folder missing under runs/, from its record (every record for --report)
  python3 -c 'import sys; from moreau.studies.locomotion import restore_run
restore_run(sys.argv[1], sys.argv[2], training=sys.argv[3] == "train")' "$out/runs/${preset}_s$1" "runs/${preset}_s$1" "$mode"
}
train() {
  local run="runs/${preset}_s$1"
  python3 -m moreau.trainers.shac --preset "$preset" --seed "$1" --logdir "$run" --sim-threads 1 --resume auto \
    --no-progress > "$run.out" 2>&1
}
for s in "${seeds[@]}"; do restore "$s"; done
if [ "$mode" = train ]; then
  for ((i = 0; i < ${#seeds[@]}; i += 2)); do  # two runs at a time
    train "${seeds[i]}" &
    [ $((i + 1)) -lt ${#seeds[@]} ] && train "${seeds[i + 1]}" &
    wait
  done
fi
runs=()
for s in "${seeds[@]}"; do runs+=("runs/${preset}_s$s"); done
python3 -m moreau.evaluation.learning_curve "${runs[@]}" --contact hard --every 2 --plot runs/${preset}_curves.png \
  --summary runs/${preset}_summary.json "${cached[@]}"
python3 -m moreau.evaluation.learning_curve "${runs[@]}" --contact smooth --last --plot runs/${preset}_curves_smooth.png \
  --summary runs/${preset}_summary_smooth.json "${cached[@]}"
best=$(python3 - "${runs[@]}" <<'PY'
import json, os, sys
from moreau.trainers.checkpoints import run_finished
rows = {r: json.load(open(os.path.join(r, "curve_hard.json")))[-1] for r in sys.argv[1:] if run_finished(r)}
print(min(rows, key=lambda r: rows[r]["lin_vel_error"] + rows[r]["yaw_rate_error"]))
PY
)
mkdir -p "$out"
if [ "$mode" = train ]; then
  for s in "${seeds[@]}"; do  # each run's record, with its evaluations; its checkpoints stay in runs/
    python3 -c 'import sys; from moreau.studies.locomotion import archive_run; archive_run(*sys.argv[1:])' \
      "runs/${preset}_s$s" "$out/runs/${preset}_s$s"
  done
  python3 - "$best" "$out" <<'PY'
import os, shutil, sys
from moreau.trainers.checkpoints import write_policy
from moreau.trainers.runlog import compress_log, find_log
best, out = sys.argv[1:]
final = next((p for p in ("policy.pt", "model_final.pt") if os.path.exists(os.path.join(best, p))), None)
if final:  # (a run restored from its record has none: the policy there is its own)
    write_policy(os.path.join(best, final), os.path.join(out, "policy.pt"))
if find_log(best):
    compress_log(find_log(best), os.path.join(out, "log.csv.xz"))
for f in ("curve_hard.json", "curve_smooth.json"):
    shutil.copy(os.path.join(best, f), os.path.join(out, f))
PY
fi
cp runs/${preset}_summary.json "$out/seeds_hard.json"
cp runs/${preset}_summary_smooth.json "$out/seeds_smooth.json"
cp runs/${preset}_curves.png "$out/curve_seeds.png"
python3 -m moreau.evaluation.learning_curve "$best" --contact hard smooth --every 2 --plot "$out/curve.png" "${cached[@]}"
python3 -m moreau.evaluation.evaluate "$out/policy.pt" --contact hard --sim-threads 1 --json "$out/eval_hard.json" \
  --plot "$out/walk_hard.png" --video "$out/walk_hard.gif" --video-envs 2 --video-fps 12.5
python3 -m moreau.evaluation.evaluate "$out/policy.pt" --contact smooth --sim-threads 1 --json "$out/eval_smooth.json" \
  --plot "$out/walk_smooth.png"
python3 -m moreau.evaluation.evaluate "$out/policy.pt" --contact hard --stand --sim-threads 1 --json "$out/eval_stand_hard.json" \
  --plot none
echo "best seed: $best -> $out"
