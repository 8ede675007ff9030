#!/usr/bin/env bash
# results/transfer/iteration_<IT>/: does simulating the legs' collision do the feet_separation
# penalty's work? SHAC's walk_transfer preset without feet_separation and with the feet of
# different legs colliding (task option self_collisions), seed 0, trained to iteration IT (default
# 1500; the preset's full run is 2500; resumable: runs/walk_transfer_selfcol_s0); beside it
# walk_transfer and walk_transfer_nosep at their IT-iteration checkpoints (the runs
# scripts/transfer.sh trains: runs/<name>_s0). For each: the policy at IT, moreau's evaluation
# protocol under hard contact (128 environments x 20 s) without and with the legs colliding, how
# close the legs come (moreau.evaluation.leg_clearance) and the sim-to-sim table
# (scripts/sim2sim.sh); the selfcol run's compressed log. Finished files are kept.
# Usage: bash scripts/transfer_selfcol.sh [IT]
set -euo pipefail
cd "$(dirname "$0")/.."
it=${1:-1500}
out=results/transfer/iteration_$it
run=runs/walk_transfer_selfcol_s0
mkdir -p runs "$out"
python3 -m moreau.trainers.shac --preset walk_transfer --seed 0 --logdir "$run" --sim-threads 1 --torch-threads 1 \
  --task-config '{"reward_weights": {"feet_separation": 0.0}, "self_collisions": true}' --resume auto --no-progress \
  --until "$it" > "$run.out" 2>&1
for name in walk_transfer walk_transfer_nosep walk_transfer_selfcol; do
  dest="$out/$name"
  mkdir -p "$dest"
  [ -s "$dest/policy_$it.pt" ] ||
    python3 -m moreau.trainers.checkpoints strip "runs/${name}_s0/model_$it.pt" "$dest/policy_$it.pt"
  evaluate() { python3 -W ignore::UserWarning -m moreau.evaluation.evaluate "$dest/policy_$it.pt" --contact hard \
    --plot none --sim-threads 1 "$@"; }
  [ -s "$dest/eval_hard_$it.json" ] || evaluate --json "$dest/eval_hard_$it.json"
  [ -s "$dest/self_collisions_$it.json" ] ||
    evaluate --task-config '{"self_collisions": true}' --json "$dest/self_collisions_$it.json"
  [ -s "$dest/leg_clearance_$it.json" ] || python3 -m moreau.evaluation.leg_clearance "$dest/policy_$it.pt" \
    --json "$dest/leg_clearance_$it.json"
  bash scripts/sim2sim.sh "$dest/policy_$it.pt" "$dest/sim2sim_$it"
done
[ -s "$out/walk_transfer_selfcol/log_$it.csv.xz" ] ||
  python3 -c 'import sys; from moreau.trainers.runlog import compress_log; compress_log(sys.argv[1], sys.argv[2])' \
    "$run/log.csv" "$out/walk_transfer_selfcol/log_$it.csv.xz"
