import math

import pytest
import torch

import moreau

CUDA = moreau.built_with_cuda and torch.cuda.is_available() and moreau.cuda_available()


@pytest.fixture
def one_thread():
    """One torch intra-op thread for the test: small networks run fastest so, and spinning torch
    workers on a busy 2-core machine slow the tests down many times."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def devices():
    """CPU always; CUDA when this moreau was built with it and a GPU is present."""
    return ["cpu"] + (["cuda"] if CUDA else [])


def random_quat(gen, scale=1.0):
    q = torch.tensor([1.0, 0, 0, 0], dtype=torch.float64) + scale * torch.randn(4, generator=gen, dtype=torch.float64)
    return q / q.norm()


def airborne_anymal(sim, gen, lift=5.0):
    """Random states of ANYmal C high above the ground and actions around the default pose."""
    n, m = sim.n_env, sim.model
    q0 = torch.tensor(m.qpos0, dtype=torch.float64)
    q = q0.repeat(n, 1)
    q[:, 7:] += 0.3 * torch.randn(n, m.nq - 7, generator=gen, dtype=torch.float64)
    q[:, 2] += lift
    for e in range(n):
        q[e, 3:7] = random_quat(gen, 0.3)
    v = 0.5 * torch.randn(n, m.nv, generator=gen, dtype=torch.float64)
    a = q0[torch.tensor(m.actuator_qposadr)].repeat(n, 1) + 0.3 * torch.randn(n, m.nu, generator=gen, dtype=torch.float64)
    return q, v, a


def pressed_cube(sim, gen):
    """The 0.1 m cube resting flat on the ground, its four bottom corners pressed 0.05 to 0.15 mm
    in (tilted by at most 5e-4 rad), moving slowly (sticking)."""
    n = sim.n_env
    q = torch.zeros(n, 7, dtype=torch.float64)
    for e in range(n):
        t = 5e-4 * (2 * torch.rand(2, generator=gen, dtype=torch.float64) - 1)
        quat = torch.tensor([1.0, t[0], t[1], 0.0], dtype=torch.float64)
        q[e, :3] = torch.tensor([0.1 * e, -0.2, 0.05 - 1e-4])
        q[e, 3:] = quat / quat.norm()
    v = 0.02 * (2 * torch.rand(n, 6, generator=gen, dtype=torch.float64) - 1)
    a = torch.zeros(n, 0, dtype=torch.float64)
    return q, v, a


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(1234)


def _rotation(quat):
    w, x, y, z = quat.tolist()
    return torch.tensor([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                         [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                         [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]], dtype=torch.float64)


def corner_cube(sim, gen):
    """The 0.1 m cube tilted by a few degrees, its lowest corner pressed 0.1 mm into the
    ground (one contact), moving slowly."""
    n = sim.n_env
    corners = torch.tensor([[sx, sy, sz] for sx in (-.05, .05) for sy in (-.05, .05) for sz in (-.05, .05)],
                           dtype=torch.float64)
    q = torch.zeros(n, 7, dtype=torch.float64)
    for e in range(n):
        quat = torch.tensor([1.0, 0.01 + 0.005 * e, -0.015 + 0.0025 * e, 0.0], dtype=torch.float64)
        quat = quat / quat.norm()
        zmin = (corners @ _rotation(quat).T)[:, 2].min().item()
        q[e, :3] = torch.tensor([0.1 * e, -0.2, -zmin - 1e-4])
        q[e, 3:] = quat
    v = 0.02 * (2 * torch.rand(n, 6, generator=gen, dtype=torch.float64) - 1)
    return q, v, torch.zeros(n, 0, dtype=torch.float64)
