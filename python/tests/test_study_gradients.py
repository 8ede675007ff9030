"""moreau.studies.gradients: the closed-loop return's analytic gradient against central finite
differences (double-checked pipeline), and --quick end to end."""
import json
import os

import pytest
import torch

from moreau.studies.gradients import main, returns, start_states, study_env
from moreau.trainers.checkpoints import load_policy

# The walk preset's policy (results/gradients/README.md was measured with it). Central differences
# need every action farther than h from the ±1 clip: the walk_fast policy's tanh saturates
# (|a| up to 0.998 at these start states), where a 3e-3 step straddles the clip's kink.
POLICY = os.path.join(os.path.dirname(__file__), "..", "..", "results", "study_b", "walk", "policies",
                      "shac_smooth.pt")


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("contact", ["smooth", "hard"])
def test_return_gradient_matches_central_differences(contact):
    """∂J/∂b of a 3-step return with the policy in the loop, against central differences of J
    in each of the 12 action-offset coordinates (h = 3e-3, float32): within 1 %."""
    pol = load_policy(POLICY)
    meta = pol.meta["env"]
    s = start_states(pol, meta, 2, seconds=0.5)
    b = torch.zeros(2, 12, requires_grad=True)
    j = returns(study_env(meta, 2, contact, {}), pol, s, b, [3], 0.99)[3]
    (g,) = torch.autograd.grad(j.sum(), b)
    h, e = 3e-3, torch.eye(12)
    bias = torch.cat([h * e, -h * e]).repeat_interleave(2, 0)  # row 2k + i: offset k, start i
    with torch.no_grad():
        jj = returns(study_env(meta, 48, contact, {}), pol, s, bias, [3], 0.99)[3].reshape(2, 12, 2)
    fd = ((jj[0] - jj[1]) / (2 * h)).T
    assert g.abs().max() > 1e-4
    assert ((g - fd).norm(dim=1) / g.norm(dim=1)).max() < 1e-2


def test_quick_end_to_end(tmp_path):
    assert main(["--quick", "--policy", POLICY, "--out", str(tmp_path)]) == 0
    res = json.loads((tmp_path / "gradients.json").read_text())["results"]
    assert sorted(res) == ["hard", "smooth k=300"]
    for rows in res.values():
        assert [r["horizon"] for r in rows] == [1, 4]
        for r in rows:
            # The analytic gradient points where the smoothed finite differences do, up to their noise
            # (4 pairs: the FD ceiling is 0.57-0.66; measured cosines 0.40-0.60, hard and smooth, H 1
            # and 4). A gradient of the wrong sign gives about -0.5, a zero or an unrelated one about
            # 0 (± 0.15 over 4 starts of 12 coordinates); its size is the FD estimate's (0.5-0.9 of it).
            assert r["finite"] and r["cosine"] > 0.3, r
            assert 0.2 < r["grad_norm"] / r["fd_norm"] < 2.0, r
    assert (tmp_path / "gradients.png").stat().st_size > 0 and (tmp_path / "gradients.csv").stat().st_size > 0
