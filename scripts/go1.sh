#!/usr/bin/env bash
# results/go1/README.md, end to end and resumable: SHAC through smooth contact trains the Unitree
# Go1 (the locomotion task's "go1" robot configuration, docs/robots.md) from scratch with the
# ANYmal C's walk_fast recipe (preset walk_fast, the gait clock scaled to the robot), one run per seed
# given (default 0) on one core each (2,500 iterations, or up to --until's); then moreau's
# evaluation protocol under hard contact (128 environments x 20 s, a GIF of two of them; and under
# smooth contact) and the policy and compressed log in results/go1/<variant>sK/ (the final policy,
# or policy_<it>.pt when stopped at --until; scripts/run_results.sh).
# Variants (--variant): "" (the robot configuration as it is) and "scale025_" (action_scale 0.25,
# legged_gym's Go1/A1 value, instead of the configuration's 0.5: the comparison in the README).
# --ppo: rsl_rl's PPO instead, Study B's baseline (hard contact, task preset trot_curriculum,
# legged_gym's 1,500 iterations of 2,048 x 24 samples) into runs/go1_<variant>ppo_sK and
# results/go1/<variant>ppo_sK/.
# Training resumes from the newest checkpoint in its run folder (--resume auto).
# Usage: bash scripts/go1.sh [--ppo] [--variant scale025_] [--until IT] [SEED ...]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/run_results.sh
variant="" until="" method=""
while [ $# -gt 0 ]; do
  case "$1" in
    --ppo) method="ppo_"; shift ;;
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
  run="runs/go1_${variant}${method}s$s"
  if [ -n "$method" ]; then
    python3 -W ignore::UserWarning -m moreau.trainers.ppo --task locomotion --task-preset trot_curriculum \
      --task-config "$config" --contact hard --iterations 1500 --num-envs 2048 --steps-per-env 24 --save-interval 25 \
      --seed "$s" --log-dir "$run" --n-threads 1 --torch-threads 1 --resume auto --eval-steps 0 \
      ${until:+--until "$until"} > "$run.out" 2>&1 &
  else
    python3 -W ignore::UserWarning -m moreau.trainers.shac --preset walk_fast --task-config "$config" \
      --seed "$s" --logdir "$run" --sim-threads 1 --torch-threads 1 --resume auto --no-progress \
      ${until:+--until "$until"} > "$run.out" 2>&1 &
  fi
done
wait
for s in "${seeds[@]}"; do
  dest="$out/${variant}${method}s$s"
  publish_run "runs/go1_${variant}${method}s$s" "$dest" "$until" --gif
  [ -s "$dest/eval_smooth$published_suffix.json" ] || python3 -W ignore::UserWarning -m moreau.evaluation.evaluate \
    "$dest/policy$published_suffix.pt" --contact smooth --json "$dest/eval_smooth$published_suffix.json" --plot none \
    --sim-threads 1
done
