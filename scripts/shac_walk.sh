#!/usr/bin/env bash
# README "SHAC walks", end to end and resumable: trains the shipped preset, "walk_fast" (SHAC
# through smooth contact with a stochastic actor and 4 critic epochs, trot clock, swing-foot
# height, command curriculum; 2,500 iterations x 8,192 samples) for each seed, two seeds side by
# side on one core each, archiving each run's resumable state in results/shac_walk/checkpoints;
# evaluates every other checkpoint under hard contact with moreau.evaluate's protocol (and the
# last one under smooth contact, for the transfer gap); then copies the best seed's final
# checkpoint, log, curves, plot and video into results/shac_walk/. Finished runs and evaluated
# checkpoints are skipped, so run it again to resume.
# Usage: bash scripts/shac_walk.sh [SEED ...]   (default: 0 1 2 3 4)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 0 ] && set -- 0 1 2 3 4
seeds=("$@")
preset=walk_fast
mkdir -p runs
train() {
  local run="runs/${preset}_s$1" archive="results/shac_walk/checkpoints/${preset}_s$1"
  # a run's newest checkpoint from an earlier session to resume from
  if [ ! -d "$run" ] && [ -d "$archive" ]; then
    cp -rL "$archive" "$run"
  fi
  python3 -m moreau.shac --preset "$preset" --seed "$1" --logdir "$run" --sim-threads 1 --resume auto \
    --no-progress > "$run.out" 2>&1
}
for ((i = 0; i < ${#seeds[@]}; i += 2)); do  # two runs at a time
  train "${seeds[i]}" &
  [ $((i + 1)) -lt ${#seeds[@]} ] && train "${seeds[i + 1]}" &
  wait
done
runs=()
for s in "${seeds[@]}"; do runs+=("runs/${preset}_s$s"); done
python3 -m moreau.learning_curve "${runs[@]}" --contact hard --every 2 --plot runs/${preset}_curves.png \
  --summary runs/${preset}_summary.json
python3 -m moreau.learning_curve "${runs[@]}" --contact smooth --last --plot runs/${preset}_curves_smooth.png \
  --summary runs/${preset}_summary_smooth.json
for s in "${seeds[@]}"; do  # each run's resumable state, with its evaluations, for the next session
  python3 -c 'import sys; from moreau.studies.locomotion import archive_run; archive_run(*sys.argv[1:])' \
    "runs/${preset}_s$s" "results/shac_walk/checkpoints/${preset}_s$s"
done
best=$(python3 - "${runs[@]}" <<'PY'
import json, os, sys
rows = {r: json.load(open(os.path.join(r, "curve_hard.json")))[-1] for r in sys.argv[1:]
        if os.path.exists(os.path.join(r, "model_final.pt"))}  # finished runs only
print(min(rows, key=lambda r: rows[r]["lin_vel_error"] + rows[r]["yaw_rate_error"]))
PY
)
out=results/shac_walk
mkdir -p "$out"
cp "$best/model_final.pt" "$out/policy.pt"
cp "$best/log.csv" "$out/log.csv"
cp "$best/curve_hard.json" "$out/curve_hard.json"
cp "$best/curve_smooth.json" "$out/curve_smooth.json"
cp runs/${preset}_summary.json "$out/seeds_hard.json"
cp runs/${preset}_summary_smooth.json "$out/seeds_smooth.json"
cp runs/${preset}_curves.png "$out/curve_seeds.png"
python3 -m moreau.learning_curve "$best" --contact hard smooth --every 2 --plot "$out/curve.png"
python3 -m moreau.evaluate "$out/policy.pt" --contact hard --sim-threads 1 --json "$out/eval_hard.json" \
  --plot "$out/walk_hard.png" --video "$out/walk_hard.gif"
python3 -m moreau.evaluate "$out/policy.pt" --contact smooth --sim-threads 1 --json "$out/eval_smooth.json" \
  --plot "$out/walk_smooth.png"
python3 -m moreau.evaluate "$out/policy.pt" --contact hard --stand --sim-threads 1 --json "$out/eval_stand_hard.json" \
  --plot none
echo "best seed: $best -> $out"
