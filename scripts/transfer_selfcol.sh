#!/usr/bin/env bash
# results/transfer/iteration_<IT>/: does simulating the legs' collision do the feet_separation
# penalty's work? SHAC's walk_transfer and walk_transfer_spin presets without feet_separation and
# with the feet of different legs colliding (task option self_collisions): walk_transfer_selfcol
# and walk_transfer_spin_selfcol, seed 0, trained side by side on one core each to iteration IT
# (default 1500; the presets' full run is 2500; resumable: runs/<name>_s0); beside them
# walk_transfer, walk_transfer_nosep and walk_transfer_spin at their IT-iteration checkpoints (the
# runs scripts/transfer.sh trains). For each: the policy at IT, moreau's evaluation protocol
# under hard contact (128 environments x 20 s) without and with the legs colliding, how close
# the legs come (moreau.evaluation.leg_clearance) and the sim-to-sim table (scripts/sim2sim.sh);
# the two new runs' compressed logs. Finished files are kept.
# Usage: bash scripts/transfer_selfcol.sh [IT]
set -euo pipefail
cd "$(dirname "$0")/.."
it=${1:-1500}
out=results/transfer/iteration_$it
mkdir -p runs "$out"
declare -A preset=([walk_transfer_selfcol]=walk_transfer [walk_transfer_spin_selfcol]=walk_transfer_spin)
train() {
  local run="runs/$1_s0"
  python3 -m moreau.trainers.shac --preset "${preset[$1]}" --seed 0 --logdir "$run" --sim-threads 1 \
    --torch-threads 1 --task-config '{"reward_weights": {"feet_separation": 0.0}, "self_collisions": true}' \
    --resume auto --no-progress --until "$it" > "$run.out" 2>&1
}
train walk_transfer_selfcol & train walk_transfer_spin_selfcol & wait
for name in walk_transfer walk_transfer_nosep walk_transfer_spin walk_transfer_selfcol walk_transfer_spin_selfcol; do
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
for name in walk_transfer_selfcol walk_transfer_spin_selfcol; do
  [ -s "$out/$name/log_$it.csv.xz" ] ||
    python3 -c 'import sys; from moreau.trainers.runlog import compress_log; compress_log(sys.argv[1], sys.argv[2])' \
      "runs/${name}_s0/log.csv" "$out/$name/log_$it.csv.xz"
done
