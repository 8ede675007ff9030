#!/usr/bin/env bash
# Installs what moreau needs to build and test on a fresh Debian 12 machine (as root).
# The CUDA backend is built when nvcc (CUDA Toolkit) is on PATH or in /usr/local/cuda/bin.
set -euo pipefail
packages=(cmake ninja-build g++ libeigen3-dev nlohmann-json3-dev libgtest-dev googletest
          libbenchmark-dev libmujoco-dev libqhull-dev libtinyxml2-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
