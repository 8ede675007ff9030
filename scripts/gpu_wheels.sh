#!/usr/bin/env bash
# Downloads, on this machine, the Python wheels that scripts/gpu_learn.sh installs on the GPU
# machine, which has no package registry: its image holds PyTorch 2.11 (CUDA 13), Python 3.12,
# numpy, onnx, onnxscript, tensorboard, cloudpickle, typing-extensions, tqdm, matplotlib, imageio,
# nanobind, scikit-build-core and pytest, but not these (the versions the tests here use; each a
# pure-Python wheel, about 1.8 MB together):
#   rsl-rl-lib 5.5.1        PPO (moreau.rl.rsl_rl, moreau.trainers.ppo)
#     tensordict 0.15.3     rsl_rl's observations (needs torch >= 2.11)
#       pyvers 0.2.3
#     GitPython 3.2.1       rsl_rl stores the code state of a run
#       gitdb 4.0.12
#         smmap 5.0.3
#   gymnasium 1.4.0         moreau.rl.gymnasium (its tests)
#     farama-notifications 0.0.6
# (each package's Requires-Dist, its METADATA, checked against the image's list of packages).
# Into .gpu/wheels (git-ignored; carried with .gpu). Usage: bash scripts/gpu_wheels.sh
set -euo pipefail
cd "$(dirname "$0")/.."
wheels=(rsl-rl-lib==5.5.1 tensordict==0.15.3 pyvers==0.2.3 GitPython==3.2.1 gitdb==4.0.12 smmap==5.0.3
        gymnasium==1.4.0 farama-notifications==0.0.6)
rm -rf .gpu/wheels
mkdir -p .gpu/wheels
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform any -d .gpu/wheels "${wheels[@]}"
# each wheel's requirements, for a check against the image's packages when a version changes
for w in .gpu/wheels/*.whl; do
  echo "$(basename "$w"): $(unzip -p "$w" '*/METADATA' | sed -n 's/^Requires-Dist: //p' | grep -v 'extra ==' |
    tr '\n' ';' | sed 's/;$//')"
done
ls -l .gpu/wheels
du -sh .gpu/wheels
