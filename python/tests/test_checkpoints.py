"""Policy files (moreau.trainers.checkpoints.strip_checkpoint and its command line), compressed
logs (moreau.trainers.runlog), and an archived run's checkpoint.json: what results/ keeps."""
import csv
import json
import lzma
import os

import pytest
import torch

from moreau.trainers.checkpoints import (PPO_POLICY_KEYS, RUN_STATE, SHAC_POLICY_KEYS, is_stripped, load_policy,
                                         main as checkpoints_main, run_finished, strip_checkpoint, write_policy)
from moreau.trainers.runlog import CsvLog, compress_log, find_log, read_log
from moreau.trainers.shac import main as shac_main

pytestmark = pytest.mark.usefixtures("one_thread")

RESULTS = os.path.join(os.path.dirname(__file__), "..", "..", "results")
POLICIES = [os.path.join(RESULTS, "transfer", "walk_transfer_roll", "policy.pt"),  # the shipped one
            os.path.join(RESULTS, "shac_walk", "policy.pt")]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A two-iteration cart-pole SHAC run: model_1.pt, model_final.pt and its policy.pt."""
    logdir = tmp_path_factory.mktemp("shac") / "run"
    torch.set_num_threads(1)
    assert shac_main(["--task", "cartpole", "--iterations", "2", "--num-envs", "8", "--horizon", "8", "--logdir",
                      str(logdir), "--no-progress", "--sim-threads", "1", "--save-interval", "1"]) == 0
    return logdir


def test_the_trainer_writes_the_policy_file_of_its_final_checkpoint(run):
    full = torch.load(run / "model_final.pt", weights_only=False)
    policy = torch.load(run / "policy.pt", weights_only=False)
    assert set(policy) == set(SHAC_POLICY_KEYS) | {"stripped"} and is_stripped(policy) and not is_stripped(full)
    assert {"critic", "target_critic", "actor_opt", "critic_opt", "env_schedule"} <= set(full)
    a, b = load_policy(str(run / "model_final.pt")), load_policy(str(run / "policy.pt"))
    obs = torch.randn(5, a.meta["env"]["num_obs"])
    assert torch.equal(a(obs), b(obs)) and a.meta == b.meta
    assert os.path.getsize(run / "policy.pt") * 3 < os.path.getsize(run / "model_final.pt")


def test_a_policy_file_does_not_resume(run):
    with pytest.raises(ValueError, match="policy file"):
        shac_main(["--task", "cartpole", "--iterations", "3", "--num-envs", "8", "--horizon", "8", "--no-progress",
                   "--sim-threads", "1", "--resume", str(run / "policy.pt")])


def test_strip_command_line_and_write_policy(run, tmp_path, capsys):
    out = tmp_path / "p.pt"
    assert checkpoints_main(["strip", str(run / "model_1.pt"), str(out)]) == 0
    assert "MB" in capsys.readouterr().out
    assert torch.load(out, weights_only=False)["iteration"] == 1
    # the same policy again: the file is left as it is; a link is replaced, never written through
    mtime = os.path.getmtime(out)
    write_policy(str(run / "model_1.pt"), str(out))
    assert os.path.getmtime(out) == mtime
    link = tmp_path / "link.pt"
    os.symlink(out.name, link)
    write_policy(str(run / "model_1.pt"), str(link))
    assert os.path.islink(link)  # the same policy
    write_policy(str(run / "model_final.pt"), str(link))
    assert not os.path.islink(link) and torch.load(out, weights_only=False)["iteration"] == 1
    with pytest.raises(ValueError, match="not a moreau checkpoint"):
        strip_checkpoint({"format": "x"})


def test_a_ppo_checkpoint_keeps_its_actor_and_task():
    ck = {"actor_state_dict": {"w": torch.ones(2)}, "critic_state_dict": {"w": torch.ones(2)},
          "optimizer_state_dict": {}, "iter": 3, "infos": {"moreau": {"iteration": 3}}}
    assert set(strip_checkpoint(ck)) == set(PPO_POLICY_KEYS) | {"stripped"}


@pytest.mark.parametrize("path", POLICIES, ids=["shipped", "walk_fast"])
def test_the_published_policies_are_policy_files(path):
    ck = torch.load(path, weights_only=False)
    assert is_stripped(ck) and set(ck) == set(SHAC_POLICY_KEYS) | {"stripped"}
    assert os.path.getsize(path) < 300_000


def _write_log(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def test_a_compressed_log_rounds_its_timings_only_and_resumes(tmp_path):
    rows = [{"iteration": i, "env_steps": 8 * i, "wall_time": 1.2345678901 * i, "mean_reward": 0.1 / 3 * i,
             "time_backward": 0.012345678, "episode_return": float("nan")} for i in (1, 2, 3)]
    _write_log(tmp_path / "log.csv", rows)
    compress_log(str(tmp_path / "log.csv"), str(tmp_path / "out" / "log.csv.xz"))
    plain = read_log(str(tmp_path / "log.csv"))
    packed = read_log(str(tmp_path / "out" / "log.csv.xz"))
    assert [r["mean_reward"] for r in packed] == [r["mean_reward"] for r in plain]  # as written
    assert [r["iteration"] for r in packed] == ["1", "2", "3"] and packed[0]["episode_return"] == "nan"
    assert packed[2]["wall_time"] == "3.7037" and packed[0]["time_backward"] == "0.012346"
    assert lzma.open(tmp_path / "out" / "log.csv.xz", "rb").read().count(b"\r\n") == 4  # csv's line ends kept
    assert find_log(str(tmp_path / "out")).endswith("log.csv.xz") and find_log(str(tmp_path / "none")) is None
    # a run going on from the compressed log (resumed at iteration 2) writes a plain one, the .xz gone
    log = CsvLog(str(tmp_path / "out" / "log.csv"), iteration=2)
    log.write({"iteration": 3, "env_steps": 24})
    log.close()
    assert [r["iteration"] for r in read_log(str(tmp_path / "out" / "log.csv"))] == ["1", "2", "3"]
    assert os.listdir(tmp_path / "out") == ["log.csv"]


def test_an_archived_run_is_finished_by_its_record(tmp_path):
    assert not run_finished(str(tmp_path))
    (tmp_path / RUN_STATE).write_text(json.dumps({"checkpoint": "model_final.pt", "finished": True}))
    assert run_finished(str(tmp_path))
