#!/usr/bin/env bash
# Learning on the GPU, in one command on a machine with one NVIDIA GPU (H100 or H200, sm_90), no
# network and no package registry, whose Python 3.12 holds PyTorch 2.11 (CUDA 13), nanobind,
# scikit-build-core, pytest (with xdist and timeout), tensorboard, tqdm, matplotlib and imageio,
# with .gpu/ copied into the working tree (.gpu/debs: scripts/gpu_bundle.sh; .gpu/wheels:
# scripts/gpu_wheels.sh):
#   bash scripts/gpu_learn.sh                      # within a 540 s limit
# Stages, each with a time limit cut to what is left of MOREAU_GPU_LEARN_BUDGET (default 530 s,
# so that the whole script ends within 9 minutes); summary.txt gets a line as each ends, so a
# run cut short still reports what ran, and a failing stage does not stop the next:
#   deps        (30 s) unpack .gpu/debs (Eigen, nlohmann-json, tinyxml2 for the build) under
#               /opt/moreau-deps; install .gpu/wheels (rsl-rl-lib, gymnasium and their
#               requirements that the image lacks) into /tmp/moreau-site
#   build       (240 s) pip install . with the CUDA backend (sm_90), CMAKE_BUILD_PARALLEL_LEVEL = all
#               cores; fails unless moreau.built_with_cuda and a GPU is found
#   tests       (150 s) pytest python/tests (8 workers) with MOREAU_REQUIRE_CUDA=1: a CUDA test
#               that skips fails (python/tests/conftest.py); test_host_sync.py runs a SHAC
#               iteration and PPO steps under torch.cuda.set_sync_debug_mode("error")
#   shac        (up to 240 s of training, MOREAU_GPU_LEARN_SHAC_S) the preset walk_fast with
#               4,096 environments on the GPU (--max-minutes: a final model_<it>.pt and policy.pt),
#               a checkpoint every 25 iterations; figure shac_train.png (return, samples/s, the
#               iteration's time breakdown)
#   shac-curve  (60 s) its checkpoints (6, log-spaced) under hard contact with the usual protocol
#               (moreau.evaluation.learning_curve: 128 environments x 20 s, seed 1) on the GPU;
#               figure shac_curve.png
#   ppo         rsl_rl's PPO on the same task preset (trot_curriculum, hard contact, 4,096
#               environments, 24 steps each) for SHAC's training time when what is left allows
#               it, else for what is left (noted), skipped under 60 s; figure ppo_train.png
#   ppo-curve   (45 s) as shac-curve; figure ppo_curve.png
# $OUT (default /tmp/moreau-gpu-learn) gets at most 6 files: summary.txt (a line per stage, then
# the runs' figures: samples, samples/s, time breakdown, tracking errors), gpu_learn.tar.gz (every
# log, log.csv, config, curve JSON, policy.pt, machine.txt, the tests' junit XML) and the four
# figures. Exit status: the number of failed stages.
#
# MOREAU_GPU_LEARN_DRY=1: the same commands with tiny sizes on the CPU (64 environments, 20 s of
# training each, the curves on 16 environments x 2 s, the tests collected and test_host_sync.py
# run; no deps or build: the installed package), to check here that every command and option exists.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/stage.sh
OUT=${OUT:-/tmp/moreau-gpu-learn}
mkdir -p "$OUT"
dry=${MOREAU_GPU_LEARN_DRY:-0}
budget=${MOREAU_GPU_LEARN_BUDGET:-530}
t_begin=$SECONDS
work=$(mktemp -d)/gpu_learn
logs=$work/logs
runs=$work/runs
mkdir -p "$logs" "$runs"
export PYTHONUNBUFFERED=1
if [ "$dry" = 1 ]; then
  device=cpu envs=64 shac_s=${MOREAU_GPU_LEARN_SHAC_S:-20} protocol=(--num-envs 16 --seconds 2 --points 2 --sim-threads 1)
  shac_threads=(--sim-threads 1) ppo_threads=(--n-threads 1 --torch-threads 1)
else
  device=cuda envs=4096 shac_s=${MOREAU_GPU_LEARN_SHAC_S:-240} protocol=(--num-envs 128 --seconds 20 --seed 1 --points 6)
  shac_threads=() ppo_threads=()
fi
failed=0
: >"$OUT/summary.txt"
note() { echo "$1" | tee -a "$OUT/summary.txt"; }
left() { echo $((budget - (SECONDS - t_begin))); }
stage() {  # stage NAME WANT_S RESERVE_S COMMAND...: runs it for at most WANT_S, and no longer than
  # leaves RESERVE_S of the budget to the stages after it; its log in $logs/NAME.log. A shell
  # function gets the limit as its last argument and bounds its own commands with it.
  local name=$1 want=$2 reserve=$3 log=$logs/$1.log
  shift 3
  local limit=$(($(left) - reserve))
  [ "$limit" -gt "$want" ] && limit=$want
  if [ "$limit" -lt 10 ]; then
    note "$(printf '%-11s skipped: %s s of the budget left' "$name" "$(left)")"
    return 99
  fi
  local t0=$SECONDS
  run_limited "$limit" "$log" "$@"
  local rc=$? why=""
  [ "$rc" = 124 ] && why=" (past its ${limit} s)"
  note "$(printf '%-11s rc=%-3s %4ss%s' "$name" "$rc" "$((SECONDS - t0))" "$why")"
  return "$rc"
}
finish() {
  note "total       $((SECONDS - t_begin)) s, $failed failed stage(s)"
  cat "$logs/figures.txt" >>"$OUT/summary.txt" 2>/dev/null
  # the runs without their resumable checkpoints (model_*.pt) and TensorBoard files (log.csv has it all)
  tar -czf "$OUT/gpu_learn.tar.gz" -C "$(dirname "$work")" --exclude='model_*.pt' --exclude='events.out.*' gpu_learn
  ls -l "$OUT"
  exit "$failed"
}
{ nvidia-smi; python3 -c 'import sys, torch; print(sys.version); print("torch", torch.__version__, "cuda",
  torch.version.cuda, torch.cuda.is_available() and torch.cuda.get_device_name())'; nproc; free -g; } \
  >"$logs/machine.txt" 2>&1
head -n 12 "$logs/machine.txt"

# ---- deps and build ------------------------------------------------------------------
deps=/opt/moreau-deps
site=/tmp/moreau-site
install_deps() {
  mkdir -p "$deps" /usr/include/libqhull_r  # (MuJoCo's CMake package names that folder)
  for f in .gpu/debs/*.deb; do dpkg -x "$f" "$deps" || return 1; done
  ls .gpu/wheels/*.whl || return 1
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
    .gpu/wheels/*.whl
}
build() {
  local nvcc
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) timeout -k 5 "$(($1 - 10))" python3 -m pip install --root-user-action=ignore \
    --no-build-isolation --no-deps -Ccmake.define.CMAKE_CUDA_ARCHITECTURES=90 \
    -Ccmake.define.CMAKE_CUDA_COMPILER="$nvcc" . || return 1
  (cd /tmp && python3 -c 'import moreau, torch, sys
print("moreau", moreau.__file__, "built_with_cuda", moreau.built_with_cuda, "cuda_available", moreau.cuda_available())
sys.exit(not (moreau.built_with_cuda and moreau.cuda_available() and torch.cuda.is_available()))')
}
if [ "$dry" = 1 ]; then
  note "deps        dry run: the installed packages"
  note "build       dry run: the installed moreau ($(python3 -c 'import moreau; print(moreau.__file__)'))"
else
  stage deps 30 400 install_deps
  export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
  export CMAKE_PREFIX_PATH=$deps/usr
  export LD_LIBRARY_PATH=$deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
  export PATH=/usr/local/cuda/bin:$PATH
  if ! stage build 240 280 build; then
    note "build       failed: nothing below can run"
    finish
  fi
fi

# ---- tests ---------------------------------------------------------------------------
tests() {
  if [ "$dry" = 1 ]; then
    python3 -m pytest -q -p no:cacheprovider --co python/tests | tail -n 3 &&
      timeout -k 5 "$1" python3 -m pytest -q -p no:cacheprovider -rxs python/tests/test_host_sync.py
  else
    # test_mujoco_engine.py (moreau against MuJoCo, CPU only) stays with the CPU suite: the
    # image has no mujoco, whose wheels (about 22 MB) would not fit the carried .gpu/
    MOREAU_REQUIRE_CUDA=1 timeout -k 5 "$1" python3 -m pytest -q -p no:cacheprovider -n 8 --timeout 100 -rfEs \
      --ignore python/tests/test_mujoco_engine.py --junitxml "$logs/pytest.xml" python/tests
  fi
}
stage tests 150 270 tests

# ---- figures and figures.txt -----------------------------------------------------------
figures() {  # figures RUN NAME: NAME_train.png from RUN/log.csv, a line per run in figures.txt
  python3 - "$1" "$2" "$OUT" "$logs/figures.txt" <<'PY'
import csv, os, statistics, sys
run, name, out, txt = sys.argv[1:]
path = os.path.join(run, "log.csv")
if not os.path.exists(path):
    sys.exit(f"{name}: no {path}")
rows = list(csv.DictReader(open(path)))
f = lambda r, k: float(r[k]) if r.get(k) not in (None, "") else float("nan")  # noqa: E731
x = [f(r, "env_steps") / 1e6 for r in rows]
last = rows[-1]
fps = statistics.median(f(r, "fps") for r in rows)
line = (f"{name}: {len(rows)} iterations, {f(last, 'env_steps') / 1e6:.2f} M samples in {f(last, 'wall_time'):.0f} s "
        f"of iterations; median {fps:.3g} samples/s; last episode return {f(last, 'episode_return'):.3g}")
breakdown = [k for k in ("time_env_step", "time_policy", "time_backward", "time_critic") if k in last]
if breakdown:
    line += "; per iteration " + ", ".join(
        f"{k[5:]} {statistics.median(f(r, k) for r in rows) * 1e3:.1f} ms" for k in breakdown)
with open(txt, "a") as fh:
    fh.write(line + "\n")
print(line)
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig, axes = plt.subplots(1, 3 if breakdown else 2, figsize=(13 if breakdown else 9, 3.4))
axes[0].plot(x, [f(r, "episode_return") for r in rows])
axes[0].set_ylabel("episode return")
axes[1].plot(x, [f(r, "fps") for r in rows])
axes[1].set_ylabel("samples/s")
if breakdown:
    bottom = [0.0] * len(rows)
    for k in breakdown:
        y = [f(r, k) for r in rows]
        axes[2].fill_between(x, bottom, [b + v for b, v in zip(bottom, y)], label=k[5:], step="mid")
        bottom = [b + v for b, v in zip(bottom, y)]
    axes[2].set_ylabel("seconds per iteration")
    axes[2].legend(fontsize=8)
for ax in axes:
    ax.set_xlabel("environment samples [M]")
fig.suptitle(f"{name} on {os.environ.get('MOREAU_GPU_LEARN_DEVICE', '')}", fontsize=10)
fig.tight_layout()
fig.savefig(os.path.join(out, f"{name}_train.png"), dpi=90)
PY
}
curve() {  # curve RUN NAME LIMIT: the checkpoints under hard contact, NAME_curve.png, a line in figures.txt
  timeout -k 5 "$3" python3 -m moreau.evaluation.learning_curve "$1" --contact hard --device "$device" "${protocol[@]}" \
    --plot "$OUT/$2_curve.png" --summary "$1/curve_summary.json" &&
    python3 - "$1" "$2" "$logs/figures.txt" <<'PY'
import json, os, sys
run, name, txt = sys.argv[1:]
rows = json.load(open(os.path.join(run, "curve_hard.json")))
r = rows[-1]
line = (f"{name} under hard contact ({r['protocol']['num_envs']} envs x {r['protocol']['seconds']:g} s): "
        f"iteration {r['iteration']} ({r['env_steps_trained'] / 1e6:.2f} M samples): planar {r['lin_vel_error']:.3f} m/s, "
        f"yaw {r['yaw_rate_error']:.3f} rad/s, falls {r['falls_per_minute']:.2f}/min, trot "
        f"{r.get('trot_fraction', float('nan')):.2f}; {len(rows)} checkpoints evaluated")
open(txt, "a").write(line + "\n")
print(line)
PY
}
export MOREAU_GPU_LEARN_DEVICE=$device

# ---- SHAC ----------------------------------------------------------------------------
shac_train() {
  local budget_s=$(($1 - 40))  # start-up and the last iteration and checkpoint within the limit
  [ "$budget_s" -gt "$shac_s" ] && budget_s=$shac_s
  echo "$budget_s" >"$logs/shac_seconds"
  timeout -k 5 "$1" python3 -m moreau.trainers.shac --preset walk_fast --device "$device" --num-envs "$envs" --seed 0 \
    --logdir "$runs/shac" --max-minutes "$(python3 -c "print($budget_s / 60)")" --save-interval 25 --no-progress \
    "${shac_threads[@]}" && figures "$runs/shac" shac
}
stage shac $((shac_s + 40)) 70 shac_train
stage shac-curve 60 10 curve "$runs/shac" shac

# ---- PPO -----------------------------------------------------------------------------
ppo_train() {
  timeout -k 5 "$1" python3 -m moreau.trainers.ppo --task locomotion --task-preset trot_curriculum --contact hard --device "$device" \
    --num-envs "$envs" --steps-per-env 24 --iterations 100000 --seed 0 --log-dir "$runs/ppo" --eval-steps 0 \
    --save-interval 25 --max-minutes "$(python3 -c "print($ppo_s / 60)")" "${ppo_threads[@]}" && figures "$runs/ppo" ppo
}
trained=$(python3 -c "import csv; print(int(float(list(csv.DictReader(open('$runs/shac/log.csv')))[-1]['wall_time'])))" \
  2>/dev/null || echo "$shac_s")
ppo_s=$(($(left) - 30 - 45 - 10))  # start-up, ppo-curve, the archive
if [ "$ppo_s" -ge "$trained" ]; then
  ppo_s=$trained
  note "ppo         for SHAC's ${trained} s of training"
elif [ "$ppo_s" -ge 60 ]; then
  note "ppo         for ${ppo_s} s, less than SHAC's ${trained} s: what was left"
fi
if [ "$ppo_s" -ge 60 ] || [ "$dry" = 1 ]; then
  [ "$dry" = 1 ] && ppo_s=$shac_s
  stage ppo $((ppo_s + 30)) 55 ppo_train
  stage ppo-curve 45 10 curve "$runs/ppo" ppo
else
  note "ppo         skipped: $(left) s of the budget left (SHAC trained ${trained} s)"
fi
finish
