"""Heightfield ground from Python: moreau.with_heightfield, the per-environment terrain origin,
its errors, and gradcheck of a step on a slope (tests/terrain_test.cc and gradient_test.cc
check the physics and the adjoints in C++)."""
import math
import re

import numpy as np
import pytest
import torch

import moreau
import moreau.torch as mt
from moreau.tasks.terrain import heightfield_surface


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


def _hfield_mjcf(elevation, size, pos=(0.0, 0.0, 0.0), ball=(0.0, 0.0, 1.0), extra=""):
    """An MJCF with an <hfield> of inline `elevation` rows (listed from +y to −y, as MuJoCo reads
    them) as the ground and a 5 cm ball (density 1000) on a free joint at `ball`."""
    nrow, ncol = elevation.shape
    e = " ".join(f"{v:.9f}" for v in elevation.reshape(-1))
    body = (f'<body pos="{ball[0]} {ball[1]} {ball[2]}"><freejoint/>'
            '<geom type="sphere" size="0.05" density="1000"/></body>')
    return (f'<mujoco><option timestep="0.002"/><asset><hfield name="t" nrow="{nrow}" ncol="{ncol}" '
            f'size="{size[0]} {size[1]} {size[2]} 0.1" elevation="{e}"/></asset><worldbody>'
            f'<geom type="hfield" hfield="t" pos="{pos[0]} {pos[1]} {pos[2]}" {extra}/>{body}</worldbody></mujoco>')


def _wavy(nrow=21, ncol=31, rx=3.0, ry=2.0):
    y = np.linspace(ry, -ry, nrow)[:, None]
    x = np.linspace(-rx, rx, ncol)[None, :]
    return 0.3 - 0.08 * x + 0.05 * np.sin(1.3 * x) * np.cos(0.9 * y)


def _load(text):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moreau.ModelWarning)
        return moreau.load_mjcf("hfield.xml", text=text)


def test_mjcf_heightfield_is_mujocos_surface():
    """An MJCF <hfield> (inline elevation, normalised and scaled by size as MuJoCo does, rows from
    +y to −y, offset by the geom's position) loads as the surface MuJoCo's ray casts see, at the
    samples and inside the triangles (the same diagonal)."""
    import mujoco
    text = _hfield_mjcf(_wavy(), (3.0, 2.0, 0.6), pos=(0.2, -0.1, 0.05), ball=(5.0, 5.0, 2.0))
    m = _load(text)
    assert (m.hfield_nx, m.hfield_ny) == (31, 21) and m.hfield_spacing == pytest.approx([0.2, 0.2])
    assert m.hfield_origin == pytest.approx([-2.8, -2.1])
    mj = mujoco.MjModel.from_xml_string(text)
    data = mujoco.MjData(mj)
    mujoco.mj_forward(mj, data)
    h = torch.tensor(m.hfield_height, dtype=torch.float64).reshape(21, 31)
    rng = np.random.default_rng(3)
    geom = np.zeros(1, np.int32)
    for x, y in rng.uniform((-2.7, -2.0), (3.1, 1.8), size=(200, 2)):
        ours = float(heightfield_surface(h, (-2.8, -2.1), (0.2, 0.2), torch.tensor(x), torch.tensor(y)))
        theirs = 10 - mujoco.mj_ray(mj, data, np.array([x, y, 10.0]), np.array([0.0, 0.0, -1.0]), None, 1, -1, geom)
        assert ours == pytest.approx(theirs, abs=1e-5), (x, y)


def test_ball_rolls_on_the_heightfield_as_in_mujoco_and_as_the_analytic_answer():
    """A 5 cm ball rolling on an MJCF heightfield, moreau (hard contact) beside MuJoCo (its default
    soft contact) from the same file: on a plane slope of θ moreau rolls s = (5/7) g sin θ t²/2 to
    1e-4, MuJoCo 6 % behind (its soft contact); over 1.5 s on wavy ground the two paths stay within
    2 cm and the heights within 2 mm."""
    import mujoco

    def run(text, q0, steps):
        mj = mujoco.MjModel.from_xml_string(text)
        data = mujoco.MjData(mj)
        data.qpos[:] = q0
        sim = moreau.Simulator(_load(text), n_env=1, dtype=torch.float64, contact="hard", n_threads=1)
        sim.set_state(torch.tensor([q0], dtype=torch.float64), torch.zeros(1, 6, dtype=torch.float64))
        out = []
        for k in range(steps):
            mujoco.mj_step(mj, data)
            sim.step(1)
            out.append((data.qpos[:3].copy(), sim.get_state()[0][0, :3].numpy()))
        return out

    rx, top = 3.0, 0.6
    theta = math.atan(top / (2 * rx))
    plane = np.broadcast_to(-np.linspace(-rx, rx, 11)[None, :], (5, 11))
    z0 = top / 2 + 0.05 / math.cos(theta) + 1e-4
    path = run(_hfield_mjcf(plane, (rx, 1.0, top), ball=(0, 0, z0)), [0, 0, z0, 1, 0, 0, 0], 500)
    s = 0.5 * (5 / 7) * 9.81 * math.sin(theta) * 1.0 ** 2
    theirs, ours = (p[0] / math.cos(theta) for p in path[-1])
    assert ours == pytest.approx(s, rel=1e-4)
    assert 0.9 * s < theirs < 0.97 * s

    mj = mujoco.MjModel.from_xml_string(_hfield_mjcf(_wavy(), (3.0, 2.0, 0.6), pos=(0.2, -0.1, 0.05)))
    data = mujoco.MjData(mj)
    mujoco.mj_forward(mj, data)
    ground = 10 - mujoco.mj_ray(mj, data, np.array([0.4, 0.3, 10.0]), np.array([0.0, 0.0, -1.0]), None, 1, -1,
                                np.zeros(1, np.int32))
    start = [0.4, 0.3, ground + 0.06, 1, 0, 0, 0]
    path = run(_hfield_mjcf(_wavy(), (3.0, 2.0, 0.6), pos=(0.2, -0.1, 0.05), ball=start[:3]), start, 750)
    theirs, ours = path[-1]
    assert np.linalg.norm(ours[:2] - start[:2]) > 0.15, "the ball should have rolled"
    assert np.abs(ours[:2] - theirs[:2]).max() < 0.02 and abs(ours[2] - theirs[2]) < 2e-3


def test_mjcf_heightfield_errors_and_warnings():
    """A missing asset, a file with elevation data or with nrow/ncol, a rotated heightfield and
    elevation data of the wrong count are errors naming the element; a plane beside the
    heightfield is a warning (the heightfield is the ground)."""
    flat = np.zeros((3, 3))
    with pytest.raises(moreau.Error, match="no <hfield> asset named 'nope'"):
        moreau.load_mjcf("h.xml", text=_hfield_mjcf(flat, (1, 1, 0.1)).replace('hfield="t"', 'hfield="nope"'))
    with pytest.raises(moreau.Error, match="both 'file' and 'elevation' given"):
        moreau.load_mjcf("h.xml", text=_hfield_mjcf(flat, (1, 1, 0.1)).replace('nrow="3"', 'file="t.png" nrow="3"'))
    with pytest.raises(moreau.Error, match="'nrow' and 'ncol' go with 'elevation'"):
        moreau.load_mjcf("h.xml", text=re.sub('elevation="[^"]*"', 'file="t.png"', _hfield_mjcf(flat, (1, 1, 0.1))))
    with pytest.raises(moreau.Error, match="a rotated heightfield"):
        moreau.load_mjcf("h.xml", text=_hfield_mjcf(flat, (1, 1, 0.1), extra='euler="0 0 30"'))
    with pytest.raises(moreau.Error, match="expected 12 finite numbers"):
        moreau.load_mjcf("h.xml", text=_hfield_mjcf(flat, (1, 1, 0.1)).replace('nrow="3"', 'nrow="4"'))
    text = _hfield_mjcf(flat, (1, 1, 0.1)).replace("<worldbody>", '<worldbody><geom type="plane" size="5 5 1"/>')
    with pytest.warns(moreau.ModelWarning, match="plane ignored: moreau's ground is the heightfield"):
        moreau.load_mjcf("h.xml", text=text)


def _small_terrain(**kw):
    from moreau.tasks.terrain import Terrain, TerrainConfig
    return Terrain(TerrainConfig(num_levels=3, num_types=5, proportions=(1, 1, 1, 1, 1), border=2.0, **kw))


def test_generator_builds_legged_gyms_tiles():
    """One column of each type at difficulties 0, 0.5 and 1: rims at 0 (tiles join there), a flat
    platform at each tile's centre (its origin's height), slopes of 0.4 d, stairs 0.05 + 0.18 d high
    and 0.31 m deep, obstacles 0.05 + 0.2 d (or half) high, rough slopes within 5 cm of the smooth
    slope they follow."""
    t = _small_terrain()
    assert t.types == ["smooth_slope", "rough_slope", "stairs_up", "stairs_down", "obstacles"]
    n = 81  # samples per tile side: 8 m at 0.1 m
    assert t.shape == (2 * 20 + 3 * 80 + 1, 2 * 20 + 5 * 80 + 1)
    for level in range(3):
        d = level / 2
        for col, kind in enumerate(t.types):
            j0, i0 = 20 + level * 80, 20 + col * 80
            tile = t.heights[j0:j0 + n, i0:i0 + n]
            ox, oy, oz = t.tile_origin[level, col]
            assert (ox, oy) == ((col + 0.5) * 8, (level + 0.5) * 8)
            assert float(t.height(torch.tensor(ox), torch.tensor(oy))) == pytest.approx(oz, abs=1e-12)
            platform = tile[25:56, 25:56]  # ±1.5 m
            assert np.ptp(platform) < 1e-12, (kind, level)
            assert np.abs(tile[0]).max() < 1e-12 and np.abs(tile[:, -1]).max() < 1e-12, (kind, level)
            if kind == "smooth_slope":
                assert np.abs(np.diff(tile[40, :25])).max() / 0.1 == pytest.approx(0.4 * d, abs=1e-9)
            if kind.startswith("stairs"):
                steps = np.unique(np.round(np.diff(tile[40, :26]), 9))
                assert set(steps) <= {0.0, round((0.05 + 0.18 * d) * (1 if kind == "stairs_up" else -1), 9)}
                assert abs(oz) == pytest.approx((0.05 + 0.18 * d) * 8, abs=1e-9)  # floor(2.5 / 0.31) = 8 steps
            if kind == "obstacles":
                hh = 0.05 + 0.2 * d
                assert set(np.round(np.unique(tile), 9)) <= {0.0, round(hh, 9), round(-hh, 9), round(hh / 2, 9),
                                                            round(-hh / 2, 9)}
            if kind == "rough_slope":
                smooth = 0.4 * d * np.minimum(4.0 - np.maximum(*np.abs(np.meshgrid(np.arange(n) * 0.1 - 4,
                                                                                     np.arange(n) * 0.1 - 4))), 2.5)
                assert np.abs(tile - smooth).max() <= 0.05 + 1e-9 and np.abs(tile - smooth).max() > 0.01
    assert t.heights[0].max() == 0 and t.heights[:, 0].max() == 0  # the border


def test_height_lookup_is_the_simulators_ground():
    """Terrain.height and its normals give the simulator's gap for 64 balls over the generated
    terrain (gap = (z − h) n_z − r at the start of a step, from Simulator.contact_gap)."""
    t = _small_terrain(seed=4)
    ball = moreau.load_model_from_string(
        '{"name": "ball", "bodies": [{"name": "ball", "parent": "world", "joint": {"type": "free"}, "mass": 1,'
        ' "inertia": [0.001, 0.001, 0.001, 0, 0, 0], "contacts": [{"type": "sphere", "name": "b", "radius": 0.05}]}]}')
    sim = moreau.Simulator(t.model(ball), n_env=64, dtype=torch.float64, contact="hard", n_threads=1)
    g = torch.Generator().manual_seed(0)
    xy = torch.rand(64, 2, generator=g, dtype=torch.float64) * torch.tensor([40.0, 24.0], dtype=torch.float64)
    q = torch.zeros(64, 7, dtype=torch.float64)
    q[:, :2], q[:, 2], q[:, 3] = xy, 2.0, 1.0
    sim.set_state(q, torch.zeros(64, 6, dtype=torch.float64))
    sim.step(1)
    h, n = t.height(xy[:, 0], xy[:, 1], normal=True)
    torch.testing.assert_close(sim.contact_gap[:, 0], (2.0 - h) * n[:, 2] - 0.05, rtol=0, atol=1e-12)
    assert float(n[:, 2].min()) < 0.95  # some balls over slopes or step edges


def test_exported_terrain_is_mujocos_and_reads_back():
    """export_mjcf writes a heightfield ground as an <hfield>: MuJoCo 4.0.1's ray casts on the export
    of a generated terrain equal moreau's surface (1e-5 m: MuJoCo stores float32), moreau's importer
    reads it back (1e-12), and a flat heightfield exports to a flat MuJoCo ground at its height (rays
    skip the cube, body 1)."""
    import mujoco
    t = _small_terrain(seed=2)
    cube = moreau.load_model(moreau.asset("cube.json"))
    text = moreau.export_mjcf(t.model(cube))
    assert text.count("<hfield") == 1 and 'type="hfield"' in text
    back = _load(text)
    assert (back.hfield_nx, back.hfield_ny) == (t.shape[1], t.shape[0])
    assert back.hfield_spacing == pytest.approx([t.spacing] * 2, abs=1e-12)
    assert back.hfield_origin == pytest.approx(list(t.origin), abs=1e-12)
    np.testing.assert_allclose(np.array(back.hfield_height).reshape(t.shape), t.heights, rtol=0, atol=1e-12)
    mj = mujoco.MjModel.from_xml_string(text)
    data = mujoco.MjData(mj)
    mujoco.mj_forward(mj, data)
    geom = np.zeros(1, np.int32)
    terrain = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_GEOM, "terrain")
    rng = np.random.default_rng(5)
    lo, span = np.array(t.origin), np.array([t.shape[1] - 1, t.shape[0] - 1]) * t.spacing
    xy = rng.uniform(lo + 0.3, lo + span - 0.3, size=(300, 2))
    ours = t.height(torch.from_numpy(xy[:, 0]), torch.from_numpy(xy[:, 1])).numpy()
    for (x, y), h in zip(xy, ours):
        theirs = 10 - mujoco.mj_ray(mj, data, np.array([x, y, 10.0]), np.array([0.0, 0.0, -1.0]), None, 1, 1, geom)
        assert geom[0] == terrain and h == pytest.approx(theirs, abs=1e-5), (x, y)
    flat = moreau.with_heightfield(cube, np.full((3, 4), 0.25), spacing=0.5, origin=(-1.0, -0.5))
    mj = mujoco.MjModel.from_xml_string(moreau.export_mjcf(flat))
    data = mujoco.MjData(mj)
    mujoco.mj_forward(mj, data)
    for x, y in ((0.0, 0.0), (0.3, 0.2), (-0.8, -0.4)):
        theirs = 10 - mujoco.mj_ray(mj, data, np.array([x, y, 10.0]), np.array([0.0, 0.0, -1.0]), None, 1, 1, geom)
        assert theirs == pytest.approx(0.25, abs=1e-6)
    assert "<hfield" not in moreau.export_mjcf(cube)  # the plane z = 0 is not written


def test_curriculum_moves_levels_as_legged_gym():
    t = _small_terrain()
    g = torch.Generator().manual_seed(1)
    levels = torch.tensor([0, 1, 1, 2, 2, 0])
    walked = torch.tensor([5.0, 1.0, 3.0, 5.0, 3.0, 0.1])
    commanded = torch.tensor([4.0, 4.0, 4.0, 4.0, 4.0, 4.0])
    new = t.update_levels(levels, torch.zeros(6, dtype=torch.long), walked, commanded, g)
    assert new[[0, 1, 2, 4, 5]].tolist() == [1, 0, 1, 2, 0]
    assert 0 <= int(new[3]) < 3  # past the last level: a random one
    lv, cols = t.initial_levels(10, g)
    assert lv.max() <= 2 and cols.tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]  # 3 levels, max_init_level 5
    assert int(t.initial_levels(200, g)[0].max()) == 2
    torch.testing.assert_close(t.origins(torch.tensor([2]), torch.tensor([3])), torch.from_numpy(t.tile_origin[2, 3][None]))


def test_locomotion_on_rough_terrain():
    """ANYmal C in the locomotion task on a generated terrain: each environment starts above its
    tile's platform (its own origin), stands there under zero actions, sees 187 height samples,
    and its tile moves a level up after walking away from the origin, down after standing still
    under a command; a step's gradient reaches the state through the terrain's contacts."""
    from moreau.tasks.locomotion import Locomotion
    terrain = dict(num_levels=3, num_types=5, proportions=(1, 1, 1, 1, 1), border=2.0, max_init_level=1)
    e = Locomotion(num_envs=10, contact="hard", terrain=terrain, measure_heights=True, push_robots=False,
                   randomize_base_mass=False, reset_base_vel=0.0, reset_dof_scale_range=(1.0, 1.0), n_threads=1,
                   dtype=torch.float64)
    assert e.num_obs == 48 + 187 and e.obs.shape == (10, 235)
    assert (e.levels <= 1).all() and e.cols.tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    torch.testing.assert_close(e.origin, torch.from_numpy(e.terrain.tile_origin)[e.levels, e.cols])
    torch.testing.assert_close(e.q[:, 2], 0.6 + e.origin[:, 2])
    with torch.no_grad():
        for _ in range(50):
            _, _, done, _ = e.step(torch.zeros(10, 12))
            assert not done.any()
    torch.testing.assert_close(e.base_height(e.q), e.q[:, 2] - e.origin[:, 2], rtol=0, atol=1e-12)  # on the platform
    assert 0.45 < float(e.base_height(e.q).min()) and float(e.base_height(e.q).max()) < 0.62
    heights = e.obs[:, -187:] / 5.0
    torch.testing.assert_close(heights, (e.q[:, 2:3] - 0.5 - e.origin[:, 2:3]).clamp(-1, 1).expand(-1, 187),
                               rtol=0, atol=1e-9)  # the samples lie on the 3 m platform
    levels = e.levels.clone()
    q = e.q.clone()
    q[:5, 0] += 5.0  # five walked 5 m (> half a tile); the others stood still under a command
    e.q = q
    e.commands = torch.tensor([[1.0, 0.0, 0.0]], dtype=torch.float64).expand(10, 3).clone()
    e.reset_envs(torch.ones(10, dtype=torch.bool))
    assert (e.levels[:5] == torch.where(levels[:5] + 1 > 2, e.levels[:5], levels[:5] + 1)).all()
    assert (e.levels[5:] == (levels[5:] - 1).clamp(min=0)).all()
    torch.testing.assert_close(e.q[:, 2], 0.6 + e.origin[:, 2])
    q = e.q.clone().requires_grad_()
    e.q = q
    e.step(torch.zeros(10, 12))[1].sum().backward()
    assert torch.isfinite(q.grad).all() and q.grad.abs().sum() > 0


def test_terrain_tiles_resume_from_the_schedule_state():
    """The schedule state carries each environment's tile: a task loading it puts every
    environment back on its tile (origin, standing height, observation); a full reset starts
    episodes without moving any tile, even late in training; tiles saved for another number of
    environments are refused with a warning."""
    from moreau.tasks.locomotion import Locomotion
    kw = dict(contact="hard", terrain=dict(num_levels=4, num_types=5, proportions=(1, 1, 1, 1, 1), border=2.0,
                                           max_init_level=0), measure_heights=True, push_robots=False,
              reset_base_vel=0.0, reset_dof_scale_range=(1.0, 1.0), n_threads=1, dtype=torch.float64)
    e = Locomotion(num_envs=10, seed=1, **kw)
    assert (e.levels == 0).all()
    e.levels = torch.tensor([0, 1, 2, 3, 3, 2, 1, 0, 1, 2])
    e.common_step_counter = 1000
    e.reset()  # nobody walked: the curriculum would move every tile down
    assert e.levels.tolist() == [0, 1, 2, 3, 3, 2, 1, 0, 1, 2]
    state = e.schedule_state()
    assert state["terrain_levels"] == e.levels.tolist() and state["terrain_cols"] == e.cols.tolist()
    f = Locomotion(num_envs=10, seed=2, **kw)
    f.load_schedule_state(state)
    assert f.levels.tolist() == e.levels.tolist() and f.common_step_counter == 1000
    torch.testing.assert_close(f.origin, torch.from_numpy(f.terrain.tile_origin)[f.levels, f.cols])
    torch.testing.assert_close(f.q[:, 2], 0.6 + f.origin[:, 2])
    heights = f.obs[:, -187:] / 5.0  # the samples see the restored tile's platform
    torch.testing.assert_close(heights, (f.q[:, 2:3] - 0.5 - f.origin[:, 2:3]).clamp(-1, 1).expand(-1, 187),
                               rtol=0, atol=1e-9)
    g = Locomotion(num_envs=5, seed=2, **kw)
    with pytest.warns(UserWarning, match="terrain tiles saved for 10 environments, not 5"):
        g.load_schedule_state(state)
    assert (g.levels == 0).all()


@pytest.mark.parametrize("preset", ["rough", "trot_rough"])
def test_rough_presets_build_and_step(preset):
    """The rough-terrain presets: legged_gym's full terrain (10 x 20 tiles of 8 m), height samples,
    knee contacts; a few steps under random actions run and give finite observations."""
    from moreau.tasks.locomotion import Locomotion
    from moreau.tasks.presets import preset_kwargs
    e = Locomotion(num_envs=8, n_threads=1, **preset_kwargs(preset))
    assert e.terrain.shape == (2 * 50 + 10 * 80 + 1, 2 * 50 + 20 * 80 + 1) and len(e.knees) == 4
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for _ in range(20):
            obs, rew, done, _ = e.step(torch.randn(8, 12, generator=g) * 0.5)
    assert obs.shape[1] == e.num_obs and torch.isfinite(obs).all() and torch.isfinite(rew).all()


def test_rough_checkpoint_evaluates_per_terrain_type_and_level(tmp_path):
    """A PPO checkpoint of the rough preset (one short iteration) evaluates with the environments
    spread over every level, each on its tile, and the metrics per terrain type and level, which
    average (environment-weighted) to the overall ones; the plot per difficulty is written."""
    import csv
    from moreau.evaluation.evaluate import eval_env, evaluate
    from moreau.trainers.checkpoints import load_policy
    from moreau.trainers.ppo import main
    log = tmp_path / "rough"
    assert main(["--task", "locomotion", "--task-preset", "rough", "--iterations", "1", "--num-envs", "4",
                 "--steps-per-env", "4", "--n-threads", "1", "--log-dir", str(log)]) == 0
    with open(log / "log.csv", newline="") as f:
        row = next(csv.DictReader(f))
    assert 0 <= float(row["terrain_level"]) <= 5 and float(row["command_scale"]) == 1.0  # the training log's curricula
    policy = load_policy(str(log / "model_final.pt"))
    env = eval_env(policy.meta["env"], "locomotion", 60, "hard", sim_threads=1)
    assert not env.cfg.terrain_curriculum and env.cfg.terrain["max_init_level"] == 9 and env.num_obs == 235
    assert int(env.levels.max()) > 5
    res = evaluate(env, policy, 0.5, "locomotion", plot=str(tmp_path / "eval.png"), seed=1)
    rows = res["terrain"]
    assert sum(r["envs"] for r in rows) == 60 and {r["type"] for r in rows} == set(env.terrain.types)
    for k in ("lin_vel_error", "yaw_rate_error", "falls_per_minute"):
        assert sum(r[k] * r["envs"] for r in rows) / 60 == pytest.approx(res[k], rel=1e-9, abs=1e-12), k
    assert (tmp_path / "eval_terrain.png").stat().st_size > 10000


def test_body_contacts_keep_the_robot_files_collision_shapes_and_end_episodes():
    """With body_contacts the Go1 keeps every collision shape of its MJCF (trunk, hips, thighs as
    contact points against the terrain): it still stands on its feet alone, and a base lowered
    until its trunk touches the ground ends the episode."""
    import warnings
    from moreau.tasks.locomotion import Locomotion
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moreau.ModelWarning)
        e = Locomotion(robot="go1", num_envs=2, body_contacts=True, push_robots=False, n_threads=1, base_height_limit=0.01,
                       randomize_base_mass=False, reset_base_vel=0.0, reset_dof_scale_range=(1.0, 1.0),
                       terrain=dict(num_levels=2, num_types=2, border=1.0, max_init_level=0, proportions=(1, 0, 1, 0, 0)))
    m = e.sim.model
    assert m.ncon == 100 and len(e.knees) == 96  # the 96 non-foot points are the forbidden ones
    with torch.no_grad():
        for _ in range(50):
            _, _, done, _ = e.step(torch.zeros(2, 12))
            assert not done.any()
    q = e.q.clone()
    q[:, 2] = e.origin[:, 2] + 0.05  # the trunk on the platform (the base above the height limit)
    failed, _ = e.check_termination(q, e.v)
    assert failed.all()


def test_anymal_body_contacts_take_legged_gyms_collision_shapes():
    """ANYmal C's JSON carries its feet only; with body_contacts the task adds the collision shapes
    of legged_gym's URDF (its robot configuration's collision_file, the same bodies and frames):
    the trunk cylinder, the four knee drives and the four shanks as 9 x 16 rim points, its feet
    left to the JSON's own; as in legged_gym only the trunk's touching ends an episode. Dropped on
    the terrain's platform the robot settles on its feet alone (every other point clear of the
    ground after 1 s); a shank on the ground does not end the episode, the trunk on it does;
    without body_contacts the model is as before."""
    from moreau.tasks.locomotion import Locomotion
    kw = dict(num_envs=2, push_robots=False, n_threads=1, base_height_limit=0.01, randomize_base_mass=False,
              reset_base_vel=0.0, reset_dof_scale_range=(1.0, 1.0),
              terrain=dict(num_levels=2, num_types=2, border=1.0, max_init_level=0, proportions=(1, 0, 1, 0, 0)))
    e = Locomotion(body_contacts=True, **kw)
    m = e.sim.model
    assert m.ncon == 4 + 9 * 16 and [m.con_name[k].split("/")[0] for k in e.knees] == ["base"] * 16
    links = {n.split("/")[0] for n in m.con_name if "/" in n}
    assert links == {"base"} | {f"{leg}_{part}" for leg in ("LF", "RF", "LH", "RH") for part in ("KFE", "SHANK")}
    assert [n for n in m.con_name if "FOOT" in n] == ["LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"]
    with torch.no_grad():
        for _ in range(50):
            _, _, done, _ = e.step(torch.zeros(2, 12))
            assert not done.any()
    others = [k for k, n in enumerate(m.con_name) if "FOOT" not in n]
    assert float(e.clearance(e.kinematics.contact_positions(e.q)[:, others], e.kinematics.con_radius[others]).min()) > 0
    q = e.q.clone()
    q[:, 2] -= 0.1  # the shanks' lower rims into the platform, the trunk above it
    failed, _ = e.check_termination(q, e.v)
    assert not failed.any()
    q[:, 2] = e.origin[:, 2] + 0.09  # the trunk's 0.1 m cylinder into the platform
    failed, _ = e.check_termination(q, e.v)
    assert failed.all()
    assert Locomotion(**kw).sim.model.ncon == 4


def test_png_and_binary_heightfields_are_mujocos_surface(tmp_path):
    """An MJCF <hfield file="..."> found in the compiler's meshdir: an 8-bit grey PNG, a colour one
    (MuJoCo reads the red channel) and MuJoCo's binary format (int32 nrow, ncol, float32 values,
    the first row at −y) load as the surface MuJoCo's ray casts see on the same file; a 16-bit
    PNG, a truncated binary file and a missing file are errors naming the element."""
    import mujoco
    from PIL import Image
    rng = np.random.default_rng(7)
    (tmp_path / "terrain").mkdir()
    grey = rng.integers(0, 256, size=(17, 23), dtype=np.uint8)
    Image.fromarray(grey, mode="L").save(tmp_path / "terrain" / "grey.png")
    colour = rng.integers(0, 256, size=(17, 23, 3), dtype=np.uint8)
    Image.fromarray(colour, mode="RGB").save(tmp_path / "terrain" / "colour.png")
    Image.fromarray(grey.astype(np.uint16) * 200).save(tmp_path / "terrain" / "deep.png")
    binary = rng.normal(size=(17, 23)).astype(np.float32)
    header = np.array([17, 23], dtype=np.int32).tobytes()
    (tmp_path / "terrain" / "field.bin").write_bytes(header + binary.tobytes())
    (tmp_path / "terrain" / "short.bin").write_bytes(header + binary.tobytes()[:-4])
    for name, values in (("grey.png", grey), ("colour.png", colour[..., 0]), ("field.bin", binary[::-1])):
        text = (f'<mujoco><compiler meshdir="terrain"/><asset><hfield name="t" file="{name}" size="2.2 1.6 0.4 0.1"/>'
                '</asset><worldbody><geom type="hfield" hfield="t" pos="0.3 0.1 0.02"/><body pos="5 5 2"><freejoint/>'
                '<geom type="sphere" size="0.05"/></body></worldbody></mujoco>')
        path = tmp_path / "scene.xml"
        path.write_text(text)
        m = _load_file(str(path))
        assert (m.hfield_nx, m.hfield_ny) == (23, 17)
        h = np.array(m.hfield_height).reshape(17, 23)
        v = values.astype(float)
        expected = 0.02 + 0.4 * (v - v.min()) / (v.max() - v.min())
        np.testing.assert_allclose(h, expected[::-1], atol=1e-6)  # the image's top row at +y
        mj = mujoco.MjModel.from_xml_path(str(path))
        data = mujoco.MjData(mj)
        mujoco.mj_forward(mj, data)
        geom = np.zeros(1, np.int32)
        for x, y in rng.uniform((-1.8, -1.4), (2.4, 1.6), size=(100, 2)):
            ours = float(heightfield_surface(torch.from_numpy(h), (0.3 - 2.2, 0.1 - 1.6), (0.2, 0.2), torch.tensor(x),
                                             torch.tensor(y)))
            theirs = 10 - mujoco.mj_ray(mj, data, np.array([x, y, 10.0]), np.array([0.0, 0.0, -1.0]), None, 1, -1, geom)
            assert ours == pytest.approx(theirs, abs=1e-5), (name, x, y)
    for name, message in (("deep.png", "expected an 8-bit PNG"), ("nope.png", "nope.png"),
                          ("short.bin", "expected 8 \\+ 4 x 17 x 23 bytes")):
        path.write_text(text.replace("field.bin", name))
        with pytest.raises(moreau.Error, match=message):
            moreau.load_mjcf(str(path))


def _load_file(path):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moreau.ModelWarning)
        return moreau.load_mjcf(path)


def test_shac_trains_through_the_terrain(tmp_path):
    """Two SHAC iterations on the trot_rough preset through smooth contact: the analytic gradient
    goes through the heightfield's contacts and the height samples; the run writes its checkpoint
    and a finite actor gradient."""
    import csv
    from moreau.trainers.shac import main
    log = tmp_path / "shac"
    assert main(["--task", "locomotion", "--task-preset", "trot_rough", "--num-envs", "4", "--iterations", "2",
                 "--contact", "smooth", "--logdir", str(log), "--sim-threads", "1", "--no-progress"]) == 0
    assert (log / "model_final.pt").exists()
    with open(log / "log.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 and all(math.isfinite(float(r["grad_norm"])) and float(r["grad_norm"]) > 0 for r in rows)
    # legged_gym's terrain_level: the mean level of the 4 environments' tiles (initially 0..5)
    assert all(float(r["terrain_level"]) * 4 == int(float(r["terrain_level"]) * 4) for r in rows)
    assert 0 <= float(rows[0]["terrain_level"]) <= 5
