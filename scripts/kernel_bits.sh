#!/usr/bin/env bash
# Whether two revisions' kernels compute the same bits (docs/gpu.md, "Order of work": a stage of
# the team layout must leave the one-lane results as they were). Builds and installs moreau at
# each revision (a git worktree; the working tree for "."), without fused multiply-adds
# (generic x86-64, -ffp-contract=off: with them GCC fuses whichever products a function's shape
# offers, so bits differ with any change of shape), builds tools/bits/step_bits.cc against each
# and compares what they write for ANYmal C, for two stacked balls (tools/bits/stacked_balls.xml:
# a contact between two bodies of the robot) and for a box resting on four corners
# (tools/bits/resting_box.xml: the contact adjoint's least-squares solve): per file (robot, dtype,
# contact mode, tape schedule) the values that differ and the largest relative difference.
#
#   bash scripts/kernel_bits.sh OLD [NEW]   # revisions; NEW defaults to the working tree (.)
#   MOREAU_BITS_FLAGS=-mfma bash scripts/kernel_bits.sh OLD   # with x86-64-v3's fused multiply-adds
# Exit status 1 if any value differs. Builds under build/bits/ (one tree per revision, kept).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: bash scripts/kernel_bits.sh OLD [NEW]" >&2; exit 2; }
root=$PWD
flags=${MOREAU_BITS_FLAGS:--ffp-contract=off}
jobs=${MOREAU_JOBS:-$(nproc)}
mkdir -p build/bits
run_rev() {  # REV -> build/bits/<name>/out
  local rev=$1 src name
  if [ "$rev" = . ]; then
    src=$root name=worktree
  else
    name=$(git rev-parse --short "$rev")
    src=$root/build/bits/src-$name
    git worktree prune  # forgets worktrees whose folder was deleted with build/
    [ -d "$src" ] || git worktree add --detach "$src" "$rev" > /dev/null
  fi
  local b=$root/build/bits/$name$(echo "$flags" | tr -c 'a-z0-9\n' '_')
  echo "kernel_bits: $rev ($name) in $b" >&2
  cmake -S "$src" -B "$b/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOREAU_CUDA=OFF -DMOREAU_TESTS=OFF \
    -DMOREAU_BENCH=OFF -DMOREAU_CPU_ARCH=OFF "-DCMAKE_CXX_FLAGS=$flags" -DCMAKE_INSTALL_PREFIX="$b/prefix" \
    > "$b.configure.log"
  cmake --build "$b/build" -j "$jobs" > "$b.build.log"
  cmake --install "$b/build" > /dev/null
  cmake -S tools/bits -B "$b/bits" -G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=$flags" \
    -DCMAKE_PREFIX_PATH="$b/prefix" > /dev/null
  cmake --build "$b/bits" > /dev/null
  rm -rf "$b/out"
  mkdir -p "$b/out/anymal_c" "$b/out/stacked_balls" "$b/out/resting_box"
  "$b/bits/moreau-step-bits" assets/robots/anymal_c.json "$b/out/anymal_c"
  "$b/bits/moreau-step-bits" tools/bits/stacked_balls.xml "$b/out/stacked_balls" 0  # the pair touching
  "$b/bits/moreau-step-bits" tools/bits/resting_box.xml "$b/out/resting_box"
  echo "$b/out"
}
old=$(run_rev "$1")
new=$(run_rev "${2:-.}")
python3 - "$old" "$new" <<'PY'
import pathlib, sys
import numpy as np
old, new = map(pathlib.Path, sys.argv[1:])
def read(path):
    b = path.read_bytes()
    n, nq, nv, nu = np.frombuffer(b[:16], dtype=np.int32)
    k = n * (2 * nq + 2 * nv + nu + 1)
    x = np.frombuffer(b[16:16 + 8 * k])
    return x[:n * (nq + nv)], x[n * (nq + nv):], b[16 + 8 * k:]
def compare(x, y):
    bad = int(np.sum(x.view(np.int64) != y.view(np.int64)))
    rel = float(np.max(np.abs(x - y) / np.maximum(np.abs(x), 1e-300))) if bad else 0.0
    return f"{bad:5d} of {x.size:5d} differ (max relative {rel:.1e})", bad
differ = 0
print(f"{'file':45s} {'step (q_out, v_out)':40s} {'adjoint (q, v, action, base mass)':40s} status")
for f in sorted(old.glob("*/*.bin")):
    (fa, ga, sa), (fb, gb, sb) = read(f), read(new / f.parent.name / f.name)
    (tf, bf), (tg, bg) = compare(fa, fb), compare(ga, gb)
    differ += bool(bf or bg or sa != sb)
    print(f"{f.parent.name + '/' + f.stem:45s} {tf:40s} {tg:40s} {'same' if sa == sb else 'DIFFERS'}")
print("kernel_bits: identical" if not differ else f"kernel_bits: {differ} files differ")
sys.exit(1 if differ else 0)
PY
