#!/usr/bin/env bash
# The GPU check, in one command on a machine with an NVIDIA GPU and no network (H200, sm_90),
# with .gpu/ (scripts/gpu_bundle.sh, scripts/gpu_prebuild.sh) copied into the working tree:
#   bash scripts/gpu_check.sh                      # within a 540 s limit
# Unpacks the packages of scripts/gpu_bundle.sh (carried in .gpu/) under /opt/moreau-deps,
# configures with nvcc named explicitly and stops unless the CUDA backend is on, builds only
# the targets below with every core, then runs: the ptxas resources of every kernel; the CUDA
# tests (CUDA vs CPU, MOREAU_CUDA_SYNC=1), failing if any of them skips; the demo; the two
# layouts (cuda_team 0 and 8), forward at 16,384, 262,144 and 1,048,576 environments and
# forward+backward at the first two, and racecheck on the team's; with --prebuilt, both
# benchmarks built with __launch_bounds__ (forward (256, 4), adjoint (256, 2)) beside the default
# ones (stage bounds); the forward of kicked robots (stage kicked); the forward and
# forward+backward benchmarks (every contact mode) at those three sizes; compute-sanitizer memcheck over a small forward and adjoint run; both benchmarks again at
# 262,144 with 64, 128 and 256 threads per block (--cuda-block); Nsight
# Compute on one forward and one adjoint launch. Each stage has a time limit;
# a failing stage is reported and the next one still runs.
# The run of 2026-12-04 on an H200 (commit bac61e1) took 424 s before the stages bounds and
# kicked were added; with them it may approach a 600 s limit. The stages go most wanted first, and summary.txt is written
# as each ends, so a call cut short still reports what ran.
#
# --prebuilt: use the binaries scripts/gpu_prebuild.sh built here with the same configuration
# (carried as .gpu/prebuilt.tar.xz) instead of building there: the CUDA translation unit alone
# takes minutes of one core, which 15 minutes of GPU time cannot spare twice. The ptxas stage is
# then skipped (the same nvcc gives the same figures here: scripts/ptxas_report.sh).
#   bash scripts/gpu_check.sh --prebuilt           # within a 540 s limit
# $OUT gets two files: summary.txt (one line per stage, written as each ends) and
# gpu_check.tar.gz (every log and JSON). Exit status: the number of failed stages (0: all passed).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/stage.sh
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
prebuilt=0
[ "${1:-}" = --prebuilt ] && prebuilt=1
failed=0
: >"$OUT/summary.txt"
note() { echo "$1" | tee -a "$OUT/summary.txt"; }
stage() {  # stage NAME LIMIT_S COMMAND...: runs it with its log in $logs/NAME.log, notes the exit status
  local name=$1 limit=$2 log=$logs/$1.log
  shift 2
  local t0=$SECONDS
  run_limited "$limit" "$log" "$@"
  local rc=$? why=""
  [ "$rc" = 124 ] && why=" (past its ${limit} s)"
  [ "$rc" = 1 ] && grep -q "^target: .*FAIL\| FAIL " "$log" && why=" (a benchmark target FAILs: see its log)"
  note "$(printf '%-15s rc=%-3s %4ss%s' "$name" "$rc" "$((SECONDS - t0))" "$why")"
  return "$rc"
}
finish() {
  cat "$OUT/summary.txt"
  tar -czf "$OUT/gpu_check.tar.gz" -C "$(dirname "$logs")" gpu_check
  exit "$failed"
}
{ nvidia-smi; echo "nvcc: ${nvcc:-not found}"; [ -n "$nvcc" ] && "$nvcc" --version; cmake --version; nproc; } \
  >"$logs/machine.txt" 2>&1
build=build/gpu
tests=(simulator_test contact_test gradient_test derivatives_test)
if [ "$prebuilt" = 1 ]; then
  # scripts/gpu_prebuild.sh's binaries: their compiled-in paths (the assets) name its checkout
  mkdir -p "$build" && tar -xJf .gpu/prebuilt.tar.xz -C "$build" || { note "prebuilt    .gpu/prebuilt.tar.xz missing or unreadable"; failed=1; finish; }
  src=$(sed -n 's/^moreau_SOURCE_DIR:STATIC=//p' "$build/CMakeCache.txt")
  if [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; fi
  if ! grep -q "^MOREAU_CUDA:BOOL=ON" "$build/CMakeCache.txt"; then
    note "prebuilt    built with the CUDA backend OFF (CMakeCache.txt): nothing below would test it"
    failed=1
    finish
  fi
  note "prebuilt    $(cat "$build/BUILT_FROM") (ptxas: see scripts/ptxas_report.sh on the build machine)"
else
  if [ -z "$nvcc" ]; then
    note "configure   no nvcc on PATH or in /usr/local/cuda/bin: the CUDA backend cannot be built"
    failed=1
    finish
  fi
  stage configure 120 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOREAU_CUDA=ON \
    -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES=90 -DMOREAU_TESTS=ON -DMOREAU_BENCH=ON -DMOREAU_PYTHON=OFF
  if ! grep -q "moreau: CUDA backend ON" "$logs/configure.log"; then
    note "configure   the CUDA backend is OFF (configure.log): nothing below would test it"
    failed=$((failed + 1))
    finish
  fi
  stage build 420 cmake --build "$build" -j "$(nproc)" --target moreau-demo moreau-bench-forward moreau-bench-gradient \
    "${tests[@]}"
  stage ptxas 300 bash scripts/ptxas_report.sh "$build"
fi
cuda_tests() {  # every test with "Cuda" in its name, in each binary; a skip is a failure here
  local rc=0 limit=$(($1 / ${#tests[@]}))
  for t in "${tests[@]}"; do
    MOREAU_CUDA_SYNC=1 timeout -k 5 "$limit" "$build/tests/$t" --gtest_filter="*Cuda*" || rc=1
  done
  return $rc
}
stage cuda-tests 200 cuda_tests
if grep -q "\[  SKIPPED \]" "$logs/cuda-tests.log"; then
  note "cuda-tests  a CUDA test skipped (cuda-tests.log): on a GPU machine none may"
  failed=$((failed + 1))
fi
stage demo 40 "$build/moreau-demo" --device cuda
envs=16384,262144,1048576
# the two layouts of the kernels side by side, the first timings (SimulatorOptions::cuda_team:
# one thread per environment, or 8 lanes with the scratch in shared memory), then racecheck
# over the team's shared memory
stage team 75 "$build/bench/moreau-bench-forward" --device cuda --envs "$envs" --contact hard,smooth \
  --cuda-team 0,8 --seconds 0.3 --trials 3 --json-out "$logs/team.json"
stage team-gradient 90 "$build/bench/moreau-bench-gradient" --device cuda --envs 16384,262144 --contact hard,smooth \
  --cuda-team 0,8 --seconds 0.3 --trials 3 --memory-envs 4096 --json-out "$logs/team_gradient.json"
racecheck() {
  timeout -k 5 "$1" compute-sanitizer --tool racecheck --error-exitcode 99 "$build/bench/moreau-bench-forward" \
    --device cuda --envs 256 --contact hard,smooth --cuda-team 8 --seconds 0.02 --trials 1
}
stage racecheck 60 racecheck
# the __launch_bounds__ variants (prebuilt only: scripts/gpu_prebuild.sh): forward kernels (256, 4),
# adjoint (256, 2), beside the default build, at the sizes that fill the chip; before the long
# stages, so that a run cut short still times them
bounds() {  # every run, even after one whose targets FAIL (exit 1): the variants are compared, not judged
  local suffix bin rc=0 r each=$(($1 / 4))
  for suffix in "" -bounds; do
    bin="$build/bench/moreau-bench-forward$suffix"
    [ -x "$bin" ] || { echo "no $bin: scripts/gpu_prebuild.sh builds it"; return 2; }
    echo "== $bin"
    timeout -k 5 "$each" "$bin" --device cuda --envs 262144,1048576 --contact none,hard --seconds 0.3 --trials 3 ||
      { r=$?; [ "$r" -gt "$rc" ] && rc=$r; }
    bin="$build/bench/moreau-bench-gradient$suffix"
    echo "== $bin"
    timeout -k 5 "$each" "$bin" --device cuda --envs 262144 --contact hard --seconds 0.3 --trials 3 \
      --memory-envs 4096 || { r=$?; [ "$r" -gt "$rc" ] && rc=$r; }
  done
  return "$rc"
}
if [ "$prebuilt" = 1 ]; then
  stage bounds 100 bounds
else
  note "bounds      not run: the variant is built by scripts/gpu_prebuild.sh (--prebuilt)"
fi
# kicked robots (feet sliding: docs/contact.md, "Sliding feet"), where a warp waits for its
# slowest environment's contact solve; the standing rows below are the solve's easiest case
stage kicked 45 "$build/bench/moreau-bench-forward" --device cuda --envs 262144 --contact hard,smooth --kick \
  --seconds 0.3 --trials 3 --json-out "$logs/kicked.json"
stage forward 150 "$build/bench/moreau-bench-forward" --device cuda --envs "$envs" --contact none,hard,smooth \
  --json-out "$logs/forward.json"
# soft contact's substeps make it the slow mode: on the H200 (2026-12-04) all four modes at these
# three sizes did not end in 150 s; its forward rate is also in the gradient stage (step_pure)
stage forward-soft 90 "$build/bench/moreau-bench-forward" --device cuda --envs 16384,262144 --contact soft \
  --json-out "$logs/forward_soft.json"
stage gradient 180 "$build/bench/moreau-bench-gradient" --device cuda --envs "$envs" \
  --contact none,hard,soft,smooth,hard_smooth_grad --json-out "$logs/gradient.json"
sanitize() {  # memcheck over a small forward run (the demo) and a small adjoint run; the
  # benchmark's own exit status (1 where a target FAILs) is not memcheck's: each run must end
  # with memcheck's "0 errors"
  local cs=(timeout -k 5 $(($1 / 2)) compute-sanitizer --tool memcheck --error-exitcode 99)
  "${cs[@]}" "$build/moreau-demo" --device cuda --n-env 512 --seconds 0.05
  "${cs[@]}" "$build/bench/moreau-bench-gradient" --device cuda --envs 512 --seconds 0.02 --trials 1 \
    --contact hard,soft,smooth,hard_smooth_grad --memory-envs 512
  [ "$(grep -c "ERROR SUMMARY: 0 errors" "$logs/memcheck.log")" = 2 ]
}
stage memcheck 100 sanitize
# the block size (SimulatorOptions::cuda_block) at one large batch, forward and forward+backward
stage blocks 45 "$build/bench/moreau-bench-forward" --device cuda --envs 262144 --contact hard \
  --cuda-block 64,128,256 --seconds 0.3 --trials 3 --json-out "$logs/blocks_forward.json"
stage blocks-gradient 60 "$build/bench/moreau-bench-gradient" --device cuda --envs 262144 --contact hard \
  --cuda-block 64,128,256 --seconds 0.3 --trials 3 --memory-envs 4096 --json-out "$logs/blocks_gradient.json"
# Nsight Compute on the first launch of the forward (262,144 environments) and of the adjoint
# (131,072: the rollout of the memory figures comes first): speed of light, occupancy, memory
# workload (is the kernel bound by its local memory traffic?). Passes when both were profiled.
profile() {
  local sec=(--section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis --section LaunchStats)
  timeout -k 5 $(($1 / 2)) ncu --kernel-name regex:control_step_fwd --launch-count 1 "${sec[@]}" \
    "$build/moreau-demo" --device cuda --n-env 262144 --seconds 0.1
  timeout -k 5 $(($1 / 2)) ncu --kernel-name regex:pure_step_adj --launch-count 1 "${sec[@]}" \
    "$build/bench/moreau-bench-gradient" --device cuda --envs 131072 --seconds 0.02 --trials 1 --contact hard \
    --memory-envs 131072
  timeout -k 5 $(($1 / 3)) ncu --kernel-name regex:control_step_team --launch-count 1 "${sec[@]}" \
    "$build/bench/moreau-bench-forward" --device cuda --envs 262144 --contact hard --cuda-team 8 --seconds 0.05 \
    --trials 1
  [ "$(grep -c "Section: GPU Speed Of Light" "$logs/ncu.log")" = 3 ]
}
stage ncu 120 profile
finish
