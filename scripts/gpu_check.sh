#!/usr/bin/env bash
# The device check, in one call on a lent GPU machine (../.library/device: METHOD.md, H200.md):
#   device run: command "bash scripts/gpu_check.sh", carry [".gpu"], timeout_s 540
# Unpacks the packages of scripts/gpu_bundle.sh (carried in .gpu/) under /opt/moreau-deps,
# configures with nvcc named explicitly and stops unless the CUDA backend is on, builds only
# the targets below with every core, then runs: the ptxas resources of every kernel; the CUDA
# tests (CUDA vs CPU), failing if any of them skips; compute-sanitizer memcheck over a small
# forward and adjoint run; the demo; the forward and forward+backward benchmarks at 16,384,
# 262,144 and 1,048,576 environments; both again at 262,144 with 64, 128 and 256 threads per
# block (--cuda-block). A failing stage is reported and the next one still runs.
# Sized to end within about 8 minutes there, so that it can run twice in one lease.
# $OUT gets two files: summary.txt (one line per stage) and gpu_check.tar.gz (every log and
# JSON). Exit status: the number of failed stages (0: all passed).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/moreau-gpu-out}
mkdir -p "$OUT"
logs=$(mktemp -d)/gpu_check
mkdir -p "$logs"
deps=/opt/moreau-deps
mkdir -p "$deps"
for f in .gpu/debs/*.deb; do dpkg -x "$f" "$deps"; done
# MuJoCo's CMake package names this absolute include directory; CMake refuses a missing one
mkdir -p /usr/include/libqhull_r
export CMAKE_PREFIX_PATH=$deps/usr
export LD_LIBRARY_PATH=$deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
nvcc=$(command -v nvcc || true)
summary=()
failed=0
stage() {  # stage NAME COMMAND...: runs it with its log in $logs/NAME.log, notes the exit status
  local name=$1 log=$logs/$1.log
  shift
  local t0=$SECONDS
  "$@" >"$log" 2>&1
  local rc=$?
  [ "$rc" -ne 0 ] && failed=$((failed + 1))
  summary+=("$(printf '%-11s rc=%-3s %4ss' "$name" "$rc" "$((SECONDS - t0))")")
  tail -n 15 "$log"
  return "$rc"
}
finish() {
  printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
  tar -czf "$OUT/gpu_check.tar.gz" -C "$(dirname "$logs")" gpu_check
  exit "$failed"
}
{ nvidia-smi; echo "nvcc: ${nvcc:-not found}"; [ -n "$nvcc" ] && "$nvcc" --version; cmake --version; nproc; } \
  >"$logs/machine.txt" 2>&1
if [ -z "$nvcc" ]; then
  summary+=("configure   no nvcc on PATH or in /usr/local/cuda/bin: the CUDA backend cannot be built")
  failed=1
  finish
fi
stage configure cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOREAU_CUDA=ON \
  -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES=90 -DMOREAU_TESTS=ON -DMOREAU_BENCH=ON -DMOREAU_PYTHON=OFF
if ! grep -q "moreau: CUDA backend ON" "$logs/configure.log"; then
  summary+=("configure   the CUDA backend is OFF (configure.log): nothing below would test it")
  failed=$((failed + 1))
  finish
fi
tests=(simulator_test contact_test gradient_test derivatives_test)
stage build cmake --build build/gpu -j "$(nproc)" --target moreau-demo moreau-bench-forward moreau-bench-gradient \
  "${tests[@]}"
stage ptxas bash scripts/ptxas_report.sh build/gpu
cuda_tests() {  # every test with "Cuda" in its name, in each binary; a skip is a failure here
  local rc=0
  for t in "${tests[@]}"; do
    build/gpu/tests/$t --gtest_filter="*Cuda*" || rc=1
  done
  return $rc
}
stage cuda-tests cuda_tests
if grep -q "\[  SKIPPED \]" "$logs/cuda-tests.log"; then
  summary+=("cuda-tests  a CUDA test skipped (cuda-tests.log): on a GPU machine none may")
  failed=$((failed + 1))
fi
sanitize() {  # memcheck over a small forward run (the demo) and a small adjoint run
  local cs=(compute-sanitizer --tool memcheck --error-exitcode 99)
  "${cs[@]}" build/gpu/moreau-demo --device cuda --n-env 512 --seconds 0.05 &&
    "${cs[@]}" build/gpu/bench/moreau-bench-gradient --device cuda --envs 512 --seconds 0.02 --trials 1 \
      --contact hard,hard_smooth_grad --memory-envs 512
}
stage memcheck sanitize
stage demo build/gpu/moreau-demo --device cuda
envs=16384,262144,1048576
stage forward build/gpu/bench/moreau-bench-forward --device cuda --envs "$envs" --contact none,hard \
  --json-out "$logs/forward.json"
stage gradient build/gpu/bench/moreau-bench-gradient --device cuda --envs "$envs" \
  --contact none,hard,hard_smooth_grad --json-out "$logs/gradient.json"
# the block size (SimulatorOptions::cuda_block) at one large batch, forward and forward+backward
stage blocks build/gpu/bench/moreau-bench-forward --device cuda --envs 262144 --contact hard \
  --cuda-block 64,128,256 --seconds 0.3 --trials 3 --json-out "$logs/blocks_forward.json"
stage blocks-gradient build/gpu/bench/moreau-bench-gradient --device cuda --envs 262144 --contact hard \
  --cuda-block 64,128,256 --seconds 0.3 --trials 3 --memory-envs 4096 --json-out "$logs/blocks_gradient.json"
finish
