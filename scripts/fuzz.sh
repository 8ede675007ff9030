#!/usr/bin/env bash
# Fuzzes moreau's three robot-format parsers with libFuzzer (clang; AddressSanitizer, leak
# checks and UndefinedBehaviorSanitizer): URDF and MJCF import, the JSON format parsed and
# compiled. Each runs --seconds N (default 60: the README's test command) or --minutes N (a long
# run), from its seed corpus (tests/fuzz/corpus_{urdf,mjcf}, assets/robots for JSON) and the
# corpus earlier runs left in runs/fuzz/corpus_<format>, which it keeps. Fails on any crash, leak
# or sanitizer report (log and reproducer in runs/fuzz/); prints one line per parser.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=60
case "${1:-}" in
  --seconds) seconds=$2 ;;
  --minutes) seconds=$(($2 * 60)) ;;
  "") ;;
  *) echo "usage: $0 [--seconds N | --minutes N]" >&2; exit 2 ;;
esac
mkdir -p build runs/fuzz
cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ -DMOREAU_FUZZ=ON \
  -DMOREAU_CUDA=OFF -DMOREAU_BENCH=OFF > build/fuzz-configure.log
cmake --build build/fuzz -j "${MOREAU_JOBS:-2}" --target fuzz_urdf fuzz_mjcf fuzz_json > build/fuzz-build.log
status=0
for format in urdf mjcf json; do
  corpus=runs/fuzz/corpus_$format seeds=tests/fuzz/corpus_$format log=runs/fuzz/$format.log
  [ "$format" = json ] && seeds=assets/robots
  dict=()
  [ -f "tests/fuzz/$format.dict" ] && dict=(-dict="tests/fuzz/$format.dict")
  mkdir -p "$corpus"
  if ! "build/fuzz/tests/fuzz/fuzz_$format" "${dict[@]}" -max_total_time="$seconds" -print_final_stats=1 \
      -detect_leaks=1 -artifact_prefix="runs/fuzz/${format}_" "$corpus" "$seeds" > "$log" 2>&1; then
    echo "fuzz_$format: FAILED after at most $seconds s: see $log (reproducer runs/fuzz/${format}_*)"
    grep -m 5 -E "ERROR|SUMMARY|Test unit written" "$log" || true
    status=1
    continue
  fi
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}')
  cov=$(grep -o 'DONE *cov: [0-9]*' "$log" | awk '{print $3}')
  echo "fuzz_$format: $seconds s, $execs executions, coverage $cov, corpus $(ls "$corpus" | wc -l) inputs, no crash"
done
exit $status
