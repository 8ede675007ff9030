#!/usr/bin/env bash
# Builds and runs every test: the release build (CUDA backend when nvcc is found; GPU tests
# skip with a message where no GPU is present), then the CPU suite under AddressSanitizer and
# UndefinedBehaviorSanitizer, the parsers' fuzzers, and the Python package's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The repository speaks of the product, not of how its work was organised: the checker's own
# test, then every tracked text file against scripts/process_words.txt.
python3 scripts/check_words.py --self-test
python3 scripts/check_words.py
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"
jobs=${MOREAU_JOBS:-2}
cmake --preset release -G Ninja
cmake --build --preset release -j "$jobs"
ctest --preset release -j "$jobs"
cmake --preset asan -G Ninja
cmake --build --preset asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --preset asan -j "$jobs"
# The three robot-format parsers fuzzed for 60 s each (scripts/fuzz.sh; clang's libFuzzer).
bash scripts/fuzz.sh --seconds 60
# The Python package (scripts/install_python.sh), then its tests (python/tests; CUDA tests skip
# with a message where no GPU is present).
MOREAU_JOBS="$jobs" bash scripts/install_python.sh
python3 -m pytest -q -p no:cacheprovider -rs python/tests
