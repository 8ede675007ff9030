#!/usr/bin/env bash
# The main job. Builds moreau and runs
#   1. moreau-demo: ANYmal C, a batch of environments on the GPU when one is present (16,384),
#      otherwise on the CPU (1,024), holding their default pose on hard contact; prints
#      environment-steps per second and a physical summary;
#   2. the shipped SHAC policy (results/transfer/walk_transfer_roll/policy.pt,
#      results/transfer/README.md), trained through smooth contact on a robot with damped drives,
#      friction loss and the feet's torsional and rolling friction randomised, walking under hard
#      contact on a batch of environments (GPU when present) with commands resampled every 10-15 s,
#      friction, base mass, friction loss, motor strength and the feet's friction randomised and
#      pushes on; prints tracking error, falls and throughput and writes runs/demo/walk_hard.{json,png,gif}.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"
cmake --preset release -G Ninja
cmake --build --preset release -j "${MOREAU_JOBS:-2}" --target moreau-demo
./build/release/moreau-demo "$@"
bash scripts/install_python.sh
if python3 -c 'import sys, torch, moreau; sys.exit(not (moreau.cuda_available() and torch.cuda.is_available()))'; then
  device=cuda envs=16384
else
  device=cpu envs=1024
fi
echo
echo "== The shipped SHAC policy under hard contact ($envs environments, $device) =="
python3 -m moreau.evaluation.evaluate results/transfer/walk_transfer_roll/policy.pt --contact hard --device "$device" --num-envs "$envs" \
  --seconds 20 --json runs/demo/walk_hard.json --plot runs/demo/walk_hard.png --video runs/demo/walk_hard.gif
