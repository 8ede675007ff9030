"""moreau.rl.rsl_rl (rsl_rl VecEnv adapter) and moreau.trainers.ppo (PPO through rsl_rl's
OnPolicyRunner): the adapter's shape contract, and short PPO runs that raise the return."""
import json
import os
import time

import pytest
import torch
from rsl_rl.env import VecEnv
from tensordict import TensorDict

from moreau.rl.rsl_rl import RslRlVecEnv, default_train_cfg
from moreau.tasks import make
from moreau.trainers.ppo import evaluate, main, train

# legged_gym's only_positive_rewards: with action noise the unclipped per-step reward is negative
# and PPO would learn to fall early (ending the episode) instead of standing.
STAND = dict(command_ranges=((0.0, 0.0), (0.0, 0.0), (0.0, 0.0)), episode_length_s=4.0, push_robots=False,
             only_positive_rewards=True)


def test_adapter_shape_contract():
    env = RslRlVecEnv(make("locomotion", num_envs=3, n_threads=1, seed=0, episode_length_s=0.06))
    assert isinstance(env, VecEnv)
    assert (env.num_envs, env.num_actions, env.max_episode_length) == (3, 12, 3)
    assert env.device == torch.device("cpu") and isinstance(env.cfg, dict) and env.cfg["num_envs"] == 3
    obs = env.get_observations()
    assert isinstance(obs, TensorDict) and list(obs.keys()) == ["policy"] and obs.batch_size == torch.Size([3])
    assert obs["policy"].shape == (3, 48)
    a = torch.zeros(3, 12, requires_grad=True)  # gradients off inside the adapter
    total = torch.zeros(3)
    for k in range(3):
        obs, rew, dones, extras = env.step(a)
        total += rew
        assert isinstance(obs, TensorDict) and obs["policy"].shape == (3, 48) and not obs["policy"].requires_grad
        assert rew.shape == (3,) and rew.dtype == torch.float32 and not rew.requires_grad
        assert dones.shape == (3,) and dones.dtype == torch.long
        assert extras["time_outs"].shape == (3,) and extras["time_outs"].dtype == torch.bool
    assert dones.tolist() == [1, 1, 1] and extras["time_outs"].all() and "episode" in extras
    # the adapter's own episode statistics: three episodes of 3 steps, their summed rewards
    assert list(env.episode_lengths) == [3, 3, 3]
    assert list(env.episode_returns) == pytest.approx(total.tolist())
    env.episode_length_buf = torch.tensor([2, 0, 1])
    assert env.env.episode_length_buf.tolist() == [2, 0, 1]
    assert torch.equal(env.get_observations()["policy"], env.env.get_observations())


def test_train_cfg_overrides():
    cfg = default_train_cfg(num_steps_per_env=8, algorithm={"learning_rate": 3e-4})
    assert cfg["num_steps_per_env"] == 8 and cfg["algorithm"]["learning_rate"] == 3e-4
    assert cfg["algorithm"]["gamma"] == 0.99 and default_train_cfg()["algorithm"]["learning_rate"] == 1e-3


def test_evaluate_first_episode_return():
    e = make("cartpole", num_envs=4, n_threads=1, seed=3)
    r = evaluate(lambda obs: torch.zeros(obs.shape[0], 1), e, steps=300)
    # the unactuated pole falls within a second or two: first episodes are short
    assert r["failure_rate"] == 1.0 and 0 < r["return"] < 150


def test_ppo_raises_cartpole_return():
    """40 PPO iterations x 24 steps x 64 cart-poles (61 k samples, ~5 s): the deterministic
    policy's first-episode return (max ~300) goes from a falling pole to balancing."""
    t = time.time()
    out = train("cartpole", iterations=40, num_envs=64, contact=None, seed=0, n_threads=1, verbose=False)
    print(f"cartpole PPO: {out['initial']} -> {out['final']} in {time.time() - t:.1f} s")
    assert out["initial"]["return"] < 100
    assert out["final"]["return"] > out["initial"]["return"] + 100
    assert out["final"]["failure_rate"] < out["initial"]["failure_rate"]


def test_ppo_raises_quadruped_standing_return():
    """ANYmal C standing still (zero command, 4 s episodes, hard contact, rewards clipped at 0
    as in legged_gym), 32 envs, 30 PPO iterations (23 k samples, ~5 s): the stochastic policy's
    first-episode return rises from the initial policy's (unit action noise). (Seeds 0-2: return
    0.10-0.13 -> 0.37-0.45, falls 25-34 % -> 6-19 % of the first episodes; 60 iterations: ~1.0.)"""
    from rsl_rl.runners import OnPolicyRunner
    t = time.time()
    out = train("locomotion", iterations=30, num_envs=32, contact="hard", seed=0, n_threads=1, verbose=False,
                task_kwargs=STAND, eval_steps=10)
    ev = make("locomotion", num_envs=32, n_threads=1, seed=7, **STAND)
    torch.manual_seed(1)
    final = evaluate(out["runner"].alg.get_policy(), ev, steps=200, stochastic=True)
    torch.manual_seed(0)  # the same initial policy as train(seed=0)
    fresh = OnPolicyRunner(RslRlVecEnv(make("locomotion", num_envs=32, n_threads=1, seed=0, **STAND)),
                           default_train_cfg(), log_dir=None, device="cpu")
    torch.manual_seed(1)
    initial = evaluate(fresh.alg.get_policy(), ev, steps=200, stochastic=True)
    print(f"ANYmal standing PPO (stochastic): {initial} -> {final} in {time.time() - t:.1f} s")
    assert final["return"] > 2 * initial["return"] and final["return"] > initial["return"] + 0.15


def test_cli_writes_logs(tmp_path, capsys):
    log = tmp_path / "run"
    assert main(["--task", "locomotion", "--iterations", "2", "--num-envs", "4", "--contact", "smooth",
                 "--steps-per-env", "8", "--n-threads", "1", "--log-dir", str(log), "--episode-length-s", "0.5"]) == 0
    summary = json.loads((log / "summary.json").read_text())
    assert summary["iterations"] == 2 and summary["contact"] == "smooth" and summary["samples"] == 2 * 8 * 4
    assert any(f.startswith("model_") and f.endswith(".pt") for f in os.listdir(log))
    assert "[ppo]" in capsys.readouterr().out


def test_checkpoints_carry_the_task_resume_and_evaluate(tmp_path):
    """A PPO checkpoint carries the task (preset, contact, configuration) and its schedule:
    moreau.evaluation.evaluate and moreau.evaluation.learning_curve rebuild the task from it alone; a resume from an
    older checkpoint goes on from its iteration and drops the log rows written after it."""
    import csv
    from moreau.evaluation.evaluate import eval_env, evaluate as evaluate_policy
    from moreau.evaluation.learning_curve import evaluate_run
    from moreau.trainers.checkpoints import load_policy
    log = tmp_path / "ppo"
    args = ["--task", "locomotion", "--task-preset", "trot_gated", "--iterations", "3", "--num-envs", "4",
            "--contact", "smooth", "--steps-per-env", "4", "--n-threads", "1", "--log-dir", str(log),
            "--save-interval", "2", "--episode-length-s", "0.2"]  # 10 control steps
    assert main(args) == 0
    assert main(args[:5] + ["5"] + args[6:] + ["--resume", str(log / "model_2.pt")]) == 0
    with open(log / "log.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["iteration"]) for r in rows] == [1, 2, 3, 4, 5] and int(rows[-1]["env_steps"]) == 5 * 4 * 4
    assert float(rows[-1]["episode_length"]) <= 10 and rows[-1]["episode_return"] not in ("", "nan")
    policy = load_policy(str(log / "model_final.pt"))
    meta = policy.meta["env"]
    assert meta["format"] == "moreau.ppo/1" and meta["task_preset"] == "trot_gated" and meta["contact"] == "smooth"
    assert policy.meta["iteration"] == 5 and meta["task_config"]["curriculum_tracking_threshold"] == 0.8
    assert meta["env_schedule"]["curriculum_samples"] == 5 * 4 * 4
    env = eval_env(meta, "locomotion", 3, "hard")
    assert env.num_obs == 56 and env.cfg.curriculum_command is None
    a = policy(env.get_observations())
    assert a.shape == (3, 12) and torch.equal(a, policy(env.get_observations()))  # deterministic
    # the run's policy file: the actor alone, the same actions, a quarter of the checkpoint or less
    assert torch.equal(load_policy(str(log / "policy.pt"))(env.get_observations()), a)
    assert os.path.getsize(log / "policy.pt") * 4 < os.path.getsize(log / "model_final.pt")
    with pytest.raises(ValueError, match="policy file"):
        main(args[:5] + ["6"] + args[6:] + ["--resume", str(log / "policy.pt")])
    rows = evaluate_run(str(log), "hard", num_envs=2, seconds=0.1)
    assert [r["iteration"] for r in rows] == [2, 4, 5] and [r["env_steps_trained"] for r in rows] == [32, 64, 80]
    # each row is the protocol's evaluation (seed 1) of its checkpoint: the last one's, recomputed
    env = eval_env(meta, "locomotion", 2, "hard", seed=1, sim_threads=1)
    direct = evaluate_policy(env, policy, 0.1, "locomotion", seed=1)
    for k in ("lin_vel_error", "yaw_rate_error", "falls_per_minute", "mean_reward"):
        assert rows[-1][k] == pytest.approx(direct[k], rel=1e-12, abs=1e-12), k
    assert all(r["lin_vel_error"] > 0 for r in rows) and len({r["lin_vel_error"] for r in rows}) == 3


def test_until_stops_a_run_that_a_resume_finishes(tmp_path, capsys):
    """--until N stops after iteration N with model_N.pt and no model_final.pt; a resume with the
    same budget goes on to the end, and its summary's "initial" is the first part's evaluation of
    the untrained policy, not one of the resumed policy."""
    log = tmp_path / "ppo"
    args = ["--task", "locomotion", "--iterations", "3", "--num-envs", "4", "--contact", "smooth", "--steps-per-env",
            "4", "--n-threads", "1", "--log-dir", str(log), "--save-interval", "2", "--episode-length-s", "0.2",
            "--eval-steps", "6", "--resume", "auto"]
    assert main(args + ["--until", "1"]) == 0
    assert sorted(f for f in os.listdir(log) if f.endswith(".pt")) == ["model_1.pt"]
    first = json.loads(capsys.readouterr().out.split(": initial ")[1].splitlines()[0])
    assert main(args) == 0
    assert ": initial " not in capsys.readouterr().out  # no second initial evaluation
    assert sorted(f for f in os.listdir(log) if f.endswith(".pt")) == ["model_1.pt", "model_2.pt", "model_final.pt",
                                                                       "policy.pt"]
    summary = json.loads((log / "summary.json").read_text())
    assert summary["samples"] == 3 * 4 * 4 and summary["initial"] == first and summary["final"] != first
