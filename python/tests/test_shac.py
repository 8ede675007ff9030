"""moreau.shac on the cart-pole: a short run raises the return, checkpoints round-trip, TD(λ)
targets. Small and CPU-only (a few seconds each on 2 cores)."""
import pytest
import torch

from moreau.evaluate import episode_return, evaluate
from moreau.shac import SHAC, SHACConfig, load_policy, main as shac_main
from moreau.tasks.cartpole import CartPole


@pytest.fixture(autouse=True)
def one_thread():
    # Small networks: one intra-op thread is fastest, and spinning torch workers on a busy 2-core
    # machine slow these tests down many times.
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


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
    from moreau.evaluate import main as eval_main
    assert eval_main([str(logdir / "model_final.pt"), "--seconds", "0.5", "--num-envs", "4"]) == 0
