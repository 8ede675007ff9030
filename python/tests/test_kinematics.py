"""moreau.kinematics: the torch forward kinematics against the simulator's own contact points
(contact_gap at a vanishing time step) on a floating quadruped, a free box and prismatic roots,
and its gradient against finite differences."""
import pytest
import torch

import moreau
from moreau.kinematics import Kinematics, quat_to_matrix


def random_configuration(model, n, gen):
    q = torch.tensor(model.qpos0, dtype=torch.float64).repeat(n, 1)
    for b, t in enumerate(model.jnt_type):
        a = model.jnt_qposadr[b]
        if t == moreau.JOINT_FREE:
            q[:, a:a + 3] += 0.1 * torch.randn(n, 3, generator=gen, dtype=torch.float64)
            quat = torch.randn(n, 4, generator=gen, dtype=torch.float64)
            q[:, a + 3:a + 7] = quat / quat.norm(dim=1, keepdim=True)
        elif t == moreau.JOINT_BALL:
            quat = torch.randn(n, 4, generator=gen, dtype=torch.float64)
            q[:, a:a + 4] = quat / quat.norm(dim=1, keepdim=True)
        else:
            q[:, a] += 0.4 * torch.randn(n, generator=gen, dtype=torch.float64)
    return q


@pytest.mark.parametrize("robot", ["anymal_c.json", "cube.json", "planar_box.json"])
def test_contact_clearance_equals_the_simulators_gap(robot):
    """At h = 1e-9 the step's midpoint configuration is q to 1e-9, so the simulator's
    contact_gap (signed distance of each contact point to the ground) is the clearance of q."""
    model = moreau.load_model(moreau.asset(robot))
    n = 16
    q = random_configuration(model, n, torch.Generator().manual_seed(3))
    sim = moreau.Simulator(model, n_env=n, dtype=torch.float64, contact="hard", timestep=1e-9, decimation=1,
                           n_threads=1)
    sim.set_state(q, torch.zeros(n, model.nv, dtype=torch.float64))
    if model.nu:
        sim.action[:] = q[:, list(model.actuator_qposadr)]
    sim.step(1)
    kin = Kinematics(model, dtype=torch.float64)
    clearance = kin.contact_clearance(q)
    assert clearance.shape == (n, model.ncon)
    assert clearance.abs().max() > 0.05  # the configurations are not all at the ground
    torch.testing.assert_close(clearance, sim.contact_gap.clone(), rtol=0, atol=1e-8)


def test_body_frames_of_the_default_pose():
    """ANYmal C at its default pose: the base at (0, 0, 0.6) upright, the feet below the hips,
    left feet at y > 0, front feet at x > 0, rotations orthonormal."""
    model = moreau.load_model(moreau.asset("anymal_c.json"))
    kin = Kinematics(model, dtype=torch.float64)
    q = torch.tensor(model.qpos0, dtype=torch.float64)[None]
    R, p = kin.body_poses(q)
    torch.testing.assert_close(p[0, 0], torch.tensor(model.qpos0[:3], dtype=torch.float64))
    eye = torch.eye(3, dtype=torch.float64).expand(model.nbody, 3, 3)
    torch.testing.assert_close(R[0] @ R[0].transpose(1, 2), eye)
    feet = kin.contact_positions(q)[0]
    names = list(model.con_name)
    for name, sx, sy in (("LF_FOOT", 1, 1), ("RF_FOOT", 1, -1), ("LH_FOOT", -1, 1), ("RH_FOOT", -1, -1)):
        f = feet[names.index(name)]
        assert f[0] * sx > 0.2 and f[1] * sy > 0.05 and f[2] < 0.2, (name, f)


def test_gradient_matches_finite_differences():
    model = moreau.load_model(moreau.asset("anymal_c.json"))
    kin = Kinematics(model, dtype=torch.float64)
    q = random_configuration(model, 2, torch.Generator().manual_seed(5)).requires_grad_(True)
    assert torch.autograd.gradcheck(kin.contact_positions, (q,), eps=1e-6, atol=1e-7)


def test_quat_to_matrix():
    c, s = 0.5 ** 0.5, 0.5 ** 0.5  # 90° about z
    R = quat_to_matrix(torch.tensor([[c, 0.0, 0.0, s]], dtype=torch.float64))[0]
    torch.testing.assert_close(R @ torch.tensor([1.0, 0, 0], dtype=torch.float64),
                               torch.tensor([0.0, 1, 0], dtype=torch.float64))
