"""moreau.trainers.shac on the cart-pole: a short run raises the return, checkpoints round-trip, TD(λ)
targets. Small and CPU-only (a few seconds each on 2 cores)."""
import pytest
import torch

from moreau.evaluation.evaluate import evaluate
from moreau.evaluation.metrics import episode_return
from moreau.tasks.cartpole import CartPole
from moreau.trainers.checkpoints import load_policy
from moreau.trainers.shac import SHAC, SHACConfig, main as shac_main


pytestmark = pytest.mark.usefixtures("one_thread")


def small_cfg(**kw):
    base = dict(horizon=32, iterations=30, critic_iterations=8, critic_minibatches=2, actor_hidden=(64, 64),
                critic_hidden=(64, 64), actor_lr=2e-3, critic_lr=2e-3, seed=0)
    base.update(kw)
    return SHACConfig(**base)


def test_short_run_raises_the_return():
    train_env = CartPole(num_envs=32, seed=0, n_threads=1)
    eval_env = CartPole(num_envs=32, seed=123, n_threads=1)
    agent = SHAC(train_env, small_cfg(), progress=False)
    steps = 150  # 3 s; the best return is about 150
    before = episode_return(eval_env, agent.act, steps, seed=123)
    hist = agent.train()
    after = episode_return(eval_env, agent.act, steps, seed=123)
    print(f"cart-pole return over {steps} steps: {before:.1f} -> {after:.1f}; "
          f"training episode return {hist[0]['episode_return']:.1f} -> {hist[-1]['episode_return']:.1f}")
    assert len(hist) == 30 and agent.steps == 30 * 32 * 32
    assert all(torch.isfinite(torch.tensor(h["actor_loss"])) for h in hist)
    # a random initial policy drops the pole within about a second; the trained one balances
    assert after > before + 40.0 and after > 1.5 * before, (before, after)
    res = evaluate(eval_env, agent.act, seconds=3.0, task="cartpole")
    assert res["balanced_fraction"] > 0.8, res


def test_checkpoint_round_trip(tmp_path):
    env = CartPole(num_envs=8, seed=0, n_threads=1)
    agent = SHAC(env, small_cfg(iterations=2), progress=False, env_meta={"task": "cartpole"})
    agent.train()
    path = str(tmp_path / "ck.pt")
    agent.save(path)

    other = SHAC(CartPole(num_envs=8, seed=5, n_threads=1), small_cfg(iterations=2, seed=9), progress=False)
    obs = torch.randn(16, 4)
    assert not torch.equal(other.act(obs), agent.act(obs))
    ck = other.load(path)
    assert ck["env"]["task"] == "cartpole" and other.it == 2 and other.steps == agent.steps
    torch.testing.assert_close(other.act(obs), agent.act(obs), rtol=0, atol=0)
    for a, b in ((agent.critic, other.critic), (agent.target_critic, other.target_critic)):
        for pa, pb in zip(a.parameters(), b.parameters()):
            assert torch.equal(pa, pb)
    assert torch.equal(agent.obs_rms.mean, other.obs_rms.mean) and torch.equal(agent.obs_rms.var, other.obs_rms.var)
    sa, sb = agent.actor_opt.state_dict()["state"], other.actor_opt.state_dict()["state"]
    assert all(torch.equal(sa[k]["exp_avg"], sb[k]["exp_avg"]) for k in sa)
    # the evaluation loader: the same deterministic policy
    policy = load_policy(path)
    torch.testing.assert_close(policy(obs), agent.act(obs), rtol=0, atol=0)
    # and training continues from the loaded state
    other.iteration()
    assert other.it == 3


def test_gradient_spike_is_skipped(tmp_path):
    """grad_spike_ratio: an iteration whose actor gradient norm is far above the recent median
    (here: the reward scaled by 1e4 for one iteration) leaves the actor and Adam's moments
    unchanged; the next ordinary iteration steps again; norms that stay high become the median
    and are stepped on again; the recent norms survive a checkpoint."""
    env = CartPole(num_envs=8, seed=0, n_threads=1)
    agent = SHAC(env, small_cfg(iterations=20, grad_spike_ratio=10.0), progress=False)
    for _ in range(12):
        assert agent.iteration()["actor_step_skipped"] == 0.0
    assert len(agent.recent_grad_norms) == 12
    before = [p.detach().clone() for p in agent.actor.parameters()]
    moments = [v["exp_avg_sq"].clone() for v in agent.actor_opt.state_dict()["state"].values()]
    step = env.step

    def loud_step(actions):
        obs, rew, done, info = step(actions)
        return obs, rew * 1e4, done, info
    env.step = loud_step
    s = agent.iteration()
    assert s["actor_step_skipped"] == 1.0 and s["grad_norm"] > 10 * max(list(agent.recent_grad_norms)[:-1])
    assert all(torch.equal(a, b) for a, b in zip(before, agent.actor.parameters()))
    after = [v["exp_avg_sq"] for v in agent.actor_opt.state_dict()["state"].values()]
    assert all(torch.equal(a, b) for a, b in zip(moments, after)) and len(agent.recent_grad_norms) == 13
    env.step = step
    assert agent.iteration()["actor_step_skipped"] == 0.0
    assert not all(torch.equal(a, b) for a, b in zip(before, agent.actor.parameters()))
    env.step = loud_step  # a lasting change of scale: skipped until it is most of the window
    skipped = [agent.iteration()["actor_step_skipped"] for _ in range(30)]
    assert skipped[0] == 1.0 and skipped[-1] == 0.0 and sum(skipped) < 30
    env.step = step
    agent.save(str(tmp_path / "ck.pt"))
    other = SHAC(CartPole(num_envs=8, seed=0, n_threads=1), small_cfg(), progress=False)
    other.load(str(tmp_path / "ck.pt"))
    assert list(other.recent_grad_norms) == list(agent.recent_grad_norms)


def test_td_lambda_targets():
    """Hand-built rollout buffers: λ = 0 gives one-step TD targets r + γ V(s'), a done step
    uses its own next value (0 for a failure, the bootstrap value for a time-out); λ = 1
    gives discounted returns up to the end of the horizon (bootstrapped there)."""
    env = CartPole(num_envs=2, n_threads=1)
    agent = SHAC(env, small_cfg(horizon=3, gamma=0.5, lam=0.0), progress=False)
    agent.rew_buf = torch.tensor([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    agent.next_values = torch.tensor([[10.0, 0.0], [20.0, 10.0], [30.0, 30.0]])
    agent.done_mask = torch.tensor([[0.0, 1.0], [0.0, 0.0], [1.0, 1.0]])  # env 1 fails at step 0
    td0 = agent._target_values()
    torch.testing.assert_close(td0, agent.rew_buf + 0.5 * agent.next_values)
    agent.cfg.lam = 0.999999
    mc = agent._target_values()
    # env 0: 1 + .5*2 + .25*3 + .125*30; env 1 at step 0: its episode ended there, r + γ·0
    torch.testing.assert_close(mc[0], torch.tensor([1 + 1 + 0.75 + 3.75, 1.0]), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(mc[1, 1], torch.tensor(2 + 1.5 + 0.25 * 30), rtol=1e-4, atol=1e-4)


def test_command_line(tmp_path):
    logdir = tmp_path / "run"
    assert shac_main(["--task", "cartpole", "--iterations", "2", "--num-envs", "8", "--horizon", "8",
                      "--logdir", str(logdir), "--no-progress"]) == 0
    assert (logdir / "model_final.pt").exists() and (logdir / "config.json").exists()
    from moreau.evaluation.evaluate import main as eval_main
    assert eval_main([str(logdir / "model_final.pt"), "--seconds", "0.5", "--num-envs", "4"]) == 0


def test_locomotion_checkpoint_rebuilds_its_task_and_evaluates(tmp_path, monkeypatch):
    """A tiny run of the "walk" preset: the checkpoint carries the task configuration (gait
    clock, foot terms, curriculum), moreau.evaluation.evaluate rebuilds that task from it alone (curriculum
    off), honours --command / --friction / --no-push, writes its metrics as JSON and a GIF;
    log.csv has one row per iteration; --resume auto skips a finished run."""
    import json
    from PIL import Image
    from moreau.evaluation.evaluate import eval_env, main as eval_main
    from moreau.tasks.locomotion import quat_rotate_inverse

    logdir = tmp_path / "walk"
    args = ["--preset", "walk", "--iterations", "2", "--num-envs", "4", "--horizon", "4", "--logdir", str(logdir),
            "--no-progress", "--sim-threads", "1", "--save-interval", "1"]
    assert shac_main(args) == 0
    ck = logdir / "model_final.pt"
    policy = load_policy(str(ck))
    meta = policy.meta["env"]
    assert meta["num_obs"] == 56 and meta["task_preset"] == "trot_curriculum" and meta["contact"] == "smooth"
    assert meta["task_config"]["gait_frequency"] == 2.0 and meta["task_config"]["curriculum_command"] == [0.5, 0, 0]
    rows = (logdir / "log.csv").read_text().splitlines()
    assert len(rows) == 3 and rows[0].startswith("iteration,env_steps,wall_time") and rows[2].startswith("2,32,")

    env = eval_env(meta, "locomotion", 3, "hard", command=(0.3, 0.0, 0.2), friction=0.7, push=False)
    assert env.cfg.curriculum_command is None and env.cfg.gait_frequency == 2.0 and not env.cfg.push_robots
    assert torch.equal(env.commands, torch.tensor([0.3, 0.0, 0.2]).repeat(3, 1))
    assert torch.equal(env.friction, torch.full((3,), 0.7))
    assert eval_env(meta, "locomotion", 64, "hard").commands.abs().amax(0).min() > 0.5  # the full ranges

    js, gif = tmp_path / "m.json", tmp_path / "v.gif"
    assert eval_main([str(ck), "--seconds", "0.4", "--num-envs", "3", "--command", "0.3", "0", "0.2", "--json", str(js),
                      "--video", str(gif), "--video-envs", "2", "--video-seconds", "0.2", "--sim-threads", "1"]) == 0
    res = json.loads(js.read_text())
    assert res["num_envs"] == 3 and res["env_steps"] == 60 and res["command"] == [0.3, 0.0, 0.2]
    assert res["contact"] == "hard" and res["trained_contact"] == "smooth" and res["iteration"] == 2
    # the metrics, recomputed here from the state of the same rollout (seed 1, the checkpoint's policy):
    # the base-frame velocity of each step's end state against the fixed command, and the feet's contacts
    env = eval_env(meta, "locomotion", 3, "hard", command=(0.3, 0.0, 0.2), sim_threads=1)
    obs, cmd = env.reset(), torch.tensor([0.3, 0.0, 0.2])
    lin_err = yaw_err = trot = stance = 0.0
    for _ in range(20):
        obs, _, done, _ = env.step(policy(obs))
        assert not done.any()  # no reset: env.q, env.v are the step's end state
        lin = quat_rotate_inverse(env.q[:, 3:7], env.v[:, 0:3])
        lin_err += (cmd[:2] - lin[:, :2]).norm(dim=1).sum().item()
        yaw_err += (cmd[2] - env.v[:, 5]).abs().sum().item()  # v[3:6]: body-frame angular velocity
        c = env.foot_clearance(env.q) < env.cfg.foot_contact_height  # LF, RF, LH, RH
        trot += ((c[:, 0] == c[:, 3]) & (c[:, 1] == c[:, 2]) & (c[:, 0] != c[:, 1])).sum().item()
        stance += c.double().mean(1).sum().item()
    assert res["lin_vel_error"] == pytest.approx(lin_err / 60, rel=1e-4) and res["lin_vel_error"] > 0.05
    assert res["yaw_rate_error"] == pytest.approx(yaw_err / 60, rel=1e-4) and res["yaw_rate_error"] > 0.01
    assert res["trot_fraction"] == pytest.approx(trot / 60) and res["stance_fraction"] == pytest.approx(stance / 60)
    assert 0 <= res["trot_fraction"] <= res["diagonal_sync"] <= 1 and 0 < res["stance_fraction"] <= 1
    assert res["falls"] == 0 and res["falls_per_minute"] == 0.0 and res["time_outs"] == 0
    with Image.open(gif) as im:  # 0.2 s at 25 frames per second: every other control step
        assert im.n_frames == 5 and im.size[0] > 100

    assert eval_main([str(ck), "--stand", "--seconds", "0.2", "--num-envs", "2", "--json", str(js)]) == 0
    assert json.loads(js.read_text())["policy"] == "stand"

    before = (logdir / "log.csv").read_text()
    assert shac_main(args + ["--resume", "auto"]) == 0
    assert (logdir / "log.csv").read_text() == before

    # the learning curve: every checkpoint (model_1, model_2, model_final = iteration 2) once, resumable
    from moreau.evaluation.learning_curve import main as curve_main
    tiny = ["--contact", "hard", "smooth", "--num-envs", "2", "--seconds", "0.2", "--summary", str(tmp_path / "s.json")]
    assert curve_main([str(logdir)] + tiny) == 0
    rows = json.loads((logdir / "curve_hard.json").read_text())
    assert [r["iteration"] for r in rows] == [1, 2] and [r["env_steps_trained"] for r in rows] == [16, 32]
    assert (logdir / "curve_smooth.json").exists() and (logdir / "curve.png").stat().st_size > 1000
    text = (logdir / "curve_hard.json").read_text()
    assert curve_main([str(logdir)] + tiny) == 0 and (logdir / "curve_hard.json").read_text() == text
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["runs"]["walk"]["hard"]["last"]["iteration"] == 2
    assert summary["runs"]["walk"]["hard"]["first_at_bar"] is None  # two iterations do not walk
    # until_bar: nothing after the first checkpoint at the bar but the last (a bar every row meets)
    import moreau.evaluation.learning_curve as lc
    import moreau.evaluation.metrics as metrics
    monkeypatch.setattr(metrics, "BARS", {k: float("inf") for k in metrics.BARS})
    rows = lc.evaluate_run(str(logdir), "hard_smooth_grad", num_envs=2, seconds=0.1, until_bar=True)
    assert [r["checkpoint"] for r in rows] == ["model_1.pt", "model_final.pt"]
    rows = lc.evaluate_run(str(logdir), "soft", num_envs=2, seconds=0.1, start=2)  # from iteration 2 on
    assert [r["checkpoint"] for r in rows] == ["model_2.pt"]
    rows = lc.evaluate_run(str(logdir), "none", num_envs=2, seconds=0.1, stop=1)  # up to iteration 1, and the last
    assert [r["checkpoint"] for r in rows] == ["model_1.pt", "model_final.pt"]


def test_resume_restores_the_curriculum_and_the_log_columns(tmp_path):
    """A checkpoint carries the task's schedule (curriculum samples, r̄) and a resume restores it;
    a resumed log.csv with other columns is rewritten with this run's (old values kept)."""
    import csv
    import shutil
    first, second = tmp_path / "a", tmp_path / "b"
    args = ["--preset", "walk_gated", "--iterations", "2", "--num-envs", "4", "--horizon", "4", "--no-progress",
            "--sim-threads", "1", "--save-interval", "1"]
    assert shac_main(args + ["--logdir", str(first)]) == 0
    ck = torch.load(first / "model_1.pt", weights_only=False)
    assert ck["env_schedule"]["curriculum_samples"] == 16 and ck["env_schedule"]["common_step_counter"] == 4
    second.mkdir()
    shutil.copy(first / "model_1.pt", second / "model_1.pt")
    with open(first / "log.csv", newline="") as f:
        row = next(csv.DictReader(f))
    with open(second / "log.csv", "w", newline="") as f:  # a log written before a column was added
        w = csv.DictWriter(f, fieldnames=[k for k in row if k != "curriculum_tracking"], extrasaction="ignore")
        w.writeheader()
        w.writerow(row)
    assert shac_main(args + ["--logdir", str(second), "--resume", "auto"]) == 0
    with open(second / "log.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["iteration"] for r in rows] == ["1", "2"] and rows[0]["curriculum_tracking"] == ""
    assert rows[0]["actor_loss"] == row["actor_loss"] and float(rows[1]["curriculum_tracking"]) > 0
    final = torch.load(second / "model_final.pt", weights_only=False)["env_schedule"]
    assert final["curriculum_samples"] == 32 and final["common_step_counter"] == 8


def test_stochastic_actor_is_reparameterised_and_evaluated_deterministically():
    """walk_noise's actor: a = tanh(mu(obs) + 0.3 eps), the gradient flowing through the noise;
    act() (evaluation) is tanh(mu(obs))."""
    from moreau.tasks.presets import SHAC_PRESETS
    from moreau.trainers.networks import ActorMLP
    assert SHAC_PRESETS["walk_noise"]["shac"]["action_noise"] == 0.3
    assert {k: v for k, v in SHAC_PRESETS["walk_noise"].items() if k != "shac"} == \
        {k: v for k, v in SHAC_PRESETS["walk"].items() if k != "shac"}
    torch.manual_seed(0)
    actor = ActorMLP(5, 3, (16,))
    obs = torch.randn(4096, 5)
    gen = torch.Generator().manual_seed(1)
    a1, a2 = actor(obs, 0.3, gen), actor(obs, 0.3, gen)
    mean = actor(obs)
    assert not torch.equal(a1, a2) and torch.equal(actor(obs), mean)
    pre = (torch.atanh(a1.clamp(-1 + 1e-6, 1 - 1e-6)) - actor.net(obs)).detach()  # the noise drawn
    assert abs(float(pre.std()) - 0.3) < 0.01 and abs(float(pre.mean())) < 0.01
    w = actor.net[0].weight
    g_noisy, = torch.autograd.grad(actor(obs, 0.3, gen).sum(), w)
    g_mean, = torch.autograd.grad(actor(obs).sum(), w)
    assert torch.isfinite(g_noisy).all() and not torch.allclose(g_noisy, g_mean)


def test_critic_epochs_set_the_critic_steps():
    """critic_iterations x critic_minibatches Adam steps per iteration; walk_fast is walk_noise
    with 4 critic epochs instead of 16."""
    from moreau.tasks.presets import SHAC_PRESETS
    fast, noise = SHAC_PRESETS["walk_fast"], SHAC_PRESETS["walk_noise"]
    assert fast["shac"]["critic_iterations"] == 4 and noise["shac"].get("critic_iterations", 16) == 16
    assert {k: v for k, v in fast.items() if k != "shac"} == {k: v for k, v in noise.items() if k != "shac"}
    assert {k: v for k, v in fast["shac"].items() if k != "critic_iterations"} == noise["shac"]
    for epochs in (4, 16):
        agent = SHAC(CartPole(num_envs=8, seed=0, n_threads=1),
                     small_cfg(horizon=8, critic_iterations=epochs, critic_minibatches=4), progress=False)
        agent.iteration()
        agent.iteration()
        steps = {int(st["step"]) for st in agent.critic_opt.state.values()}
        assert steps == {2 * epochs * 4}, (epochs, steps)
