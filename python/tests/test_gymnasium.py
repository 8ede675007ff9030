"""moreau.rl.gymnasium: the gymnasium VectorEnv contract (spaces, same-step autoreset,
terminations vs truncations, seeding, numpy and torch arrays, errors) over the cart-pole and
ANYmal tasks, and gymnasium's own vector wrappers on top."""
import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode

import moreau
from moreau.rl.gymnasium import VectorEnv
from moreau.tasks import make


def test_registered_ids_make_batched_envs():
    envs = gym.make_vec("moreau/CartPole-v0", num_envs=5, n_threads=1)
    assert isinstance(envs.unwrapped, VectorEnv) and envs.num_envs == 5
    assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert envs.single_observation_space.shape == (4,) and envs.single_action_space.shape == (1,)
    assert envs.observation_space.shape == (5, 4) and envs.action_space.shape == (5, 1)
    obs, infos = envs.reset(seed=0)
    assert obs.dtype == np.float32 and obs in envs.observation_space and infos == {}
    obs, rew, term, trunc, infos = envs.step(envs.action_space.sample())
    assert obs.shape == (5, 4) and rew.shape == (5,) and rew.dtype == np.float32
    assert term.dtype == np.bool_ and trunc.dtype == np.bool_ and infos["final_obs"].shape == (5, 4)

    anymal = gym.make_vec("moreau/AnymalC-v0", num_envs=2, n_threads=1, push_robots=False)
    obs, _ = anymal.reset(seed=1)
    assert obs.shape == (2, 48) and anymal.single_action_space.shape == (12,)
    obs, rew, term, trunc, _ = anymal.step(np.zeros((2, 12), np.float32))
    assert np.isfinite(obs).all() and np.isfinite(rew).all() and not term.any()


def test_same_step_autoreset_matches_the_task():
    """The wrapper is the task, relabelled: obs, rewards and the final observations equal the
    DiffEnv's own for the same seed and actions; failures are terminations, time-outs truncations."""
    kw = dict(num_envs=16, n_threads=1, max_episode_length=25, seed=0)
    raw, envs = make("cartpole", **kw), VectorEnv(make("cartpole", **kw))
    raw.seed(3)
    raw.reset()
    envs.reset(seed=3)
    gen = torch.Generator().manual_seed(0)
    saw_term = saw_trunc = False
    for _ in range(60):
        a = torch.sign(torch.rand(16, 1, generator=gen) - 0.3)  # mostly pushing right: some poles fall
        o0, r0, d0, i0 = raw.step(a)
        obs, rew, term, trunc, infos = envs.step(a.numpy())
        np.testing.assert_array_equal(obs, o0.numpy())
        np.testing.assert_array_equal(rew, r0.numpy())
        np.testing.assert_array_equal(infos["_final_obs"], d0.numpy())
        np.testing.assert_array_equal(infos["final_obs"], i0["obs_before_reset"].numpy())
        np.testing.assert_array_equal(trunc, (d0 & i0["time_outs"]).numpy())
        np.testing.assert_array_equal(term | trunc, d0.numpy())
        assert not (term & trunc).any()
        ended = infos["_final_obs"]
        if ended.any():  # a new episode's first observation, not the last one
            assert (infos["final_obs"][ended] != obs[ended]).any(axis=1).all()
        saw_term |= bool(term.any())
        saw_trunc |= bool(trunc.any())
    assert saw_term and saw_trunc  # both kinds of end happened in this run


def test_seeded_resets_repeat_and_torch_arrays_are_the_tasks_tensors():
    envs = VectorEnv(make("cartpole", num_envs=8, n_threads=1), array="torch")

    def run(seed):
        obs, _ = envs.reset(seed=seed)
        out = [obs]
        for k in range(40):
            obs, rew, term, trunc, infos = envs.step(torch.full((8, 1), 0.3 * np.sin(k)))
            out.append(obs)
        return torch.stack(out)

    a, b, c = run(5), run(5), run(6)
    assert isinstance(a, torch.Tensor) and a.device == envs.env.device and not a.requires_grad
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_gymnasium_vector_wrappers_record_the_tasks_episodes():
    """Action and reward wrappers run on top, and RecordEpisodeStatistics counts the episodes the
    task ends with their lengths (time-outs at 6 steps here). gymnasium's observation wrappers
    refuse same-step autoreset (they would not transform final_obs), so NormalizeObservation is
    not among them: normalise in the trainer, as rsl_rl and SHAC do."""
    envs = gym.make_vec("moreau/CartPole-v0", num_envs=32, n_threads=1, max_episode_length=6)
    envs = gym.wrappers.vector.ClipAction(envs)
    envs = gym.wrappers.vector.NormalizeReward(envs)
    envs = gym.wrappers.vector.RecordEpisodeStatistics(envs)
    envs.reset(seed=0)
    lengths, ends = [], 0
    for _ in range(25):
        _, _, term, trunc, infos = envs.step(3 * envs.action_space.sample())  # out of range: clipped
        ends += int((term | trunc).sum())
        if "episode" in infos:
            lengths += infos["episode"]["l"][infos["_episode"]].tolist()
            np.testing.assert_array_equal(infos["_episode"], term | trunc)
    assert len(lengths) == ends and ends >= 4 * 32
    assert max(lengths) == 6 and min(lengths) >= 1


def test_bad_arguments_raise_moreaus_errors():
    envs = VectorEnv(make("cartpole", num_envs=4, n_threads=1))
    envs.reset()
    with pytest.raises(moreau.TensorError, match=r"step: argument 'actions': wrong shape: expected \(4, 1\), got \(4,\)"):
        envs.step(np.zeros(4, np.float32))
    with pytest.raises(moreau.TensorError, match="wrong dtype: expected a floating-point array, got torch.int64"):
        envs.step(np.zeros((4, 1), np.int64))
    with pytest.raises(ValueError, match=r"options are not supported, got \['reset_mask'\]"):
        envs.reset(options={"reset_mask": np.ones(4, bool)})
    with pytest.raises(ValueError, match="array must be 'numpy' or 'torch', got 'jax'"):
        VectorEnv(make("cartpole", num_envs=4, n_threads=1), array="jax")
