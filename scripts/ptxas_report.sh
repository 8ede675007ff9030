#!/usr/bin/env bash
# Per-kernel resources of the CUDA backend as ptxas reports them (registers, stack frame,
# spill stores and loads per thread): recompiles cuda/cuda_backend.cu with the build's own
# command plus -Xptxas -v and prints one line per kernel. Needs nvcc, not a GPU.
#   bash scripts/ptxas_report.sh [BUILD_DIR]     # default build/release (configured with CUDA on)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
obj=host/CMakeFiles/moreau.dir/__/cuda/cuda_backend.cu.o
cmd=$(ninja -C "$build" -t commands "$obj" | tail -n 1)
[[ $cmd == *nvcc* ]] || { echo "ptxas_report: $build does not build cuda_backend.cu with nvcc (CUDA backend off?)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmd=${cmd//-o $obj/-o $tmp/k.o}
(cd "$build" && eval "$cmd -Xptxas -v") 2>"$tmp/ptxas.txt" >/dev/null
printf '%-52s %5s %6s %8s %7s %7s\n' kernel arch regs stack_B spill_st spill_ld
awk '
  /Compiling entry function/ { match($0, /_Z[A-Za-z0-9_]+/); name = substr($0, RSTART, RLENGTH);
                               match($0, /sm_[0-9]+a?/); arch = substr($0, RSTART, RLENGTH) }
  /bytes stack frame/ { frame = $1; st = $5; ld = $9 }
  /Used [0-9]+ registers/ { match($0, /Used [0-9]+ registers/); split(substr($0, RSTART, RLENGTH), r, " ");
                            print name, arch, r[2], frame, st, ld }
' "$tmp/ptxas.txt" | while read -r name arch regs frame st ld; do
  # e.g. pure_step_fwd_kernel<float,Dims<13,18,19,12,4,117,9,12>>: the scratch's size class (bodies, nv,
  # nq, nu, contact points, mass-matrix entries, dofs on a root-to-dof path, joint rows;
  # include/moreau/limits.h)
  pretty=$(echo "$name" | c++filt | sed -E 's/^(void )?(moreau::)?(\(anonymous namespace\)::)?//; s/\(.*$//;
                                             s/moreau:://g; s/ //g')
  printf '%-52s %5s %6s %8s %7s %7s\n' "$pretty" "$arch" "$regs" "$frame" "$st" "$ld"
done
