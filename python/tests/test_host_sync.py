"""A control step reads nothing back from the device (moreau.tasks.base, moreau.trainers.meters).

On the CPU a read of a tensor's value costs nothing and cannot be caught by torch, so the CPU
tests count the Python calls that read one (``.item()``, ``.tolist()``, ``float()``, ``int()``,
``bool()``, ``.cpu()``, ``.numpy()``, ``nonzero``, boolean-mask indexing) and assert that their
number does not grow with the number of control steps: the locomotion task's steps make none, a
SHAC iteration a fixed number (its log row's, the optimizers'), whatever its horizon. On a GPU
``torch.cuda.set_sync_debug_mode("error")`` turns every synchronising call into an error: one
SHAC iteration (without its log row), the rsl_rl adapter's steps and PPO's rollout steps run
under it.
"""
import contextlib

import pytest
import torch

from conftest import needs_cuda
from moreau.tasks.locomotion import Locomotion
from moreau.tasks.presets import preset_kwargs
from moreau.trainers.shac import SHAC, SHACConfig

pytestmark = pytest.mark.usefixtures("one_thread")

READS = ("item", "tolist", "__float__", "__int__", "__bool__", "__index__", "cpu", "numpy", "nonzero")

CONFIGS = [
    pytest.param({}, id="default"),
    # the command curriculum gated by tracking (its schedule on the device), without foot terms
    pytest.param(dict(curriculum_command=(0.5, 0.0, 0.0), curriculum_warmup_samples=64.0, curriculum_ramp_samples=640.0,
                      curriculum_tracking_threshold=0.5, curriculum_window_s=0.1), id="gated"),
    # the trot presets' foot terms (moreau.kinematics.Kinematics.body_poses)
    pytest.param(preset_kwargs("trot_gated"), id="trot_gated"),
]


@contextlib.contextmanager
def counting_reads():
    """Counts the calls of READS (methods of torch.Tensor, and torch.nonzero) and the indexing of
    a tensor with a bool tensor, while the block runs: ``with counting_reads() as calls: ...``,
    then ``calls`` maps each name to its count."""
    calls = {}
    saved = {name: getattr(torch.Tensor, name) for name in READS}
    saved_getitem, saved_setitem, saved_nonzero = torch.Tensor.__getitem__, torch.Tensor.__setitem__, torch.nonzero

    def counted(name, fn):
        def wrapper(*args, **kwargs):
            calls[name] = calls.get(name, 0) + 1
            return fn(*args, **kwargs)
        return wrapper

    def bool_index(index) -> bool:
        items = index if isinstance(index, tuple) else (index,)
        return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in items)

    def getitem(self, index):
        if bool_index(index):
            calls["bool index"] = calls.get("bool index", 0) + 1
        return saved_getitem(self, index)

    def setitem(self, index, value):
        if bool_index(index):
            calls["bool index"] = calls.get("bool index", 0) + 1
        return saved_setitem(self, index, value)

    try:
        for name, fn in saved.items():
            setattr(torch.Tensor, name, counted(name, fn))
        torch.Tensor.__getitem__, torch.Tensor.__setitem__ = getitem, setitem
        torch.nonzero = counted("nonzero", saved_nonzero)
        yield calls
    finally:
        for name, fn in saved.items():
            setattr(torch.Tensor, name, fn)
        torch.Tensor.__getitem__, torch.Tensor.__setitem__, torch.nonzero = saved_getitem, saved_setitem, saved_nonzero


def env_(n=4, **kw):
    # episodes of 0.1 s and pushes every 2 steps: resets, command resampling and pushes inside the counted steps
    base = dict(num_envs=n, n_threads=1, seed=0, episode_length_s=0.1, push_interval_s=0.04, resampling_time=(0.04, 0.06))
    return Locomotion(**{**base, **kw})


def test_counting_catches_reads():
    t = torch.ones(3)
    with counting_reads() as calls:
        t.sum().item()
        float(t[0])
        t[t > 0].tolist()
        bool(t.any())
        torch.nonzero(t)
    assert calls == {"item": 1, "__float__": 1, "bool index": 1, "tolist": 1, "__bool__": 1, "nonzero": 1}, calls


@pytest.mark.parametrize("config", CONFIGS)
def test_locomotion_steps_read_nothing(config):
    """N control steps, resets, resampling and pushes among them, read no value back, with
    gradients on (SHAC's) and off (PPO's)."""
    e = env_(**config)
    a = torch.zeros(4, 12, requires_grad=True)
    with torch.no_grad():
        e.step(a)  # the first: the per-environment parameters are written through the host once
    counts = []
    for n in (3, 9):
        with counting_reads() as calls:
            dones = 0
            for _ in range(n):
                obs, rew, done, info = e.step(a)
                dones = dones + done.sum()
            with torch.no_grad():
                for _ in range(n):
                    e.step(a)
        counts.append(calls)
        e.detach()
    assert counts == [{}, {}], counts
    assert int(dones) > 0  # episodes ended inside the counted steps


@pytest.mark.parametrize("config", CONFIGS)
def test_shac_iteration_reads_a_fixed_number(config):
    """One SHAC iteration's reads do not depend on its horizon: the log row's one transfer, and
    on the CPU Adam's reads of its step counts (CPU tensors, one per parameter and step), with
    resets and gradient-spike checks inside."""
    counts = []
    for horizon in (4, 12):
        cfg = SHACConfig(horizon=horizon, iterations=10, critic_iterations=2, critic_minibatches=2, actor_hidden=(32,),
                         critic_hidden=(32,), grad_spike_ratio=10.0, seed=0)
        agent = SHAC(env_(**config), cfg, progress=False)
        agent.iteration()  # the first: the optimizers' states are created
        with counting_reads() as calls:
            s = agent.iteration()
        counts.append(calls)
        assert isinstance(s["episode_return"], float) and isinstance(s["grad_norm"], float)
    assert counts[0] == counts[1], counts
    adam_reads = (cfg.critic_iterations * cfg.critic_minibatches + 1) * len(list(agent.critic.parameters()))
    assert counts[0].get("tolist") == 1 and set(counts[0]) <= {"tolist", "item"}, counts[0]
    assert counts[0].get("item", 0) <= adam_reads, counts[0]


@contextlib.contextmanager
def sync_errors():
    """Every synchronising CUDA call raises inside the block."""
    torch.cuda.set_sync_debug_mode("error")
    try:
        yield
    finally:
        torch.cuda.set_sync_debug_mode("default")


CUDA_CONFIGS = [
    pytest.param({}, id="default"),
    pytest.param(CONFIGS[1].values[0], id="gated"),
    # the trot presets' foot terms (moreau.kinematics.Kinematics.body_poses)
    pytest.param(preset_kwargs("trot_gated"), id="trot_gated"),
]


@needs_cuda
@pytest.mark.parametrize("config", CUDA_CONFIGS)
def test_no_synchronisation_on_cuda(config):
    """On a GPU: a SHAC iteration (run_iteration; read_stats, its one read, outside), the rsl_rl
    adapter's steps and PPO's rollout steps (act, step, process_env_step) queue work without
    waiting for the device."""
    from rsl_rl.runners import OnPolicyRunner

    from moreau.rl.rsl_rl import RslRlVecEnv, default_train_cfg

    cfg = SHACConfig(horizon=8, iterations=10, critic_iterations=2, critic_minibatches=2, actor_hidden=(32,),
                     critic_hidden=(32,), grad_spike_ratio=10.0, seed=0)
    agent = SHAC(env_(64, device="cuda", **config), cfg, progress=False)
    agent.iteration()  # the first: parameters written through the host once, optimizer states created
    with sync_errors():
        stats = agent.run_iteration()
    s = agent.read_stats(stats)
    assert s["iteration_time"] > 0 and s["time_env_step"] > 0 and s["episode_return"] == s["episode_return"]

    vec = RslRlVecEnv(env_(64, device="cuda", **config), episode_extras=False)
    runner = OnPolicyRunner(vec, dict(default_train_cfg(num_steps_per_env=8), check_for_nan=False), log_dir=None,
                            device="cuda")
    obs = vec.get_observations()
    with torch.inference_mode():
        actions = runner.alg.act(obs)
        obs, rew, dones, extras = vec.step(actions)
        runner.alg.process_env_step(obs, rew, dones, extras)
        with sync_errors():
            for _ in range(6):
                actions = runner.alg.act(obs)
                obs, rew, dones, extras = vec.step(actions)
                runner.alg.process_env_step(obs, rew, dones, extras)
    vec.check_finite()
    assert len(vec.episode_lengths) > 0  # episodes of 5 steps ended
