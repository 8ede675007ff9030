#!/usr/bin/env bash
# The device check, in one call on a lent GPU machine (../.library/device: METHOD.md, H200.md):
# unpacks the packages of scripts/gpu_bundle.sh (carried in .gpu/) under /opt/moreau-deps,
# builds for sm_90 with every core, runs the CUDA tests (CUDA vs CPU; they skip nowhere there),
# the demo and the GPU benchmarks, and writes logs and JSON under $OUT. A stage that fails is
# reported and the next one still runs; the summary comes last.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/moreau-gpu-out}
mkdir -p "$OUT"
deps=/opt/moreau-deps
mkdir -p "$deps"
for f in .gpu/debs/*.deb; do dpkg -x "$f" "$deps"; done
# MuJoCo's CMake package names this absolute include directory; CMake refuses a missing one
mkdir -p /usr/include/libqhull_r
export CMAKE_PREFIX_PATH=$deps/usr
export LD_LIBRARY_PATH=$deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
[ -x /usr/local/cuda/bin/nvcc ] && export PATH=/usr/local/cuda/bin:$PATH
summary=()
stage() {  # stage NAME LOG COMMAND...: runs it, keeps the log, notes the exit status
  local name=$1 log=$OUT/$2
  shift 2
  local t0=$SECONDS
  "$@" >"$log" 2>&1
  local rc=$?
  summary+=("$(printf '%-10s rc=%-3s %4ss  %s' "$name" "$rc" "$((SECONDS - t0))" "$log")")
  tail -n 25 "$log"
}
{ nvidia-smi; nvcc --version; cmake --version; nproc; } >"$OUT/machine.txt" 2>&1
stage configure configure.log cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOREAU_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DMOREAU_TESTS=ON -DMOREAU_BENCH=ON -DMOREAU_PYTHON=OFF
stage build build.log cmake --build build/gpu -j "$(nproc)"
# resources of the CUDA kernels (registers, stack frame per thread)
cuobjdump --dump-resource-usage build/gpu/host/libmoreau.a >"$OUT/resources.txt" 2>&1
stage cuda-tests ctest.log ctest --test-dir build/gpu -R "Cuda" --output-on-failure -j 4
stage demo demo.log ./build/gpu/moreau-demo
stage forward forward.log ./build/gpu/bench/moreau-bench-forward --device cuda --contact none,hard \
  --json-out "$OUT/forward.json"
stage gradient gradient.log ./build/gpu/bench/moreau-bench-gradient --device cuda --contact none,hard,hard_smooth_grad \
  --json-out "$OUT/gradient.json"
printf '%s\n' "${summary[@]}"
