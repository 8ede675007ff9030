"""moreau.trainers.distributed: SHAC and PPO over two CPU processes (torchrun, gloo).

- One SHAC iteration split over two ranks gives the one-process gradient of all the
  environments (to float32 rounding) and the same observation statistics.
- test_shac's and test_ppo's cart-pole runs over two ranks (half the environments each) end
  with equal networks on both ranks and learn as the one-process runs do (the same thresholds).
"""
import json
import os
import subprocess
import sys

import pytest
import torch

import distributed_worker as worker

pytestmark = pytest.mark.usefixtures("one_thread")
HERE = os.path.dirname(os.path.abspath(__file__))


def torchrun(mode, out):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                        os.path.join(HERE, "distributed_worker.py"), mode, str(out)],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    ranks = [torch.load(out / f"{mode}_rank{k}.pt", weights_only=False) for k in (0, 1)]
    assert [(x["rank"], x["world"]) for x in ranks] == [(0, 2), (1, 2)]
    return ranks


def assert_equal_dicts(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k


def test_shac_over_two_processes(tmp_path):
    r0, r1 = torchrun("shac", tmp_path)
    one = worker.shac_one_iteration(0, 1)  # the same 16 cart-poles in one process
    for res in (r0["step"], r1["step"]):
        assert res["steps"] == one["steps"] == 8 * worker.N_STEP
        for g, g1 in zip(res["grads"], one["grads"]):
            torch.testing.assert_close(g, g1, rtol=1e-4, atol=1e-6)
        assert res["grad_norm"] == pytest.approx(one["grad_norm"], rel=1e-5)
        torch.testing.assert_close(res["obs_mean"], one["obs_mean"], rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(res["obs_var"], one["obs_var"], rtol=1e-9, atol=1e-12)
    # rank 0's half of the cart-poles alone (no process group here) gives another gradient
    half = worker.shac_one_iteration(0, 2)
    assert half["steps"] == 8 * worker.N_STEP // 2
    assert max((g - g1).abs().max().item() for g, g1 in zip(half["grads"], one["grads"])) > 1e-3

    a, b = r0["learn"], r1["learn"]
    assert_equal_dicts(a["actor"], b["actor"])
    assert_equal_dicts(a["critic"], b["critic"])
    assert a["steps"] == 30 * 32 * worker.N_LEARN
    print(f"2 ranks: cart-pole return {a['before']:.1f} -> {a['after']:.1f}")
    assert a["after"] > a["before"] + 40.0 and a["after"] > 1.5 * a["before"], (a["before"], a["after"])


def test_ppo_over_two_processes(tmp_path):
    r0, r1 = torchrun("ppo", tmp_path)
    a, b = r0["learn"], r1["learn"]
    assert_equal_dicts(a["actor"], b["actor"])
    assert b["initial"] is None and b["final"] is None  # rank 0 alone evaluates
    print(f"2 ranks: cart-pole PPO {a['initial']} -> {a['final']}")
    assert a["initial"]["return"] < 100
    assert a["final"]["return"] > a["initial"]["return"] + 100
    assert a["final"]["failure_rate"] < a["initial"]["failure_rate"]
    rows = (tmp_path / "ppo_log" / "log.csv").read_text().splitlines()
    assert len(rows) == 41 and rows[-1].startswith(f"40,{40 * 24 * 64},")  # every rank's samples
    assert json.loads((tmp_path / "ppo_log" / "summary.json").read_text())["samples"] == 40 * 24 * 64
