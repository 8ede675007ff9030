#!/usr/bin/env bash
# Installs what moreau needs to build and test on a fresh Debian 12 machine (as root).
# The CUDA backend is built when nvcc (CUDA Toolkit) is on PATH or in /usr/local/cuda/bin.
set -euo pipefail
packages=(cmake ninja-build g++ libeigen3-dev nlohmann-json3-dev libgtest-dev googletest
          libbenchmark-dev libmujoco-dev libqhull-dev libtinyxml2-dev libpng-dev clang libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# Python packages of the Pinocchio cross-check (tests/python): skipped when already importable.
if ! python3 -c "import pinocchio, numpy, pytest" 2>/dev/null; then
  # (a Debian system Python refuses plain pip installs, PEP 668: then the second form)
  python3 -m pip install --quiet pin numpy pytest 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages pin numpy pytest
fi
# The Python package (python/, pyproject.toml): torch from PyPI (its Linux wheel brings CUDA
# libraries: ~4 GB, about a minute here), nanobind and scikit-build-core to build it with
# `pip install --no-build-isolation .` (scripts/test.sh), rsl-rl-lib (PPO baseline,
# moreau.rl.rsl_rl, moreau.trainers.ppo), gymnasium (moreau.rl.gymnasium), tensorboard, tqdm,
# matplotlib (moreau.trainers.shac logs and progress bar, moreau.evaluation plots), mujoco
# (moreau.evaluation.mujoco, a policy run in MuJoCo). Skipped when already importable.
if ! python3 -c "import torch, nanobind, scikit_build_core, pytest, numpy, rsl_rl, gymnasium, tensorboard, tqdm, matplotlib, mujoco" 2>/dev/null; then
  python3 -m pip install --quiet --root-user-action=ignore torch nanobind scikit-build-core pytest numpy rsl-rl-lib gymnasium tensorboard tqdm matplotlib mujoco 2>/dev/null ||
    python3 -m pip install --quiet --root-user-action=ignore --break-system-packages \
      torch nanobind scikit-build-core pytest numpy rsl-rl-lib gymnasium tensorboard tqdm matplotlib mujoco
fi
# MuJoCo's current release, the benchmarks' second CPU peer (bench/mujoco_peer.cc): the shared
# library and headers of PyPI's mujoco-core wheel, unpacked (not installed) where
# bench/CMakeLists.txt looks. Skipped when already there.
mujoco4="${MOREAU_MUJOCO4_DIR:-$HOME/.cache/moreau/mujoco-4.0.1}"
if [ ! -f "$mujoco4/mujoco/include/mujoco/mujoco.h" ]; then
  wheel_dir=$(mktemp -d)
  # (the wheel for CPython 3.11 whatever python3 is: only its libmujoco.so and headers are used)
  python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
    --platform "manylinux_2_28_$(uname -m)" -d "$wheel_dir" mujoco-core==4.0.1
  python3 -m zipfile -e "$wheel_dir"/mujoco_core-4.0.1-*.whl "$mujoco4"
  rm -rf "$wheel_dir"
fi
