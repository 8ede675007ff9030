"""Loading robots from Python: our JSON, URDF and MJCF."""
import json
import math

import pytest
import torch

import moreau
import moreau.torch as mt

URDF = """<robot name="arm">
  <link name="base"><inertial><mass value="2"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="upper"><inertial><origin xyz="0 0 -0.25"/><mass value="1"/>
    <inertia ixx="0.02" iyy="0.02" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
    <origin xyz="0 0 1"/><axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="50" velocity="10"/></joint>
</robot>
"""

MJCF = """<mujoco model="swing">
  <option timestep="0.002"/>
  <worldbody>
    <body name="link" pos="0 0 1">
      <joint name="hinge" type="hinge" axis="0 1 0"/>
      <inertial pos="0 0 -0.5" mass="1" diaginertia="0.1 0.1 0.01"/>
    </body>
  </worldbody>
  <actuator><position name="servo" joint="hinge" kp="20"/></actuator>
</mujoco>
"""


def test_json_file_and_string():
    m = moreau.load_model(moreau.asset("anymal_c.json"))
    assert (m.nq, m.nv, m.nu) == (19, 18, 12) and m.ncon > 0
    with open(moreau.asset("anymal_c.json")) as f:
        bodies = json.load(f)["bodies"]
    assert m.nbody == len(bodies) == 13
    assert m.body_name == [b["name"] for b in bodies] and m.body_name[0] == "base"
    assert m.total_mass() == pytest.approx(sum(b["mass"] for b in bodies), rel=1e-12)
    assert m.total_mass() == pytest.approx(44.965, abs=1e-3)  # the JSON's 13 bodies
    with open(moreau.asset("cube.json")) as f:
        text = f.read()
    c = moreau.load_model_from_string(text, "cube-string")
    assert (c.nq, c.nv, c.nu, c.ncon) == (7, 6, 0, 8)
    assert c.total_mass() == pytest.approx(0.37)
    assert "nq=7" in repr(c)
    spec = json.loads(text)
    spec["bodies"][0]["mass"] = 1.0
    assert moreau.load_model_from_string(json.dumps(spec)).total_mass() == pytest.approx(1.0)
    with pytest.raises(moreau.Error):
        moreau.load_model_from_string("{ not json", "bad")


def test_simulator_from_a_path():
    sim = moreau.Simulator(moreau.asset("pendulum.json"), n_env=2)
    assert sim.model.nq == 1 and sim.q.shape == (2, 1)
    assert "pendulum" in repr(sim)


def test_urdf(tmp_path):
    path = tmp_path / "arm.urdf"
    path.write_text(URDF)
    m = moreau.load_model(str(path))               # by extension: a floating base by default
    assert m.nv == 7 and m.nu == 1
    fixed = moreau.load_urdf(str(path), fixed_base=True, kp=30.0, kd=1.0)
    assert (fixed.nq, fixed.nv, fixed.nu) == (1, 1, 1)
    assert fixed.actuator_kp == [30.0] and fixed.jnt_name == ["shoulder"]
    same = moreau.load_urdf("arm-from-text", text=URDF, fixed_base=True, kp=30.0, kd=1.0)
    assert same.nq == 1
    sim = moreau.Simulator(fixed, n_env=2, dtype=torch.float64, contact="none")
    q = torch.tensor([[0.3], [-0.2]], dtype=torch.float64, requires_grad=True)
    q1, v1 = mt.step(sim, q, torch.zeros(2, 1, dtype=torch.float64), torch.zeros(2, 1, dtype=torch.float64))
    v1.sum().backward()
    assert torch.isfinite(q.grad).all() and (q.grad != 0).all()


def test_mjcf(tmp_path):
    path = tmp_path / "swing.xml"
    path.write_text(MJCF)
    m = moreau.load_model(str(path))
    assert (m.nq, m.nv, m.nu) == (1, 1, 1) and m.timestep == pytest.approx(0.002)
    assert moreau.load_mjcf("swing-text", text=MJCF).actuator_name == ["servo"]
    assert moreau.load_mjcf(str(path)).actuator_kp == [20.0]
    xml = moreau.export_mjcf(m)
    assert "<mujoco" in xml and "hinge" in xml


def test_joint_spring_pulls_towards_its_rest_position():
    """A hinge spring (MJCF stiffness, springref in degrees) in the model and in the step: from
    rest at q = 0, with gravity off, the joint accelerates towards springref."""
    xml = MJCF.replace('<joint name="hinge"', '<joint name="hinge" stiffness="5" springref="30"')
    assert 'stiffness="5"' in xml
    m = moreau.load_mjcf("spring", text=xml.replace("<option", '<option gravity="0 0 0"'))
    assert m.jnt_stiffness == [5.0] and m.jnt_springref == pytest.approx([math.radians(30)])
    sim = moreau.Simulator(m, n_env=1, dtype=torch.float64, contact="none")
    sim.action[:] = 0.0
    sim.step(10)
    assert float(sim.v[0, 0]) > 0 and float(sim.q[0, 0]) > 0
    assert moreau.export_mjcf(m).count('stiffness="5"') == 1


PLANE_BELOW = """<mujoco><worldbody><geom type="plane" pos="0 0 -1" size="5 5 0.1"/>
  <body pos="0 0 0.5"><freejoint/><geom type="box" size="0.05 0.05 0.05" mass="0.37"/></body>
</worldbody></mujoco>
"""


BALL_RANGE = """<mujoco><compiler autolimits="true"/><worldbody><body name="a">
  <joint name="ball" type="ball" range="0 40"/><geom size="0.1"/></body></worldbody></mujoco>
"""


def test_what_moreau_does_not_simulate_is_a_python_warning(tmp_path):
    # a floor plane at z = -1 (moreau's ground is z = 0) and a ball joint's range (a cone moreau
    # does not enforce)
    path = tmp_path / "plane.xml"
    path.write_text(PLANE_BELOW)
    with pytest.warns(moreau.ModelWarning, match=r"plane\.xml:1: geom: a ground plane that is not z = 0"):
        m = moreau.load_model(path)
    with pytest.warns(moreau.ModelWarning, match="not z = 0"):
        moreau.load_mjcf(path)
    with pytest.warns(moreau.ModelWarning, match="a ball joint's range is stored but not enforced"):
        b = moreau.load_mjcf("ball.xml", text=BALL_RANGE)
    assert len(m.warnings) == 1 and len(b.warnings) == 1


def test_joint_limits_and_friction_loss_are_read(recwarn):
    # the URDF's revolute limit and the MJCF's frictionloss are simulated: no warning
    u = moreau.load_urdf("arm.urdf", text=URDF)
    assert list(u.jnt_limited) == [0, 1] and list(u.jnt_range)[2:] == [-3, 3]  # the free base, the shoulder
    s = moreau.load_mjcf("f.xml", text=MJCF.replace('axis="0 1 0"', 'axis="0 1 0" frictionloss="0.3"'))
    assert list(s.dof_frictionloss) == [0.3]
    assert not [w for w in recwarn if issubclass(w.category, moreau.ModelWarning)]


def test_a_robot_moreau_simulates_as_written_loads_without_warnings(recwarn):
    moreau.load_model(moreau.asset("anymal_c.json"))
    moreau.Simulator(moreau.asset("cube.json"), n_env=2)
    assert not [w for w in recwarn if issubclass(w.category, moreau.ModelWarning)]
