#!/usr/bin/env bash
# Gathers, on this machine, what the GPU machine (an NVIDIA H200 without network access)
# lacks to build and benchmark moreau: it has nvcc, CMake, ninja and PyTorch but no Debian
# packages and no network. Downloads the .deb files of Eigen, nlohmann-json, GoogleTest,
# Google Benchmark, tinyxml2, MuJoCo (with its libraries) and the OpenGL libraries MuJoCo's
# CMake package looks for into .gpu/debs (git-ignored, about 3 MB), which scripts/gpu_check.sh
# unpacks there. Then, on the GPU machine, with .gpu/ copied into the working tree:
#   bash scripts/gpu_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .gpu/debs
cd .gpu/debs
apt-get download libeigen3-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev libbenchmark1debian \
  libtinyxml2-dev libtinyxml2-9 libmujoco-dev libmujoco2.2.2 libccd2 liblodepng0 libqhull-r8.0 \
  libopengl-dev libopengl0 libgl-dev libgl1 libglx-dev libglx0 libglvnd0
ls -l
