"""moreau.evaluation.mujoco: a moreau locomotion policy run in MuJoCo (sim-to-sim).

The MuJoCo observation must be the task's (a mismatch silently ruins the transfer), MuJoCo on
moreau's exported model must hold the default pose like moreau, and the walk_fast policy must
track a command in MuJoCo about as well as in moreau (docs/sim2sim.md).
"""
import os

import numpy as np
import pytest
import torch

import mujoco  # required: a missing package fails

import moreau
from moreau.evaluation import mujoco as mj
from moreau.tasks.locomotion import Locomotion, config_from_dict
from moreau.trainers.checkpoints import load_policy

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
POLICY = os.path.join(ROOT, "results", "shac_walk", "policy.pt")
MENAGERIE = os.path.join(ROOT, "tests", "data", "robots", "anymal_c_menagerie", "anymal_c.xml")
# |planar velocity error (MuJoCo) − (moreau)| over the policy's first second at 0.5 m/s, both from
# the default pose at rest, hard contact in moreau. Measured (MuJoCo 4.0.1): 0.083 vs 0.093 m/s, a
# difference of 0.01 m/s (MuJoCo's soft contact); a MuJoCo observation with the linear and angular
# velocity blocks swapped gives 0.80 vs 0.09 m/s (test_a_broken_observation_is_caught).
LIN_ERR_TOL = 0.1


@pytest.fixture(scope="module")
def policy():
    torch.set_num_threads(1)
    return load_policy(POLICY)


def task(policy, n, dtype=torch.float32, **kw):
    cfg = dict(policy.meta["env"]["task_config"])
    cfg.update(curriculum_command=None)
    over = dict(num_envs=n, contact="hard", dtype=dtype, n_threads=1, seed=1, push_robots=False,
                randomize_friction=False, randomize_base_mass=False)
    over.update(kw)
    return Locomotion(config_from_dict(cfg), **over)


def default_state(env):
    q = env.q0.double().cpu().numpy().copy()
    return q, np.zeros(env.sim.nv)


def test_observation_matches_the_task(policy):
    n = 5
    env = task(policy, n, dtype=torch.float64)
    menv = mj.MujocoLocomotion(env, n, seed=3, verbose=False)
    rng = np.random.default_rng(0)
    for i in range(n):
        q, v = default_state(env)
        q[:3] += rng.normal(size=3) * 0.1
        quat = rng.normal(size=4)
        q[3:7] = quat / np.linalg.norm(quat)
        q[7:] += rng.normal(size=12) * 0.3
        v = rng.normal(size=18)
        menv.set_moreau_state(i, q, v)
    menv.commands[:] = rng.uniform(-1, 1, size=(n, 3))
    menv.last_actions[:] = rng.uniform(-1, 1, size=(n, 12))
    menv.gait_phase[:] = rng.uniform(0, 1, size=n)
    obs = menv.observe()
    q, v = menv.moreau_state()
    ref = env.compute_observations(torch.as_tensor(q), torch.as_tensor(v), torch.as_tensor(menv.commands),
                                   torch.as_tensor(menv.last_actions), torch.as_tensor(menv.gait_phase))
    assert obs.shape == (n, env.num_obs) == (n, 56)
    np.testing.assert_allclose(obs, ref.numpy(), atol=1e-6, rtol=0)
    # the free joint's conventions: MuJoCo's qvel[0:3] world linear, qvel[3:6] body angular
    d, m = menv.datas[0], menv.model
    mujoco.mj_forward(m, d)
    vel = np.zeros(6)  # (angular, linear) of the base, world-oriented at the body origin
    mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_XBODY, menv.base_body, vel, 0)
    np.testing.assert_allclose(vel[3:], d.qvel[0:3], atol=1e-9)
    R = d.xmat[menv.base_body].reshape(3, 3)
    np.testing.assert_allclose(R.T @ vel[:3], d.qvel[3:6], atol=1e-9)


def test_menagerie_file_loads_without_meshes(policy):
    env = task(policy, 1)
    menv = mj.MujocoLocomotion(env, 1, mjcf=MENAGERIE, verbose=False)
    assert any("mesh" in msg for msg in menv.messages)
    m = menv.model
    assert not any(m.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH for g in range(m.ngeom))
    assert len(menv.ground) == 1 and len(set(menv.feet)) == 4
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, int(np.flatnonzero(m.jnt_qposadr == a)[0]))
             for a in menv.qadr]
    assert names == ["LF_HAA", "LF_HFE", "LF_KFE", "RF_HAA", "RF_HFE", "RF_KFE", "LH_HAA", "LH_HFE", "LH_KFE",
                     "RH_HAA", "RH_HFE", "RH_KFE"]
    assert (m.actuator_biastype == mujoco.mjtBias.mjBIAS_NONE).all()  # motors: the task's PD torques


def test_go1_runs_in_mujoco_with_its_per_actuator_torque_limits():
    """The Go1 (the locomotion task's "go1" robot) on the Menagerie's go1.xml: its joints mapped
    by name, its feet found by their geom names, the task's per-actuator torque limits (23.7,
    23.7, 35.55 N m) as the motors' force ranges; under zero actions it stands (base 0.25-0.33 m
    over 1 s, MuJoCo with the file's joint damping)."""
    import warnings
    from moreau.tasks.locomotion import Locomotion
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moreau.ModelWarning)
        env = Locomotion(robot="go1", num_envs=1, push_robots=False, n_threads=1)
    menv = mj.MujocoLocomotion(env, 1, mjcf=moreau.asset("unitree_go1/go1.xml"), verbose=False)
    m = menv.model
    np.testing.assert_allclose(m.actuator_forcerange[menv.act, 1], [23.7, 23.7, 35.55] * 4)
    assert [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) for g in menv.feet] == ["FL", "FR", "RL", "RR"]
    q, v = default_state(env)
    menv.set_moreau_state(0, q, v)
    heights = []
    for _ in range(50):
        menv.step(np.zeros((1, 12)))
        heights.append(menv.datas[0].qpos[2])
    assert 0.25 < min(heights[25:]) and max(heights[25:]) < 0.33, (min(heights[25:]), max(heights[25:]))


def test_terrain_tasks_run_on_the_same_heightfield():
    """On generated terrain each MuJoCo environment stands on its own tile of the task's
    heightfield (exported, or added to the Menagerie's file): moreau's state round-trips through
    MuJoCo's world coordinates, the observation (with the 187 height samples) is the task's, the
    robot under zero actions rests on its platform as in moreau (MuJoCo's soft feet sink a little
    more), and the metrics come per terrain type and level."""
    terrain = dict(num_levels=2, num_types=5, proportions=(1, 1, 1, 1, 1), border=2.0, max_init_level=1)
    n = 4
    kw = dict(num_envs=n, n_threads=1, terrain=terrain, measure_heights=True, terrain_curriculum=False,
              contact="hard", push_robots=False, randomize_friction=False, randomize_base_mass=False,
              reset_base_vel=0.0, reset_dof_scale_range=(1.0, 1.0), dtype=torch.float64)
    env = Locomotion(**kw)
    assert len(set(map(tuple, env.origin[:, :2].tolist()))) == n  # four tiles
    for mjcf in (None, MENAGERIE):
        menv = mj.MujocoLocomotion(env, n, mjcf=mjcf, seed=2, verbose=False)
        assert [menv.model.geom_type[g] for g in menv.ground] == [mujoco.mjtGeom.mjGEOM_HFIELD]
        q, v = menv.moreau_state()
        np.testing.assert_allclose(q, env.q.numpy(), atol=1e-12)  # the same start, tile-relative
        np.testing.assert_allclose([d.qpos[0:2] for d in menv.datas], env.origin[:, :2].numpy(), atol=1e-12)
        t = torch.as_tensor
        ref = env.compute_observations(t(q), t(v), t(menv.commands), t(menv.last_actions), t(menv.gait_phase))
        assert ref.shape == (n, 48 + 187)
        np.testing.assert_allclose(menv.observe(), ref.numpy(), atol=1e-6)
        zero = np.zeros((n, 12))
        mr = Locomotion(**kw)  # the same start, stepped by moreau
        with torch.no_grad():
            for _ in range(50):  # 1 s
                _, _, done, _ = menv.step(zero)
                assert not done.any()
                mr.step(torch.zeros(n, 12))
        h_mj = menv.moreau_state()[0][:, 2] - env.origin[:, 2].numpy()
        h_mr = (mr.q[:, 2] - mr.origin[:, 2]).numpy()
        assert (np.abs(h_mj - h_mr) < 0.03).all(), (h_mj, h_mr)
    res = mj.evaluate_mujoco(menv, lambda obs: torch.zeros(obs.shape[0], 12), 0.2)
    rows = res["terrain"]
    assert sum(r["envs"] for r in rows) == n and res["falls"] == 0
    assert sum(r["lin_vel_error"] * r["envs"] for r in rows) / n == pytest.approx(res["lin_vel_error"], rel=1e-9)


def test_a_robot_file_with_its_own_floor_is_refused_on_terrain(tmp_path):
    terrain = dict(num_levels=2, num_types=5, proportions=(1, 1, 1, 1, 1), border=2.0)
    env = Locomotion(num_envs=1, n_threads=1, terrain=terrain, measure_heights=True, terrain_curriculum=False)
    scene = tmp_path / "scene.xml"
    with open(MENAGERIE) as f:
        scene.write_text(f.read().replace("<worldbody>", '<worldbody><geom type="plane" size="5 5 0.1"/>', 1))
    with pytest.raises(ValueError, match="has a ground of its own"):
        mj.MujocoLocomotion(env, 1, mjcf=str(scene), verbose=False)


def test_standing_matches_moreau(policy):
    env = task(policy, 1)
    menv = mj.MujocoLocomotion(env, 1, verbose=False)
    q, v = default_state(env)
    menv.set_moreau_state(0, q, v)
    env.set_state(torch.as_tensor(q)[None], torch.as_tensor(v)[None])
    zero = np.zeros((1, 12))
    h_mj, h_mr = [], []
    for _ in range(100):  # 2 s
        menv.step(zero)
        env.step(torch.zeros(1, 12))
        h_mj.append(menv.datas[0].qpos[2])
        h_mr.append(float(env.q[0, 2]))
    assert min(h_mj) > 0.4, "MuJoCo: the robot fell"
    # measured: 0.506 m (MuJoCo's soft contact sinks the feet) vs 0.521 m
    assert abs(h_mj[-1] - h_mr[-1]) < 0.02, (h_mj[-1], h_mr[-1])


def first_second_errors(policy, swap=False):
    """Planar velocity error of the policy's first second at (0.5, 0, 0) from the default pose at
    rest: (MuJoCo, moreau); ``swap``: the MuJoCo observation's velocity blocks swapped."""
    env = task(policy, 1, command_ranges=((0.5, 0.5), (0.0, 0.0), (0.0, 0.0)), small_command_threshold=0.0)
    q, v = default_state(env)
    menv = mj.MujocoLocomotion(env, 1, verbose=False)
    menv.set_moreau_state(0, q, v)
    menv.commands[:] = (0.5, 0.0, 0.0)
    pol = policy
    if swap:
        pol = lambda obs: policy(torch.cat([obs[:, 3:6], obs[:, 0:3], obs[:, 6:]], 1))  # noqa: E731
    res_mj = mj.evaluate_mujoco(menv, pol, 1.0)
    env.set_state(torch.as_tensor(q, dtype=env.dtype)[None], torch.as_tensor(v, dtype=env.dtype)[None])
    obs, err = env.obs, 0.0
    with torch.no_grad():
        for _ in range(50):
            cmd = env.commands.clone()
            obs, _, _, info = env.step(policy(obs))
            lin = info["obs_before_reset"][:, 0:2] / env.cfg.obs_scales["lin_vel"]
            err += float((cmd[:, :2] - lin).norm(dim=1).mean())
    return res_mj["lin_vel_error"], err / 50


def test_policy_tracks_in_mujoco_as_in_moreau(policy):
    e_mj, e_mr = first_second_errors(policy)
    assert e_mr < 0.2
    assert abs(e_mj - e_mr) < LIN_ERR_TOL, (e_mj, e_mr)


def test_a_broken_observation_is_caught(policy):
    e_mj, e_mr = first_second_errors(policy, swap=True)
    assert abs(e_mj - e_mr) >= LIN_ERR_TOL, (e_mj, e_mr)


# Every body at the same point, so that every pair MuJoCo's filter lets through touches: l_foot is
# welded to l, the tail and r_shank collide on bit 2 only.
SELF_COLLISION = """<mujoco>{option}<worldbody>
  <body name="base" pos="0 0 1"><freejoint/><geom size="0.3"/>
    <body name="l"><joint axis="0 1 0"/><geom size="0.3"/><body name="l_foot"><geom size="0.2"/></body></body>
    <body name="r"><joint axis="0 1 0"/><geom type="capsule" size="0.2 0.1"/>
      <body name="r_shank"><joint axis="1 0 0"/><geom size="0.3" contype="2" conaffinity="2"/></body></body>
    <body name="tail"><joint axis="0 0 1"/><geom size="0.3" contype="0" conaffinity="2"/></body>
  </body></worldbody>{contact}</mujoco>"""


def _mujoco_body_pairs(m: "mujoco.MjModel", d: "mujoco.MjData") -> set:
    """The weld-body pairs of MuJoCo's contacts between two moving bodies."""
    weld = lambda g: int(m.body_weldid[m.geom_bodyid[g]])  # noqa: E731
    name = lambda b: mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b)  # noqa: E731
    return {frozenset((name(weld(c.geom1)), name(weld(c.geom2)))) for c in d.contact[:d.ncon]
            if weld(c.geom1) != 0 and weld(c.geom2) != 0}


@pytest.mark.parametrize("option,contact,expected", [
    ("", "", {("l", "r"), ("r_shank", "tail")}),
    ("", '<contact><exclude body1="l_foot" body2="r"/></contact>', {("l", "r"), ("r_shank", "tail")}),
    ("", '<contact><exclude body1="l_foot" body2="r"/><exclude body1="l" body2="r"/></contact>', {("r_shank", "tail")}),
    ('<option><flag filterparent="disable"/></option>', "", {("base", "l"), ("base", "r"), ("l", "r"), ("r_shank", "tail")}),
])
def test_self_collision_pairs_are_mujocos(option, contact, expected):
    """Model.self_collisions lists the body pairs MuJoCo 4 collides (contype/conaffinity, weld
    bodies, parent filter, <exclude>), which moreau does not simulate, and says so in a warning."""
    xml = SELF_COLLISION.format(option=option, contact=contact)
    with pytest.warns(moreau.ModelWarning, match="contacts between the robot's own bodies are not simulated"):
        ours = moreau.load_mjcf("self.xml", text=xml)
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    theirs = _mujoco_body_pairs(m, d)
    assert {frozenset(p) for p in ours.self_collisions} == theirs == {frozenset(p) for p in expected}


@pytest.mark.parametrize("path", [MENAGERIE, os.path.join(ROOT, "assets", "robots", "unitree_go1", "go1.xml")])
def test_robot_self_collisions_cover_mujocos_contacts(path):
    """On the Menagerie's ANYmal C and Go1 in 2,000 random joint configurations (the base in the
    air, joints uniform in their ranges; the visual meshes dropped), every pair of bodies MuJoCo
    finds touching is in Model.self_collisions, and some do touch."""
    with pytest.warns(moreau.ModelWarning, match="contacts between the robot's own bodies"):
        model = moreau.load_mjcf(path)
    ours = {frozenset(p) for p in model.self_collisions}
    m = mujoco.MjModel.from_xml_string(mj.load_robot_xml(model, path, verbose=False)[0])  # its meshes dropped
    d = mujoco.MjData(m)
    rng = np.random.default_rng(0)
    seen = set()
    hinges = [j for j in range(m.njnt) if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE]
    for _ in range(2000):
        d.qpos[:] = m.qpos0
        d.qpos[2] = 2.0
        for j in hinges:
            lo, hi = m.jnt_range[j] if m.jnt_limited[j] else (-np.pi, np.pi)
            d.qpos[m.jnt_qposadr[j]] = rng.uniform(lo, hi)
        mujoco.mj_forward(m, d)
        seen |= _mujoco_body_pairs(m, d)
    assert seen and seen <= ours, sorted(map(sorted, seen - ours))


def test_task_config_puts_a_flat_policy_on_terrain():
    """``run(task_config=...)`` (``--task-config``) changes the task for both engines as
    moreau.evaluation.evaluate's does: the flat-ground walk_fast policy on a generated terrain,
    metrics per terrain type and level from MuJoCo and from moreau."""
    terrain = dict(num_levels=2, num_types=5, proportions=[1, 1, 1, 1, 1], border=2.0)
    res = mj.run(POLICY, num_envs=2, seconds=0.2, verbose=False, task_config={"terrain": terrain})
    assert res["task_config_overrides"] == {"terrain": terrain}
    for engine in ("mujoco", "moreau"):
        assert sum(r["envs"] for r in res[engine]["terrain"]) == 2, engine
