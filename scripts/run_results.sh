# Sourced by the training scripts: a finished (or --until-stopped) run's policy, evaluation and log
# into results/.
# publish_run RUN DEST UNTIL [--gif] [EVALUATE OPTION ...]: the policy file of RUN's model_final.pt
# (or, when UNTIL is given and the run has no model_final.pt, of model_UNTIL.pt, the files then
# suffixed _UNTIL) into DEST; moreau's evaluation protocol under hard contact (128 environments x
# 20 s unless the options say otherwise; moreau.evaluation.evaluate: eval_hard.json, walk_hard.png,
# with --gif a GIF of two environments) and the compressed log.csv. Files already there are kept (a
# rerun resumes). Sets published_suffix (the files' suffix) for the caller.
publish_run() {
  local run=$1 dest=$2 until=$3
  shift 3
  local model="$run/model_final.pt" suffix=""
  if [ -n "$until" ] && [ ! -s "$model" ]; then model="$run/model_$until.pt" suffix="_$until"; fi
  local video=()
  if [ "${1:-}" = "--gif" ]; then
    video=(--video "$dest/walk_hard$suffix.gif" --video-envs 2 --video-fps 12.5)
    shift
  fi
  mkdir -p "$dest"
  [ -s "$dest/policy$suffix.pt" ] || python3 -m moreau.trainers.checkpoints strip "$model" "$dest/policy$suffix.pt"
  [ -s "$dest/eval_hard$suffix.json" ] || python3 -W ignore::UserWarning -m moreau.evaluation.evaluate \
    "$dest/policy$suffix.pt" --contact hard --json "$dest/eval_hard$suffix.json" --plot "$dest/walk_hard$suffix.png" \
    --sim-threads 1 "${video[@]}" "$@"
  python3 -c 'import sys; from moreau.trainers.runlog import compress_log; compress_log(sys.argv[1], sys.argv[2])' \
    "$run/log.csv" "$dest/log$suffix.csv.xz"
  published_suffix=$suffix
}

# evaluate_effects POLICY DEST: moreau's evaluation protocol under hard contact with one
# perturbation of the robot at a time (transfer_effects: the drives, randomisations, extra contacts
# and the legs colliding) into DEST/effects/NAME.json (moreau.evaluation.sim2sim_table --effects).
declare -A transfer_effects=([nominal]='{}'
  [damping_0.5]='{"joint_damping": 0.5}'
  [frictionloss_0.1x]='{"joint_frictionloss": 0.1, "randomize_frictionloss": true, "frictionloss_scale_range": [0.0, 2.0]}'
  [menagerie_drives]='{"joint_damping": 1.0, "joint_frictionloss": 0.1, "randomize_frictionloss": false}'
  [motor_strength]='{"randomize_motor_strength": true, "motor_strength_range": [0.9, 1.1]}'
  [action_delay]='{"action_delay_prob": 0.5}'
  [torque_speed_8]='{"drive_max_velocity": 8.0}'
  [knee_contacts]='{"knee_contacts": true}'
  [spin_friction_0.02]='{"spin_friction": 0.02, "randomize_spin_friction": false}'
  [rolling_friction_0.01]='{"rolling_friction": 0.01, "randomize_rolling_friction": false}'
  [self_collisions]='{"self_collisions": true}'
  [self_collisions_knees]='{"self_collisions": true, "knee_contacts": true}')
evaluate_effects() {
  local policy=$1 dest=$2 e
  mkdir -p "$dest/effects"
  for e in "${!transfer_effects[@]}"; do
    [ -s "$dest/effects/$e.json" ] || python3 -W ignore::UserWarning -m moreau.evaluation.evaluate "$policy" \
      --contact hard --sim-threads 1 --plot none --task-config "${transfer_effects[$e]}" \
      --json "$dest/effects/$e.json" > /dev/null
  done
}
