"""moreau.tasks.cartpole: reset, termination and reward on hand-built states; gradients of the
step reward w.r.t. the actions."""
import math

import pytest
import torch

import moreau
from moreau.tasks import make
from moreau.tasks.cartpole import CartPole


def env(n=4, **kw):
    return CartPole(num_envs=n, n_threads=1, **kw)


def test_make_and_spaces():
    e = make("cartpole", num_envs=3)
    assert isinstance(e, CartPole) and isinstance(e, moreau.tasks.DiffEnv)
    assert (e.num_envs, e.num_obs, e.num_actions) == (3, 4, 1)
    assert e.dt == pytest.approx(0.02) and e.max_episode_length == 300
    obs = e.reset()
    assert obs.shape == (3, 4) and torch.equal(obs, e.get_observations())


def test_reset_distribution_and_seed():
    a, b = env(256, seed=7), env(256, seed=7)
    oa, ob = a.reset(), b.reset()
    assert torch.equal(oa, ob)  # same seed, same states
    assert oa.abs().max() <= a.init_noise and oa.std(0).min() > 0.1  # U(±0.3) per component
    assert (a.episode_length_buf == 0).all()
    assert not torch.equal(a.reset(), oa)  # the generator moves on


def test_reward_on_hand_built_states():
    e = env(4)
    q = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 0.5], [0.5, -0.3]])
    v = torch.zeros(4, 2)
    a = torch.tensor([[0.0], [0.0], [0.0], [1.0]])
    r = e.compute_reward(q, v, a)
    up = lambda th: 1 - 4 * (1 - math.cos(th))  # noqa: E731
    expected = torch.tensor([1.0, 1.0 - 0.1, up(0.5), up(0.3) - 0.1 * 0.25 - 0.01])
    torch.testing.assert_close(r, expected)
    assert r[0] == r.max()  # upright, centred, no action: the best


def test_termination_and_reset_inside_step():
    e = env(4, max_episode_length=5)
    e.reset()
    # pole past the limit, cart past the limit, upright and centred, NaN state
    q = torch.tensor([[0.0, 0.9], [1.6, 0.0], [0.0, 0.0], [0.0, 0.0]])
    v = torch.zeros(4, 2)
    v[3, 0] = float("nan")
    e.set_state(q, v)
    obs, rew, done, info = e.step(torch.zeros(4, 1))
    assert done.tolist() == [True, True, False, True]
    assert not info["time_outs"].any()
    # ended environments restart from the reset distribution; obs_before_reset keeps the end state
    assert obs[:2].abs().max() <= e.init_noise
    assert info["obs_before_reset"][0, 1] > 0.8 and info["obs_before_reset"][1, 0] > 1.5
    torch.testing.assert_close(info["obs_before_reset"][2], obs[2])
    assert torch.isfinite(e.q).all() and torch.isfinite(e.v).all()
    assert e.episode_length_buf.tolist() == [0, 0, 1, 0]
    assert "episode" in info
    # the failure test on the state alone
    fail = e.compute_failure(q, v)
    assert fail.tolist() == [True, True, False, True]


def test_time_out():
    e = env(2, max_episode_length=3)
    e.set_state(torch.zeros(2, 2), torch.zeros(2, 2))  # exactly upright: stays there
    for k in range(3):
        obs, rew, done, info = e.step(torch.zeros(2, 1))
    assert done.all() and info["time_outs"].all()
    assert (e.episode_length_buf == 0).all()
    torch.testing.assert_close(rew, torch.ones(2))


def test_physics_direction():
    """A positive action pushes the cart to +x, and the pole (tipped by the cart's acceleration)
    leans back: the motor actuator acts on the cart."""
    e = env(1)
    e.set_state(torch.zeros(1, 2), torch.zeros(1, 2))
    for _ in range(10):
        obs, *_ = e.step(torch.ones(1, 1))
    assert obs[0, 0] > 0.05 and obs[0, 2] > 0.5
    assert obs[0, 1] * obs[0, 3] > 0 and obs[0, 1].abs() > 0.01


def test_reward_gradient_wrt_actions_finite_and_nonzero():
    e = env(8, seed=3)
    e.reset()
    # inside (-1, 1): the env clips actions, and a clipped action has no gradient
    a = (0.3 * torch.randn(8, 1, generator=torch.Generator().manual_seed(0))).clamp(-0.9, 0.9).requires_grad_()
    total = 0
    for _ in range(5):  # the reward of later steps depends on this action through the dynamics
        obs, rew, done, info = e.step(a)
        total = total + rew.sum()
    assert not done.any()
    total.backward()
    assert torch.isfinite(a.grad).all() and (a.grad.abs() > 0).all()
    # one step: the reward depends on the action directly (action cost) and through the state
    e.reset()
    a1 = torch.full((8, 1), 0.3, requires_grad=True)
    _, rew, _, info = e.step(a1)
    (g,) = torch.autograd.grad(rew.sum() + info["obs_before_reset"][:, 1].sum(), a1)
    assert torch.isfinite(g).all() and (g.abs() > 0).all()


def test_detach_cuts_the_graph():
    e = env(2)
    e.reset()
    a = torch.zeros(2, 1, requires_grad=True)
    e.step(a)
    assert e.q.requires_grad
    e.detach()
    assert not e.q.requires_grad and not e.get_observations().requires_grad
