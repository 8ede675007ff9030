#!/usr/bin/env bash
# Builds and runs every test: the release build (CUDA backend when nvcc is found; GPU tests
# skip with a message where no GPU is present), then the CPU suite under AddressSanitizer and
# UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"
jobs=${MOREAU_JOBS:-2}
cmake --preset release -G Ninja
cmake --build --preset release -j "$jobs"
ctest --preset release -j "$jobs"
cmake --preset asan -G Ninja
cmake --build --preset asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --preset asan -j "$jobs"
# The Python package: build and install it (scikit-build-core drives this CMakeLists.txt with
# MOREAU_PYTHON=ON; its build in build/py/ is reused, so a second run only rebuilds what changed),
# then its tests (python/tests; CUDA tests skip with a message where no GPU is present).
pip_flags=(--quiet --root-user-action=ignore --no-build-isolation)
python3 -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))' &&
  pip_flags+=(--break-system-packages)  # a Debian system Python (PEP 668)
CMAKE_BUILD_PARALLEL_LEVEL="$jobs" python3 -m pip install "${pip_flags[@]}" .
python3 -m pytest -q -p no:cacheprovider -rs python/tests
