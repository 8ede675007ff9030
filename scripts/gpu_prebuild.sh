#!/usr/bin/env bash
# Builds here, with nvcc and the CUDA backend on, the binaries scripts/gpu_check.sh --prebuilt
# runs on the GPU machine, and packs them (stripped) with the build's CMakeCache.txt into
# .gpu/prebuilt.tar.xz (git-ignored; carried with .gpu). Same configuration as gpu_check.sh's
# own build, without the MuJoCo 4 peer (its library is not on that machine). Run
# scripts/gpu_bundle.sh too: the binaries need its Debian libraries there.
#   bash scripts/gpu_prebuild.sh && bash scripts/gpu_bundle.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/gpu
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOREAU_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DMOREAU_TESTS=ON -DMOREAU_BENCH=ON -DMOREAU_PYTHON=OFF -DMOREAU_MUJOCO4_DIR= >/dev/null
grep -q "^MOREAU_CUDA:BOOL=ON" "$build/CMakeCache.txt" || { echo "gpu_prebuild: the CUDA backend is off" >&2; exit 1; }
bins=(moreau-demo bench/moreau-bench-forward bench/moreau-bench-gradient tests/simulator_test tests/contact_test
      tests/gradient_test tests/derivatives_test)
targets=()
for b in "${bins[@]}"; do targets+=("$(basename "$b")"); done
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
# the __launch_bounds__ experiments (cuda/CMakeLists.txt): both benchmarks again with
# MOREAU_CUDA_FORWARD_MIN_BLOCKS=4 and MOREAU_CUDA_ADJOINT_MIN_BLOCKS=2, run by gpu_check.sh's
# stage `bounds` beside the default build
cmake -S . -B "$build-bounds" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOREAU_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DMOREAU_TESTS=OFF -DMOREAU_BENCH=ON -DMOREAU_PYTHON=OFF -DMOREAU_MUJOCO4_DIR= \
  -DMOREAU_CUDA_FORWARD_MIN_BLOCKS=4 -DMOREAU_CUDA_ADJOINT_MIN_BLOCKS=2 >/dev/null
cmake --build "$build-bounds" -j "$(nproc)" --target moreau-bench-forward moreau-bench-gradient
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for b in "${bins[@]}"; do
  mkdir -p "$stage/$(dirname "$b")"
  strip -o "$stage/$b" "$build/$b"
done
for b in forward gradient; do
  strip -o "$stage/bench/moreau-bench-$b-bounds" "$build-bounds/bench/moreau-bench-$b"
done
cp "$build/CMakeCache.txt" "$stage/"
echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- CMakeLists.txt cuda host kernels include tests bench/*.cc bench/*.h bench/CMakeLists.txt || echo '+changes'), built $(date -u +%FT%TZ) on $(hostname)" \
  >"$stage/BUILT_FROM"
mkdir -p .gpu
tar -cJf .gpu/prebuilt.tar.xz -C "$stage" .
ls -l .gpu/prebuilt.tar.xz
