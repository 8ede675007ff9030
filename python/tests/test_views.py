"""Zero-copy torch views of the simulator's buffers (DLPack)."""
import pytest
import torch
from conftest import devices

import moreau
import moreau.torch as mt

BUFFERS = {
    "q": ("nq", torch.float32), "v": ("nv", torch.float32), "action": ("nu", torch.float32),
    "status": (1, torch.int32), "time": (1, torch.float32), "contact_gap": ("ncon", torch.float32),
    "contact_impulse": ("ncon", torch.float32), "contact_active": ("ncon", torch.int32),
    "solver_iterations": (1, torch.int32), "solver_residual": (1, torch.float32),
}


@pytest.mark.parametrize("device", devices())
def test_views_share_the_simulator_buffers(device):
    sim = moreau.Simulator(moreau.asset("anymal_c.json"), n_env=5, device=device)
    for name, (width, dtype) in BUFFERS.items():
        t = getattr(sim, name)
        info = sim.view_info(name)
        w = width if isinstance(width, int) else getattr(sim, width)
        assert t.shape == (5, w), name
        assert t.stride() == (1, 5), name
        assert t.dtype == dtype, name
        assert t.device.type == device, name
        assert t.data_ptr() == info["data"], name  # zero copy
        assert info["shape"] == (5, w) and info["strides"] == (1, 5)
    # the same tensor each time; parameters are views too
    assert sim.q is sim.q
    kp = sim.param("kp")
    assert kp.data_ptr() == sim.view_info("param:kp")["data"] and kp.shape == (1, sim.nu)


def test_float64_views_and_writes_are_seen_by_the_simulator():
    sim = moreau.Simulator(moreau.asset("cube.json"), n_env=3, dtype=torch.float64, contact="none")
    assert sim.q.dtype == torch.float64
    q = sim.q.clone()
    q[:, 2] = torch.tensor([1.0, 2.0, 3.0])       # heights
    v = torch.zeros(3, 6, dtype=torch.float64)
    v[:, 2] = torch.tensor([0.0, 1.0, -1.0])       # vertical speeds
    # expected: the pure step from those inputs (it does not read the simulator's state)
    q_ref, v_ref, _ = sim.step_pure(q, v, torch.zeros(3, 0, dtype=torch.float64))
    sim.q.copy_(q)                                 # writes through the views
    sim.v[:, 2] = v[:, 2]
    sim.step()
    assert torch.equal(sim.q, q_ref) and torch.equal(sim.v, v_ref)
    assert (sim.time > 0).all()
    # the simulator's writes are seen by the tensors
    before = sim.q.clone()
    sim.reset([1])
    assert torch.equal(sim.q[0], before[0]) and torch.equal(sim.q[2], before[2])
    assert sim.q[1, 2].item() == pytest.approx(sim.model.qpos0[2])
    assert sim.time[1, 0].item() == 0.0


def test_action_writes_and_status_bits():
    sim = moreau.Simulator(moreau.asset("cartpole.json"), n_env=2, dtype=torch.float64, contact="none")
    sim.action[0] = 0.5
    sim.action[1] = 0.0
    sim.step(5)
    assert sim.q[0, 0].item() != sim.q[1, 0].item()  # the first environment's motor pushed its cart
    sim.action[1] = float("nan")
    sim.step()
    assert sim.status[1, 0].item() & moreau.STATUS_NAN_ACTION
    assert sim.status[0, 0].item() == moreau.STATUS_OK
    sim.action[1] = 0.0
    sim.reset(torch.tensor([1]))
    assert sim.status[1, 0].item() == 0


def test_param_views_and_set_param():
    sim = moreau.Simulator(moreau.asset("cube.json"), n_env=4, dtype=torch.float64)
    assert sim.param("friction").shape == (1, 1) and sim.param("friction").item() == 1.0
    sim.set_param("friction", [0.1, 0.2, 0.3, 0.4])
    mu = sim.param("friction")
    assert mu.shape == (4, 1) and mu.data_ptr() == sim.view_info("param:friction")["data"]
    mu[2, 0] = 0.9                                 # writes through
    assert sim.param("friction")[:, 0].tolist() == [0.1, 0.2, 0.9, 0.4]
    # the same len on the same device: written through the view
    sim.set_param("friction", torch.tensor([0.5, 0.6, 0.7, 0.8], dtype=torch.float64))
    assert sim.param("friction").data_ptr() == mu.data_ptr() and mu[:, 0].tolist() == [0.5, 0.6, 0.7, 0.8]
    assert set(moreau.simulator.GRAD_PARAMS) <= set(sim.param_names())
    with pytest.raises(moreau.Error, match="wrong length"):
        sim.set_param("friction", torch.ones(3))


def test_contact_info_of_a_resting_cube():
    sim = moreau.Simulator(moreau.asset("cube.json"), n_env=2, dtype=torch.float64, contact="hard")
    sim.q[:, 2] = 0.05 - 1e-4
    sim.step(3)
    assert sim.contact_gap.shape == (2, 8)
    bottom = sim.contact_gap < 0.01
    assert bottom.sum(1).tolist() == [4, 4]
    assert (sim.contact_active[bottom] == 1).all() and (sim.contact_impulse[bottom] > 0).all()
    assert (sim.solver_iterations >= 1).all() and (sim.solver_residual >= 0).all()


def test_views_keep_the_simulator_alive():
    """A view outlives its Simulator: the buffer stays allocated (the simulators made next, which
    would be handed a freed buffer of this size, get other memory), keeps its values and takes writes."""
    import gc

    sim = moreau.Simulator(moreau.asset("cube.json"), n_env=64)
    q = sim.q
    q[:, 2] = torch.arange(64, dtype=q.dtype)  # heights, through the view
    expected, lo = q.clone(), q.data_ptr()
    hi = lo + q.numel() * q.element_size()
    del sim
    gc.collect()
    others = [moreau.Simulator(moreau.asset("cube.json"), n_env=64) for _ in range(16)]
    for o in others:
        for t in (o.q, o.v, o.action, o.status):
            t.fill_(-7)
            start = t.data_ptr()
            assert start + t.numel() * t.element_size() <= lo or start >= hi  # no overlap with q's buffer
    assert torch.equal(q, expected)
    q[0, 2] = 3.0
    assert q[0, 2].item() == 3.0 and torch.equal(q[1:], expected[1:])


def test_autograd_on_the_simulator_device_and_outputs_field_major():
    sim = moreau.Simulator(moreau.asset("cube.json"), n_env=3, contact="none")
    q1, v1 = mt.step(sim, sim.q, sim.v, sim.action)
    assert q1.stride() == (1, 3) and v1.stride() == (1, 3)
    assert q1.device == sim.device and q1.dtype == sim.dtype
