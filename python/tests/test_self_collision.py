"""Contact between two bodies of the robot from Python: ``moreau.with_self_collisions`` (the
robot file's list by default), the locomotion task's ``self_collisions`` (the feet and knees of
different legs), and two feet driven into each other: held apart with it, passing through each
other without it; a gradient through a pair."""
import os

import pytest
import torch

import moreau
from moreau import torch as mt
from moreau.kinematics import Kinematics
from moreau.tasks.locomotion import LocomotionConfig, leg_pairs, robot_model

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
MENAGERIE = os.path.join(ROOT, "tests", "data", "robots", "anymal_c_menagerie", "anymal_c.xml")


def test_with_self_collisions_takes_the_robot_files_pairs():
    with pytest.warns(moreau.ModelWarning, match="not simulated unless asked"):
        m = moreau.load_mjcf(MENAGERIE)
    assert len(m.self_collisions) == 62
    with pytest.warns(moreau.ModelWarning, match="of the robot file's 62 colliding body pairs have a body without"):
        p = moreau.with_self_collisions(m)
    listed = {frozenset(pair) for pair in m.self_collisions}
    assert p.npair > 0 and len(p.pair_con) == 2 * p.npair
    for a, b in zip(p.pair_con[::2], p.pair_con[1::2]):
        assert frozenset((m.body_name[m.con_body[a]], m.body_name[m.con_body[b]])) in listed
        assert m.con_radius[a] > 0 or m.con_radius[b] > 0  # no two points
    feet = {m.con_name.index(f"{leg}_SHANK/geom5") for leg in ("LF", "RF", "LH", "RH")}
    assert {(a, b) for a, b in zip(p.pair_con[::2], p.pair_con[1::2]) if a in feet and b in feet}  # foot on foot
    with pytest.raises(moreau.Error, match="element 0: expected a body of .*, got 'nope'"):
        moreau.with_self_collisions(m, [("base", "nope")])
    with pytest.raises(moreau.TensorError, match="argument 'bodies'"):
        moreau.with_self_collisions(m, "base")


def test_task_pairs_the_legs():
    m = robot_model(LocomotionConfig(self_collisions=True))
    assert len(leg_pairs(m)) == 6 and m.npair == 6  # four feet: one pair per two legs
    names = {tuple(sorted((m.con_name[a], m.con_name[b]))) for a, b in zip(m.pair_con[::2], m.pair_con[1::2])}
    assert ("LF_FOOT", "RF_FOOT") in names and ("LF_FOOT", "LH_FOOT") in names
    knees = robot_model(LocomotionConfig(self_collisions=True, knee_contacts=True))
    assert knees.npair == 24  # feet and knees of four legs: 8 points, those of other legs
    assert robot_model(LocomotionConfig()).npair == 0


def _feet_driven_together(self_collisions: bool):
    """ANYmal C in the air, its front hips' abduction driven 0.9 rad inwards: the front feet's
    centre distance over 40 control steps, and the last state."""
    m = robot_model(LocomotionConfig(self_collisions=self_collisions))
    sim = moreau.Simulator(m, dtype=torch.float64, contact="hard")
    q0 = torch.tensor(m.qpos0, dtype=torch.float64)[None]
    q0[0, 2] = 2.0
    sim.set_state(q0, torch.zeros(1, m.nv, dtype=torch.float64))
    target = q0[:, 7:].clone()
    lf, rf = m.actuator_name.index("LF_HAA"), m.actuator_name.index("RF_HAA")
    target[0, lf] -= 0.9
    target[0, rf] += 0.9
    kin = Kinematics(m, dtype=torch.float64)
    i, j = m.con_name.index("LF_FOOT"), m.con_name.index("RF_FOOT")
    closest = float("inf")
    for _ in range(40):
        sim.view("action").copy_(target)
        sim.step()
        q, _ = sim.get_state()
        p = kin.contact_positions(q)[0]
        closest = min(closest, float((p[i] - p[j]).norm()))
    return closest, 2 * m.con_radius[i]


def test_feet_of_two_legs_do_not_pass_through_each_other():
    free, diameter = _feet_driven_together(False)
    assert free < diameter - 0.03  # the drive takes them through each other without the pair
    held, _ = _feet_driven_together(True)
    assert held > diameter - 2e-3


def test_gradient_through_a_pair_of_feet():
    """One step's gradient with respect to the state where the front feet press into each other
    and close: finite (the pair's adjoint; finite differences check it in gradient_test.cc) and
    different from the step without the pair."""
    grads = []
    for pairs in (False, True):
        m = robot_model(LocomotionConfig(self_collisions=pairs))
        sim = moreau.Simulator(m, dtype=torch.float64, contact="hard")
        q = torch.tensor(m.qpos0, dtype=torch.float64)[None]
        q[0, 2] = 2.0
        lf, rf = m.actuator_name.index("LF_HAA"), m.actuator_name.index("RF_HAA")
        q[0, 7 + lf] -= 0.5  # the feet 3.4 mm into each other
        q[0, 7 + rf] += 0.5
        q.requires_grad_(True)
        v = torch.zeros(1, m.nv, dtype=torch.float64)
        v[0, 6 + lf], v[0, 6 + rf] = -1.0, 1.0
        q1, v1, status = mt.step(sim, q, v, q.detach()[:, 7:], return_status=True)
        assert int(status[0]) == 0
        (v1[0, 6 + lf] - v1[0, 6 + rf]).backward()
        assert torch.isfinite(q.grad).all()
        grads.append(q.grad.clone())
    assert (grads[0] - grads[1]).abs().max() > 1e-3
