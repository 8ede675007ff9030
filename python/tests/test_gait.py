"""Gait shaping in moreau.tasks.locomotion: the trot clock (phases, observation, resets), the
foot terms on hand-built states, their gradient through moreau against finite differences,
the command curriculum, and the configuration a checkpoint carries."""
import json
import math

import pytest
import torch

import moreau
from moreau.tasks.locomotion import Locomotion, config_from_dict, config_to_dict
from moreau.tasks.presets import TASK_PRESETS

DT = 0.02
STILL = ((0.0, 0.0), (0.0, 0.0), (0.0, 0.0))


def trot_env(n=2, weights=None, **kw):
    kw.setdefault("n_threads", 1)
    kw.setdefault("push_robots", False)
    return Locomotion(num_envs=n, seed=0, gait_frequency=2.0, reward_weights=weights or {"feet_height": -30.0}, **kw)


def test_clock_phases_and_observation():
    e = trot_env(3)
    assert e.num_obs == 56 and Locomotion(num_envs=1, n_threads=1).num_obs == 48
    obs = e.reset()
    # phase 0: LF and RH at 0 (sin 0, cos 1), RF and LH half a period later (sin π, cos −1)
    torch.testing.assert_close(obs[:, 48:56], torch.tensor([0.0, 1, 0, -1, 0, -1, 0, 1]).repeat(3, 1), atol=1e-6,
                               rtol=0)
    with torch.no_grad():
        for _ in range(5):
            obs, *_ = e.step(torch.zeros(3, 12))
    torch.testing.assert_close(e.gait_phase, torch.full((3,), 5 * 2.0 * DT))  # 0.2 of a period
    legs = torch.tensor([0.2, 0.7, 0.7, 0.2])
    torch.testing.assert_close(e.foot_phases(e.gait_phase), legs.repeat(3, 1))
    expect = torch.stack([torch.sin(2 * math.pi * legs), torch.cos(2 * math.pi * legs)], 1).reshape(8)
    torch.testing.assert_close(obs[:, 48:56], expect.repeat(3, 1), atol=1e-6, rtol=0)
    with torch.no_grad():
        for _ in range(8):  # 13 steps: 0.52 → wraps to [0, 1)
            e.step(torch.zeros(3, 12))
    assert torch.allclose(e.gait_phase, torch.full((3,), 0.52), atol=1e-5)
    e.reset_envs(torch.tensor([True, False, False]))
    assert e.gait_phase[0] == 0 and torch.allclose(e.gait_phase[1:], torch.full((2,), 0.52), atol=1e-5)
    with pytest.raises(ValueError, match="gait clock"):
        Locomotion(num_envs=1, n_threads=1, reward_weights={"feet_height": -1.0})
    with pytest.raises(ValueError, match="gait_offsets"):
        trot_env(1, gait_offsets=(0.0, 0.5))


def test_feet_height_on_hand_built_state():
    """Env 0 at φ = 0.25 (LF, RH at the swing apex: target 0.08 m; RF, LH in stance: 0), env 1
    raised 5 cm at φ = 0 (every target 0)."""
    e = trot_env(2)
    q = e.q0.repeat(2, 1)
    q[1, 2] += 0.05
    c = e.foot_clearance(q)
    torch.testing.assert_close(c[1] - c[0], torch.full((4,), 0.05), atol=1e-6, rtol=0)
    v = torch.zeros(2, 18)
    a = torch.zeros(2, 12)
    t = e.reward_terms(q, v, q, v, a, a, torch.zeros(2, 3), torch.zeros(2, dtype=torch.bool),
                       phase=torch.tensor([0.25, 0.0]))
    apex = e.cfg.foot_height_apex
    expect0 = (c[0, 0] - apex) ** 2 + c[0, 1] ** 2 + c[0, 2] ** 2 + (c[0, 3] - apex) ** 2
    torch.testing.assert_close(t["feet_height"], torch.stack([expect0, (c[1] ** 2).sum()]), rtol=1e-5, atol=1e-7)
    assert t["foot_slip"].abs().sum() == 0 and t["feet_air_time"].abs().sum() == 0  # unweighted: zero
    w = e.reward_weights
    only = {k: (t[k] if k == "feet_height" else torch.zeros(2)) for k in t}
    torch.testing.assert_close(e.combine_rewards(only), w["feet_height"] * DT * t["feet_height"])


def test_foot_slip_on_hand_built_state():
    """Env 0 stands (feet 5 mm up, below foot_contact_height 1 cm) and its base moves 1 cm in x in
    a step: four feet slipping at 0.5 m/s; env 1 is 5 cm up, no foot in contact."""
    e = trot_env(2, weights={"foot_slip": -1.0})
    q = e.q0.repeat(2, 1)
    q[:, 2] -= e.foot_clearance(q)[0, 0] - 0.005
    q[1, 2] += 0.05
    q1 = q.clone()
    q1[:, 0] += 0.01
    v = torch.zeros(2, 18)
    a = torch.zeros(2, 12)
    t = e.reward_terms(q, v, q1, v, a, a, torch.zeros(2, 3), torch.zeros(2, dtype=torch.bool),
                       phase=torch.zeros(2))
    torch.testing.assert_close(t["foot_slip"], torch.tensor([4 * 0.5 ** 2, 0.0]), rtol=1e-4, atol=1e-6)


def test_feet_air_time_counts_touchdowns():
    """legged_gym's term: at each touchdown (t_air − 0.5), only while the planar command is
    above 0.1 m/s. A foot starts in the air (0.3 s), the robot stands on the ground."""
    w = {k: 0.0 for k in ("tracking_lin_vel", "tracking_ang_vel", "lin_vel_z", "ang_vel_xy", "orientation",
                          "action_rate", "torques", "dof_acc")}
    w["feet_air_time"] = 1.0
    e = trot_env(2, weights=w, command_ranges=((0.5, 0.5), (0.0, 0.0), (0.0, 0.0)), small_command_threshold=0.0)
    q = e.q0.repeat(2, 1)
    q[:, 2] -= e.foot_clearance(q)[0, 0] + 0.001  # 1 mm into the ground: all four feet in contact
    e.set_state(q, torch.zeros(2, 18))
    e.feet_air_time = torch.tensor([[0.3, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    e.commands[1] = 0.0  # env 1 has no command: no reward even at a touchdown
    e.feet_air_time[1, 2] = 0.8
    with torch.no_grad():
        _, rew, _, _ = e.step(e.default_dof_pos.new_zeros(2, 12))
    torch.testing.assert_close(rew, torch.tensor([(0.3 + DT - 0.5) * DT, 0.0]), rtol=1e-5, atol=1e-8)
    assert torch.equal(e.feet_air_time, torch.zeros(2, 4))  # every foot on the ground: reset to 0


def test_foot_terms_gradient_matches_finite_differences():
    """d reward / d (actions, joint positions) of one control step with the foot terms, through
    moreau.torch.step (smooth contact, float64) and the torch kinematics, against central
    differences. A large foot_contact_height keeps the slip's stance mask fixed; the contact
    solve runs to 1e-13 so that the differences see the converged step."""
    w = {"feet_height": -30.0, "foot_slip": -1.0}
    contact = moreau.ContactOptions()
    contact.mode, contact.tolerance, contact.max_iterations = moreau.contact_mode_from_name("smooth"), 1e-13, 1000
    e = trot_env(2, weights=w, dtype=torch.float64, contact=contact, foot_contact_height=1.0,
                 randomize_friction=False, randomize_base_mass=False, command_ranges=STILL)
    q0 = e.q0.repeat(2, 1)
    q0[:, 2] -= e.foot_clearance(q0)[0, 0] + 0.002
    q0[:, 7:] += 0.05 * torch.randn(2, 12, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    e.gait_phase = torch.tensor([0.1, 0.3], dtype=torch.float64)
    acts = 0.2 * torch.randn(2, 12, generator=torch.Generator().manual_seed(2), dtype=torch.float64)

    def reward(qj, a):
        q = torch.cat([q0[:, :7], qj], 1)
        e.q, e.v = q, torch.zeros(2, 18, dtype=torch.float64)
        e.last_actions = torch.zeros(2, 12, dtype=torch.float64)
        e.gait_phase = torch.tensor([0.1, 0.3], dtype=torch.float64)
        _, rew, done, _ = e.step(a)
        assert not done.any()
        return rew.sum()

    qj = q0[:, 7:].clone().requires_grad_(True)
    a = acts.clone().requires_grad_(True)
    reward(qj, a).backward()
    eps = 1e-6
    for x, g, idx in ((a, a.grad, [(0, 0), (0, 4), (1, 8), (1, 11)]), (qj, qj.grad, [(0, 1), (1, 2), (1, 9)])):
        for i, j in idx:
            xp, xm = x.detach().clone(), x.detach().clone()
            xp[i, j] += eps
            xm[i, j] -= eps
            with torch.no_grad():
                args_p = (xp, acts) if x is qj else (q0[:, 7:], xp)
                args_m = (xm, acts) if x is qj else (q0[:, 7:], xm)
                fd = (reward(*args_p) - reward(*args_m)) / (2 * eps)
            assert g[i, j].item() == pytest.approx(fd.item(), rel=1e-4, abs=1e-9), (i, j)
    assert a.grad.abs().max() > 1e-4  # a gradient that is not trivially zero


def test_command_curriculum():
    e = Locomotion(num_envs=4, n_threads=1, push_robots=False, curriculum_command=(0.5, 0.0, 0.0),
                   curriculum_warmup_samples=12, curriculum_start_scale=0.25, curriculum_ramp_samples=40)
    assert e.command_scale() == 0.0
    torch.testing.assert_close(e.commands, torch.tensor([0.5, 0.0, 0.0]).repeat(4, 1))
    with torch.no_grad():
        for _ in range(3):  # 12 samples: the warm-up is over
            e.step(torch.zeros(4, 12))
        assert e.command_scale() == pytest.approx(0.25)
        for _ in range(8):  # 44 samples: 32 of the 40-sample ramp
            e.step(torch.zeros(4, 12))
    assert e.command_scale() == pytest.approx(0.25 + 0.75 * 0.8)
    e.reset_envs(torch.ones(4, dtype=torch.bool))
    assert (e.commands.abs() <= 0.85 + 1e-6).all() and not torch.equal(e.commands[0], e.commands[1])
    assert Locomotion(num_envs=1, n_threads=1).command_scale() == 1.0


def test_gated_curriculum_waits_for_tracking():
    """With curriculum_tracking_threshold the warm-up's fixed command stays while r̄ is below it
    (a robot standing still under a 1 m/s command) and the schedule goes on once it is reached
    (a 0 command, which standing still tracks); schedule_state round-trips."""
    def make(cmd):  # the window of one control step: r̄ is the step's batch mean
        return Locomotion(num_envs=4, n_threads=1, push_robots=False, reset_base_vel=0.0, curriculum_command=cmd,
                          curriculum_warmup_samples=8, curriculum_start_scale=0.25, curriculum_ramp_samples=40,
                          curriculum_tracking_threshold=0.5, curriculum_window_s=0.02)
    e = make((1.0, 0.0, 0.0))
    with torch.no_grad():
        for _ in range(6):
            e.step(torch.zeros(4, 12))
    assert e.curriculum_tracking < 0.1 and e.curriculum_samples == 8 and e.command_scale() == 0.0
    e = make((0.0, 0.0, 0.0))
    with torch.no_grad():
        for _ in range(6):
            e.step(torch.zeros(4, 12))
    assert e.curriculum_tracking > 0.9 and e.curriculum_samples == 24
    assert e.command_scale() == pytest.approx(0.25 + 0.75 * 16 / 40)
    f = make((0.0, 0.0, 0.0))
    f.load_schedule_state(e.schedule_state())
    assert f.schedule_state() == e.schedule_state() and f.command_scale() == e.command_scale()
    f.load_schedule_state({"common_step_counter": 3})  # an older checkpoint: every sample counted
    assert f.curriculum_samples == 12 and f.curriculum_tracking == 0.0


def test_config_round_trip():
    cfg = Locomotion(num_envs=2, n_threads=1, **TASK_PRESETS["trot_curriculum"]).cfg
    d = json.loads(json.dumps(config_to_dict(cfg)))
    assert d["gait_frequency"] == 2.0 and d["reward_weights"]["feet_height"] == -30.0 and d["dtype"] == "float32"
    assert config_from_dict(d) == cfg
    with pytest.raises(ValueError, match="no_such"):
        config_from_dict({"no_such": 1})
