"""Robot configurations of the locomotion task (legged_gym's pattern): what is a property of the
robot rather than of the task, by name (``ROBOTS``) or from a JSON file of the same fields.

Every field but ``file`` and ``feet`` has a default; the locomotion task's own fields of the same
name (``LocomotionConfig``), when set, override the robot's. Fields:

- ``file``: the robot file (a name of moreau.asset, or a path): URDF, MJCF or moreau JSON;
- ``feet``: the feet's contact points in the order left-front, right-front, left-hind, right-hind
  (the gait clock's and the foot terms' order); contact points the task does not name are dropped
  from the simulated model (a Menagerie file's collision shapes of the trunk and thighs);
- ``collision_file``: a robot file with the same bodies (names and frames) whose collision shapes
  the task's ``body_contacts`` adds to the robot's (a moreau JSON robot that carries its feet
  only: ANYmal C's takes legged_gym's URDF's trunk, knee-drive and shank cylinders); its points on
  a foot's link are left out (the robot's own feet stay);
- ``terminate_contacts``: with ``body_contacts``, the links (the part of a contact point's name
  before its first "/") whose collision shapes touching the ground end an episode, legged_gym's
  terminate_after_contacts_on (None: every point but the feet); the other shapes are simulated
  and allowed to touch; named points of the robot's own (knee spheres) always end it;
- ``knee_sphere``: (body name suffix, position in that body [m], radius [m]) of a sphere added at
  each leg's knee with the task's ``knee_contacts`` (JSON robot files only), ``knees`` the names of
  existing contact points used instead;
- ``default_joint_pos``: joint name → default angle [rad] (the others: the model's ``qpos0``);
- ``timestep`` [s], ``decimation``: physics step and physics steps per control step (None: the
  file's);
- ``kp``, ``kd`` [N m/rad, N m s/rad], ``torque_limit`` [N m] (one value, or one per actuator),
  ``action_scale`` [rad per unit action];
- ``damping_scale``: the file's joint damping is simulated times this (0 where the file's damping
  stands for its own position servos' derivative gain, which the task's PD law replaces);
- ``init_base_height``, ``base_height_target``, ``base_height_limit`` [m]: the base's height at a
  reset, the base_height term's target, and the height below which an episode fails;
- ``foot_height_apex`` [m]: the swing apex of the feet_height term; ``feet_separation_min`` [m];
- ``gait_frequency_scale``: the task's gait clock (``gait_frequency``, ANYmal C's 2 Hz in the trot
  presets) runs at this multiple for the robot: sqrt(h_ANYmal / h) for a robot whose base stands at
  h (ANYmal C 0.55 m), the same Froude number v²/(g h) at the same stride per leg length;
- ``command_ranges``: (v_x, v_y, ω_z) ranges of the commands.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields
from typing import Dict, Optional, Tuple, Union

__all__ = ["RobotConfig", "ROBOTS", "robot_config"]


@dataclass(frozen=True)
class RobotConfig:
    file: str
    feet: Tuple[str, str, str, str]
    collision_file: Optional[str] = None
    terminate_contacts: Optional[Tuple[str, ...]] = None
    knee_sphere: Optional[Tuple[str, Tuple[float, float, float], float]] = None
    knees: Tuple[str, ...] = ()
    default_joint_pos: Dict[str, float] = field(default_factory=dict)
    timestep: Optional[float] = None
    decimation: Optional[int] = None
    kp: float = 80.0
    kd: float = 2.0
    torque_limit: Union[float, Tuple[float, ...]] = 80.0
    action_scale: float = 0.5
    damping_scale: float = 1.0
    init_base_height: float = 0.6
    base_height_target: float = 0.5
    base_height_limit: float = 0.25
    foot_height_apex: float = 0.08
    feet_separation_min: float = 0.15
    gait_frequency_scale: float = 1.0
    command_ranges: Tuple[Tuple[float, float], ...] = ((-1.0, 1.0), (-1.0, 1.0), (-1.0, 1.0))


ROBOTS: Dict[str, RobotConfig] = {
    # ANYmal C (assets/robots/anymal_c.json): legged_gym's flat ANYmal C settings.
    "anymal_c": RobotConfig(file="anymal_c.json", feet=("LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"),
                            collision_file="anymal_c_legged_gym/anymal_c.urdf", terminate_contacts=("base",),
                            knee_sphere=("_THIGH", (0.0303, 0.0, -0.285), 0.05)),
    # Unitree Go1 (MuJoCo Menagerie's go1.xml, assets/robots/unitree_go1): legged_gym's settings of
    # its Go1/A1-class robots (kp 20, kd 0.5, the A1 default pose) but its action scale: moreau's
    # policies output actions in ±1 (tanh, clip_actions 1), so action_scale is the joint targets'
    # range, ±0.5 rad as ANYmal C's (legged_gym's 0.25 goes with actions clipped at ±100; at ±0.25
    # rad half of a Go1 policy's actions sat at the bound and no trot was found); the file's
    # torque limits (23.7 N m hips and thighs, 35.55 N m knees); the knees are the thighs' lower
    # capsule ends; 50 Hz control of 4 physics steps of 5 ms (the file's own step is 2 ms). The file's
    # joint damping (2 N m s/rad, 1 at the abduction joints) is the derivative part of its kp-100
    # position servos (which have no kv): the task's PD law (kd 0.5) replaces it, so it is not
    # simulated (damping_scale 0); the friction loss (0.2 N m) and armature stay. The base
    # settles at 0.29 m in the default pose under its PD gains: the gait clock sqrt(0.55 / 0.29) = 1.38
    # times ANYmal C's.
    "go1": RobotConfig(
        file="unitree_go1/go1.xml", feet=("FL", "FR", "RL", "RR"),
        knees=("FR_thigh/geom3/end1", "FL_thigh/geom3/end1", "RR_thigh/geom3/end1", "RL_thigh/geom3/end1"),
        default_joint_pos={"FL_hip_joint": 0.1, "RL_hip_joint": 0.1, "FR_hip_joint": -0.1, "RR_hip_joint": -0.1,
                           "FL_thigh_joint": 0.8, "FR_thigh_joint": 0.8, "RL_thigh_joint": 1.0, "RR_thigh_joint": 1.0,
                           "FL_calf_joint": -1.5, "FR_calf_joint": -1.5, "RL_calf_joint": -1.5, "RR_calf_joint": -1.5},
        timestep=0.005, decimation=4, kp=20.0, kd=0.5, torque_limit=(23.7, 23.7, 35.55) * 4, action_scale=0.5, damping_scale=0.0,
        init_base_height=0.32, base_height_target=0.30, base_height_limit=0.15, foot_height_apex=0.05, feet_separation_min=0.10,
        gait_frequency_scale=1.38),
}


def robot_config(robot: str) -> RobotConfig:
    """A robot configuration by name (``ROBOTS``) or from a JSON file of RobotConfig's fields (lists
    for tuples; unknown fields are an error)."""
    if robot in ROBOTS:
        return ROBOTS[robot]
    if not os.path.exists(robot):
        raise ValueError(f"Locomotion: robot {robot!r}: neither a known robot ({', '.join(sorted(ROBOTS))}) nor a "
                         f"configuration file")
    with open(robot) as f:
        d = json.load(f)
    known = {f.name for f in fields(RobotConfig)}
    bad = set(d) - known
    if bad:
        raise ValueError(f"{robot}: unknown field(s) {sorted(bad)} (expected some of {sorted(known)})")
    for k in ("file", "feet"):
        if k not in d:
            raise ValueError(f"{robot}: field {k!r} missing")
    for k in ("file", "collision_file"):  # relative to the configuration file where one is there
        if d.get(k) and not os.path.isabs(d[k]) and os.path.exists(os.path.join(os.path.dirname(robot), d[k])):
            d[k] = os.path.join(os.path.dirname(robot), d[k])

    def tup(x):
        return tuple(tup(y) for y in x) if isinstance(x, list) else x

    return RobotConfig(**{k: tup(v) for k, v in d.items()})
