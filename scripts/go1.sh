#!/usr/bin/env bash
# results/go1/README.md, end to end and resumable: SHAC through smooth contact trains the Unitree
# Go1 (the locomotion task's "go1" robot configuration, docs/robots.md) from scratch with the
# shipped ANYmal C recipe (preset walk_fast, the gait clock scaled to the robot), one run per seed
# given (default 0) on one core each (2,500 iterations, or up to --until's); then moreau's
# evaluation protocol under hard contact (128 environments x 20 s, a GIF of two of them; and under
# smooth contact) and the policy and compressed log in results/go1/<variant>sK/ (the final policy,
# or policy_<it>.pt when stopped at --until; scripts/run_results.sh).
# Variants (--variant): "" (the robot configuration as it is) and "scale025_" (action_scale 0.25,
# legged_gym's Go1/A1 value, instead of the configuration's 0.5: the comparison in the README).
# Training resumes from the newest checkpoint in runs/go1_<variant>sK (--resume auto).
# Usage: bash scripts/go1.sh [--variant scale025_] [--until IT] [SEED ...]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/run_results.sh
variant="" until=""
while [ $# -gt 0 ]; do
  case "$1" in
    --variant) variant="$2"; shift 2 ;;
    --until) until="$2"; shift 2 ;;
    *) break ;;
  esac
done
case "$variant" in
  "") config='{"robot": "go1"}' ;;
  scale025_) config='{"robot": "go1", "action_scale": 0.25}' ;;
  *) echo "scripts/go1.sh: --variant: expected '' or scale025_, got '$variant'" >&2; exit 2 ;;
esac
seeds=("${@:-0}")
out=results/go1
mkdir -p runs "$out"
for s in "${seeds[@]}"; do
  python3 -W ignore::UserWarning -m moreau.trainers.shac --preset walk_fast --task-config "$config" \
    --seed "$s" --logdir "runs/go1_${variant}s$s" --sim-threads 1 --torch-threads 1 --resume auto --no-progress \
    ${until:+--until "$until"} > "runs/go1_${variant}s$s.out" 2>&1 &
done
wait
for s in "${seeds[@]}"; do
  dest="$out/${variant}s$s"
  publish_run "runs/go1_${variant}s$s" "$dest" "$until" --gif
  [ -s "$dest/eval_smooth$published_suffix.json" ] || python3 -W ignore::UserWarning -m moreau.evaluation.evaluate \
    "$dest/policy$published_suffix.pt" --contact smooth --json "$dest/eval_smooth$published_suffix.json" --plot none \
    --sim-threads 1
done
