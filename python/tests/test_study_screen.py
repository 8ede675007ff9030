"""moreau.studies.screen (a reliability screen of the walk preset) and moreau.trainers.shac --until."""
import json
import os
import shutil

import pytest

from moreau.studies.screen import TROTTING, jump_iteration, main, summarize
from moreau.trainers.shac import main as shac_main


def _log(path, rewards, repeat_from=None):
    rows = ["iteration,mean_reward"] + [f"{i + 1},{r}" for i, r in enumerate(rewards)]
    if repeat_from is not None:  # a resume repeats the iterations since its checkpoint
        rows += [f"{i + 1},{rewards[i]}" for i in range(repeat_from, len(rewards))]
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def test_jump_iteration_is_where_the_trailing_mean_passes_the_threshold(tmp_path):
    stand, trot = [0.016] * 300, [0.027] * 100
    # the 50-iteration mean passes 0.02 once more than 4/11 of the window trots: at 300 + 19
    assert jump_iteration(_log(tmp_path / "a.csv", stand + trot)) == 319
    assert jump_iteration(_log(tmp_path / "b.csv", stand + trot, repeat_from=250)) == 319
    assert jump_iteration(_log(tmp_path / "c.csv", stand + [0.05] * 5 + stand)) is None  # a blip is no jump
    assert jump_iteration(_log(tmp_path / "d.csv", [0.03] * 49)) is None  # fewer than 50 iterations


def test_summary_counts_the_seeds_that_jumped_and_trot(tmp_path):
    """A seed trots when its last hard-contact evaluation's planar error is below TROTTING; the
    counts cover the seeds trained to ``until`` only."""
    rows = {0: ([0.016] * 300 + [0.027] * 100, 0.3), 1: ([0.016] * 400, 0.75), 2: ([0.027] * 100, 0.2)}
    dirs = {}
    for seed, (rewards, err) in rows.items():
        d = tmp_path / f"walk_s{seed}"
        d.mkdir()
        _log(d / "log.csv", rewards)
        curve = [{"iteration": 50, "lin_vel_error": 0.9, "yaw_rate_error": 0.5, "falls_per_minute": 0.0},
                 {"iteration": len(rewards), "lin_vel_error": err, "yaw_rate_error": 0.1, "falls_per_minute": 0.0}]
        (d / "curve_hard.json").write_text(json.dumps(curve))
        dirs[seed] = str(d)
    summary = summarize(dirs, until=400)
    seeds = summary["seeds"]
    assert [seeds[s]["trotting"] for s in ("0", "1", "2")] == [True, False, True]  # the last evaluation counts
    assert [seeds[s]["jump_iteration"] for s in ("0", "1", "2")] == [319, None, 50]
    assert seeds["2"]["iterations"] == 100 and seeds["0"]["hard_lin_vel_error"] == 0.3
    # seed 2 stopped at iteration 100, before until = 400: left out of the counts
    assert (summary["finished"], summary["jumped"], summary["trotting"]) == (2, 1, 1)


def test_until_stops_a_run_that_resumes_on_the_same_schedule(tmp_path):
    logdir = tmp_path / "run"
    base = ["--task", "cartpole", "--iterations", "4", "--num-envs", "8", "--horizon", "4", "--logdir", str(logdir),
            "--no-progress", "--sim-threads", "1", "--resume", "auto"]
    assert shac_main(base + ["--until", "2"]) == 0
    assert (logdir / "model_2.pt").exists() and not (logdir / "model_final.pt").exists()
    assert shac_main(base + ["--until", "2"]) == 0  # already there: nothing to do
    assert len((logdir / "log.csv").read_text().splitlines()) == 3
    assert shac_main(base) == 0  # on to the end of the 4-iteration schedule
    assert (logdir / "model_final.pt").exists()
    its = [int(r.split(",")[0]) for r in (logdir / "log.csv").read_text().splitlines()[1:]]
    assert its == [1, 2, 3, 4]


def test_screen_trains_copies_and_resumes(tmp_path):
    runs, out = tmp_path / "runs", tmp_path / "out"
    args = ["--name", "tiny", "--seeds", "0", "1", "--until", "2", "--runs", str(runs), "--out", str(out),
            "--eval-envs", "2", "--eval-seconds", "0.2", "--",
            "--num-envs", "8", "--horizon", "4", "--save-interval", "1"]
    assert main(args) == 0
    summary = json.loads((out / "tiny" / "screen.json").read_text())
    assert summary["finished"] == 2 and summary["jumped"] == 0  # 2 iterations: no 50-iteration window
    assert summary["shac_args"][:2] == ["--num-envs", "8"]
    # the record: no checkpoint (it stays in the run folder), checkpoint.json names it
    assert sorted(os.listdir(out / "tiny" / "walk_s0")) == ["checkpoint.json", "config.json", "curve_hard.json",
                                                            "log.csv.xz"]
    state = json.loads((out / "tiny" / "walk_s0" / "checkpoint.json").read_text())
    assert state["checkpoint"] == "model_2.pt" and state["iteration"] == 2 and not state["finished"]
    s0 = summary["seeds"]["0"]
    assert s0["eval_iteration"] == 2
    for row in summary["seeds"].values():  # two iterations stand or stumble: planar errors of 0.98-1.05 m/s
        assert row["hard_lin_vel_error"] > TROTTING and row["trotting"] is False
    assert summary["trotting"] == 0
    cfg = json.loads((out / "tiny" / "walk_s0" / "config.json").read_text())
    assert cfg["config"]["horizon"] == 4 and cfg["env"]["task_preset"] == "trot_curriculum"
    # on to iteration 3 from the run folders
    assert main([("3" if a == "2" else a) for a in args]) == 0
    summary = json.loads((out / "tiny" / "screen.json").read_text())
    assert [summary["seeds"][s]["iterations"] for s in ("0", "1")] == [3, 3]
    assert [summary["seeds"][s]["eval_iteration"] for s in ("0", "1")] == [3, 3]
    assert json.loads((out / "tiny" / "walk_s1" / "checkpoint.json").read_text())["checkpoint"] == "model_3.pt"
    # a fresh clone (the runs folder gone): a report rebuilds the summary from the records alone; a seed
    # at --until is not trained again, one short of it trains from scratch (its checkpoint is not recorded)
    before = json.loads((out / "tiny" / "screen.json").read_text())
    shutil.rmtree(runs)
    assert main(args[:args.index("--")] + ["--until", "3", "--report"]) == 0
    assert json.loads((out / "tiny" / "screen.json").read_text())["seeds"] == before["seeds"]
    shutil.rmtree(runs)
    assert main([("3" if a == "2" else a) for a in args]) == 0  # both at 3: nothing trains
    assert not any(f.startswith("model_") for f in os.listdir(runs / "tiny" / "walk_s0"))
    shutil.rmtree(runs)
    assert main([("4" if a == "2" else a) for a in args]) == 0  # to 4: from scratch
    assert json.loads((out / "tiny" / "screen.json").read_text())["seeds"]["0"]["iterations"] == 4
    assert (runs / "tiny" / "walk_s0" / "model_4.pt").exists()
    # a call for one seed keeps the others in the summary
    assert main(args[:3] + ["1"] + args[5:]) == 0  # --seeds 1 only
    assert sorted(json.loads((out / "tiny" / "screen.json").read_text())["seeds"]) == ["0", "1"]
    # a report (no options after --) keeps the options the seeds trained with
    assert main(args[:args.index("--")] + ["--report"]) == 0
    assert json.loads((out / "tiny" / "screen.json").read_text())["shac_args"][:2] == ["--num-envs", "8"]


def test_screen_rejects_an_unknown_shac_option(tmp_path, capsys):
    rc = main(["--name", "bad", "--seeds", "0", "--until", "1", "--runs", str(tmp_path / "r"), "--out",
               str(tmp_path / "o"), "--", "--no-such-option", "1"])
    assert rc == 1
    assert "failed" in capsys.readouterr().err
    assert "unrecognized arguments" in (tmp_path / "r" / "bad" / "walk_s0.out").read_text()


if __name__ == "__main__":
    raise SystemExit(pytest.main([__file__, "-q"]))
