import os

import pytest
import torch

import moreau

# MOREAU_REQUIRE_CUDA=1 (on a GPU machine: scripts/gpu_learn.sh): a test that skips for want of
# CUDA ("no CUDA device: ...") fails instead, so that a missing backend or GPU cannot pass unseen.
REQUIRE_CUDA = os.environ.get("MOREAU_REQUIRE_CUDA", "") not in ("", "0")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if REQUIRE_CUDA and rep.skipped and "no CUDA device" in str(rep.longrepr):
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        rep.outcome = "failed"
        rep.longrepr = f"MOREAU_REQUIRE_CUDA is set and this CUDA test skipped: {reason}"


def _no_cuda_reason():
    """Why the CUDA tests cannot run here, or None when they can."""
    if not moreau.built_with_cuda:
        return "no CUDA device: this moreau was built without the CUDA backend"
    if not torch.cuda.is_available():
        return "no CUDA device: torch finds no GPU"
    if not moreau.cuda_available():
        return "no CUDA device: moreau's CUDA backend finds no GPU"
    return None


NO_CUDA = _no_cuda_reason()
CUDA = NO_CUDA is None
# marks a test (or a parameter) that needs moreau's CUDA backend and a GPU: skipped, with the reason, without
needs_cuda = pytest.mark.skipif(not CUDA, reason=NO_CUDA or "")
# marks a test that needs a CUDA tensor only (torch with a GPU), not moreau's CUDA backend
needs_torch_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: torch finds no GPU")


@pytest.fixture
def one_thread():
    """One torch intra-op thread for the test: small networks run fastest so, and spinning torch
    workers on a busy 2-core machine slow the tests down many times."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def devices():
    """Parameters of a test that runs on each device: "cpu", and "cuda", collected always and
    skipped (needs_cuda) where moreau's CUDA backend or a GPU is missing."""
    return ["cpu", pytest.param("cuda", marks=needs_cuda)]


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
