"""moreau.studies.locomotion --quick end to end: every method trains (tiny budgets), every run is
evaluated under hard and its own contact, the table, plots and policies are written, and a
second call resumes (nothing is trained again), also from the records of a fresh clone."""
import json
import os
import shutil

import pytest
import rsl_rl  # noqa: F401  (the PPO methods need it: a missing rsl_rl fails here, it is not skipped)
import torch

from moreau.studies.locomotion import METHODS, main


def test_quick_study_end_to_end(tmp_path):
    runs, out = tmp_path / "runs", tmp_path / "out"
    args = ["--quick", "--runs", str(runs), "--out", str(out), "--seeds", "0"]
    assert main(args) == 0
    table = json.loads((out / "study.json").read_text())
    assert sorted(r["method"] for r in table["runs"]) == sorted(METHODS)
    for r in table["runs"]:
        assert r["finished"] and r["samples"] > 0 and r["hard_lin_vel_error"] > 0 and r["own_lin_vel_error"] > 0
        assert r["transfer_gap"] == pytest.approx(r["hard_lin_vel_error"] / r["own_lin_vel_error"] - 1.0)
        # hard_smooth_grad's forward is hard contact's (only its gradient is smoothed): no gap either
        assert (r["transfer_gap"] == pytest.approx(0.0)) == (r["contact"] in ("hard", "hard_smooth_grad"))
    assert set(table["ratios"]) == {f"{m}_over_shac_smooth_{w}" for m in ("ppo_hard", "ppo_smooth")
                                    for w in ("samples", "seconds")}
    assert table["standing_baseline"]["lin_vel_error"] > 0.3  # standing still does not track the commands
    for f in ("runs.csv", "curves.png", "transfer.png", "traces.png", "shac_smooth_hard.json"):
        assert (out / f).stat().st_size > 0, f
    assert sorted(os.listdir(out / "policies")) == sorted(f"{m}.pt" for m in METHODS)
    finals = {m: os.path.getmtime(runs / f"{m}_s0" / "model_final.pt") for m in METHODS}
    assert main(args) == 0  # resumes: finished runs and evaluated checkpoints are skipped
    assert {m: os.path.getmtime(runs / f"{m}_s0" / "model_final.pt") for m in METHODS} == finals
    assert json.loads((out / "study.json").read_text())["runs"] == table["runs"]
    for m in METHODS:  # the record: log, evaluations, checkpoint.json; the checkpoints stay in the run folder
        kept = sorted(os.listdir(out / "runs" / f"{m}_s0"))
        assert not [f for f in kept if f.endswith(".pt")], kept
        assert {"log.csv.xz", "curve_hard.json", "checkpoint.json"} <= set(kept), kept
        assert json.loads((out / "runs" / f"{m}_s0" / "checkpoint.json").read_text())["finished"]
    policies = {m: torch.load(out / "policies" / f"{m}.pt", weights_only=False) for m in METHODS}
    assert all(p["stripped"] and "critic" not in p and "critic_state_dict" not in p for p in policies.values())
    mtimes = {m: os.path.getmtime(out / "policies" / f"{m}.pt") for m in METHODS}
    shutil.rmtree(runs)  # a fresh clone: every run comes back from its record, finished, and nothing trains
    assert main(args) == 0
    assert not (runs / "shac_soft_s0" / "model_final.pt").exists()
    assert json.loads((out / "study.json").read_text())["runs"] == table["runs"]
    assert {m: os.path.getmtime(out / "policies" / f"{m}.pt") for m in METHODS} == mtimes  # kept as they were
    shutil.rmtree(runs)  # --no-train: the same table from the records
    assert main(args + ["--no-train"]) == 0
    assert json.loads((out / "study.json").read_text())["runs"] == table["runs"]


def test_a_shac_run_of_another_preset_is_not_resumed(tmp_path):
    """A SHAC run started with one preset (its config.json) stops the study under another, with a
    message naming both; a run of the same preset, and PPO runs, pass."""
    from moreau.studies.locomotion import PROTOCOLS, check_presets, plan
    runs = plan(["shac_smooth", "ppo_smooth"], [0], str(tmp_path), PROTOCOLS["quick"], "walk_fast")
    for r in runs:
        os.makedirs(r.dir)
        with open(os.path.join(r.dir, "config.json"), "w") as f:
            json.dump({"args": {"preset": "walk"}}, f)
    with pytest.raises(SystemExit, match="trained with --shac-preset walk, not walk_fast"):
        check_presets(runs, "walk_fast")
    check_presets(runs, "walk")
    check_presets([r for r in runs if r.trainer == "ppo"], "walk_fast")


def test_a_run_at_the_bar_from_its_first_evaluated_checkpoint_is_censored(tmp_path):
    """A run whose earliest evaluated checkpoint is already at the bar (the earlier ones lost) gives an
    upper bound on the samples to the bar: flagged, and left out of the method's median."""
    from moreau.studies.locomotion import PROTOCOLS, plan, summarize
    runs = plan(["shac_hard"], [0, 1], str(tmp_path), PROTOCOLS["quick"], "walk_fast")
    row = lambda steps, err: {"env_steps_trained": steps, "wall_time_trained": steps / 1e4, "lin_vel_error": err,
                              "yaw_rate_error": 0.05, "falls_per_minute": 0.0, "trot_fraction": 0.8}
    curves = {"shac_hard_s0": [row(8e5, 0.7), row(7e6, 0.15), row(2e7, 0.07)],  # at the bar from 7 M
              "shac_hard_s1": [row(1.4e7, 0.08), row(2e7, 0.07)]}  # lost before 14 M
    table = summarize(runs, {k: {"hard": v, "own": v} for k, v in curves.items()})
    censored = {r["seed"]: (r["bar_samples"], r["bar_censored"]) for r in table["runs"]}
    assert censored == {0: (7e6, False), 1: (1.4e7, True)}
    assert table["methods"]["shac_hard"]["at_bar"] == 2
    assert table["methods"]["shac_hard"]["median_bar_samples"] == 7e6


def test_until_samples_trains_a_prefix_that_a_later_call_finishes(tmp_path):
    """--until-samples N stops each run at the iteration that holds N samples (PPO's quick
    iterations hold 64, SHAC's 32): the table lists the unfinished run; a call without it finishes."""
    runs, out = tmp_path / "runs", tmp_path / "out"
    args = ["--quick", "--runs", str(runs), "--out", str(out), "--seeds", "0", "--methods", "shac_smooth", "ppo_smooth"]
    assert main(args + ["--until-samples", "64"]) == 0
    table = {r["method"]: r for r in json.loads((out / "study.json").read_text())["runs"]}
    assert table["shac_smooth"]["finished"] and table["shac_smooth"]["samples"] == 2 * 32
    assert not table["ppo_smooth"]["finished"] and table["ppo_smooth"]["samples"] == 64
    assert main(args) == 0
    table = {r["method"]: r for r in json.loads((out / "study.json").read_text())["runs"]}
    assert table["ppo_smooth"]["finished"] and table["ppo_smooth"]["samples"] == 2 * 64


def test_another_shac_preset_gives_its_task_to_ppo():
    """PPO trains on the SHAC preset's task preset (walk_fast_1m: trot_curriculum_1m, the 1 M
    warm-up); the quick SHAC iteration holds 8 envs × 4 steps."""
    from moreau.studies.locomotion import PROTOCOLS, plan
    from moreau.tasks.presets import preset_kwargs
    shac, ppo = plan(["shac_smooth", "ppo_hard"], [0], "/nonexistent", PROTOCOLS["quick"], "walk_fast_1m",
                     until_samples=100)
    assert ppo.cmd[ppo.cmd.index("--task-preset") + 1] == "trot_curriculum_1m"
    assert shac.cmd[shac.cmd.index("--preset") + 1] == "walk_fast_1m"
    assert (shac.samples_per_iteration("walk_fast_1m"), shac.until) == (32, 4)
    assert (ppo.samples_per_iteration("walk_fast_1m"), ppo.until) == (64, 2)
    a, b = preset_kwargs("trot_curriculum"), preset_kwargs("trot_curriculum_1m")
    assert b.pop("curriculum_warmup_samples") == 1e6 and a.pop("curriculum_warmup_samples") == 4e6 and a == b
