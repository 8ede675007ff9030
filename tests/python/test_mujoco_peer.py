"""moreau-mujoco-peer (bench/mujoco_peer.cc), the benchmarks' second CPU peer: MuJoCo's current
release (PyPI's mujoco-core wheel, unpacked by scripts/setup.sh) on moreau's exported model.

The same program built against Debian's MuJoCo 2.2.2 (moreau-mujoco-peer-debian) is the
reference: both must load the exported ANYmal C with its ground plane and contact settings and
settle it standing on its four feet at the same height, so that the benchmarks time the two
versions on one model. Paths from ctest (bench/CMakeLists.txt).
"""
import json
import os
import subprocess

import pytest

PEER = os.environ.get("MOREAU_MUJOCO_PEER", "")
DEBIAN = os.environ.get("MOREAU_MUJOCO_PEER_DEBIAN", "moreau-mujoco-peer-debian")
ASSETS = os.environ.get(
    "MOREAU_ASSETS_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "assets"))
ROBOT = os.path.join(ASSETS, "robots", "anymal_c.json")
# MuJoCo's soft contact: the settled height depends on solref/solimp and the solver, whose
# defaults both versions share (2.2.2 and 4.0.1 agree to 1e-15 m); 1 µm allows for solver changes.
HEIGHT_TOL = 1e-6


def run(exe, *args):
    out = subprocess.run([exe, "--robot", ROBOT, *args], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = [l for l in out.stdout.splitlines() if l.startswith("JSON ")]
    assert len(lines) == 1, out.stdout
    return json.loads(lines[0][5:])


def require_peer():
    # scripts/setup.sh fetches the wheel, so a missing peer is a broken set-up: it fails.
    if not PEER:
        pytest.fail("moreau-mujoco-peer not built: no mujoco-core wheel in "
                    f"{os.environ.get('MOREAU_MUJOCO4_DIR', '?')} (scripts/setup.sh fetches it)")


def test_both_versions_settle_the_model_alike():
    require_peer()
    ref = run(DEBIAN, "--contact", "hard", "--what", "settle")
    new = run(PEER, "--contact", "hard", "--what", "settle")
    assert ref["mujoco_version"].startswith("2.")
    assert int(new["mujoco_version"].split(".")[0]) >= 3, new["mujoco_version"]
    assert ref["settled"]["ncon"] == new["settled"]["ncon"] == 4
    assert 0.3 < ref["settled"]["base_height"] < 0.8
    assert abs(new["settled"]["base_height"] - ref["settled"]["base_height"]) < HEIGHT_TOL


@pytest.mark.parametrize("what", ["step", "transition_fd"])
def test_timings_are_reported(what):
    require_peer()
    out = run(PEER, "--contact", "hard", "--what", what, "--seconds", "0.02", "--trials", "2")
    assert out["what"] == what and len(out["rates"]) == 2
    assert all(r > 0 for r in out["rates"])


def test_bad_argument_is_a_clear_error():
    out = subprocess.run([DEBIAN, "--robot", ROBOT, "--what", "nothing"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2
    assert "--what: expected step, transition_fd or settle, got 'nothing'" in out.stderr
