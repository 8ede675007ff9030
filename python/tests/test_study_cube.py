"""Study A (moreau.studies.cube_data, moreau.studies.cube): the stiffness conversion against the
analytic contact time constant, the noise model's statistics, datasets and splits, --quick."""
import json
import math
import os

import numpy as np
import pytest
import torch

from moreau.studies.cube import main, splits, windows
from moreau.studies.cube_data import (DT, MASS, SETTINGS, add_noise, initial_states, load_dataset, lowest_corner,
                                      make_datasets, mujoco_to_penalty, quat_log, quat_mul, simulate)

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("k", [300, 2500])
def test_conversion_gives_mujocos_time_constant(k):
    """The cube flat at its equilibrium sink g/k, pushed down at 5 cm/s: a mass on 4 critically
    damped springs of time constant τ = 1/√k compresses as v₀ t e^{−t/τ}, deepest at t = τ by
    v₀ τ / e — at the study's time step and substeps, within 5 % (first order in the substep;
    k = 100 sinks the cube by g/k = 9.8 cm, its whole height, so its top corners touch too)."""
    kn, kd = mujoco_to_penalty(k)
    assert kn == pytest.approx(MASS * k / 4) and kd == pytest.approx(MASS * math.sqrt(k) / 2)
    tau, v0 = 1.0 / math.sqrt(k), -0.05
    q0 = torch.tensor([[0.0, 0.0, 0.05 - 9.81 / k, 1.0, 0.0, 0.0, 0.0]], dtype=torch.float64)
    v = torch.tensor([[0.0, 0.0, v0, 0.0, 0.0, 0.0]], dtype=torch.float64)
    steps = int(3 * tau / DT) + 2
    s = simulate({"contact": "soft", "contact_kn": kn, "contact_kd": kd}, q0, v, steps=steps)
    x = s[0, :, 2] - q0[0, 2]
    t = torch.arange(steps + 1, dtype=torch.float64) * DT
    peak = -v0 * tau / math.e
    assert abs(float(t[int(x.argmin())]) - tau) < DT  # the deepest sample is one of the two around τ
    assert float(-x.min()) == pytest.approx(peak, rel=0.05)
    analytic = v0 * t * torch.exp(-t / tau)
    assert float((x - analytic)[t <= tau].abs().max()) < 0.05 * peak


def test_initial_states_start_in_the_air_and_are_prefix_stable():
    q, v = initial_states(300, seed=3)
    assert q.shape == (300, 7) and v.shape == (300, 6) and bool((lowest_corner(q) > 0).all())
    torch.testing.assert_close(q[:, 3:7].norm(dim=1), torch.ones(300, dtype=q.dtype))
    q2, v2 = initial_states(100, seed=3)
    assert torch.equal(q2, q[:100]) and torch.equal(v2, v[:100])
    assert float((q[:, :3] - torch.tensor([0.18629883, 0.02622872, 0.12283257], dtype=q.dtype)).abs().max()) <= 0.1


def test_noise_statistics():
    """A static cube, 2000 tosses × 50 samples: per-toss offsets U(±2 mm) / U(±2°), per-sample
    noise U(±0.02 mm), and the finite-difference velocities of that noise."""
    n, t = 2000, 50
    clean = torch.zeros(n, t, 13, dtype=torch.float64)
    clean[..., 2] = 0.05
    clean[..., 3] = 1.0
    noisy = add_noise(clean, seed=5)
    assert noisy.shape == (n, t - 1, 13)
    dp = noisy[..., 0:3] - clean[:, 1:, 0:3]
    offset = dp.mean(1)  # per toss
    assert float(offset.abs().max()) <= 2e-3 + 2e-5
    assert float(offset.std()) == pytest.approx(2e-3 / math.sqrt(3), rel=0.05)
    assert float((dp - offset[:, None]).std()) == pytest.approx(2e-5 / math.sqrt(3), rel=0.05)
    # a static body's differentiated noise: (e_t − e_{t−1}) / h
    assert float(noisy[..., 7:10].std()) == pytest.approx(math.sqrt(2) * 2e-5 / math.sqrt(3) / DT, rel=0.05)
    ang = torch.rad2deg(quat_log(noisy[..., 3:7]).norm(dim=-1))
    assert float(ang.max()) <= 2.0 + 0.03 and float(ang.mean()) == pytest.approx(1.0, rel=0.05)
    rel = torch.rad2deg(quat_log(quat_mul(noisy[:, :-1, 3:7] * torch.tensor([1.0, -1, -1, -1], dtype=torch.float64),
                                          noisy[:, 1:, 3:7])).norm(dim=-1))
    assert float(rel.max()) <= 0.04 + 1e-6  # two per-sample rotations of at most 0.02° each


def test_datasets_and_splits(tmp_path):
    m = make_datasets(str(tmp_path), ["hard"], n=40, progress=False)
    d = load_dataset(str(tmp_path), "hard")
    assert d["states"].shape == (40, 500, 13) and d["clean"].shape == (40, 500, 13) and d["states"].dtype == np.float32
    assert ((d["lengths"] > 16) & (d["lengths"] <= 500)).all()
    assert m["settings"]["hard"]["tosses"] == 40 and m["settings"]["hard"]["tosses_per_second"] > 0
    mtime = os.path.getmtime(tmp_path / "hard.npz")
    make_datasets(str(tmp_path), ["hard"], n=40, progress=False)  # reused, not generated again
    assert os.path.getmtime(tmp_path / "hard.npz") == mtime
    assert json.loads((tmp_path / "manifest.json").read_text())["settings"]["hard"]["contact"] == "hard"
    assert splits(11000, 500, 500) == (range(0, 10000), range(10000, 10500), range(10500, 11000))
    x, y = windows(d["states"], d["lengths"], range(3))
    assert x.shape[1:] == (16, 13) and y.shape == (x.shape[0], 6)
    assert x.shape[0] == sum(int(d["lengths"][j]) - 16 for j in range(3))
    torch.testing.assert_close(y[0], torch.from_numpy(d["states"][0, 16, 7:13]))
    with pytest.raises(ValueError, match="no training pool"):
        splits(100, 50, 50)


def test_quick_end_to_end(tmp_path):
    assert main(["--quick", "--out", str(tmp_path / "out"), "--data", str(tmp_path / "data")]) == 0
    rows = json.loads((tmp_path / "out" / "results.json").read_text())["runs"]
    assert len(rows) == 3 * 2 * 2
    assert {r["setting"] for r in rows} == {"soft_mj100", "soft_1e5", "hard"}
    for r in rows:
        assert r["test_mse"] > 0 and r["one_step_pos_m"] > 0 and r["rollout50_pos_m"] > 0 and 1 <= r["epochs"] <= 5
    for f in ("results.csv", "curves.json.xz", "test_error.png", "rollout_error.png", "training_curves.png"):
        assert (tmp_path / "out" / f).stat().st_size > 0
    assert SETTINGS["soft_mj100"]["contact_kn"] == pytest.approx(9.25)
    # --report on a sweep with a run still to do (one dropped): trains nothing, writes the tables
    res = tmp_path / "out" / "results.json"
    res.write_text(json.dumps({"runs": rows[1:]}))
    (tmp_path / "out" / "results.csv").unlink()
    assert main(["--quick", "--out", str(tmp_path / "out"), "--data", str(tmp_path / "data"), "--report"]) == 0
    assert len(json.loads(res.read_text())["runs"]) == 3 * 2 * 2 - 1
    assert (tmp_path / "out" / "results.csv").stat().st_size > 0
    # --report without the data (a fresh clone): the manifest results.json keeps
    (tmp_path / "out" / "results.csv").unlink()
    assert main(["--quick", "--out", str(tmp_path / "out"), "--data", str(tmp_path / "no_data"), "--report"]) == 0
    assert (tmp_path / "out" / "results.csv").stat().st_size > 0 and not (tmp_path / "no_data").exists()
