"""Resetting by a bool mask and setting parameters on the simulator's device (no host copy)."""
import numpy as np
import pytest
import torch
from conftest import airborne_anymal, devices, needs_cuda

import moreau

ANYMAL = moreau.asset("anymal_c.json")
RESET_BUFFERS = ("q", "v", "action", "status", "time")


def stepped_pair(device, n=37, dtype=torch.float32):
    """Two simulators with the same random states, stepped twice (every seventh environment with
    a NaN action, so that its status is set)."""
    sims = [moreau.Simulator(ANYMAL, n_env=n, device=device, dtype=dtype, contact="none") for _ in range(2)]
    q, v, a = airborne_anymal(sims[0], torch.Generator().manual_seed(5))
    a[::7, 0] = float("nan")
    for sim in sims:
        sim.set_state(q, v)
        sim.action.copy_(a)
        sim.step(2)
    return sims


def snapshot(sim):
    return {name: getattr(sim, name).clone() for name in RESET_BUFFERS}


def assert_same(a, b, rows=slice(None)):
    """The buffers equal bitwise (NaN actions included) in ``rows``."""
    for name in RESET_BUFFERS:
        assert a[name].cpu()[rows].numpy().tobytes() == b[name].cpu()[rows].numpy().tobytes(), name


@pytest.mark.parametrize("device", devices())
def test_reset_by_mask_equals_reset_by_ids(device):
    by_ids, by_mask = stepped_pair(device)
    n = by_ids.n_env
    ids = [e for e in range(n) if e % 3 == 0 or e % 7 == 0 or e == n - 1]
    mask = torch.zeros(n, dtype=torch.bool, device=device)
    mask[ids] = True
    before = snapshot(by_mask)
    by_ids.reset(ids)
    by_mask.reset(mask)
    after = snapshot(by_mask)
    assert_same(snapshot(by_ids), after)
    assert_same(before, after, ~mask.cpu())  # the others untouched
    assert (after["status"][mask] == 0).all() and (after["time"][mask] == 0).all()
    assert (before["status"][mask] != 0).any()


@pytest.mark.parametrize("device", devices())
def test_strided_empty_and_full_masks(device):
    a, b = stepped_pair(device, n=10)
    wide = torch.zeros(20, dtype=torch.bool, device=device)
    wide[2::4] = True                                  # every other element of wide[::2] is set
    b.reset(wide[::2])
    a.reset([1, 3, 5, 7, 9])
    assert_same(snapshot(a), snapshot(b))
    before = snapshot(b)
    b.reset(torch.zeros(10, dtype=torch.bool, device=device))
    assert_same(before, snapshot(b))
    b.reset(torch.ones(10, dtype=torch.bool, device=device))
    a.reset()
    assert_same(snapshot(a), snapshot(b))


def test_integer_tensors_are_still_ids():
    a, b = stepped_pair("cpu", n=6)
    a.reset(torch.tensor([0, 5], dtype=torch.uint8))   # uint8 values are ids, not a mask
    b.reset(np.array([5, 0]))
    assert_same(snapshot(a), snapshot(b))


def test_wrong_masks_are_tensor_errors():
    sim = moreau.Simulator(ANYMAL, n_env=4, contact="none")
    with pytest.raises(moreau.TensorError, match=r"Simulator.reset: argument 'env_ids': wrong shape: "
                       r"expected \(4,\), got \(4, 1\)"):
        sim.reset(torch.ones(4, 1, dtype=torch.bool))
    with pytest.raises(moreau.TensorError, match=r"argument 'env_ids': wrong shape: expected \(4,\), got \(3,\)"):
        sim.reset(torch.ones(3, dtype=torch.bool))
    with pytest.raises(moreau.TensorError, match=r"argument 'env_ids': wrong device: expected cpu, got meta"):
        sim.reset(torch.ones(4, dtype=torch.bool, device="meta"))
    # the extension checks the mask itself: (n_env,) contiguous uint8 on the simulator's device
    with pytest.raises(moreau.TensorError, match=r"reset_where: argument 'mask': wrong dtype: expected uint8, got bool"):
        sim._sim.reset_where(torch.ones(4, dtype=torch.bool))
    with pytest.raises(moreau.TensorError, match=r"reset_where: argument 'mask': wrong shape: expected \(4,\), got \(5,\)"):
        sim._sim.reset_where(torch.ones(5, dtype=torch.uint8))
    with pytest.raises(moreau.TensorError, match=r"reset_where: argument 'mask': wrong layout: expected strides \(1,\)"):
        sim._sim.reset_where(torch.ones(8, dtype=torch.uint8)[::2])


@needs_cuda
def test_cuda_mask_on_the_cpu_is_a_tensor_error():
    sim = moreau.Simulator(ANYMAL, n_env=4, device="cuda", contact="none")
    with pytest.raises(moreau.TensorError, match=r"argument 'env_ids': wrong device: expected cuda:0, got cpu"):
        sim.reset(torch.ones(4, dtype=torch.bool))


@needs_cuda
def test_cuda_mask_reset_does_not_synchronize():
    sim = moreau.Simulator(ANYMAL, n_env=64, device="cuda", contact="none")
    done = torch.rand(64, device="cuda") < 0.5
    kp = torch.full((1, sim.nu), 30.0, device="cuda")
    sim.step()
    sim.set_param("kp", kp)  # its range check reads one flag back (a synchronisation)
    torch.cuda.set_sync_debug_mode("error")
    try:
        sim.reset(done)
        sim.step()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert torch.equal(sim.param("kp"), kp)


# ---- set_param on the device ----------------------------------------------------------

class _Spy:
    """Forwards to the compiled simulator, counting its set_param calls (the host path)."""

    def __init__(self, inner):
        self.inner, self.host_writes = inner, 0

    def __getattr__(self, name):
        if name == "set_param":
            self.host_writes += 1
        return getattr(self.inner, name)


def spied(sim):
    sim._sim = _Spy(sim._sim)
    return sim


VALID = {"kp": 12.5, "kd": 0.7, "added_base_mass": 2.5, "friction": 0.4, "contact_kn": 3e4, "contact_kd": 50.0,
         "contact_zeta": 0.8, "smooth_k": 250.0, "smooth_gmax": 0.03, "motor_strength": 0.9, "frictionloss_scale": 1.5,
         "spin_friction": 0.02, "rolling_friction": 0.01, "damping_scale": 0.5, "armature_scale": 1.5, "terrain_x": 3.5, "terrain_y": 2.5}


def test_every_parameter_is_known_here():
    sim = moreau.Simulator(ANYMAL, n_env=2)
    assert set(sim.param_names()) == set(VALID)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_device_writes_equal_host_writes(device, dtype):
    if device == "cuda" and dtype == torch.float64:
        pytest.skip("the CUDA backend runs float32")
    n = 5
    # condim 6: room for rolling friction's rows, so that every parameter may be written
    dev, host = (spied(moreau.Simulator(ANYMAL, n_env=n, device=device, dtype=dtype, condim=6)) for _ in range(2))
    gen = torch.Generator().manual_seed(3)
    for name, value in VALID.items():
        width = dev.nu if name in ("kp", "kd", "motor_strength") else 1
        for rows in (1, n):  # the default len 1, then len n_env (set once through the host)
            if rows == n:
                per_env = torch.full((n, width), value, dtype=torch.float64)
                dev.set_param(name, per_env)
                host.set_param(name, per_env)
            for values in (value * (1 + torch.rand(rows, width, generator=gen, dtype=torch.float64)),
                           torch.full((rows, width), int(value) + 1, dtype=torch.int32)):  # cast on the device
                host_writes = dev._sim.host_writes
                dev.set_param(name, values.to(device).squeeze(-1) if width == 1 else values.to(device))
                assert dev._sim.host_writes == host_writes, f"{name} ({rows}): written through the host"
                host.set_param(name, values.numpy())
                assert torch.equal(dev.param(name), host.param(name)), name
    # and the simulators step alike
    for sim in (dev, host):
        sim.q[:, 2] += 0.3
        sim.step(2)
    assert torch.equal(dev.q, host.q) and torch.equal(dev.v, host.v)


def test_device_path_rejects_what_the_host_path_rejects():
    """For every parameter and probe value, the device path (its torch range checks) refuses
    what the library's host check refuses, with the library's message, and keeps the old values."""
    sim = spied(moreau.Simulator(ANYMAL, n_env=3, dtype=torch.float64, condim=6))
    base = sim.model.body_mass[0]
    probes = [float("nan"), float("inf"), -float("inf"), -1.0, -1e-12, 0.0, 1e-12, 1.0, -base, -base + 1e-9,
              -base - 1e-9]
    for name in VALID:
        width = sim.nu if name in ("kp", "kd", "motor_strength") else 1
        for x in probes:
            values = torch.full((1, width), x, dtype=torch.float64)
            values[0, -1] = VALID[name]  # one bad element among good ones is enough
            values[0, 0] = x
            try:
                sim._sim.inner.set_param(name, values.numpy())  # the library's own check
                host_error = None
            except moreau.Error as e:
                host_error = str(e)
            sim.set_param(name, torch.full((1, width), VALID[name], dtype=torch.float64))
            old = sim.param(name).clone()
            if host_error is None:
                sim.set_param(name, values)
                assert torch.equal(sim.param(name), values), (name, x)
            else:
                with pytest.raises(moreau.Error) as info:
                    sim.set_param(name, values)
                assert str(info.value) == host_error, (name, x)
                assert torch.equal(sim.param(name), old), (name, x)


def test_what_goes_through_the_host():
    sim = spied(moreau.Simulator(moreau.asset("cube.json"), n_env=4, dtype=torch.float64, contact="soft"))
    sim.set_param("friction", torch.full((4,), 0.5))       # a new len
    sim.set_param("friction", [0.1, 0.2, 0.3, 0.4])        # not a tensor
    sim.set_param("friction", np.full(4, 0.5))
    assert sim._sim.host_writes == 3
    ref = moreau.Simulator(moreau.asset("cube.json"), n_env=4, dtype=torch.float64, contact="soft")
    ref.set_param("contact_kn", np.array([1e6]))
    sim.set_param("contact_kn", torch.tensor([1e6], dtype=torch.float64))  # the automatic substeps follow k_n
    assert sim._sim.host_writes == 4 and sim.substeps == ref.substeps > 1
    sim.set_param("friction", torch.full((4,), 0.25))      # on the device
    assert sim._sim.host_writes == 4 and (sim.param("friction") == 0.25).all()
