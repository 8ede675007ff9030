"""Quadruped velocity-command tracking on flat ground (the locomotion study, docs/studies.md;
legged_gym's flat ANYmal C task without its actuator network), as a batched differentiable
environment.

Robot and control: the robot configuration ``robot`` (moreau.tasks.robots, docs/robots.md: the
robot file, its feet, default pose, gains, heights), by default ANYmal C
(assets/robots/anymal_c.json; physics h = 0.005 s, decimation 4: 50 Hz control, dt = 0.02 s; PD
servos kp = 80, kd = 2, torque limit 80 N m, the simulator's position actuators; the base starts
at 0.6 m); joint target = default + ``action_scale`` · action, actions clipped to [-1, 1]. The
numbers below are ANYmal C's.

Observation (48, legged_gym's order and scales, ``obs_scales``)::

    [0:3]   base linear velocity, base frame       · lin_vel (2.0)
    [3:6]   base angular velocity, base frame      · ang_vel (0.25)
    [6:9]   projected gravity (gravity direction in the base frame, (0, 0, -1) upright)
    [9:12]  command (v_x, v_y, ω_z)                · (lin_vel, lin_vel, ang_vel)
    [12:24] joint positions − default              · dof_pos (1.0)
    [24:36] joint velocities                       · dof_vel (0.05)
    [36:48] previous action (the action applied in the last step; 0 after a reset)

clipped to ±``clip_obs``. With a gait clock (``gait_frequency`` > 0) 8 more follow::

    [48:56] sin 2πφ_LF, cos 2πφ_LF, sin 2πφ_RF, cos 2πφ_RF, … (LF, RF, LH, RH)

and with ``measure_heights`` legged_gym's 187 height samples last: clip(z_base − 0.5 − h, −1, 1)
· 5 at 17 × 11 points (x ±0.8 m, y ±0.5 m, 0.1 m apart) of the base's yaw frame.

Rough terrain (``terrain``: moreau.tasks.terrain's TerrainConfig fields; None: flat ground):
each environment stands on a tile of the generated terrain, its own frame's origin the centre
of the tile's platform (the simulator's per-environment ``terrain_x``, ``terrain_y``), reset
above the platform; with ``terrain_curriculum`` its tile's level moves up or down at each
reset as in legged_gym (Terrain.update_levels, from the distance walked from the origin). Base
heights (the base_height term, the failure limit) and foot and knee clearances are measured
from the ground under them.

Gait clock: a phase φ ∈ [0, 1) per environment advancing by ``gait_frequency`` · dt per
control step (times the robot's ``gait_frequency_scale``: 1 for ANYmal C; 0 at reset); foot j's
phase is φ_j = φ + ``gait_offsets``[j] (trot: LF and RH at 0, RF and LH at ½); φ_j ∈ [0, ½) is
foot j's swing half.

Reward (per control step, each term · its weight · dt, legged_gym's flat ANYmal weights by
default; ``reward_weights``): ``tracking_lin_vel`` exp(−|cmd_xy − v_xy|² / σ),
``tracking_ang_vel`` exp(−(cmd_ωz − ω_z)² / σ) (base frame, σ = ``tracking_sigma``),
``lin_vel_z`` v_z², ``ang_vel_xy`` ω_x² + ω_y², ``orientation`` |g_xy|² (projected gravity),
``base_height`` (z − ``base_height_target``)² (weight 0 by default, as in legged_gym's flat
ANYmal: a differentiable stand-in for the fall that ``termination`` penalises without a gradient),
``action_rate`` |a − a_prev|², ``torques`` |τ|² with τ = clip(kp (target − q_j) − kd q̇_j, ±80)
computed from the state before the step (the torque of the step's first physics substep),
``dof_acc`` |(q̇_j' − q̇_j) / dt|², ``dof_pos_limits`` Σ_j max(0, lo_j − q_j') + max(0, q_j' − hi_j)
over the limited joints, [lo_j, hi_j] the middle ``soft_dof_pos_limit`` of each range (legged_gym's
term; weight 0 by default), ``termination`` (1 on a failure, not on a time-out), and
the gait-shaping terms (weight 0 by default; the "trot" task preset of moreau.tasks.presets
sets them), with
foot clearances c_j (sphere bottom above the ground) from moreau.kinematics at the step's end:
``feet_height`` Σ_j (c_j − ``foot_height_apex`` · max(0, sin 2πφ_j))² (swing-foot height
tracking; needs the gait clock), ``foot_slip`` Σ_j [c_j < ``foot_contact_height``] ·
|Δx_j,xy / dt|² (planar foot speed while in contact), ``feet_air_time`` legged_gym's
Σ_j (t_air,j − ``feet_air_time_target``) at each touchdown, only when |cmd_xy| > 0.1,
``feet_separation`` Σ_pairs max(0, ``feet_separation_min`` − (y_L − y_R))² over the pairs
(LF, RF) and (LH, RH), y the feet's lateral position in the base frame (a left foot nearing or
crossing its partner: legs that would hit each other, which moreau simulates with
``self_collisions``: the feet and knees of different legs collide).
All but ``termination`` and ``feet_air_time`` are differentiable w.r.t. the actions and the
state (moreau.torch.step, and the kinematics in torch); those two are counts of events.

Termination: base height below ``base_height_limit`` (the stand-in for base contact: only the feet
have contact geometry), with ``knee_contacts`` a knee touching the ground (legged_gym's forbidden
contacts: a sphere of radius 5 cm at each thigh's knee end, the Menagerie's knee cylinder, simulated
like the feet), with ``body_contacts`` any contact point of the robot file but the feet touching the
ground (every collision shape the file has, the trunk's, thighs' and shanks' of an MJCF or URDF
robot, or of the robot configuration's ``collision_file``, simulated against the ground or terrain;
only the links of the configuration's ``terminate_contacts`` when it names them: legged_gym's
terminate_after_contacts_on, ANYmal C's base), tilt (angle of the base z axis from the vertical)
above ``max_tilt``, a fatal simulator status (NaN, singular mass matrix), or the episode limit
(``episode_length_s``; a time-out). Ended environments are reset inside ``step``: default base pose
at 0.6 m, joints at default · U[0.5, 1.5], base velocity U[−0.5, 0.5] per component (``reset_*``),
previous action 0, new command and new randomised parameters. The reset runs in every step under the
``done`` mask (no host read, moreau.tasks.base), so its random numbers are drawn in every step;
likewise the command resampling's.

Commands: v_x, v_y, ω_z uniform in ``command_ranges``, resampled per environment every
U[``resampling_time``] seconds and at reset; planar commands with |(v_x, v_y)| below
``small_command_threshold`` are set to 0 (legged_gym). Command curriculum (off unless
``curriculum_command`` is set): for the first ``curriculum_warmup_samples`` environment
samples (control steps × num_envs) every command is ``curriculum_command``; then the ranges
grow linearly from ``curriculum_start_scale`` · ``command_ranges`` to the full ranges over
``curriculum_ramp_samples`` (``command_scale()``). With ``curriculum_tracking_threshold`` > 0
the curriculum is gated by tracking (legged_gym grows its ranges when the episodes' tracking
reward exceeds 0.8 of its maximum): past the warm-up, its sample count advances only in steps
where r̄, an exponential average (time constant ``curriculum_window_s``) of the batch mean of
the unweighted ``tracking_lin_vel`` term, is at least the threshold; so the warm-up's fixed
command stays until the policy tracks it, and the ramp pauses where tracking fails. The gated
schedule (r̄, the sample count, ``command_scale()``) is kept in 0-dim float64 tensors on the
device and decided with ``torch.where``, so that a step reads nothing back (moreau.tasks.base);
a new command is then drawn from the ranges in every sampling, and the fixed one is chosen
where the scale is 0. Without the gate the schedule depends on the step count alone and stays
in Python numbers.

Drives: ``joint_damping`` and ``joint_frictionloss`` (when set) replace the model's viscous damping
and friction loss on every leg joint (JSON robot files); ``damping_scale`` (the robot
configuration's unless set) scales the model's damping in the simulator; ``drive_max_velocity``
(when set) gives every actuator a torque–speed line, the torque bound falling from
``torque_limit`` at rest to 0 at that joint speed. ``joint_limits=False`` takes the robot file's
joint position limits out (as moreau simulated the robot before it enforced them).

Randomisation: friction μ ~ U[``friction_range``], added base mass ~ U[``added_mass_range``] and,
when switched on, a friction-loss scale ~ U[``frictionloss_scale_range``] and each actuator's
strength ~ U[``motor_strength_range``], a damping scale ~ ``damping_scale`` ·
U[``damping_scale_range``], an armature scale ~ U[``armature_scale_range``], the smooth contact's
sigmoid scale k ~ U[``smooth_k_range``] (foot compliance while training through smooth contact), the
feet's torsional friction μ_spin ~ U[``spin_friction_range``] (otherwise ``spin_friction``, 0: none)
and their rolling friction μ_roll ~ U[``rolling_friction_range``] (otherwise ``rolling_friction``, 0:
none) per environment, drawn at construction and at each reset, passed to ``moreau.torch.step`` as
per-environment parameters (so that the backward of an earlier step still sees the values of its
forward); with probability ``action_delay_prob`` an environment's actions act one control step late
(its joint targets and the torques term come from the previous action) until its next reset; pushes
add U[−``max_push_vel``, ``max_push_vel``] m/s to the base's planar world velocity of every
environment every ``push_interval_s`` seconds.

The differentiable state is ``q`` (num_envs, 19), ``v`` (num_envs, 18) and ``last_actions``
(num_envs, 12) (moreau.tasks.base). Free-joint convention: v[0:3] world-frame linear velocity,
v[3:6] body-frame angular velocity; quaternion (w, x, y, z).
"""
from __future__ import annotations

import json
import math
import os
import warnings
from dataclasses import dataclass, field, fields, replace
from typing import Any, Dict, List, Optional, Tuple, Union

import torch

import moreau
import moreau.torch as mt
from moreau.kinematics import Kinematics

from .base import DiffEnv, ended_mean
from .robots import RobotConfig, robot_config
from .terrain import Terrain, TerrainConfig

__all__ = ["LocomotionConfig", "Locomotion", "quat_rotate", "quat_rotate_inverse", "REWARD_TERMS", "FOOT_TERMS",
           "config_to_dict", "config_from_dict"]

REWARD_TERMS = ("tracking_lin_vel", "tracking_ang_vel", "lin_vel_z", "ang_vel_xy", "orientation", "base_height",
                "action_rate", "torques", "dof_acc", "dof_pos_limits", "termination", "feet_height", "foot_slip", "feet_air_time",
                "feet_separation")
FOOT_TERMS = ("feet_height", "foot_slip", "feet_air_time", "feet_separation")
# The configuration fields a robot configuration supplies where the task's are None
# (moreau.tasks.robots).
ROBOT_FIELDS = ("kp", "kd", "torque_limit", "action_scale", "damping_scale", "init_base_height", "base_height_target",
                "base_height_limit", "foot_height_apex", "feet_separation_min", "command_ranges")


def _default_weights() -> Dict[str, float]:
    # legged_gym LeggedRobotCfg.rewards.scales with AnymalCFlatCfg's orientation and torques.
    return {"tracking_lin_vel": 1.0, "tracking_ang_vel": 0.5, "lin_vel_z": -2.0, "ang_vel_xy": -0.05,
            "orientation": -5.0, "base_height": 0.0, "action_rate": -0.01, "torques": -2.5e-5, "dof_acc": -2.5e-7,
            "dof_pos_limits": 0.0, "termination": 0.0, "feet_height": 0.0, "foot_slip": 0.0, "feet_air_time": 0.0}


def _default_obs_scales() -> Dict[str, float]:
    return {"lin_vel": 2.0, "ang_vel": 0.25, "dof_pos": 1.0, "dof_vel": 0.05}


HEIGHT_POINTS = 17 * 11  # legged_gym's measured_points_x, measured_points_y (scale: obs_scales
# "height_measurements", 5 unless given)


def _asset_path(file: str) -> str:
    return file if os.path.isabs(file) or os.path.exists(file) else moreau.asset(file)


def _collision_points(robot: RobotConfig, spec: Dict, path: str) -> Dict[str, List[Dict]]:
    """The contact points of ``robot.collision_file`` (its collision shapes as moreau simulates them)
    but those on a foot's link, as JSON sphere contacts per body name. Its bodies must be the JSON
    robot's, with the same frames (to 1e-6)."""
    cpath = _asset_path(robot.collision_file)
    with warnings.catch_warnings():  # its joints, actuators and inertias are not used
        warnings.simplefilter("ignore", moreau.ModelWarning)
        coll = moreau.load(cpath)
    own = moreau.load_model_from_string(json.dumps(spec), source=path)
    if coll.body_name != own.body_name:
        raise ValueError(f"Locomotion: collision_file {cpath}: bodies {coll.body_name} are not {path}'s "
                         f"{own.body_name}")
    for what in ("body_pos", "body_quat"):
        err = max(abs(a - b) for a, b in zip(getattr(coll, what), getattr(own, what)))
        if err > 1e-6:
            raise ValueError(f"Locomotion: collision_file {cpath}: its {what} differ from {path}'s by {err:.3g}")
    points: Dict[str, List[Dict]] = {}
    for k, name in enumerate(coll.con_name):
        if name.split("/")[0] in robot.feet:
            continue
        points.setdefault(coll.body_name[coll.con_body[k]], []).append(
            {"type": "sphere", "name": name, "pos": list(coll.con_pos[3 * k:3 * k + 3]), "radius": coll.con_radius[k]})
    return points


def robot_model(cfg: "LocomotionConfig") -> moreau.Model:
    """The configuration's robot (``cfg.robot``, moreau.tasks.robots) with the config's joint damping
    and friction loss on every leg joint where set, without its joint limits when ``joint_limits``
    is False, its drives' torque–speed line with
    ``drive_max_velocity``, and knee contacts with ``knee_contacts`` (the robot's knee spheres added
    to a JSON robot file); only the feet (and knees) keep their contact points, unless ``body_contacts``
    (then with the robot's ``collision_file``'s shapes where it has one); with ``self_collisions``,
    the contact points of different legs collide with each other (``leg_pairs``)."""
    robot = robot_config(cfg.robot)
    path = _asset_path(robot.file)
    knees = tuple(robot.knees)
    edits = cfg.joint_damping is not None or cfg.joint_frictionloss is not None or cfg.drive_max_velocity is not None \
        or (cfg.knee_contacts and robot.knee_sphere is not None) or (cfg.body_contacts and robot.collision_file) \
        or not cfg.joint_limits
    if not edits:
        model = moreau.load(path)
    elif not path.endswith(".json"):
        raise ValueError(f"Locomotion: joint_damping, joint_frictionloss, drive_max_velocity, joint_limits, knee "
                         f"spheres and a collision_file edit a moreau JSON robot file; {path} is not one")
    else:
        with open(path) as f:
            spec = json.load(f)
        if cfg.body_contacts and robot.collision_file:
            for body_name, extra in _collision_points(robot, spec, path).items():
                body = next(b for b in spec["bodies"] if b["name"] == body_name)
                body.setdefault("contacts", []).extend(extra)
        limits = _per_actuator(cfg.torque_limit, len(spec["actuators"]))
        if cfg.drive_max_velocity is not None:
            for actuator, limit in zip(spec["actuators"], limits):
                actuator["velocity_limit"] = {"peak_force": limit, "max_velocity": cfg.drive_max_velocity}
        knee_names = []
        for body in spec["bodies"]:
            if cfg.knee_contacts and robot.knee_sphere and body["name"].endswith(robot.knee_sphere[0]):
                name = f"{body['name'][:-len(robot.knee_sphere[0])]}_KNEE"
                body.setdefault("contacts", []).append({"type": "sphere", "name": name,
                                                        "pos": list(robot.knee_sphere[1]),
                                                        "radius": robot.knee_sphere[2]})
                knee_names.append(name)
            joint = body.get("joint", {})
            if joint.get("type") == "revolute":
                if cfg.joint_damping is not None:
                    joint["damping"] = cfg.joint_damping
                if cfg.joint_frictionloss is not None:
                    joint["frictionloss"] = cfg.joint_frictionloss
            if not cfg.joint_limits:
                joint.pop("limited", None)
                joint.pop("range", None)
        knees += tuple(knee_names)
        model = moreau.load_model_from_string(json.dumps(spec), source=path)
    keep = set(robot.feet) | (set(knees) if cfg.knee_contacts else set())
    if cfg.body_contacts:
        keep |= set(model.con_name)
    missing = keep - set(model.con_name)
    if missing:
        raise ValueError(f"Locomotion: robot {cfg.robot!r}: no contact point(s) {sorted(missing)} in {path} "
                         f"(it has {len(model.con_name)}: {', '.join(model.con_name[:12])}...)")
    if set(model.con_name) != keep:  # the model's order kept
        model = moreau.select_contacts(model, [n for n in model.con_name if n in keep])
    if cfg.self_collisions:
        model = moreau.with_self_collisions(model, leg_pairs(model))
    return model


def leg_pairs(model: moreau.Model) -> List[Tuple[str, str]]:
    """The pairs of bodies with contact points on different legs (subtrees of the root's children):
    what the task's ``self_collisions`` makes collide."""
    def leg(b):
        while model.body_parent[b] > 0:
            b = model.body_parent[b]
        return b if model.body_parent[b] == 0 else None
    bodies = sorted({b for b in model.con_body if leg(b) is not None})
    return [(model.body_name[a], model.body_name[b]) for i, a in enumerate(bodies) for b in bodies[i + 1:]
            if leg(a) != leg(b)]


def _per_actuator(limit, nu: int):
    """A torque limit (one value or one per actuator) as a list of nu values."""
    limits = list(limit) if isinstance(limit, (list, tuple)) else [limit] * nu
    if len(limits) != nu:
        raise ValueError(f"Locomotion: torque_limit: expected 1 or {nu} values (one per actuator), got {len(limits)}")
    return limits


def resolve_robot(cfg: "LocomotionConfig") -> "LocomotionConfig":
    """``cfg`` with the robot configuration's values in the fields left None (ROBOT_FIELDS)."""
    robot = robot_config(cfg.robot)
    return replace(cfg, **{k: getattr(robot, k) for k in ROBOT_FIELDS if getattr(cfg, k) is None})


@dataclass
class LocomotionConfig:
    robot: str = "anymal_c"                     # a name of moreau.tasks.robots.ROBOTS or a configuration file
    num_envs: int = 64
    contact: str = "hard"                       # hard, soft, smooth, hard_smooth_grad (or a ContactOptions)
    device: str = "cpu"
    dtype: torch.dtype = torch.float32
    seed: int = 0
    n_threads: int = 0                          # simulator CPU threads (0 = all)
    episode_length_s: float = 20.0
    # commands (v_x [m/s], v_y [m/s], ω_z [rad/s])
    command_ranges: Optional[Tuple[Tuple[float, float], ...]] = None  # None: the robot's
    resampling_time: Tuple[float, float] = (10.0, 15.0)
    small_command_threshold: float = 0.2
    # control
    action_scale: Optional[float] = None        # None (here and below): the robot configuration's
    clip_actions: float = 1.0
    kp: Optional[float] = None
    kd: Optional[float] = None
    torque_limit: Optional[Union[float, Tuple[float, ...]]] = None  # one value or one per actuator
    joint_damping: Optional[float] = None       # [N m s/rad] on every leg joint; None: the model's
    damping_scale: Optional[float] = None       # the model's joint damping simulated times this
    joint_frictionloss: Optional[float] = None  # [N m] on every leg joint; None: the model's
    drive_max_velocity: Optional[float] = None  # [rad/s] torque–speed line's zero-torque speed; None: none
    joint_limits: bool = True                   # False: the robot file's joint limits taken out
    # rewards
    reward_weights: Dict[str, float] = field(default_factory=_default_weights)
    tracking_sigma: float = 0.25
    soft_dof_pos_limit: float = 0.9             # dof_pos_limits acts outside this middle fraction of each range
    base_height_target: Optional[float] = None  # [m], for the base_height term
    scale_rewards_by_dt: bool = True
    only_positive_rewards: bool = False         # legged_gym clips the total at 0 (kills gradients there)
    # observations
    obs_scales: Dict[str, float] = field(default_factory=_default_obs_scales)
    clip_obs: float = 100.0
    # gait shaping (a clock and foot terms; see the module docstring)
    gait_frequency: float = 0.0                 # [Hz]; 0 = no clock and no phase observation
    gait_offsets: Tuple[float, ...] = (0.0, 0.5, 0.5, 0.0)  # LF, RF, LH, RH, fractions of a period (trot)
    foot_height_apex: Optional[float] = None    # [m] swing apex of the feet_height target
    foot_contact_height: float = 0.01           # [m] clearance below which a foot counts as in contact
    feet_air_time_target: float = 0.5           # [s]
    feet_separation_min: Optional[float] = None  # [m] lateral left–right foot distance below which feet_separation acts
    # command curriculum (off while curriculum_command is None)
    curriculum_command: Optional[Tuple[float, float, float]] = None
    curriculum_warmup_samples: float = 0.0
    curriculum_start_scale: float = 0.25
    curriculum_ramp_samples: float = 0.0
    curriculum_tracking_threshold: float = 0.0  # 0: the schedule runs on samples alone
    curriculum_window_s: float = 2.0            # [s] time constant of the tracking average r̄
    # termination
    base_height_limit: Optional[float] = None
    knee_contacts: bool = False                 # knee spheres on the thighs; a knee on the ground is a failure
    body_contacts: bool = False                 # every contact point of the robot file; any but a foot's touching is a failure
    self_collisions: bool = False               # the contact points of different legs collide with each other
    max_tilt: float = 1.0                       # rad
    # rough terrain (moreau.tasks.terrain; None: flat ground): TerrainConfig's fields
    terrain: Optional[Dict] = None
    terrain_curriculum: bool = True             # legged_gym's level curriculum
    measure_heights: bool = False               # 17 x 11 ground heights around the base in the observation
    # resets
    init_base_height: Optional[float] = None
    reset_dof_scale_range: Tuple[float, float] = (0.5, 1.5)
    reset_base_vel: float = 0.5
    # randomisation
    randomize_friction: bool = True
    friction_range: Tuple[float, float] = (0.5, 1.25)
    randomize_base_mass: bool = True
    added_mass_range: Tuple[float, float] = (-5.0, 5.0)
    randomize_frictionloss: bool = False
    frictionloss_scale_range: Tuple[float, float] = (0.0, 2.0)
    randomize_damping: bool = False
    damping_scale_range: Tuple[float, float] = (0.5, 1.5)  # times damping_scale
    randomize_armature: bool = False
    armature_scale_range: Tuple[float, float] = (0.5, 1.5)
    randomize_motor_strength: bool = False
    motor_strength_range: Tuple[float, float] = (0.9, 1.1)
    randomize_smooth_k: bool = False
    smooth_k_range: Tuple[float, float] = (100.0, 1000.0)  # [1/m]
    spin_friction: float = 0.0  # [m] torsional friction at the feet, |τ_n| ≤ μ_spin f_n
    randomize_spin_friction: bool = False
    spin_friction_range: Tuple[float, float] = (0.0, 0.04)  # [m]
    rolling_friction: float = 0.0  # [m] rolling friction at the feet, |τ_t| ≤ μ_roll f_n about each tangent
    randomize_rolling_friction: bool = False
    rolling_friction_range: Tuple[float, float] = (0.0, 0.02)  # [m]
    action_delay_prob: float = 0.0
    push_robots: bool = True
    push_interval_s: float = 15.0
    max_push_vel: float = 0.5


def config_to_dict(cfg: "LocomotionConfig") -> Dict:
    """A JSON-able dict of ``cfg`` (checkpoints carry it; ``config_from_dict`` inverts it)."""
    d = {}
    for f in fields(cfg):
        val = getattr(cfg, f.name)
        if f.name == "dtype":
            val = str(val).replace("torch.", "")
        elif f.name == "contact" and not isinstance(val, str):
            val = moreau.contact_mode_name(val.mode)
        elif isinstance(val, tuple):
            val = [list(x) if isinstance(x, tuple) else x for x in val]
        d[f.name] = val
    return d


def config_from_dict(d: Dict) -> "LocomotionConfig":
    """The LocomotionConfig of ``config_to_dict``'s output (unknown keys are an error)."""
    known = {f.name: f for f in fields(LocomotionConfig)}
    bad = set(d) - set(known)
    if bad:
        raise ValueError(f"Locomotion config: unknown field(s) {sorted(bad)}")
    kw = {}
    if "robot" in d and "damping_scale" not in d:  # saved before the field existed: the model's damping
        kw["damping_scale"] = 1.0
    for k, val in d.items():
        if k == "dtype":
            val = getattr(torch, val)
        elif isinstance(val, list):
            val = tuple(tuple(x) if isinstance(x, list) else x for x in val)
        kw[k] = val
    return LocomotionConfig(**kw)


def quat_rotate_inverse(quat: torch.Tensor, vec: torch.Tensor) -> torch.Tensor:
    """R(quat)ᵀ vec for quaternions (w, x, y, z) (..., 4) and vectors (..., 3): a world vector in
    the body frame."""
    w = quat[..., 0:1]
    u = quat[..., 1:4]
    return vec * (2.0 * w * w - 1.0) - 2.0 * w * torch.cross(u, vec, dim=-1) + 2.0 * u * (u * vec).sum(-1, keepdim=True)


def quat_rotate(quat: torch.Tensor, vec: torch.Tensor) -> torch.Tensor:
    """R(quat) vec: a body vector in the world frame."""
    w = quat[..., 0:1]
    u = quat[..., 1:4]
    return vec * (2.0 * w * w - 1.0) + 2.0 * w * torch.cross(u, vec, dim=-1) + 2.0 * u * (u * vec).sum(-1, keepdim=True)


class Locomotion(DiffEnv):
    """Quadruped velocity tracking (see the module docstring). ``Locomotion(cfg)`` or
    ``Locomotion(num_envs=..., contact=..., ...)`` (keyword overrides of LocomotionConfig)."""

    def __init__(self, cfg: Optional[LocomotionConfig] = None, **overrides):
        cfg = cfg or LocomotionConfig()
        known = {f.name for f in fields(LocomotionConfig)}
        bad = set(overrides) - known
        if bad:
            raise TypeError(f"Locomotion: unknown option(s) {sorted(bad)}")
        if "reward_weights" in overrides:  # a partial dict overrides the defaults' entries
            w = dict(cfg.reward_weights)
            w.update(overrides["reward_weights"])
            unknown = set(w) - set(REWARD_TERMS)
            if unknown:
                raise ValueError(f"Locomotion: unknown reward term(s) {sorted(unknown)} (have {REWARD_TERMS})")
            overrides["reward_weights"] = w
        self.cfg = cfg = resolve_robot(replace(cfg, **overrides))
        self.robot = robot_config(cfg.robot)

        model = robot_model(cfg)
        self.terrain = None
        if cfg.terrain is not None:
            self.terrain = Terrain(TerrainConfig(**{k: tuple(v) if isinstance(v, list) else v
                                                    for k, v in cfg.terrain.items()}))
            model = self.terrain.model(model)
        # rolling friction's rows need a simulator with room for them (condim 6)
        self.rolling = cfg.rolling_friction > 0 or cfg.randomize_rolling_friction
        self.sim = moreau.Simulator(model, n_env=cfg.num_envs, device=cfg.device,
                                    dtype=cfg.dtype, contact=cfg.contact, n_threads=cfg.n_threads,
                                    timestep=self.robot.timestep or 0.0, decimation=self.robot.decimation or 0,
                                    condim=6 if self.rolling else None)
        sim = self.sim
        self.device = sim.device
        self.dtype = sim.dtype
        self.num_envs = sim.n_env
        self.num_actions = sim.nu
        self.num_obs = 48 + (8 if cfg.gait_frequency > 0 else 0) + (HEIGHT_POINTS if cfg.measure_heights else 0)
        self.dt = sim.model.timestep * sim.model.decimation
        self.max_episode_length = int(math.ceil(cfg.episode_length_s / self.dt))
        self.push_interval = max(1, int(round(cfg.push_interval_s / self.dt)))

        tk = dict(dtype=self.dtype, device=self.device)
        m = sim.model
        self.q0 = torch.tensor(m.qpos0, **tk)
        self.q0[2] = cfg.init_base_height
        for joint, angle in self.robot.default_joint_pos.items():
            if joint not in m.jnt_name:
                raise ValueError(f"Locomotion: robot {cfg.robot!r}: default_joint_pos: no joint {joint!r} in the model")
            self.q0[m.jnt_qposadr[m.jnt_name.index(joint)]] = angle
        self.default_dof_pos = self.q0[torch.tensor(m.actuator_qposadr, device=self.device)].clone()
        sim.set_param("kp", [cfg.kp] * self.num_actions)
        sim.set_param("kd", [cfg.kd] * self.num_actions)
        self.gravity_dir = torch.tensor([0.0, 0.0, -1.0], **tk)
        s = cfg.obs_scales
        self.commands_scale = torch.tensor([s["lin_vel"], s["lin_vel"], s["ang_vel"]], **tk)
        self.reward_weights = dict(cfg.reward_weights)
        if self.reward_weights.get("feet_height", 0.0) and cfg.gait_frequency <= 0:
            raise ValueError("Locomotion: reward term 'feet_height' needs the gait clock (gait_frequency > 0)")
        if len(cfg.gait_offsets) != len(self.robot.feet):
            raise ValueError(f"Locomotion: gait_offsets: expected {len(self.robot.feet)} values (LF, RF, LH, RH), "
                             f"got {len(cfg.gait_offsets)}")
        self.feet = torch.tensor([m.con_name.index(f) for f in self.robot.feet], device=self.device)
        feet, ends = set(self.robot.feet), self.robot.terminate_contacts
        # the points whose touching the ground is a failure: knees, and the file's collision shapes of
        # the links in terminate_contacts (all of them when None)
        self.knees = torch.tensor([k for k, name in enumerate(m.con_name) if name not in feet and
                                   ("/" not in name or ends is None or name.split("/")[0] in ends)],
                                  dtype=torch.long, device=self.device)
        self.torque_limit = torch.tensor(_per_actuator(cfg.torque_limit, self.num_actions), **tk)
        # dof_pos_limits' soft range of each joint coordinate q[:, 7:] (unlimited: ±inf)
        lo, hi = [-math.inf] * (m.nq - 7), [math.inf] * (m.nq - 7)
        for j in range(m.nbody):
            if m.jnt_limited[j] and m.jnt_type[j] in (moreau.JOINT_REVOLUTE, moreau.JOINT_PRISMATIC):
                a, b = m.jnt_range[2 * j], m.jnt_range[2 * j + 1]
                mid, half = (a + b) / 2, (b - a) / 2 * cfg.soft_dof_pos_limit
                lo[m.jnt_qposadr[j] - 7], hi[m.jnt_qposadr[j] - 7] = mid - half, mid + half
        self.soft_dof_pos_lo, self.soft_dof_pos_hi = torch.tensor(lo, **tk), torch.tensor(hi, **tk)
        self.kinematics = Kinematics(m, **tk)
        self.gait_offsets = torch.tensor(cfg.gait_offsets, **tk)
        self.gait_frequency = cfg.gait_frequency * self.robot.gait_frequency_scale  # [Hz] (robots.py)
        self.use_feet = any(self.reward_weights.get(k, 0.0) for k in FOOT_TERMS)

        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(cfg.seed)

        n = self.num_envs
        self.episode_length_buf = torch.zeros(n, dtype=torch.long, device=self.device)
        self.command_time_left = torch.zeros(n, dtype=torch.long, device=self.device)
        self.common_step_counter = 0
        # the gated curriculum's schedule reads r̄ (device data): it stays on the device
        self.gated_curriculum = cfg.curriculum_command is not None and cfg.curriculum_tracking_threshold > 0
        self.curriculum_samples = self._schedule_value(0.0)   # samples the command curriculum has counted
        self.curriculum_tracking = self._schedule_value(0.0)  # r̄ (module docstring)
        self.fixed_command = (None if cfg.curriculum_command is None else
                              torch.tensor(cfg.curriculum_command, **tk).expand(n, 3))
        self.commands = torch.zeros(n, 3, **tk)
        self.friction = torch.ones(n, **tk)
        self.added_base_mass = torch.zeros(n, **tk)
        self.frictionloss_scale = torch.ones(n, **tk)
        self.damping_scale = torch.full((n,), cfg.damping_scale, **tk)
        self.armature_scale = torch.ones(n, **tk)
        self.motor_strength = torch.ones(n, self.num_actions, **tk)
        self.smooth_k = torch.full((n,), 300.0, **tk)
        self.spin_friction = torch.full((n,), cfg.spin_friction, **tk)
        self.rolling_friction = torch.full((n,), cfg.rolling_friction, **tk)
        self.action_delay = torch.zeros(n, dtype=torch.bool, device=self.device)
        # the episode sums of the weighted reward terms (weight · dt each), one row per term
        self.episode_terms = [k for k in REWARD_TERMS if self.reward_weights.get(k, 0.0)]
        scale = self.dt if cfg.scale_rewards_by_dt else 1.0
        self._episode_weights = torch.tensor([self.reward_weights[k] * scale for k in self.episode_terms], **tk)[:, None]
        self._episode_sums = torch.zeros(len(self.episode_terms), n, **tk)
        self.q = self.q0.repeat(n, 1)
        self.v = torch.zeros(n, sim.nv, **tk)
        self.last_actions = torch.zeros(n, self.num_actions, **tk)
        self.gait_phase = torch.zeros(n, **tk)
        self.feet_air_time = torch.zeros(n, len(self.robot.feet), **tk)
        self.obs = torch.zeros(n, self.num_obs, **tk)
        # each environment's tile (its origin in the terrain's frame: x, y, ground height)
        self.origin = torch.zeros(n, 3, **tk)
        if self.terrain is not None:
            self.levels, self.cols = self.terrain.initial_levels(n, self.generator)
            self.origin = self.terrain.origins(self.levels, self.cols).to(**tk)
        gx, gy = torch.meshgrid(torch.linspace(-0.8, 0.8, 17, **tk), torch.linspace(-0.5, 0.5, 11, **tk), indexing="ij")
        self.height_points = torch.stack([gx.reshape(-1), gy.reshape(-1)], 1)  # base yaw frame (legged_gym's)
        self.reset()

    # ---- randomness --------------------------------------------------------------------
    def seed(self, seed: int) -> None:
        self.generator.manual_seed(int(seed))

    def _uniform(self, lo: float, hi: float, *shape) -> torch.Tensor:
        r = torch.rand(*shape, generator=self.generator, dtype=self.dtype, device=self.device)
        return lo + (hi - lo) * r

    def _schedule_value(self, x: float):
        """A curriculum schedule number: a 0-dim float64 tensor on the device with the gate, else a float."""
        if self.gated_curriculum:
            return torch.tensor(float(x), dtype=torch.float64, device=self.device)
        return float(x)

    def command_scale(self):
        """The command curriculum's fraction of ``command_ranges`` now (1 without a curriculum; 0
        during its fixed-command warm-up): a float, or with the tracking gate a 0-dim tensor."""
        c = self.cfg
        if c.curriculum_command is None:
            return 1.0
        done = self.curriculum_samples - c.curriculum_warmup_samples
        if self.gated_curriculum:  # on the device: 0 until past the warm-up, then the ramp
            ramp = (done / c.curriculum_ramp_samples).clamp(max=1.0) if c.curriculum_ramp_samples > 0 else 1.0
            scale = c.curriculum_start_scale + (1.0 - c.curriculum_start_scale) * ramp
            return torch.where(done <= 0, torch.zeros_like(done), scale)
        if done < 0:
            return 0.0
        ramp = min(1.0, done / c.curriculum_ramp_samples) if c.curriculum_ramp_samples > 0 else 1.0
        return c.curriculum_start_scale + (1.0 - c.curriculum_start_scale) * ramp

    def _advance_curriculum(self, tracking: torch.Tensor) -> None:
        """Counts this step's samples toward the curriculum (``tracking``: the unweighted
        tracking_lin_vel term of the step, (num_envs,))."""
        c = self.cfg
        if c.curriculum_command is None:
            return
        if not self.gated_curriculum:
            self.curriculum_samples += self.num_envs
            return
        # r̄ <- r̄ + (dt / T) (mean r − r̄); the samples count where r̄ passes the gate (or in the warm-up)
        r = self.curriculum_tracking
        r = r + (self.dt / c.curriculum_window_s) * (tracking.mean().to(torch.float64) - r)
        gate = (self.curriculum_samples < c.curriculum_warmup_samples) | (r >= c.curriculum_tracking_threshold)
        self.curriculum_tracking = r
        self.curriculum_samples = self.curriculum_samples + gate.to(torch.float64) * self.num_envs

    def curriculum_stats(self) -> Dict[str, Any]:
        """The curricula's state for a training log (no host read): ``command_scale``,
        ``curriculum_tracking`` (r̄) and, on generated terrain, ``terrain_level``, the mean level of
        the environments' tiles (legged_gym's Episode/terrain_level)."""
        stats = {"command_scale": self.command_scale(), "curriculum_tracking": self.curriculum_tracking}
        if self.terrain is not None:
            stats["terrain_level"] = self.levels.to(torch.float64).mean()
        return stats

    def schedule_state(self) -> Dict[str, Any]:
        """What the task's schedules (pushes, command curriculum, terrain curriculum) need to go on
        after a resume (Python numbers and, on generated terrain, each environment's tile as
        ``terrain_levels`` and ``terrain_cols``: host reads)."""
        state = {"common_step_counter": self.common_step_counter, "curriculum_samples": float(self.curriculum_samples),
                 "curriculum_tracking": float(self.curriculum_tracking)}
        if self.terrain is not None:
            state["terrain_levels"] = self.levels.tolist()
            state["terrain_cols"] = self.cols.tolist()
        return state

    def load_schedule_state(self, state: Dict[str, Any]) -> None:
        """Inverse of ``schedule_state`` (a state with only ``common_step_counter``, as older
        checkpoints give, counts every sample toward the curriculum). Saved tiles put every
        environment back on its tile, standing at its start (a new episode); a state without them,
        or saved with another number of environments (a warning), leaves the tiles as they are."""
        self.common_step_counter = int(state["common_step_counter"])
        self.curriculum_samples = self._schedule_value(
            float(state.get("curriculum_samples", self.common_step_counter * self.num_envs)))
        self.curriculum_tracking = self._schedule_value(float(state.get("curriculum_tracking", 0.0)))
        levels, cols = state.get("terrain_levels"), state.get("terrain_cols")
        if self.terrain is None or levels is None:
            return
        if len(levels) != self.num_envs or len(cols) != self.num_envs:
            warnings.warn(f"terrain tiles saved for {len(levels)} environments, not {self.num_envs}: every "
                          f"environment starts on a tile of the initial levels again", stacklevel=2)
            return
        self.levels = torch.as_tensor(levels, dtype=self.levels.dtype, device=self.levels.device)
        self.cols = torch.as_tensor(cols, dtype=self.cols.dtype, device=self.cols.device)
        self.origin = self.terrain.origins(self.levels, self.cols).to(dtype=self.dtype)
        self.reset()

    def _uniform_commands(self, scale) -> torch.Tensor:
        """Commands uniform in ``scale`` · ``command_ranges``, small planar ones set to 0."""
        n = self.num_envs
        cmd = torch.stack([self._uniform(scale * lo, scale * hi, n) for lo, hi in self.cfg.command_ranges], dim=1)
        small = cmd[:, :2].norm(dim=1, keepdim=True) < self.cfg.small_command_threshold
        return torch.cat([torch.where(small, torch.zeros_like(cmd[:, :2]), cmd[:, :2]), cmd[:, 2:]], dim=1)

    def _sample_commands(self, mask: torch.Tensor) -> None:
        n = self.num_envs
        scale = self.command_scale()
        if isinstance(scale, torch.Tensor):  # the gated curriculum: the fixed command where the scale is 0
            cmd = torch.where(scale == 0, self.fixed_command, self._uniform_commands(scale))
        elif scale == 0.0:
            cmd = self.fixed_command
        else:
            cmd = self._uniform_commands(scale)
        self.commands = torch.where(mask[:, None], cmd, self.commands)
        lo, hi = self.cfg.resampling_time
        steps = torch.round(self._uniform(lo, hi, n) / self.dt).long().clamp_min(1)
        self.command_time_left = torch.where(mask, steps, self.command_time_left)

    def _sample_params(self, mask: torch.Tensor) -> None:
        n, c = self.num_envs, self.cfg
        if c.randomize_friction:
            self.friction = torch.where(mask, self._uniform(*c.friction_range, n), self.friction)
        if c.randomize_base_mass:
            self.added_base_mass = torch.where(mask, self._uniform(*c.added_mass_range, n), self.added_base_mass)
        if c.randomize_frictionloss:
            self.frictionloss_scale = torch.where(mask, self._uniform(*c.frictionloss_scale_range, n),
                                                  self.frictionloss_scale)
        if c.randomize_damping:
            self.damping_scale = torch.where(mask, c.damping_scale * self._uniform(*c.damping_scale_range, n),
                                             self.damping_scale)
        if c.randomize_armature:
            self.armature_scale = torch.where(mask, self._uniform(*c.armature_scale_range, n), self.armature_scale)
        if c.randomize_motor_strength:
            self.motor_strength = torch.where(mask[:, None], self._uniform(*c.motor_strength_range, n, self.num_actions),
                                              self.motor_strength)
        if c.randomize_smooth_k:
            self.smooth_k = torch.where(mask, self._uniform(*c.smooth_k_range, n), self.smooth_k)
        if c.randomize_spin_friction:
            self.spin_friction = torch.where(mask, self._uniform(*c.spin_friction_range, n), self.spin_friction)
        if c.randomize_rolling_friction:
            self.rolling_friction = torch.where(mask, self._uniform(*c.rolling_friction_range, n),
                                                self.rolling_friction)
        if c.action_delay_prob > 0:
            self.action_delay = torch.where(mask, self._uniform(0.0, 1.0, n) < c.action_delay_prob, self.action_delay)

    def _reset_state(self, mask: torch.Tensor, q: torch.Tensor, v: torch.Tensor, last_actions: torch.Tensor):
        """q, v, last_actions with the environments in ``mask`` reset (out of place: the other
        environments keep their gradients)."""
        n, c = self.num_envs, self.cfg
        q_new = self.q0.repeat(n, 1)
        q_new[:, 2] += self.origin[:, 2]  # above the tile's platform
        q_new[:, 7:] = self.default_dof_pos * self._uniform(*c.reset_dof_scale_range, n, self.num_actions)
        v_new = torch.zeros_like(v)
        v_new[:, :6] = self._uniform(-c.reset_base_vel, c.reset_base_vel, n, 6)
        m = mask[:, None]
        return (torch.where(m, q_new, q), torch.where(m, v_new, v),
                torch.where(m, torch.zeros_like(last_actions), last_actions))

    def reset_envs(self, mask: torch.Tensor, curriculum: bool = True) -> None:
        """Resets the environments in the bool mask (num_envs,) (state, previous action, episode
        length, command, randomised parameters); does not recompute the observation. With
        ``curriculum``, the terrain curriculum first moves each one's tile by the episode that
        ends (``reset``, which starts episodes without ending any, does not)."""
        mask = mask.to(self.device)
        if self.terrain is not None and self.cfg.terrain_curriculum and curriculum and self.common_step_counter > 0:
            walked = self.q[:, :2].detach().norm(dim=1)  # from the environment's origin
            commanded = self.commands[:, :2].norm(dim=1) * self.cfg.episode_length_s
            levels = self.terrain.update_levels(self.levels, self.cols, walked, commanded, self.generator)
            self.levels = torch.where(mask, levels, self.levels)
            self.origin = self.terrain.origins(self.levels, self.cols).to(dtype=self.dtype)
        self.q, self.v, self.last_actions = self._reset_state(mask, self.q, self.v, self.last_actions)
        self.episode_length_buf = torch.where(mask, torch.zeros_like(self.episode_length_buf), self.episode_length_buf)
        self.gait_phase = torch.where(mask, torch.zeros_like(self.gait_phase), self.gait_phase)
        self.feet_air_time = torch.where(mask[:, None], torch.zeros_like(self.feet_air_time), self.feet_air_time)
        self._sample_commands(mask)
        self._sample_params(mask)
        self._episode_sums = torch.where(mask, torch.zeros_like(self._episode_sums), self._episode_sums)

    @property
    def episode_sums(self) -> Dict[str, torch.Tensor]:
        """Each weighted reward term's sum (weight · dt · term) over the current episode, (num_envs,)."""
        return dict(zip(self.episode_terms, self._episode_sums))

    def reset(self) -> torch.Tensor:
        self.reset_envs(torch.ones(self.num_envs, dtype=torch.bool, device=self.device), curriculum=False)
        self.obs = self.observe()
        return self.obs

    def observe(self) -> torch.Tensor:
        """The observation of the current state, command, previous action and gait phase."""
        return self.compute_observations(self.q, self.v, self.commands, self.last_actions, self.gait_phase)

    def detach(self) -> None:
        self.q = self.q.detach()
        self.v = self.v.detach()
        self.last_actions = self.last_actions.detach()
        self.obs = self.obs.detach()

    def get_observations(self) -> torch.Tensor:
        return self.obs

    def set_state(self, q: torch.Tensor, v: torch.Tensor) -> None:
        """Sets the differentiable state (num_envs, 19), (num_envs, 18) (e.g. for tests) and recomputes
        the observation."""
        self.q = torch.as_tensor(q, dtype=self.dtype, device=self.device).clone()
        self.v = torch.as_tensor(v, dtype=self.dtype, device=self.device).clone()
        self.obs = self.observe()

    # ---- pieces (pure functions of their arguments; tested on hand-built states) ---------
    def base_quantities(self, q: torch.Tensor, v: torch.Tensor):
        """(base linear velocity, base angular velocity, projected gravity), base frame."""
        quat = q[:, 3:7]
        lin = quat_rotate_inverse(quat, v[:, 0:3])
        ang = v[:, 3:6]
        grav = quat_rotate_inverse(quat, self.gravity_dir.expand(q.shape[0], 3))
        return lin, ang, grav

    def foot_phases(self, phase: torch.Tensor) -> torch.Tensor:
        """Each foot's phase φ_j = φ + offset_j mod 1, (num_envs, 4) (LF, RF, LH, RH)."""
        return torch.remainder(phase[:, None] + self.gait_offsets, 1.0)

    def foot_clearance(self, q: torch.Tensor) -> torch.Tensor:
        """Height of each foot sphere's bottom above the ground, (num_envs, 4), differentiable in q."""
        return self.clearance(self.kinematics.contact_positions(q)[:, self.feet], self.kinematics.con_radius[self.feet])

    def ground(self, x: torch.Tensor, y: torch.Tensor, normal: bool = False):
        """The ground's height (and with ``normal`` its unit normal) under (x, y) of each environment's
        own frame, (num_envs, k): 0 on flat ground, else the terrain seen from the environment's origin."""
        if self.terrain is None:
            zero = torch.zeros_like(x)
            return (zero, torch.stack([zero, zero, zero + 1], -1)) if normal else zero
        return self.terrain.height(x + self.origin[:, 0:1], y + self.origin[:, 1:2], normal=normal)

    def clearance(self, x: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        """Gaps of spheres of radii r centred at x (num_envs, k, 3) to the ground: (z − h) n_z − r as
        the simulator's (z − r on flat ground)."""
        if self.terrain is None:
            return x[..., 2] - r
        h, n = self.ground(x[..., 0], x[..., 1], normal=True)
        return (x[..., 2] - h) * n[..., 2] - r

    def base_height(self, q: torch.Tensor) -> torch.Tensor:
        """The base's height above the ground under it, (num_envs,)."""
        if self.terrain is None:
            return q[:, 2]
        return q[:, 2] - self.ground(q[:, 0:1], q[:, 1:2])[:, 0]

    def measured_heights(self, q: torch.Tensor) -> torch.Tensor:
        """legged_gym's height samples: the ground at 17 x 11 points (±0.8 m, ±0.5 m) of the base's
        yaw frame, as clip(z_base − 0.5 − h, −1, 1), (num_envs, 187)."""
        w, x, y, z = q[:, 3], q[:, 4], q[:, 5], q[:, 6]
        yaw = torch.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
        c, s = torch.cos(yaw)[:, None], torch.sin(yaw)[:, None]
        px, py = self.height_points[:, 0], self.height_points[:, 1]
        h = self.ground(q[:, 0:1] + c * px - s * py, q[:, 1:2] + s * px + c * py)
        return (q[:, 2:3] - 0.5 - h).clamp(-1.0, 1.0)

    def compute_observations(self, q, v, commands, last_actions, phase=None) -> torch.Tensor:
        s = self.cfg.obs_scales
        lin, ang, grav = self.base_quantities(q, v)
        parts = [lin * s["lin_vel"], ang * s["ang_vel"], grav, commands * self.commands_scale,
                 (q[:, 7:] - self.default_dof_pos) * s["dof_pos"], v[:, 6:] * s["dof_vel"], last_actions]
        if self.cfg.gait_frequency > 0:
            arg = 2.0 * math.pi * self.foot_phases(phase)
            parts.append(torch.stack([torch.sin(arg), torch.cos(arg)], dim=2).reshape(q.shape[0], 8))
        if self.cfg.measure_heights:
            parts.append(self.measured_heights(q) * s.get("height_measurements", 5.0))
        obs = torch.cat(parts, dim=1)
        c = self.cfg.clip_obs
        return obs.clamp(-c, c) if c else obs

    def targets(self, actions: torch.Tensor) -> torch.Tensor:
        """Joint position targets for (clipped) actions."""
        return self.default_dof_pos + self.cfg.action_scale * actions

    def torques(self, q, v, actions) -> torch.Tensor:
        """PD torques clip(kp (target − q_j) − kd q̇_j, ±limit) for state (q, v)."""
        c = self.cfg
        tau = c.kp * (self.targets(actions) - q[:, 7:]) - c.kd * v[:, 6:]
        return tau.clamp(-self.torque_limit, self.torque_limit)

    def reward_terms(self, q, v, q_next, v_next, actions, last_actions, commands, failed, phase=None,
                     touchdown_air_time=None, applied=None) -> Dict[str, torch.Tensor]:
        """Unweighted reward terms (num_envs,) of the step (q, v) --actions--> (q_next, v_next);
        ``phase`` (num_envs,): the gait phase at the step's end; ``touchdown_air_time`` (num_envs,
        4): each foot's air time where it touches down in this step, else 0; ``applied``: the
        actions the joints received (a delayed environment's previous ones; default ``actions``).
        The foot terms are computed when one of them has a weight."""
        lin, ang, grav = self.base_quantities(q_next, v_next)
        sig = self.cfg.tracking_sigma
        terms = {
            "tracking_lin_vel": torch.exp(-((commands[:, :2] - lin[:, :2]) ** 2).sum(1) / sig),
            "tracking_ang_vel": torch.exp(-(commands[:, 2] - ang[:, 2]) ** 2 / sig),
            "lin_vel_z": lin[:, 2] ** 2,
            "ang_vel_xy": (ang[:, :2] ** 2).sum(1),
            "orientation": (grav[:, :2] ** 2).sum(1),
            "base_height": (self.base_height(q_next) - self.cfg.base_height_target) ** 2,
            "action_rate": ((actions - last_actions) ** 2).sum(1),
            "torques": (self.torques(q, v, actions if applied is None else applied) ** 2).sum(1),
            "dof_acc": (((v_next[:, 6:] - v[:, 6:]) / self.dt) ** 2).sum(1),
            "dof_pos_limits": ((self.soft_dof_pos_lo - q_next[:, 7:]).clamp_min(0.0) +
                               (q_next[:, 7:] - self.soft_dof_pos_hi).clamp_min(0.0)).sum(1),
            "termination": failed.to(self.dtype),
        }
        if self.use_feet:
            terms.update(self.foot_terms(q, q_next, commands, phase, touchdown_air_time))
        return terms

    def foot_terms(self, q, q_next, commands, phase, touchdown_air_time) -> Dict[str, torch.Tensor]:
        """feet_height, foot_slip and feet_air_time (module docstring) of the step q -> q_next."""
        c, w = self.cfg, self.reward_weights
        r = self.kinematics.con_radius[self.feet]
        if w.get("foot_slip", 0.0):  # both ends of the step in one batched call
            x0, x1 = self.kinematics.contact_positions(torch.cat([q, q_next]))[:, self.feet].chunk(2)
        else:
            x1 = self.kinematics.contact_positions(q_next)[:, self.feet]
        clear = self.clearance(x1, r)
        zero = torch.zeros(q.shape[0], dtype=q.dtype, device=q.device)
        out = {"feet_height": zero, "foot_slip": zero, "feet_air_time": zero, "feet_separation": zero}
        if w.get("feet_separation", 0.0):  # lateral positions in the base frame; feet LF, RF, LH, RH
            rel = x1 - q_next[:, None, 0:3]
            y = quat_rotate_inverse(q_next[:, None, 3:7].expand(-1, len(self.robot.feet), 4), rel)[..., 1]
            gap = torch.stack([y[:, 0] - y[:, 1], y[:, 2] - y[:, 3]], 1)
            out["feet_separation"] = ((c.feet_separation_min - gap).clamp_min(0.0) ** 2).sum(1)
        if w.get("feet_height", 0.0):
            target = c.foot_height_apex * torch.sin(2.0 * math.pi * self.foot_phases(phase)).clamp_min(0.0)
            out["feet_height"] = ((clear - target) ** 2).sum(1)
        if w.get("foot_slip", 0.0):
            stance = (clear.detach() < c.foot_contact_height).to(q.dtype)
            out["foot_slip"] = (stance * (((x1[..., :2] - x0[..., :2]) / self.dt) ** 2).sum(2)).sum(1)
        if w.get("feet_air_time", 0.0) and touchdown_air_time is not None:
            moving = (commands[:, :2].norm(dim=1) > 0.1).to(q.dtype)
            landed = (touchdown_air_time > 0).to(q.dtype)
            out["feet_air_time"] = ((touchdown_air_time - c.feet_air_time_target) * landed).sum(1) * moving
        return out

    def combine_rewards(self, terms: Dict[str, torch.Tensor]) -> torch.Tensor:
        scale = self.dt if self.cfg.scale_rewards_by_dt else 1.0
        total = 0.0
        for k, t in terms.items():
            w = self.reward_weights.get(k, 0.0)
            if w:
                total = total + (w * scale) * t
        if not isinstance(total, torch.Tensor):
            total = torch.zeros(self.num_envs, dtype=self.dtype, device=self.device)
        if self.cfg.only_positive_rewards:
            total = total.clamp_min(0.0)
        return total

    def check_termination(self, q, v, status=None):
        """(failed, time_out) bool (num_envs,) for the state after the step (episode_length_buf
        already counts it)."""
        _, _, grav = self.base_quantities(q, v)
        tilt = torch.acos((-grav[:, 2]).clamp(-1.0, 1.0))
        failed = (self.base_height(q) < self.cfg.base_height_limit) | (tilt > self.cfg.max_tilt)
        if len(self.knees):
            knees = self.clearance(self.kinematics.contact_positions(q)[:, self.knees], self.kinematics.con_radius[self.knees])
            failed = failed | (knees < 0).any(1)
        if status is not None:
            failed = failed | ((status[:, 0] & moreau.STATUS_FATAL) != 0)
        failed = failed | ~torch.isfinite(q).all(1) | ~torch.isfinite(v).all(1)
        time_out = (self.episode_length_buf >= self.max_episode_length) & ~failed
        return failed, time_out

    # ---- the control step --------------------------------------------------------------------
    def step(self, actions: torch.Tensor):
        c = self.cfg
        actions = actions.to(device=self.device, dtype=self.dtype).clamp(-c.clip_actions, c.clip_actions)
        q, v, last = self.q, self.v, self.last_actions
        applied = torch.where(self.action_delay[:, None], last, actions) if c.action_delay_prob > 0 else actions
        q1, v1, status = mt.step(self.sim, q, v, self.targets(applied), friction=self.friction,
                                 added_base_mass=self.added_base_mass, frictionloss_scale=self.frictionloss_scale,
                                 motor_strength=self.motor_strength, spin_friction=self.spin_friction,
                                 rolling_friction=self.rolling_friction if self.rolling else None,
                                 damping_scale=self.damping_scale, armature_scale=self.armature_scale,
                                 terrain_x=self.origin[:, 0] if self.terrain is not None else None,
                                 terrain_y=self.origin[:, 1] if self.terrain is not None else None,
                                 smooth_k=self.smooth_k if c.randomize_smooth_k else None, return_status=True)
        self.episode_length_buf = self.episode_length_buf + 1
        self.common_step_counter += 1
        failed, time_out = self.check_termination(q1, v1, status)
        done = failed | time_out

        phase = torch.remainder(self.gait_phase + self.gait_frequency * self.dt, 1.0)
        touchdown = None
        if self.reward_weights.get("feet_air_time", 0.0):  # legged_gym: air time counted up to each touchdown
            with torch.no_grad():
                contact = self.foot_clearance(q1) < c.foot_contact_height
                air = self.feet_air_time + self.dt
                touchdown = torch.where(contact & (self.feet_air_time > 0), air, torch.zeros_like(air))
                self.feet_air_time = torch.where(contact, torch.zeros_like(air), air)
        terms = self.reward_terms(q, v, q1, v1, actions, last, self.commands, failed, phase, touchdown, applied)
        bad = ~(torch.isfinite(q1).all(1) & torch.isfinite(v1).all(1))
        track = terms["tracking_lin_vel"].detach()
        self._advance_curriculum(torch.where(bad, torch.zeros_like(track), track))
        reward = self.combine_rewards(terms)
        reward = torch.where(bad, torch.zeros_like(reward), reward)
        obs_before = self.compute_observations(q1, v1, self.commands, actions, phase)
        obs_before = torch.where(bad[:, None], torch.zeros_like(obs_before), obs_before)
        with torch.no_grad():
            if self.episode_terms:
                t = torch.stack([terms[k].detach() for k in self.episode_terms])
                t = torch.where(bad, torch.zeros_like(t), t)
                self._episode_sums = self._episode_sums + self._episode_weights * t
            # the means over the environments that end here (NaN in a step where none does)
            means = ended_mean(self._episode_sums, done) / c.episode_length_s
            ep = {"rew_" + k: m for k, m in zip(self.episode_terms, means)}
            ep["episode_length_s"] = ended_mean(self.episode_length_buf.to(self.dtype), done) * self.dt
        info = {"time_outs": time_out, "failures": failed, "episode": ep}

        # new state: the step's output, ended environments reset, then pushes and command resampling
        # (under masks: no host read)
        self.q, self.v, self.last_actions, self.gait_phase = q1, v1, actions, phase
        self.reset_envs(done)
        self.command_time_left = self.command_time_left - 1
        self._sample_commands((self.command_time_left <= 0) & ~done)
        if c.push_robots and self.common_step_counter % self.push_interval == 0:
            push = torch.zeros_like(self.v)
            push[:, 0:2] = self._uniform(-c.max_push_vel, c.max_push_vel, self.num_envs, 2)
            self.v = self.v + push
        self.obs = self.observe()
        info["obs_before_reset"] = torch.where(done[:, None], obs_before, self.obs)
        return self.obs, reward, done, info
