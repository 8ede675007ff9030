#!/usr/bin/env bash
# results/transfer/README.md, end to end and resumable: trains SHAC's "walk_transfer" preset
# (walk_fast on the trot_transfer task: damped drives with friction loss, friction-loss scale and
# motor strength randomised per environment, feet_separation), its ablation without
# feet_separation, the same trained through hard contact (Study B's SHAC-hard) and
# "walk_transfer_spin" (the feet's torsional friction randomised too) and "walk_transfer_spin_yaw"
# (the same with the yaw-rate tracking term's weight 1.0 instead of legged_gym's 0.5) and
# "walk_transfer_feet" (that, with the smooth contact's k randomised per environment, U[100, 1000]
# 1/m: feet that touch from further away or nearer) and "walk_transfer_roll" (that, with the feet's
# rolling friction randomised too, U[0, 0.02] m about the Menagerie's 0.01; the shipped policy; also
# seed 1 into results/transfer/walk_transfer_roll_s1), seed 0 each, two at a time
# side by side on one core each (2,500 iterations, one to two hours each on the 2-core Xeon VM);
# then, for each, moreau's evaluation protocol under hard contact
# (moreau.evaluation.evaluate: 128 environments x 20 s), the sim-to-sim table (scripts/sim2sim.sh)
# and the policy file and compressed log in results/transfer/NAME/. The walk_fast policy's table
# is results/transfer/walk_fast. Each randomisation's effect: every policy evaluated by moreau's
# protocol with one perturbation of its robot at a time (evaluate_effects in
# scripts/run_results.sh; NAME/effects/*.json).
# Training resumes from the newest checkpoint in runs/ (--resume auto); finished evaluations are
# kept. How close each policy brings its legs to each other: NAME/leg_clearance.json
# (moreau.evaluation.leg_clearance).
# Usage: bash scripts/transfer.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/run_results.sh
out=results/transfer
mkdir -p runs "$out"
names="walk_transfer walk_transfer_nosep walk_transfer_hard walk_transfer_spin walk_transfer_spin_yaw walk_transfer_feet
       walk_transfer_roll"
declare -A config=([walk_transfer_nosep]='{"reward_weights": {"feet_separation": 0.0}}'
                   [walk_transfer_spin_yaw]='{"reward_weights": {"tracking_ang_vel": 1.0}}'
                   [walk_transfer_feet]='{"reward_weights": {"tracking_ang_vel": 1.0}, "randomize_smooth_k": true}')
declare -A preset=([walk_transfer_spin]=walk_transfer_spin [walk_transfer_spin_yaw]=walk_transfer_spin
                   [walk_transfer_feet]=walk_transfer_spin [walk_transfer_roll]=walk_transfer_roll)
declare -A contact=([walk_transfer_hard]=hard)
train() {  # train NAME [SEED]: runs/NAME_sSEED
  local name=$1 seed=${2:-0}
  local run="runs/${name}_s$seed"
  python3 -m moreau.trainers.shac --preset "${preset[$name]:-walk_transfer}" --task-config "${config[$name]:-{\}}" \
    ${contact[$name]:+--contact "${contact[$name]}"} --seed "$seed" --logdir "$run" \
    --sim-threads 1 --torch-threads 1 --resume auto --no-progress > "$run.out" 2>&1
}
publish() {  # publish NAME SEED DEST: the policy file, moreau's evaluation, the log and the sim-to-sim table
  local run="runs/$1_s$2" dest=$3
  mkdir -p "$dest"
  [ -s "$dest/policy.pt" ] || python3 -m moreau.trainers.checkpoints strip "$run/model_final.pt" "$dest/policy.pt"
  [ -s "$dest/eval_hard.json" ] || python3 -m moreau.evaluation.evaluate "$dest/policy.pt" --contact hard \
    --json "$dest/eval_hard.json" --plot "$dest/walk_hard.png" --sim-threads 1
  python3 -c 'import sys; from moreau.trainers.runlog import compress_log; compress_log(sys.argv[1], sys.argv[2])' \
    "$run/log.csv" "$dest/log.csv.xz"
  bash scripts/sim2sim.sh "$dest/policy.pt" "$dest"
}
train walk_transfer & train walk_transfer_nosep & wait
train walk_transfer_hard & train walk_transfer_spin & wait
train walk_transfer_spin_yaw & train walk_transfer_feet & wait
train walk_transfer_roll & train walk_transfer_roll 1 & wait  # the shipped recipe, two training seeds
for name in $names; do publish "$name" 0 "$out/$name"; done
publish walk_transfer_roll 1 "$out/walk_transfer_roll_s1"
for name in walk_fast $names; do
  policy="$out/$name/policy.pt"
  [ "$name" = walk_fast ] && policy=results/shac_walk/policy.pt
  [ -s "$out/$name/leg_clearance.json" ] || python3 -m moreau.evaluation.leg_clearance "$policy" \
    --json "$out/$name/leg_clearance.json"
  evaluate_effects "$policy" "$out/$name"
done
# The shipped policy (walk_transfer_roll, scripts/demo.sh) and the walk_fast policy each on the
# other's robot and randomisation, moreau's protocol: what the transfer training costs on moreau's
# own robot, and what the walk_fast policy meets on the transfer task; and the shipped policy's GIF.
walk_fast_task='{"joint_damping": null, "damping_scale": null, "joint_frictionloss": null,
  "randomize_frictionloss": false, "randomize_motor_strength": false, "randomize_smooth_k": false,
  "randomize_spin_friction": false, "randomize_rolling_friction": false}'
transfer_task='{"joint_damping": 0.5, "damping_scale": 1.0, "joint_frictionloss": 0.1, "randomize_frictionloss": true,
  "randomize_motor_strength": true, "randomize_spin_friction": true, "randomize_rolling_friction": true}'
shipped=$out/walk_transfer_roll
evaluate_into() {  # evaluate_into JSON POLICY [OPTION ...]: moreau's protocol under hard contact, unless JSON exists
  local json=$1 policy=$2
  shift 2
  [ -s "$json" ] || python3 -m moreau.evaluation.evaluate "$policy" --contact hard --sim-threads 1 --plot none \
    --json "$json" "$@"
}
evaluate_into "$shipped/eval_hard_walk_fast_task.json" "$shipped/policy.pt" --task-config "$walk_fast_task"
evaluate_into "$out/walk_transfer_roll_s1/eval_hard_walk_fast_task.json" "$out/walk_transfer_roll_s1/policy.pt" \
  --task-config "$walk_fast_task"
evaluate_into "$out/walk_fast/eval_hard_transfer_task.json" results/shac_walk/policy.pt --task-config "$transfer_task"
# both training seeds of the shipped recipe on the Menagerie's robot with pushes for longer (128 x 20 s,
# 42.7 robot-minutes, seed 2)
for dest in "$shipped" "$out/walk_transfer_roll_s1"; do
  [ -s "$dest/menagerie_push_128x20s_seed2.json" ] || python3 -m moreau.evaluation.mujoco "$dest/policy.pt" \
    --mjcf tests/data/robots/anymal_c_menagerie/anymal_c.xml --no-moreau --num-envs 128 --seconds 20 --seed 2 \
    --json "$dest/menagerie_push_128x20s_seed2.json"
done
# the same on the walk_fast task with three more evaluation seeds (the spread between them)
mkdir -p "$out/walk_fast_task_seeds"
for seed in 2 3 4; do
  evaluate_into "$out/walk_fast_task_seeds/walk_transfer_roll_seed$seed.json" "$shipped/policy.pt" \
    --task-config "$walk_fast_task" --seed "$seed"
  evaluate_into "$out/walk_fast_task_seeds/walk_fast_seed$seed.json" results/shac_walk/policy.pt --seed "$seed"
done
[ -s "$shipped/walk_hard.gif" ] || python3 -m moreau.evaluation.evaluate "$shipped/policy.pt" --contact hard \
  --sim-threads 1 --plot none --video "$shipped/walk_hard.gif" --video-envs 2 --video-fps 12.5
tables=("$out/walk_fast")
for name in $names; do tables+=("$out/$name"); done
tables+=("$out/walk_transfer_roll_s1")
python3 -m moreau.evaluation.sim2sim_table "${tables[@]}" --markdown
python3 -m moreau.evaluation.sim2sim_table --effects "${tables[@]}" --markdown
