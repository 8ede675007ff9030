#!/usr/bin/env bash
# The sim-to-sim table of a locomotion policy (docs/sim2sim.md): moreau under hard contact, MuJoCo
# on moreau's export of the policy's robot, MuJoCo on the Menagerie's ANYmal C as it is without
# and with pushes; 32 environments x 20 s each (10.7 robot-minutes), seed 1. Writes one JSON per
# column to OUT and prints the table (moreau.evaluation.sim2sim_table).
#   bash scripts/sim2sim.sh results/shac_walk/policy.pt results/transfer/walk_fast
set -euo pipefail
cd "$(dirname "$0")/.."
policy=${1:?usage: sim2sim.sh POLICY OUT}
out=${2:?usage: sim2sim.sh POLICY OUT}
mkdir -p "$out"
menagerie=tests/data/robots/anymal_c_menagerie/anymal_c.xml
run() { python3 -m moreau.evaluation.mujoco "$policy" --num-envs 32 --seconds 20 --seed 1 "$@"; }
[ -s "$out/exported.json" ] || run --json "$out/exported.json"
[ -s "$out/menagerie_no_push.json" ] || run --mjcf "$menagerie" --no-push --no-moreau --json "$out/menagerie_no_push.json"
[ -s "$out/menagerie_push.json" ] || run --mjcf "$menagerie" --no-moreau --json "$out/menagerie_push.json"
python3 -m moreau.evaluation.sim2sim_table "$out"
