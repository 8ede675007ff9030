#!/usr/bin/env bash
# results/rough/README.md, end to end and resumable: SHAC through smooth contact (preset
# walk_rough: walk_fast on the trot_rough task) and rsl_rl's PPO (task preset rough, hard contact,
# legged_gym's setup) train ANYmal C on legged_gym's generated terrain (docs/terrain.md) with its
# level curriculum, seed 0, side by side on one core each; then moreau's evaluation protocol under
# hard contact on every level of every terrain type (500 environments x 20 s, each on its own tile,
# 10 per type and level: moreau.evaluation.evaluate) with the per-type, per-level metrics and plot,
# and the policies and compressed logs in results/rough/<method>/; and the flat-ground walk_fast
# SHAC policy on the same terrain (results/rough/flat_shac_walk/) as the baseline. Method
# shac_bodies is SHAC with the trunk's, thighs' and shanks' collision shapes against the terrain
# (task option body_contacts, legged_gym's shapes; the trunk touching is a fall), evaluated so, and
# the feet-and-knees SHAC policy evaluated with them too, at the same iteration with --until
# (results/rough/shac/eval_hard_bodies[_IT].json; its run runs/rough_shac_s0 must hold model_IT.pt).
# Method ppo_bodies is the PPO above with body_contacts (the one change), beside the feet-and-knees
# PPO policy (results/rough/ppo/policy.pt, its end) evaluated with them (ppo/eval_hard_bodies.json).
# Training resumes from the newest checkpoint in runs/rough_<method>_s0 (--resume auto); with
# --until IT a run stops at that iteration and is evaluated from its checkpoint (policy_<IT>.pt).
# Each run and evaluation takes one core (simulator and torch threads); MOREAU_RUN_THREADS=N gives
# each N (a run alone on two cores trains ~1.8x faster; the thread counts change only
# floating-point reduction order, not the protocol).
# Usage: bash scripts/rough.sh [--until IT] [shac] [ppo] [shac_bodies] [ppo_bodies]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/run_results.sh
until=""
if [ "${1:-}" = "--until" ]; then until="$2"; shift 2; fi
methods=("${@:-shac ppo}")
methods=(${methods[*]})
threads="${MOREAU_RUN_THREADS:-1}"
out=results/rough
mkdir -p runs "$out"
for method in "${methods[@]}"; do
  run="runs/rough_${method}_s0"
  task=()  # the _bodies methods: the same recipe with the body shapes
  [[ $method == *_bodies ]] && task=(--task-config '{"body_contacts": true}')
  case "$method" in
    shac | shac_bodies) python3 -W ignore::UserWarning -m moreau.trainers.shac --preset walk_rough "${task[@]}" \
            --seed 0 --logdir "$run" --sim-threads "$threads" --torch-threads "$threads" --resume auto --no-progress \
            ${until:+--until "$until"} > "$run.out" 2>&1 & ;;
    ppo | ppo_bodies) python3 -W ignore::UserWarning -m moreau.trainers.ppo --task locomotion --task-preset rough \
            "${task[@]}" --contact hard --iterations 1500 --num-envs 2048 --save-interval 25 --seed 0 --log-dir "$run" \
            --n-threads "$threads" --torch-threads "$threads" --resume auto ${until:+--until "$until"} > "$run.out" 2>&1 & ;;
    *) echo "scripts/rough.sh: expected shac, ppo, shac_bodies or ppo_bodies, got '$method'" >&2; exit 2 ;;
  esac
done
wait
for method in "${methods[@]}"; do
  publish_run "runs/rough_${method}_s0" "$out/$method" "$until" --num-envs 500 --sim-threads "$threads"
done
# evaluate_hard POLICY DIR NAME TASK_CONFIG: the protocol under hard contact (500 environments) with
# the task configured so, into DIR/eval_hardNAME.json and DIR/walk_hardNAME.png, unless already there
evaluate_hard() {
  [ -s "$2/eval_hard$3.json" ] || python3 -W ignore::UserWarning -m moreau.evaluation.evaluate "$1" --contact hard \
    --num-envs 500 --task-config "$4" --json "$2/eval_hard$3.json" --plot "$2/walk_hard$3.png" --sim-threads "$threads"
}
if [[ " ${methods[*]} " == *" shac_bodies "* ]]; then  # the feet-and-knees policy on the same terms
  suffix=${until:+_$until}
  if [ -n "$until" ] && [ ! -s "$out/shac/policy$suffix.pt" ]; then
    python3 -m moreau.trainers.checkpoints strip "runs/rough_shac_s0/model_$until.pt" "$out/shac/policy$suffix.pt"
  fi
  evaluate_hard "$out/shac/policy$suffix.pt" "$out/shac" "_bodies$suffix" '{"body_contacts": true}'
fi
if [[ " ${methods[*]} " == *" ppo_bodies "* ]]; then  # the feet-and-knees PPO policy with the body shapes
  evaluate_hard "$out/ppo/policy.pt" "$out/ppo" _bodies '{"body_contacts": true}'
fi
flat="$out/flat_shac_walk"
mkdir -p "$flat"
evaluate_hard results/shac_walk/policy.pt "$flat" "" '{"terrain": {}, "knee_contacts": true}'
