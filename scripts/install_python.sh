#!/usr/bin/env bash
# Builds and installs the Python package (scikit-build-core drives the top-level CMakeLists.txt
# with MOREAU_PYTHON=ON; its build in build/py/ is reused, so a second run only rebuilds what
# changed). Used by demo.sh and test.sh after setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
pip_flags=(--quiet --root-user-action=ignore --no-build-isolation)
python3 -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))' &&
  pip_flags+=(--break-system-packages)  # a Debian system Python (PEP 668)
CMAKE_BUILD_PARALLEL_LEVEL="${MOREAU_JOBS:-2}" python3 -m pip install "${pip_flags[@]}" .
