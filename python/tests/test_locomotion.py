"""moreau.tasks.locomotion: ANYmal C velocity tracking (the locomotion study, docs/studies.md) —
observation layout, each reward term on hand-built states, terminations, resets, command
resampling, randomisation, pushes, gradients, contact modes."""
import math

import pytest
import torch

import moreau
import moreau.torch as mt
from moreau.tasks import DiffEnv, make
from moreau.tasks.locomotion import FOOT_TERMS, REWARD_TERMS, Locomotion, quat_rotate, quat_rotate_inverse

DT = 0.02


def env_(n=4, **kw):
    kw.setdefault("n_threads", 1)
    kw.setdefault("seed", 0)
    return Locomotion(num_envs=n, **kw)


def quat_axis_angle(axis, angle):
    axis = torch.tensor(axis, dtype=torch.float32)
    axis = axis / axis.norm()
    return torch.cat([torch.tensor([math.cos(angle / 2)]), math.sin(angle / 2) * axis])


@pytest.fixture(scope="module")
def env():
    return env_(2, push_robots=False)


def test_interface(env):
    assert isinstance(env, DiffEnv) and isinstance(make("locomotion", num_envs=2, n_threads=1), Locomotion)
    assert (env.num_envs, env.num_obs, env.num_actions) == (2, 48, 12)
    assert env.dt == pytest.approx(DT) and env.max_episode_length == 1000
    assert env.sim.substeps >= 1 and env.sim.model.decimation == 4 and env.sim.model.timestep == pytest.approx(0.005)
    assert torch.equal(env.sim.param("kp")[0], torch.full((12,), 80.0))
    assert torch.equal(env.sim.param("kd")[0], torch.full((12,), 2.0))
    obs = env.reset()
    assert obs.shape == (2, 48) and torch.equal(obs, env.get_observations())
    assert torch.allclose(env.default_dof_pos, torch.tensor([0, .4, -.8, 0, .4, -.8, 0, -.4, .8, 0, -.4, .8]))
    with pytest.raises(TypeError):
        Locomotion(num_envs=2, no_such_option=1)
    with pytest.raises(ValueError):
        Locomotion(num_envs=2, reward_weights={"no_such_term": 1.0})


def test_quaternion_helpers():
    q = quat_axis_angle([0, 0, 1], math.pi / 2)[None]
    assert torch.allclose(quat_rotate_inverse(q, torch.tensor([[1.0, 0, 0]])), torch.tensor([[0.0, -1, 0]]), atol=1e-6)
    assert torch.allclose(quat_rotate(q, torch.tensor([[1.0, 0, 0]])), torch.tensor([[0.0, 1, 0]]), atol=1e-6)


def test_observation_layout(env):
    """A base yawed by 90° moving along world x, rolled env 1; joints off default."""
    n = 2
    q = env.q0.repeat(n, 1)
    q[0, 3:7] = quat_axis_angle([0, 0, 1], math.pi / 2)
    q[1, 3:7] = quat_axis_angle([1, 0, 0], 0.3)
    q[:, 7:] += torch.linspace(-0.2, 0.2, 12)
    v = torch.zeros(n, 18)
    v[:, 0:3] = torch.tensor([1.0, 0.0, 0.3])      # world frame
    v[:, 3:6] = torch.tensor([0.1, -0.2, 0.5])      # body frame
    v[:, 6:] = torch.arange(12.0)
    cmd = torch.tensor([[0.5, -0.5, 0.2], [0.0, 0.0, -1.0]])
    last = torch.linspace(-1, 1, 12).repeat(n, 1)
    obs = env.compute_observations(q, v, cmd, last)
    assert obs.shape == (2, 48)
    assert torch.allclose(obs[0, 0:3], 2.0 * torch.tensor([0.0, -1.0, 0.3]), atol=1e-6)  # base frame · 2
    assert torch.allclose(obs[:, 3:6], 0.25 * torch.tensor([0.1, -0.2, 0.5]).repeat(2, 1))
    assert torch.allclose(obs[0, 6:9], torch.tensor([0.0, 0.0, -1.0]), atol=1e-6)
    assert torch.allclose(obs[1, 6:9], torch.tensor([0.0, -math.sin(0.3), -math.cos(0.3)]), atol=1e-6)
    assert torch.allclose(obs[:, 9:12], cmd * torch.tensor([2.0, 2.0, 0.25]))
    assert torch.allclose(obs[:, 12:24], torch.linspace(-0.2, 0.2, 12).repeat(2, 1), atol=1e-6)
    assert torch.allclose(obs[:, 24:36], 0.05 * torch.arange(12.0).repeat(2, 1))
    assert torch.equal(obs[:, 36:48], last)


def test_reward_terms_on_hand_built_state(env):
    n = 2
    q = env.q0.repeat(n, 1)
    q[:, 3:7] = quat_axis_angle([0, 0, 1], math.pi / 2)
    q[1, 3:7] = quat_axis_angle([1, 0, 0], 0.3)
    q[:, 7:] = env.default_dof_pos + 0.1
    v = torch.zeros(n, 18)
    v[:, 6:] = 1.0
    q1 = q.clone()
    v1 = torch.zeros(n, 18)
    v1[:, 0:3] = torch.tensor([1.0, 0.0, 0.3])
    v1[:, 3:6] = torch.tensor([0.1, -0.2, 0.5])
    v1[:, 6:] = 1.0 + DT * torch.arange(12.0)        # joint accelerations 0..11 rad/s²
    actions = torch.zeros(n, 12)
    actions[:, 0] = 1.0                                # target 0.5 above default on joint 0
    actions[1, 1] = -1.0
    last = torch.zeros(n, 12)
    last[:, 2] = 0.5
    cmd = torch.tensor([[0.5, -0.5, 0.2], [0.5, -0.5, 0.2]])
    failed = torch.tensor([False, True])
    t = env.reward_terms(q, v, q1, v1, actions, last, cmd, failed)
    assert set(t) == set(REWARD_TERMS) - set(FOOT_TERMS)  # the foot terms only where weighted (test_gait.py)
    # env 0: base yawed 90°: world (1, 0, 0.3) is (0, -1, 0.3) in the base frame
    assert t["tracking_lin_vel"][0].item() == pytest.approx(math.exp(-(0.5 ** 2 + 0.5 ** 2) / 0.25), rel=1e-5)
    assert t["tracking_ang_vel"][0].item() == pytest.approx(math.exp(-(0.2 - 0.5) ** 2 / 0.25), rel=1e-5)
    assert t["lin_vel_z"][0].item() == pytest.approx(0.09, rel=1e-5)
    assert t["ang_vel_xy"][0].item() == pytest.approx(0.05, rel=1e-5)
    assert t["orientation"][0].item() == pytest.approx(0.0, abs=1e-10)
    assert t["orientation"][1].item() == pytest.approx(math.sin(0.3) ** 2, rel=1e-5)
    assert t["base_height"][0].item() == pytest.approx((env.q0[2].item() - 0.5) ** 2, rel=1e-5)
    assert t["action_rate"][0].item() == pytest.approx(1.0 + 0.25)
    assert t["action_rate"][1].item() == pytest.approx(1.0 + 1.0 + 0.25)
    # τ = 80 (target − q) − 2 q̇: joint 0: 80 (0.5 − 0.1) − 2 = 30; others: 80 (−0.1) − 2 = −10;
    # env 1 joint 1: 80 (−0.5 − 0.1) − 2 = −50
    assert t["torques"][0].item() == pytest.approx(30 ** 2 + 11 * 10 ** 2, rel=1e-5)
    assert t["torques"][1].item() == pytest.approx(30 ** 2 + 50 ** 2 + 10 * 10 ** 2, rel=1e-5)
    tau = env.torques(q, v, 100 * actions)              # saturates at the 80 N m limit
    assert tau[0, 0].item() == pytest.approx(80.0) and tau[1, 1].item() == pytest.approx(-80.0)
    assert t["dof_acc"][0].item() == pytest.approx(sum(k * k for k in range(12)), rel=1e-4)
    assert t["termination"].tolist() == [0.0, 1.0]
    total = env.combine_rewards(t)
    w = env.reward_weights
    expect = DT * sum(w[k] * t[k] for k in t)
    assert torch.allclose(total, expect)
    # configurable weights
    e2 = env_(1, reward_weights={"tracking_lin_vel": 0.0, "torques": -1.0}, scale_rewards_by_dt=False)
    assert e2.reward_weights["tracking_ang_vel"] == 0.5 and e2.reward_weights["torques"] == -1.0
    only_torque = {k: (t[k][:1] if k == "torques" else torch.zeros(1)) for k in t}
    assert e2.combine_rewards(only_torque).item() == pytest.approx(-(30 ** 2 + 11 * 10 ** 2))


def test_check_termination_on_hand_built_states(env):
    q = env.q0.repeat(2, 1)
    v = torch.zeros(2, 18)
    env.episode_length_buf = torch.zeros(2, dtype=torch.long)
    assert env.check_termination(q, v)[0].tolist() == [False, False]
    q[0, 2] = 0.2                                               # base too low (base contact)
    q[1, 3:7] = quat_axis_angle([1, 1, 0], 1.1)                 # tilted beyond 1 rad
    failed, time_out = env.check_termination(q, v)
    assert failed.tolist() == [True, True] and time_out.tolist() == [False, False]
    q[1, 3:7] = quat_axis_angle([1, 1, 0], 0.9)
    assert env.check_termination(q, v)[0].tolist() == [True, False]
    q[0, 2] = float("nan")
    assert env.check_termination(q, v)[0].tolist() == [True, False]
    env.episode_length_buf = torch.tensor([env.max_episode_length, env.max_episode_length])
    failed, time_out = env.check_termination(q, v)
    assert failed.tolist() == [True, False] and time_out.tolist() == [False, True]  # failure wins
    env.reset()


def test_stands_with_zero_actions():
    e = env_(4, push_robots=False, command_ranges=((0, 0), (0, 0), (0, 0)))
    e.reset()
    with torch.no_grad():
        for _ in range(50):
            obs, rew, done, info = e.step(torch.zeros(4, 12))
            assert not done.any()
            assert torch.isfinite(obs).all() and torch.isfinite(rew).all()
    assert (e.q[:, 2] > 0.4).all()
    assert torch.equal(e.commands, torch.zeros(4, 3))
    assert (rew > 0).all()  # tracking a zero command while standing beats the penalties


def test_failure_reset_keeps_pre_reset_observation():
    e = env_(3, push_robots=False)
    e.reset()
    q, v = e.q.clone(), e.v.clone()
    q[0, 2] = 2.0
    q[0, 3:7] = quat_axis_angle([1, 0, 0], 1.5)                 # airborne, rolled 1.5 rad: fails
    v[0] = 0.0
    e.set_state(q, v)
    cmd_before = e.commands.clone()
    fr_before = e.friction.clone()
    with torch.no_grad():
        obs, rew, done, info = e.step(torch.zeros(3, 12))
    assert done.tolist() == [True, False, False]
    assert info["time_outs"].tolist() == [False, False, False]
    ob = info["obs_before_reset"]
    assert ob[0, 7].item() < -0.9                               # projected gravity of the rolled base
    assert abs(obs[0, 7].item()) < 0.35 and obs[0, 8].item() < -0.9   # new episode: upright
    assert torch.equal(ob[1:], obs[1:])
    assert e.q[0, 2].item() == pytest.approx(0.6)
    assert torch.equal(obs[0, 36:], torch.zeros(12))           # previous action cleared
    assert e.episode_length_buf.tolist() == [0, 1, 1]
    assert not torch.equal(e.commands[0], cmd_before[0]) and torch.equal(e.commands[1:], cmd_before[1:])
    assert e.friction[0] != fr_before[0] and torch.equal(e.friction[1:], fr_before[1:])
    assert "episode" in info and "rew_tracking_lin_vel" in info["episode"]


def test_time_out():
    e = env_(2, push_robots=False, episode_length_s=0.1)
    assert e.max_episode_length == 5
    e.reset()
    with torch.no_grad():
        for k in range(5):
            obs, rew, done, info = e.step(torch.zeros(2, 12))
            assert done.tolist() == ([True, True] if k == 4 else [False, False])
    assert info["time_outs"].tolist() == [True, True]
    assert e.episode_length_buf.tolist() == [0, 0]
    assert not torch.equal(info["obs_before_reset"], obs)
    assert info["episode"]["episode_length_s"] == pytest.approx(0.1)


def test_command_sampling_and_resampling():
    e = env_(256, push_robots=False)
    c = e.commands
    assert (c.abs() <= 1.0).all()
    xy = c[:, :2].norm(dim=1)
    assert ((xy == 0) | (xy >= 0.2)).all() and (xy > 0).sum() > 200
    assert c[:, 2].std() > 0.4
    steps = e.command_time_left
    assert (steps >= 500).all() and (steps <= 750).all() and steps.float().std() > 20   # 10–15 s at 50 Hz
    e2 = env_(4, push_robots=False, command_ranges=((0.5, 0.5), (0.0, 0.0), (-0.3, -0.3)))
    assert torch.allclose(e2.commands, torch.tensor([0.5, 0.0, -0.3]).repeat(4, 1))
    e3 = env_(4, push_robots=False)
    e3.command_time_left = torch.tensor([1, 100, 100, 100])
    before = e3.commands.clone()
    with torch.no_grad():
        e3.step(torch.zeros(4, 12))
    assert not torch.equal(e3.commands[0], before[0]) and torch.equal(e3.commands[1:], before[1:])
    assert 500 <= e3.command_time_left[0] <= 750 and e3.command_time_left[1:].tolist() == [99, 99, 99]
    assert torch.equal(e3.obs[:, 9:12], e3.commands * torch.tensor([2.0, 2.0, 0.25]))


def test_randomisation_per_env():
    e = env_(64, push_robots=False)
    assert (e.friction >= 0.5).all() and (e.friction <= 1.25).all() and e.friction.std() > 0.1
    assert (e.added_base_mass.abs() <= 5).all() and e.added_base_mass.std() > 1.5
    with torch.no_grad():
        e.step(torch.zeros(64, 12))
    assert torch.allclose(e.sim.param("friction")[:, 0], e.friction)
    assert torch.allclose(e.sim.param("added_base_mass")[:, 0], e.added_base_mass)
    off = env_(4, randomize_friction=False, randomize_base_mass=False)
    assert torch.equal(off.friction, torch.ones(4)) and torch.equal(off.added_base_mass, torch.zeros(4))


def test_transfer_preset_drives_and_their_randomisation():
    from moreau.tasks.presets import preset_kwargs
    e = env_(64, push_robots=False, **preset_kwargs("trot_transfer"))
    m = e.sim.model
    assert list(m.dof_damping[6:]) == [0.5] * 12 and list(m.dof_frictionloss[6:]) == [0.1] * 12
    assert list(m.dof_damping[:6]) == [0.0] * 6 and list(m.dof_frictionloss[:6]) == [0.0] * 6
    assert (e.frictionloss_scale >= 0).all() and (e.frictionloss_scale <= 2).all() and e.frictionloss_scale.std() > 0.3
    assert (e.motor_strength >= 0.9).all() and (e.motor_strength <= 1.1).all() and e.motor_strength.std() > 0.03
    with torch.no_grad():
        e.step(torch.zeros(64, 12))
    assert torch.allclose(e.sim.param("frictionloss_scale")[:, 0], e.frictionloss_scale)
    assert torch.allclose(e.sim.param("motor_strength"), e.motor_strength)
    assert "feet_separation" in e.episode_terms


def test_joint_limits_option_takes_the_robot_files_limits_out():
    m = env_(2, push_robots=False).sim.model
    assert sum(m.jnt_limited) == 12
    off = env_(2, push_robots=False, joint_limits=False, joint_damping=0.5).sim.model
    assert sum(off.jnt_limited) == 0 and list(off.dof_damping[6:]) == [0.5] * 12


def test_dof_pos_limits_term_acts_outside_the_soft_range():
    e = env_(3, push_robots=False, reward_weights={"dof_pos_limits": -10.0})
    m = e.sim.model
    j = m.jnt_name.index("LF_HAA")
    lo, hi = m.jnt_range[2 * j], m.jnt_range[2 * j + 1]
    k = m.jnt_qposadr[j]
    q = e.q0.repeat(3, 1).clone()
    # inside the soft range (90 % of [lo, hi] about its middle), 0.01 rad past its upper end, and past the lower
    q[0, k], q[1, k], q[2, k] = (lo + hi) / 2, (lo + hi) / 2 + 0.45 * (hi - lo) + 0.01, lo
    v = torch.zeros(3, m.nv, dtype=e.dtype)
    a = torch.zeros(3, e.num_actions, dtype=e.dtype)
    t = e.reward_terms(q, v, q, v, a, a, torch.zeros(3, 3, dtype=e.dtype), torch.zeros(3, dtype=torch.bool))
    expected = torch.tensor([0.0, 0.01, 0.05 * (hi - lo)], dtype=e.dtype)
    assert torch.allclose(t["dof_pos_limits"], expected, atol=1e-6)
    assert "dof_pos_limits" in e.episode_terms


def test_spin_friction_preset_randomises_the_feet_torsional_friction():
    from moreau.tasks.presets import preset_kwargs
    e = env_(64, push_robots=False, **preset_kwargs("trot_transfer_spin"))
    assert (e.spin_friction >= 0).all() and (e.spin_friction <= 0.04).all() and e.spin_friction.std() > 0.005
    with torch.no_grad():
        e.step(torch.zeros(64, 12))
    assert torch.allclose(e.sim.param("spin_friction")[:, 0], e.spin_friction)
    fixed = env_(4, push_robots=False, spin_friction=0.02)
    assert torch.equal(fixed.spin_friction, torch.full((4,), 0.02, dtype=fixed.spin_friction.dtype))


def test_rolling_friction_randomisation_reaches_the_simulator():
    e = env_(64, push_robots=False, randomize_rolling_friction=True, rolling_friction_range=(0.0, 0.02))
    roll = e.rolling_friction
    assert (roll >= 0).all() and (roll <= 0.02).all() and roll.std() > 0.003
    with torch.no_grad():
        e.step(torch.zeros(64, 12))
    assert torch.allclose(e.sim.param("rolling_friction")[:, 0], e.rolling_friction)
    e.reset()
    assert not torch.equal(e.rolling_friction, roll), "a reset draws the rolling friction again"
    fixed = env_(4, push_robots=False, rolling_friction=0.01)
    assert torch.equal(fixed.rolling_friction, torch.full((4,), 0.01, dtype=fixed.rolling_friction.dtype))


def test_smooth_k_randomisation_and_action_delay():
    e = env_(64, push_robots=False, contact="smooth", randomize_smooth_k=True, smooth_k_range=(100.0, 1000.0),
             action_delay_prob=0.5)
    assert (e.smooth_k >= 100).all() and (e.smooth_k <= 1000).all() and e.smooth_k.std() > 100
    assert 10 < int(e.action_delay.sum()) < 54
    a0, a1 = torch.full((64, 12), 0.3), torch.full((64, 12), -0.3)
    with torch.no_grad():
        e.step(a0)
        e.step(a1)
    assert torch.allclose(e.sim.param("smooth_k")[:, 0], e.smooth_k)
    # a delayed environment's second step drove the joints to a0's targets, the others to a1's
    late, now = e.action_delay, ~e.action_delay
    assert (e.q[late, 7:] - e.q[now, 7:].mean(0)).mean() > 0.01


def test_drive_torque_speed_line():
    # a joint moving at half the zero-torque speed gets at most half the torque limit
    fast = env_(1, push_robots=False, drive_max_velocity=8.0, randomize_base_mass=False)
    plain = env_(1, push_robots=False, randomize_base_mass=False)
    outs = []
    for e in (fast, plain):
        q = e.q0[None].clone()
        q[0, 2] += 1.0  # in the air
        v = torch.zeros(1, 18)
        v[0, 6] = 4.0  # LF_HAA at 4 rad/s
        target = e.default_dof_pos[None].clone()
        target[0, 0] += 2.0  # pulls it along at the torque limit
        q1, v1 = mt.step(e.sim, q, v, target)
        outs.append(v1[0, 6])
    assert outs[0] < outs[1] - 0.05  # the line cut the torque


def test_knee_contacts_end_the_episode():
    e = env_(2, push_robots=False, knee_contacts=True)
    names = list(e.sim.model.con_name)
    assert [n for n in names if n.endswith("_KNEE")] == ["LF_KNEE", "RF_KNEE", "LH_KNEE", "RH_KNEE"]
    q = e.q0.repeat(2, 1).clone()
    v = torch.zeros(2, 18)
    failed, _ = e.check_termination(q, v)
    assert not failed.any()
    # env 1 kneels: base lowered until the knees are 1 cm into the ground, the base still above
    # base_height_limit and level
    clear = e.kinematics.contact_clearance(q)[1, e.knees].min()
    q[1, 2] -= clear + 0.01
    assert q[1, 2] > e.cfg.base_height_limit
    failed, _ = e.check_termination(q, v)
    assert failed.tolist() == [False, True]
    assert not env_(2, push_robots=False).knees.numel()


def test_feet_separation_penalises_crossed_legs(env):
    # nominal stance: the left feet ~0.4 m left of the right ones, no penalty; abducting the
    # right legs and adducting the left ones brings them together and past each other
    q = env.q0.repeat(2, 1).clone()
    hip = [7, 10, 13, 16]  # LF, RF, LH, RH HAA
    q[1, hip[0]], q[1, hip[2]] = -0.7, -0.7  # left feet towards the right
    q[1, hip[1]], q[1, hip[3]] = 0.7, 0.7
    w = dict(env.reward_weights, feet_separation=-1.0)
    env.reward_weights, saved = w, env.reward_weights
    try:
        q.requires_grad_()
        terms = env.foot_terms(q.detach(), q, torch.zeros(2, 3), torch.zeros(2), None)
    finally:
        env.reward_weights = saved
    sep = terms["feet_separation"]
    assert sep[0] == 0 and sep[1] > 0.01
    sep[1].backward()
    assert q.grad[1, hip].abs().min() > 0


def test_pushes():
    """Twin envs with the same seed, one with a push every 2 control steps: after step 2 their
    states differ exactly by a planar base velocity within ±0.5 m/s."""
    kw = dict(command_ranges=((0, 0), (0, 0), (0, 0)))
    a, b = env_(8, push_robots=True, push_interval_s=2 * DT, **kw), env_(8, push_robots=False, **kw)
    with torch.no_grad():
        for _ in range(2):
            a.step(torch.zeros(8, 12))
            b.step(torch.zeros(8, 12))
    d = a.v - b.v
    assert torch.equal(a.q, b.q)
    assert torch.equal(d[:, 2:], torch.zeros(8, 16))
    assert (d[:, :2].abs() <= 0.5).all() and (d[:, :2].abs() > 0).all()
    assert torch.allclose(a.obs[:, 0:3] / 2, quat_rotate_inverse(a.q[:, 3:7], a.v[:, 0:3]), atol=1e-6)


def test_differentiable_through_steps_and_detach():
    e = env_(2, push_robots=False, contact="smooth")
    q0 = e.q.clone().requires_grad_()
    e.q = q0
    acts = [torch.full((2, 12), 0.1 * k, requires_grad=True) for k in range(3)]
    loss = 0
    for a in acts:
        obs, rew, done, info = e.step(a)
        assert obs.requires_grad and rew.requires_grad and info["obs_before_reset"].requires_grad
        loss = loss + rew.sum() + 0.1 * obs[:, :36].pow(2).sum()
    loss.backward()
    for a in acts:
        assert torch.isfinite(a.grad).all() and a.grad.abs().sum() > 0
    assert torch.isfinite(q0.grad).all() and q0.grad[:, 7:].abs().sum() > 0
    e.detach()
    assert not e.q.requires_grad and not e.v.requires_grad and not e.last_actions.requires_grad
    a = torch.zeros(2, 12, requires_grad=True)
    obs, rew, _, _ = e.step(a)
    rew.sum().backward()
    assert acts[0].grad is not None and torch.isfinite(a.grad).all()
    with torch.no_grad():
        obs, rew, _, _ = e.step(torch.zeros(2, 12, requires_grad=True))
    assert not obs.requires_grad and not rew.requires_grad


@pytest.mark.parametrize("mode", ["hard", "soft", "smooth", "hard_smooth_grad"])
def test_contact_modes(mode):
    e = env_(2, contact=mode, push_robots=False)
    assert e.sim.options.contact.mode == __import__("moreau").contact_mode_from_name(mode)
    with torch.no_grad():
        for _ in range(10):
            obs, rew, done, info = e.step(torch.zeros(2, 12))
    assert torch.isfinite(obs).all() and not done.any() and (e.q[:, 2] > 0.4).all()


def test_actions_clipped():
    a, b = env_(2, push_robots=False), env_(2, push_robots=False)
    with torch.no_grad():
        oa, ra, _, _ = a.step(torch.full((2, 12), 5.0))
        ob, rb, _, _ = b.step(torch.full((2, 12), 1.0))
    assert torch.equal(oa, ob) and torch.equal(ra, rb) and torch.equal(oa[:, 36:], torch.ones(2, 12))


def test_go1_configuration_stands_under_its_pd_gains():
    """The Unitree Go1 (the Menagerie's MJCF, moreau.tasks.robots): its four feet are the only
    contact points, 50 Hz control, the default pose held by kp 20 / kd 0.5 under hard contact: the
    base settles at 0.27-0.31 m within 2 s and stays there without a fall."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moreau.ModelWarning)  # the Menagerie's MuJoCo solver settings
        e = Locomotion(robot="go1", num_envs=8, contact="hard", push_robots=False, n_threads=1,
                       randomize_base_mass=False, reset_base_vel=0.0, reset_dof_scale_range=(1.0, 1.0))
    assert sorted(e.sim.model.con_name) == ["FL", "FR", "RL", "RR"] and e.dt == pytest.approx(0.02)
    assert e.cfg.kp == 20.0 and e.cfg.action_scale == 0.5 and e.torque_limit.tolist() == pytest.approx([23.7, 23.7, 35.55] * 4)
    # the file's joint damping (its servos' derivative part) is in the model but not simulated
    assert max(e.sim.model.dof_damping) == 2.0 and e.cfg.damping_scale == 0.0
    e.reset()
    heights = []
    with torch.no_grad():
        for _ in range(150):
            _, _, done, _ = e.step(torch.zeros(8, 12))
            assert not done.any()
            heights.append(e.q[:, 2].clone())
    assert 0.27 < float(heights[100].min()) and float(heights[100].max()) < 0.31
    assert float((heights[-1] - heights[100]).abs().max()) < 2e-3
    assert torch.equal(e.sim.param("damping_scale")[:, 0], torch.zeros(8))


def test_damping_and_armature_randomisation_and_old_checkpoints():
    """randomize_damping draws damping_scale · U[range], randomize_armature U[range], per
    environment, into the simulator's parameters; a configuration saved before damping_scale
    existed loads with the model's damping (1)."""
    from moreau.tasks.locomotion import LocomotionConfig, config_from_dict, config_to_dict, resolve_robot
    e = env_(64, push_robots=False, damping_scale=2.0, randomize_damping=True, damping_scale_range=(0.5, 1.5),
             randomize_armature=True, armature_scale_range=(0.8, 1.2))
    assert (e.damping_scale >= 1.0).all() and (e.damping_scale <= 3.0).all() and e.damping_scale.std() > 0.2
    assert (e.armature_scale >= 0.8).all() and (e.armature_scale <= 1.2).all() and e.armature_scale.std() > 0.05
    with torch.no_grad():
        e.step(torch.zeros(64, 12))
    assert torch.allclose(e.sim.param("damping_scale")[:, 0], e.damping_scale)
    assert torch.allclose(e.sim.param("armature_scale")[:, 0], e.armature_scale)
    d = config_to_dict(resolve_robot(LocomotionConfig(robot="go1")))
    assert config_from_dict(d).damping_scale == 0.0
    del d["damping_scale"]
    assert config_from_dict(d).damping_scale == 1.0


def test_robot_configuration_from_a_file(tmp_path):
    import json
    path = tmp_path / "my_robot.json"
    path.write_text(json.dumps({"file": "anymal_c.json", "feet": ["LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"],
                                "kp": 60.0, "init_base_height": 0.62}))
    e = env_(2, robot=str(path))
    assert e.cfg.kp == 60.0 and e.cfg.kd == 2.0 and float(e.q0[2]) == pytest.approx(0.62)
    assert env_(2, robot=str(path), kp=70.0).cfg.kp == 70.0  # the task's own value wins
    path.write_text(json.dumps({"file": "anymal_c.json", "feet": ["LF_FOOT", "RF_FOOT", "LH_FOOT", "NOSE"]}))
    with pytest.raises(ValueError, match="NOSE"):
        env_(2, robot=str(path))
    path.write_text(json.dumps({"file": "anymal_c.json", "feet": [], "stiffness": 3}))
    with pytest.raises(ValueError, match="stiffness"):
        env_(2, robot=str(path))


def test_new_robot_command_guesses_a_configuration_the_task_loads(tmp_path, capsys):
    from moreau.tasks import new_robot
    out = tmp_path / "go1.json"
    assert new_robot.main([moreau.asset("unitree_go1/go1.xml"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "feet (left-front, right-front, left-hind, right-hind): FL, FR, RL, RR" in printed
    assert "not guessed: torque limits" in printed and "not guessed: action scale" in printed
    assert "joint damping: the file's (up to 2 N m s/rad) is simulated" in printed
    import json
    cfg = json.loads(out.read_text())
    assert cfg["default_joint_pos"]["FR_thigh_joint"] == 0.9 and cfg["default_joint_pos"]["FR_calf_joint"] == -1.8
    assert cfg["decimation"] == 10 and 0.27 < cfg["base_height_target"] < 0.31
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moreau.ModelWarning)
        e = env_(2, robot=str(out))
    assert sorted(e.sim.model.con_name) == ["FL", "FR", "RL", "RR"] and float(e.default_dof_pos[1]) == pytest.approx(0.9)
    assert new_robot.main([moreau.asset("cartpole.json")]) == 2
    assert "floating base" in capsys.readouterr().err
