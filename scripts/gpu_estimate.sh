#!/usr/bin/env bash
# The work of one environment's physics step on ANYmal C standing, per contact mode, counted by
# callgrind on the CPU (tools/step_count.cc): instructions (Ir) and data reads and writes (Dr,
# Dw) per physics step (docs/gpu.md turns them into the throughput estimate), and hard contact's
# instructions per kernels/ function (scripts/callgrind_kernels.py). Generic x86-64 code (no
# -march), float32, the CUDA backend's adjoint schedule (one tape).
#
#   bash scripts/gpu_estimate.sh [build-dir]   # default build/estimate; MOREAU_JOBS=N limits the build
#   MOREAU_ESTIMATE_FLAGS=-mfma bash scripts/gpu_estimate.sh build/estimate-fma
#                                              # with fused multiply-adds, as SASS has (a closer proxy)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/estimate}
mkdir -p "$build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOREAU_CUDA=OFF -DMOREAU_TESTS=OFF \
  -DMOREAU_BENCH=OFF -DMOREAU_CPU_ARCH=OFF "-DCMAKE_CXX_FLAGS=-g ${MOREAU_ESTIMATE_FLAGS:-}" > "$build/configure.log"
ninja -C "$build" ${MOREAU_JOBS:+-j "$MOREAU_JOBS"} moreau-step-count > "$build/build.log"
steps=20
printf "%-17s %-8s %10s %10s %10s\n" contact phase Ir/step Dr/step Dw/step
for contact in none hard smooth hard_smooth_grad soft; do
  tmp=$(mktemp -d)
  valgrind --tool=callgrind --collect-atstart=no --cache-sim=yes --callgrind-out-file="$tmp/cg.%p" \
    "$build/tools/moreau-step-count" --contact "$contact" --steps "$steps" > "$tmp/out" 2> "$tmp/err" ||
    { cat "$tmp/err" >&2; exit 1; }
  physics=$(sed -n 's/.* \([0-9]*\) physics steps each.*/\1/p' "$tmp/out")
  for phase in forward adjoint; do
    f=$(grep -l "^desc: Trigger: Client Request: $phase" "$tmp"/cg.*)
    python3 - "$f" "$contact" "$phase" $((steps * physics)) <<'PY'
import sys
path, contact, phase, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
lines = open(path).read().splitlines()
ev = next(l.split()[1:] for l in lines if l.startswith("events:"))
tot = dict(zip(ev, map(int, next(l.split()[1:] for l in lines if l.startswith("summary:") or l.startswith("totals:")))))
print(f"{contact:17s} {phase:8s} {tot['Ir'] / n:10.0f} {tot['Dr'] / n:10.0f} {tot['Dw'] / n:10.0f}")
PY
    cp "$f" "$build/callgrind.$contact.$phase"
  done
  rm -rf "$tmp"
done
# Where hard contact's instructions go, per kernels/ function (the line tables of the -g build).
for phase in forward adjoint; do
  echo; echo "hard, $phase:"
  python3 scripts/callgrind_kernels.py "$build/callgrind.hard.$phase" $((steps * physics)) 16
done
