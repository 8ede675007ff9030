#!/usr/bin/env bash
# Builds moreau and runs the demo: ANYmal C, a batch of environments on the GPU when one is
# present (16,384 environments), otherwise on the CPU (1,024), holding their default pose on
# hard contact; prints environment-steps per second and a physical summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"
cmake --preset release -G Ninja
cmake --build --preset release -j "${MOREAU_JOBS:-2}" --target moreau-demo
./build/release/moreau-demo "$@"
