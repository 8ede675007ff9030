"""Heightfield ground from Python: moreau.with_heightfield, the per-environment terrain origin,
its errors, and gradcheck of a step on a slope (tests/terrain_test.cc and gradient_test.cc
check the physics and the adjoints in C++)."""
import math

import numpy as np
import pytest
import torch

import moreau
import moreau.torch as mt


def slope(theta, nx=21, ny=9, d=0.25, x0=-2.5, y0=-1.0):
    """Heights of the plane z = −x tan θ on an (ny, nx) grid from (x0, y0)."""
    x = x0 + d * np.arange(nx)
    return np.tile(-x * math.tan(theta), (ny, 1))


def test_with_heightfield_keeps_the_grid_and_the_robot():
    h = np.arange(12.0).reshape(3, 4) / 100
    m = moreau.with_heightfield(moreau.asset("cube.json"), torch.tensor(h), spacing=(0.5, 0.25), origin=(-1, -0.25))
    assert (m.hfield_nx, m.hfield_ny) == (4, 3)
    assert m.hfield_spacing == [0.5, 0.25] and m.hfield_origin == [-1.0, -0.25]
    assert m.hfield_height == pytest.approx(h.reshape(-1).tolist())
    assert m.nq == 7 and m.ncon == 8
    assert moreau.load(moreau.asset("cube.json")).hfield_nx == 0


def test_bad_heightfields_name_the_argument():
    cube = moreau.asset("cube.json")
    with pytest.raises(moreau.Error, match="argument 'nx'"):
        moreau.with_heightfield(cube, np.zeros((3, 1)), spacing=0.1)
    with pytest.raises(moreau.Error, match="argument 'dy'"):
        moreau.with_heightfield(cube, np.zeros((2, 2)), spacing=(0.1, -1.0))
    with pytest.raises(moreau.Error, match="index 3"):
        moreau.with_heightfield(cube, np.array([[0.0, 0.0], [0.0, np.inf]]), spacing=0.1)
    with pytest.raises(moreau.TensorError, match="shape"):
        moreau.with_heightfield(cube, np.zeros(4), spacing=0.1)
    with pytest.raises(moreau.TensorError, match="spacing"):
        moreau.with_heightfield(cube, np.zeros((2, 2)), spacing=(0.1, 0.2, 0.3))


def test_cubes_rest_on_the_terrain_under_their_own_origins():
    """Four cubes dropped at x = y = 0 on steps 0.1 m high every metre: environment e's origin
    (terrain_x) is at x = e + 0.5, so it lands on the step of height 0.1 e."""
    x = -0.5 + 0.05 * np.arange(101)  # x from -0.5 to 4.5; steps of 0.1 m at x = 1, 2, 3, 4
    h = np.tile(0.1 * np.clip(np.floor(x + 1e-9), 0, None), (3, 1))
    m = moreau.with_heightfield(moreau.asset("cube.json"), h, spacing=(0.05, 1.0), origin=(-0.5, -1.0))
    sim = moreau.Simulator(m, n_env=4, dtype=torch.float64, contact="hard", n_threads=1)
    sim.set_param("terrain_x", torch.arange(4, dtype=torch.float64) + 0.5)
    q = torch.tensor([[0.0, 0.0, 0.5, 1.0, 0.0, 0.0, 0.0]], dtype=torch.float64).repeat(4, 1)
    sim.set_state(q, torch.zeros(4, 6, dtype=torch.float64))
    sim.step(300)
    z = sim.get_state()[0][:, 2]
    torch.testing.assert_close(z, 0.05 + 0.1 * torch.arange(4, dtype=torch.float64), rtol=0, atol=1e-3)
    assert (sim.status == 0).all()


@pytest.mark.parametrize("mode", ["smooth", "soft"])
def test_gradcheck_on_a_slope(mode, gen):
    """A cube tipped on a 25° slope sampled on a grid, μ 0.3 (sliding), state gradients by
    gradcheck."""
    theta = math.radians(25)
    m = moreau.with_heightfield(moreau.asset("cube.json"), slope(theta), spacing=0.25, origin=(-2.5, -1.0))
    sim = moreau.Simulator(m, n_env=1, dtype=torch.float64, contact=mode, n_threads=1, tolerance=1e-13,
                           max_iterations=20000)
    sim.set_param("friction", 0.3)
    c, s = math.cos(theta / 2), math.sin(theta / 2)
    r = 0.05 - 1e-4
    q = torch.tensor([[r * math.sin(theta), 0.1, r * math.cos(theta), c, 0.01 * c, s, 0.01 * s]], dtype=torch.float64)
    q[:, 3:] /= q[:, 3:].norm()
    v = 0.05 * torch.randn(1, 6, generator=gen, dtype=torch.float64)
    a = torch.zeros(1, 0, dtype=torch.float64)
    qs, vs = q.clone().requires_grad_(), v.clone().requires_grad_()
    _, v1 = mt.step(sim, q, v, a)
    down = math.cos(theta) * v1[0, 0] - math.sin(theta) * v1[0, 2]
    assert down > math.cos(theta) * v[0, 0] - math.sin(theta) * v[0, 2], "the cube should speed up down the slope"
    assert torch.autograd.gradcheck(lambda q_, v_: mt.step(sim, q_, v_, a), (qs, vs), eps=1e-6, atol=1e-5, rtol=1e-4)
