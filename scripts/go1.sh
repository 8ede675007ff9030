#!/usr/bin/env bash
# results/go1/README.md, end to end and resumable: SHAC through smooth contact trains the Unitree
# Go1 (the locomotion task's "go1" robot configuration, docs/robots.md) from scratch with the
# shipped ANYmal C recipe (preset walk_fast, the gait clock scaled to the robot), one run per seed
# given (default 0) on one core each (2,500 iterations); then moreau's evaluation protocol under
# hard contact (128 environments x 20 s) and the policy and compressed log in results/go1/sK/.
# Training resumes from the newest checkpoint in runs/go1_sK (--resume auto).
# Usage: bash scripts/go1.sh [SEED ...]
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=("${@:-0}")
out=results/go1
mkdir -p runs "$out"
for s in "${seeds[@]}"; do
  python3 -W ignore::UserWarning -m moreau.trainers.shac --preset walk_fast --task-config '{"robot": "go1"}' \
    --seed "$s" --logdir "runs/go1_s$s" --sim-threads 1 --torch-threads 1 --resume auto --no-progress \
    > "runs/go1_s$s.out" 2>&1 &
done
wait
for s in "${seeds[@]}"; do
  run="runs/go1_s$s" dest="$out/s$s"
  mkdir -p "$dest"
  [ -s "$dest/policy.pt" ] || python3 -m moreau.trainers.checkpoints strip "$run/model_final.pt" "$dest/policy.pt"
  [ -s "$dest/eval_hard.json" ] || python3 -W ignore::UserWarning -m moreau.evaluation.evaluate "$dest/policy.pt" \
    --contact hard --json "$dest/eval_hard.json" --plot "$dest/walk_hard.png" --sim-threads 1
  [ -s "$dest/eval_smooth.json" ] || python3 -W ignore::UserWarning -m moreau.evaluation.evaluate "$dest/policy.pt" \
    --contact smooth --json "$dest/eval_smooth.json" --plot none --sim-threads 1
  python3 -c 'import sys; from moreau.trainers.runlog import compress_log; compress_log(sys.argv[1], sys.argv[2])' \
    "$run/log.csv" "$dest/log.csv.xz"
done
