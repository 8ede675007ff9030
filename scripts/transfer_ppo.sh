#!/usr/bin/env bash
# results/transfer/ppo_limits{,_hard}: Study B's two PPO methods retrained with what moreau now
# simulates and randomises, beside SHAC's walk_transfer and walk_transfer_hard (scripts/transfer.sh).
# rsl_rl's PPO with Study B's budget (legged_gym's 1,500 iterations of 2,048 environments x 24
# steps, 73.7 M samples) on the trot_transfer task (damped drives with friction loss, friction-loss
# scale and motor strength randomised, joint limits, feet_separation), through smooth contact
# (ppo_limits) and hard contact (ppo_limits_hard), seed 0 each, with one change to Study B's
# recipe: legged_gym's dof_pos_limits penalty (weight -10) on leaving the middle 90 % of each joint's
# range, without which PPO stops learning once the joint limits are enforced
# (results/transfer/README.md, "Why PPO no longer learns"; ppo_transfer{,_hard} hold the first
# recipe's iteration 250, without it), side by side on one core each
# (resumable: runs/<name>_s0); then for each and, while they train, for Study B's own PPO policies
# (results/study_b/policies, the "before" rows: study_b_ppo_smooth, study_b_ppo_hard): moreau's
# evaluation protocol under hard contact (128 environments x 20 s; for Study B's, effects/nominal),
# each perturbation's effect (effects/, the legs colliding among them), how close the legs come (leg_clearance.json) and the
# sim-to-sim table (scripts/sim2sim.sh), as scripts/transfer.sh lays them out. Finished files are
# kept. --until IT: train to iteration IT only and publish that checkpoint (policy_IT.pt,
# eval_hard_IT.json, log_IT.csv.xz, the rest in iteration_IT/). ppo_limits_spin is ppo_limits on
# trot_transfer_spin (the feet's torsional friction randomised too, as SHAC's walk_transfer_spin).
# Usage: bash scripts/transfer_ppo.sh [--until IT] [NAME ...]   (NAME: ppo_limits, ppo_limits_hard,
#        ppo_limits_spin; default the first two)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/run_results.sh
until=""
if [ "${1:-}" = "--until" ]; then until=${2:?--until IT}; shift 2; fi
names=("${@:-ppo_limits ppo_limits_hard}")
names=(${names[*]})
out=results/transfer
mkdir -p runs "$out"
declare -A contact=([ppo_limits]=smooth [ppo_limits_hard]=hard [ppo_limits_spin]=smooth)
declare -A preset=([ppo_limits_spin]=trot_transfer_spin)
for name in "${names[@]}"; do
  [ -n "${contact[$name]:-}" ] || { echo "transfer_ppo.sh: expected ppo_limits, ppo_limits_hard or ppo_limits_spin, got '$name'" >&2; exit 2; }
done
train() {
  local run="runs/$1_s0"
  python3 -W ignore::UserWarning -m moreau.trainers.ppo --task locomotion --task-preset "${preset[$1]:-trot_transfer}" \
    --contact "${contact[$1]}" --iterations 1500 --num-envs 2048 --steps-per-env 24 --save-interval 25 \
    --task-config '{"reward_weights": {"dof_pos_limits": -10.0}}' \
    --seed 0 --log-dir "$run" --n-threads 1 --torch-threads 1 --resume auto --eval-steps 0 \
    ${until:+--until "$until"} > "$run.out" 2>&1
}
# evaluate_transfer POLICY FOLDER: the perturbations' effects, the legs' clearance, the sim-to-sim table
evaluate_transfer() {
  evaluate_effects "$1" "$2"
  [ -s "$2/leg_clearance.json" ] || python3 -m moreau.evaluation.leg_clearance "$1" --json "$2/leg_clearance.json"
  bash scripts/sim2sim.sh "$1" "$2"
}
before() {
  local method
  for method in ppo_smooth ppo_hard; do
    evaluate_transfer "results/study_b/policies/$method.pt" "$out/study_b_$method"
  done
}
after() {
  publish_run "runs/$1_s0" "$out/$1" "$until"
  evaluate_transfer "$out/$1/policy$published_suffix.pt" "$out/$1${published_suffix:+/iteration$published_suffix}"
}
before > runs/transfer_ppo_before.out 2>&1 &
for name in "${names[@]}"; do train "$name" & done
wait
for name in "${names[@]}"; do after "$name" & done
wait
