#!/usr/bin/env bash
# results/transfer/iteration_1500/: does simulating the legs' collision do the feet_separation
# penalty's work? SHAC's walk_transfer preset without feet_separation and with the feet of
# different legs colliding (task option self_collisions), seed 0, trained to 1,500 iterations
# (resumable: runs/walk_transfer_selfcol_s0); beside it walk_transfer and walk_transfer_nosep at
# their 1,500-iteration checkpoints (the runs scripts/transfer.sh trains: runs/<name>_s0). For each:
# moreau's evaluation protocol under hard contact (128 environments x 20 s) without and with the
# legs colliding, the sim-to-sim table (scripts/sim2sim.sh) and how close the legs come
# (moreau.evaluation.leg_clearance). Finished files are kept.
# Usage: bash scripts/transfer_selfcol.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/run_results.sh
out=results/transfer/iteration_1500
run=runs/walk_transfer_selfcol_s0
mkdir -p runs "$out"
python3 -m moreau.trainers.shac --preset walk_transfer --seed 0 --logdir "$run" --sim-threads 1 --torch-threads 1 \
  --task-config '{"reward_weights": {"feet_separation": 0.0}, "self_collisions": true}' --resume auto --no-progress \
  --until 1500 > "$run.out" 2>&1
publish_run "$run" "$out/walk_transfer_selfcol" 1500
for name in walk_transfer walk_transfer_nosep; do
  dest="$out/$name"
  mkdir -p "$dest"
  [ -s "$dest/policy_1500.pt" ] ||
    python3 -m moreau.trainers.checkpoints strip "runs/${name}_s0/model_1500.pt" "$dest/policy_1500.pt"
  [ -s "$dest/eval_hard_1500.json" ] || python3 -W ignore::UserWarning -m moreau.evaluation.evaluate \
    "$dest/policy_1500.pt" --contact hard --json "$dest/eval_hard_1500.json" --plot none --sim-threads 1
done
for name in walk_transfer walk_transfer_nosep walk_transfer_selfcol; do
  dest="$out/$name"
  [ -s "$dest/self_collisions_1500.json" ] || python3 -W ignore::UserWarning -m moreau.evaluation.evaluate \
    "$dest/policy_1500.pt" --contact hard --task-config '{"self_collisions": true}' \
    --json "$dest/self_collisions_1500.json" --plot none --sim-threads 1
  [ -s "$dest/leg_clearance_1500.json" ] || python3 -m moreau.evaluation.leg_clearance "$dest/policy_1500.pt" \
    --json "$dest/leg_clearance_1500.json"
  bash scripts/sim2sim.sh "$dest/policy_1500.pt" "$dest/sim2sim_1500"
done
