"""moreau.evaluation.mujoco: a sim-to-sim check, a moreau locomotion policy run in MuJoCo.

    python3 -m moreau.evaluation.mujoco results/shac_walk/policy.pt --num-envs 16 --seconds 20
    python3 -m moreau.evaluation.mujoco results/shac_walk/policy.pt \
        --mjcf tests/data/robots/anymal_c_menagerie/anymal_c.xml --command 0.5 0 0 --no-push

The policy runs on MuJoCo (the ``mujoco`` package from PyPI) with what the checkpoint's task
(moreau.tasks.locomotion) gives it: the same observation (base velocities in the base frame,
projected gravity, command, joint positions − default, joint velocities, previous action, gait
clock; the task's scales and clipping), the same control (actions clipped, joint target =
default + ``action_scale`` · action, PD torque clip(kp (target − q) − kd q̇, ±limit) applied
through motor actuators at every MuJoCo step, ``decimation`` = control period / MuJoCo's
timestep, 50 Hz), the same commands, resets, terminations, friction and base-mass
randomisation and pushes (drawn from the same distributions by a NumPy generator: the numbers
differ from moreau's), and the same metrics (moreau.evaluation.metrics: the rewards from the
task's own reward terms on the MuJoCo state). Then, unless ``--no-moreau``, moreau's own
evaluation (moreau.evaluation.evaluate, hard contact unless ``--contact``) with the same
settings, and both side by side.

The robot: by default ``moreau.export_mjcf`` of the task's model with a ground plane; the
exported contact spheres (the feet) collide with it and with each other (condim 3, elliptic cone, MuJoCo's default
solver and soft-contact parameters), with the model's joint limits, damping and friction loss
(MuJoCo's soft limit and friction-loss constraints; the task's per-environment friction-loss
scale and motor strength are not drawn there: MuJoCo runs the nominal drives). With ``--mjcf FILE`` a
user's MJCF as it is, except: ``<mesh>`` assets and mesh geoms are dropped (visual only; MuJoCo
refuses a missing mesh file), actuators become motors driven by the task's PD torques, and a
ground plane is added when the file has none. On generated terrain (the task's ``terrain``) the
ground is the task's heightfield instead, as ``export_mjcf`` writes it (an ``<hfield>``; added to
a user's file, which must then have no plane of its own), each environment's robot placed on its
tile (the task's ``origin``: moreau's x, y are relative to it, MuJoCo's are world coordinates)
and seeing the task's height samples. Joints are mapped to moreau's order by name; the
feet are the geoms named like the robot configuration's feet (moreau.tasks.robots), else the
sphere geoms of the four ``*_SHANK`` / ``*_FOOT`` bodies (ANYmal C's Menagerie file). The task's
torque limits (one or one per actuator) bound the motors.

One ``MjModel`` for all environments, each environment's friction and base mass written into it
before that environment's steps, and one ``MjData`` per environment, stepped in a Python loop;
the policy is evaluated batched in torch at each control step.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import time
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import torch

import mujoco

import moreau

from .metrics import LocomotionMetrics

__all__ = ["MujocoLocomotion", "load_robot_xml", "mujoco_observation", "evaluate_mujoco", "main"]

FEET = ("LF", "RF", "LH", "RH")


# ---- the robot ----------------------------------------------------------------------------
def _strip_meshes(xml: str) -> (str, int):
    """The MJCF ``xml`` without ``<mesh>`` assets and geoms of type mesh (or with a mesh
    attribute); the number of elements dropped."""
    import xml.etree.ElementTree as ET
    root = ET.fromstring(xml)
    # mesh geoms: type="mesh", a mesh attribute, or a default class whose geom type is mesh
    mesh_classes = set()
    for d in root.iter("default"):
        g = d.find("geom")
        if g is not None and g.get("type") == "mesh" and d.get("class"):
            mesh_classes.add(d.get("class"))
    # classes nested under a mesh class inherit its type unless they override it
    for d in root.iter("default"):
        if d.get("class") in mesh_classes:
            for sub in d.iter("default"):
                g = sub.find("geom")
                if sub.get("class") and (g is None or g.get("type") in (None, "mesh")):
                    mesh_classes.add(sub.get("class"))
    dropped = 0
    for parent in list(root.iter()):
        for child in list(parent):
            is_mesh_asset = child.tag == "mesh" and parent.tag == "asset"
            is_mesh_geom = child.tag == "geom" and (
                child.get("type") == "mesh" or child.get("mesh") is not None
                or (child.get("type") is None and child.get("class") in mesh_classes))
            if is_mesh_asset or is_mesh_geom:
                parent.remove(child)
                dropped += 1
        if parent.tag == "default":  # the defaults' mesh geoms would be no harm, but type mesh needs a mesh
            g = parent.find("geom")
            if g is not None and g.get("type") == "mesh":
                g.set("type", "sphere")
                g.set("size", g.get("size", "0.01"))
    # textures and materials name files too (MuJoCo loads textures): drop file-based textures
    for asset in root.iter("asset"):
        for tex in list(asset):
            if tex.tag in ("texture", "hfield", "skin") and tex.get("file"):
                asset.remove(tex)
                dropped += 1
        for mat in asset.findall("material"):
            if mat.get("texture"):
                del mat.attrib["texture"]
    return ET.tostring(root, encoding="unicode"), dropped


def _with_ground_plane(xml: str) -> str:
    return re.sub(r"<worldbody>", '<worldbody>\n    <geom name="moreau_ground" type="plane" size="0 0 1"/>', xml,
                  count=1)


def _with_heightfield(xml: str, exported: str) -> str:
    """``xml`` with the ``<hfield>`` asset and its geom of moreau's export ``exported``."""
    asset = re.search(r'<hfield name="terrain"[^>]*/>', exported).group(0)
    geom = re.search(r'<geom name="terrain" type="hfield"[^>]*/>', exported).group(0)
    xml = xml.replace("<worldbody>", "<worldbody>\n    " + geom, 1)
    end = xml.rindex("</mujoco>")
    return xml[:end] + "  <asset>\n    " + asset + "\n  </asset>\n" + xml[end:]


def load_robot_xml(model: "moreau.Model", mjcf: Optional[str] = None, verbose: bool = True):
    """(MJCF text ready for MuJoCo, whether it is moreau's export, messages): ``export_mjcf(model)``
    with a ground plane (or its heightfield), or the file ``mjcf`` with its meshes dropped and a
    ground plane added when it has none, or the model's heightfield (actuators and contacts are
    set on the compiled model, ``_prepare``)."""
    msgs: List[str] = []
    terrain = model.hfield_nx > 0
    if mjcf is None:
        xml = moreau.export_mjcf(model)
        return (xml if terrain else _with_ground_plane(xml)), True, msgs
    with open(mjcf) as f:
        xml = f.read()
    xml, dropped = _strip_meshes(xml)
    if dropped:
        msgs.append(f"{mjcf}: dropped {dropped} mesh/texture elements (visual only; the mesh files are not needed)")
    has_plane = re.search(r'type\s*=\s*"plane"', xml) is not None
    if terrain:
        if has_plane or re.search(r'type\s*=\s*"hfield"', xml):
            raise ValueError(f"moreau.evaluation.mujoco: {mjcf}: the task runs on generated terrain, which the "
                             f"evaluator adds as the ground; the file has a ground of its own (a plane or "
                             f"heightfield geom): give the robot without it")
        xml = _with_heightfield(xml, moreau.export_mjcf(model))
        msgs.append(f"{mjcf}: the task's heightfield added as the ground")
    elif not has_plane:
        xml = _with_ground_plane(xml)
        msgs.append(f"{mjcf}: no ground plane; added one")
    if verbose:
        for m in msgs:
            print("moreau.evaluation.mujoco:", m)
    return xml, False, msgs


def _compile(xml: str, mjcf_path: Optional[str]) -> "mujoco.MjModel":
    if mjcf_path is None:
        return mujoco.MjModel.from_xml_string(xml)
    # relative includes/assets of the user's file resolve from its folder
    cwd = os.getcwd()
    try:
        os.chdir(os.path.dirname(os.path.abspath(mjcf_path)))
        return mujoco.MjModel.from_xml_string(xml)
    finally:
        os.chdir(cwd)


class MujocoLocomotion:
    """The locomotion task of ``env`` (a moreau.tasks.locomotion.Locomotion, for its configuration,
    default pose, observation scales and reward terms) on MuJoCo: ``num_envs`` MjModel/MjData
    pairs. ``mjcf``: a user's MJCF file (default: moreau's export of the task's model)."""

    def __init__(self, env, num_envs: int, mjcf: Optional[str] = None, seed: int = 1, verbose: bool = True):
        self.env = env
        self.cfg = c = env.cfg
        self.num_envs = n = int(num_envs)
        if n != env.num_envs:
            raise ValueError(f"moreau.evaluation.mujoco: {n} MuJoCo environments for a task of {env.num_envs} (its "
                             f"tiles, observations and metrics are per environment)")
        # each environment's origin in MuJoCo's world: its tile's on generated terrain (fixed: the
        # evaluation's task has no level curriculum), else 0
        self.origin = np.zeros((n, 3))
        if c.terrain is not None:
            if c.terrain_curriculum:
                raise ValueError("moreau.evaluation.mujoco: a task with the terrain curriculum on (evaluate with "
                                 "moreau.evaluation.evaluate's task, whose levels stay)")
            self.origin[:] = env.origin.double().cpu().numpy()
        self.dt = env.dt
        self.rng = np.random.default_rng(seed)
        mmodel = env.sim.model
        self.torque_limit = env.torque_limit.double().cpu().numpy()  # one per actuator
        xml, self.exported, self.messages = load_robot_xml(mmodel, mjcf, verbose)
        self.xml = xml
        self.model = m0 = self._prepare(_compile(xml, mjcf))
        self.decimation = max(1, int(round(self.dt / m0.opt.timestep)))
        if abs(self.decimation * m0.opt.timestep - self.dt) > 1e-9:
            raise ValueError(f"MuJoCo timestep {m0.opt.timestep} does not divide the control period {self.dt}")
        self.datas = [mujoco.MjData(m0) for _ in range(n)]
        self.base_mass0 = float(m0.body_mass[self.base_body])
        self.friction0 = m0.geom_friction[:, 0].copy()
        self.default_dof_pos = env.default_dof_pos.double().cpu().numpy()
        self.episode_length = np.zeros(n, dtype=np.int64)
        self.commands = np.zeros((n, 3))
        self.command_time_left = np.zeros(n, dtype=np.int64)
        self.last_actions = np.zeros((n, env.num_actions))
        self.gait_phase = np.zeros(n)
        self.friction = np.ones(n)
        self.added_base_mass = np.zeros(n)
        self.common_step_counter = 0
        self.max_episode_length = env.max_episode_length
        self.push_interval = env.push_interval
        self.reset()

    # ---- model set-up ----------------------------------------------------------------------
    def _prepare(self, m: "mujoco.MjModel") -> "mujoco.MjModel":
        """Joint map, feet, ground; actuators made motors (the PD torque is computed here)."""
        c = self.cfg
        mmodel = self.env.sim.model
        names = [mmodel.jnt_name[i] for i in range(len(mmodel.jnt_name))]
        act_joints = [names[list(mmodel.jnt_qposadr).index(a)] for a in mmodel.actuator_qposadr]
        free = [j for j in range(m.njnt) if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
        if len(free) != 1:
            raise ValueError(f"MJCF: expected one free joint (the base), found {len(free)}")
        self.base_body = int(m.jnt_bodyid[free[0]])
        self.free_qadr, self.free_vadr = int(m.jnt_qposadr[free[0]]), int(m.jnt_dofadr[free[0]])
        jid = []
        for name in act_joints:
            j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)
            if j < 0:
                raise ValueError(f"MJCF: no joint named {name!r} (moreau's joints: {act_joints})")
            jid.append(j)
        self.qadr = np.array([m.jnt_qposadr[j] for j in jid])
        self.vadr = np.array([m.jnt_dofadr[j] for j in jid])
        # actuators: one motor per mapped joint, in moreau's order (others: none allowed)
        self.act = []
        for j in jid:
            a = [i for i in range(m.nu) if m.actuator_trntype[i] == mujoco.mjtTrn.mjTRN_JOINT
                 and m.actuator_trnid[i, 0] == j]
            if len(a) != 1:
                raise ValueError(f"MJCF: joint {mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j)!r} needs one "
                                 f"actuator, has {len(a)}")
            self.act.append(a[0])
        self.act = np.array(self.act)
        for i in range(m.nu):
            m.actuator_dyntype[i] = mujoco.mjtDyn.mjDYN_NONE
            m.actuator_gaintype[i] = mujoco.mjtGain.mjGAIN_FIXED
            m.actuator_biastype[i] = mujoco.mjtBias.mjBIAS_NONE
            m.actuator_gainprm[i, :] = 0.0
            m.actuator_gainprm[i, 0] = 1.0
            m.actuator_biasprm[i, :] = 0.0
            m.actuator_gear[i, :] = 0.0
            m.actuator_gear[i, 0] = 1.0
            m.actuator_ctrllimited[i] = 0
            m.actuator_forcelimited[i] = 1
        for k, i in enumerate(self.act):  # the task's torque limits, moreau's actuator k on MuJoCo's i
            m.actuator_forcerange[i] = (-self.torque_limit[k], self.torque_limit[k])
        # feet, in the task's order (left-front, right-front, left-hind, right-hind): geoms named like
        # the robot's foot contact points, else the sphere geom of each leg's foot/shank body
        self.feet = []
        for leg, cname in zip(FEET, self.env.robot.feet):
            g = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, cname)
            if g < 0:
                cands = [k for k in range(m.ngeom) if m.geom_type[k] == mujoco.mjtGeom.mjGEOM_SPHERE
                         and mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, m.geom_bodyid[k]) in
                         (f"{leg}_FOOT", f"{leg}_SHANK")]
                if len(cands) != 1:
                    raise ValueError(f"MJCF: cannot find the {leg} foot (a sphere geom named {cname} or in "
                                     f"{leg}_SHANK/{leg}_FOOT)")
                g = cands[0]
            self.feet.append(g)
        self.feet = np.array(self.feet)
        self.ground = [k for k in range(m.ngeom) if m.geom_type[k] == mujoco.mjtGeom.mjGEOM_PLANE
                       or m.geom_type[k] == mujoco.mjtGeom.mjGEOM_HFIELD]
        if self.exported:  # the benchmarks' settings (bench/bench_util.h MujocoRunner)
            for k in range(m.ngeom):
                on = k in self.feet or k in self.ground
                m.geom_contype[k] = m.geom_conaffinity[k] = 1 if on else 0
                if on:
                    m.body_contype[m.geom_bodyid[k]] = m.body_conaffinity[m.geom_bodyid[k]] = 1
                    m.geom_condim[k] = 3
                    m.geom_friction[k, 0] = 1.0
            m.opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
        return m

    # ---- state ---------------------------------------------------------------------------
    def moreau_state(self, env_ids: Optional[Sequence[int]] = None):
        """moreau's (q, v) (len, 19), (len, 18) float64 of the MuJoCo states: the free joint's qpos
        and qvel (world linear velocity, body angular velocity: moreau's convention too), then the
        joints in moreau's order."""
        ids = range(self.num_envs) if env_ids is None else env_ids
        q = np.stack([np.concatenate([self.datas[i].qpos[self.free_qadr:self.free_qadr + 7],
                                      self.datas[i].qpos[self.qadr]]) for i in ids])
        q[:, 0:2] -= self.origin[list(ids), 0:2]  # relative to the environment's tile
        v = np.stack([np.concatenate([self.datas[i].qvel[self.free_vadr:self.free_vadr + 6],
                                      self.datas[i].qvel[self.vadr]]) for i in ids])
        return q, v

    def set_moreau_state(self, i: int, q: np.ndarray, v: np.ndarray) -> None:
        """Sets environment ``i``'s MuJoCo state from moreau's (q, v)."""
        d, m = self.datas[i], self.use_params(i)
        d.qpos[:] = m.qpos0
        d.qvel[:] = 0.0
        d.qpos[self.free_qadr:self.free_qadr + 7] = q[:7]
        d.qpos[self.free_qadr:self.free_qadr + 2] += self.origin[i, 0:2]
        d.qpos[self.qadr] = q[7:]
        d.qvel[self.free_vadr:self.free_vadr + 6] = v[:6]
        d.qvel[self.vadr] = v[6:]
        d.act[:] = 0.0
        d.ctrl[:] = 0.0
        d.qacc_warmstart[:] = 0.0
        mujoco.mj_forward(m, d)

    def observe(self) -> np.ndarray:
        return mujoco_observation(self, self.commands, self.last_actions, self.gait_phase)

    # ---- randomness (the task's distributions) -------------------------------------------
    def _u(self, lo, hi, *shape):
        return lo + (hi - lo) * self.rng.random(shape)

    def _sample_commands(self, mask: np.ndarray) -> None:
        c, n = self.cfg, self.num_envs
        cmd = np.stack([self._u(lo, hi, n) for lo, hi in c.command_ranges], axis=1)
        small = np.linalg.norm(cmd[:, :2], axis=1) < c.small_command_threshold
        cmd[small, :2] = 0.0
        self.commands[mask] = cmd[mask]
        lo, hi = c.resampling_time
        steps = np.maximum(1, np.round(self._u(lo, hi, n) / self.dt).astype(np.int64))
        self.command_time_left[mask] = steps[mask]

    def _sample_params(self, mask: np.ndarray) -> None:
        c, n = self.cfg, self.num_envs
        if c.randomize_friction:
            f = self._u(*c.friction_range, n)
            self.friction[mask] = f[mask]
        if c.randomize_base_mass:
            a = self._u(*c.added_mass_range, n)
            self.added_base_mass[mask] = a[mask]

    def use_params(self, i: int) -> "mujoco.MjModel":
        """The model with environment ``i``'s base mass and friction written in (before its steps)."""
        m, c = self.model, self.cfg
        m.body_mass[self.base_body] = self.base_mass0 + self.added_base_mass[i]
        m.geom_friction[:, 0] = self.friction0
        if c.randomize_friction or self.friction[i] != 1.0 or self.exported:
            for g in list(self.feet) + self.ground:  # contact friction: the larger of the pair's
                m.geom_friction[g, 0] = self.friction[i]
        return m

    def reset_envs(self, mask: np.ndarray) -> None:
        c, n = self.cfg, self.num_envs
        self._sample_params(mask)
        for i in np.flatnonzero(mask):
            q = np.concatenate([[0.0, 0.0, c.init_base_height + self.origin[i, 2], 1.0, 0.0, 0.0, 0.0],
                                self.default_dof_pos * self._u(*c.reset_dof_scale_range, len(self.default_dof_pos))])
            v = np.zeros(6 + len(self.default_dof_pos))
            v[:6] = self._u(-c.reset_base_vel, c.reset_base_vel, 6)
            self.set_moreau_state(i, q, v)
        self.last_actions[mask] = 0.0
        self.episode_length[mask] = 0
        self.gait_phase[mask] = 0.0
        self._sample_commands(mask)

    def reset(self) -> np.ndarray:
        self.reset_envs(np.ones(self.num_envs, dtype=bool))
        return self.observe()

    # ---- the control step ----------------------------------------------------------------
    def pd_torque(self, i: int, target: np.ndarray) -> np.ndarray:
        c, d = self.cfg, self.datas[i]
        tau = c.kp * (target - d.qpos[self.qadr]) - c.kd * d.qvel[self.vadr]
        return np.clip(tau, -self.torque_limit, self.torque_limit)

    def step(self, actions: np.ndarray):
        """One control step of every environment (the order of moreau.tasks.locomotion's step).
        Returns (obs, reward, done, info) as numpy arrays (info: time_outs, failures,
        obs_before_reset, and the torch (q, v) before and after the physics)."""
        c, env, n = self.cfg, self.env, self.num_envs
        actions = np.clip(np.asarray(actions, dtype=np.float64), -c.clip_actions, c.clip_actions)
        q0, v0 = self.moreau_state()
        targets = self.default_dof_pos + c.action_scale * actions
        for i in range(n):
            m, d = self.use_params(i), self.datas[i]
            for _ in range(self.decimation):
                d.ctrl[self.act] = self.pd_torque(i, targets[i])
                mujoco.mj_step(m, d)
        q1, v1 = self.moreau_state()
        self.episode_length += 1
        self.common_step_counter += 1
        tk = dict(dtype=env.dtype, device=env.device)
        tq0, tv0, tq1, tv1 = (torch.as_tensor(x, **tk) for x in (q0, v0, q1, v1))
        failed_t, _ = env.check_termination(tq1, tv1)
        failed = failed_t.cpu().numpy() | ~np.isfinite(q1).all(1) | ~np.isfinite(v1).all(1)
        time_out = (self.episode_length >= self.max_episode_length) & ~failed
        done = failed | time_out
        phase = np.remainder(self.gait_phase + self.env.gait_frequency * self.dt, 1.0)
        with torch.no_grad():
            ta = torch.as_tensor(actions, **tk)
            terms = env.reward_terms(tq0, tv0, tq1, tv1, ta, torch.as_tensor(self.last_actions, **tk),
                                     torch.as_tensor(self.commands, **tk), torch.as_tensor(failed),
                                     torch.as_tensor(phase, **tk), None)
            reward = env.combine_rewards(terms).double().cpu().numpy()
        reward = np.where(np.isfinite(reward), reward, 0.0)
        obs_before = mujoco_observation(self, self.commands, actions, phase)
        self.last_actions, self.gait_phase = actions.copy(), phase
        self.reset_envs(done)
        self.command_time_left -= 1
        self._sample_commands((self.command_time_left <= 0) & ~done)
        if c.push_robots and self.common_step_counter % self.push_interval == 0:
            push = self._u(-c.max_push_vel, c.max_push_vel, n, 2)
            for i in range(n):
                self.datas[i].qvel[self.free_vadr:self.free_vadr + 2] += push[i]
        obs = self.observe()
        obs_before = np.where(done[:, None], obs_before, obs)
        return obs, reward, done, {"time_outs": time_out, "failures": failed, "obs_before_reset": obs_before}


def mujoco_observation(menv: MujocoLocomotion, commands: np.ndarray, last_actions: np.ndarray,
                       phase: np.ndarray) -> np.ndarray:
    """The task's observation (its ``compute_observations``) of ``menv``'s MuJoCo states, taken
    as moreau's (q, v) (``moreau_state``; the quaternion normalised). (num_envs, num_obs) float64."""
    env = menv.env
    q, v = menv.moreau_state()
    q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1, keepdims=True)
    t = lambda x: torch.as_tensor(x, dtype=env.dtype, device=env.device)  # noqa: E731
    with torch.no_grad():
        obs = env.compute_observations(t(q), t(v), t(commands), t(last_actions), t(phase))
    return obs.double().cpu().numpy()


# ---- the evaluation ------------------------------------------------------------------------
@torch.no_grad()
def evaluate_mujoco(menv: MujocoLocomotion, policy: Callable[[torch.Tensor], torch.Tensor],
                    seconds: float) -> Dict[str, float]:
    """Runs ``policy`` on ``menv`` for ``seconds``; moreau.evaluation.metrics' locomotion metrics
    (``LocomotionMetrics`` on the task: mean reward per step, falls per minute, planar and yaw-rate
    errors of each step's end state, with a gait clock the foot pattern, on generated terrain per
    terrain type and level), of the MuJoCo states. The task's simulator is not stepped: its state
    is set to MuJoCo's after each step, for the foot pattern."""
    env = menv.env
    tk = dict(dtype=env.dtype, device=env.device)
    metrics = LocomotionMetrics(env)
    obs = menv.observe()
    params = list(policy.parameters()) if isinstance(policy, torch.nn.Module) else []
    pdtype, pdev = (params[0].dtype, params[0].device) if params else (env.dtype, env.device)
    t0 = time.perf_counter()
    for _ in range(max(1, int(round(seconds / menv.dt)))):
        cmd = torch.as_tensor(menv.commands, **tk)
        act = policy(torch.as_tensor(obs, dtype=pdtype, device=pdev)).double().cpu().numpy()
        obs, rew, done, info = menv.step(act)
        env.q = torch.as_tensor(menv.moreau_state()[0], **tk)
        metrics.update(torch.as_tensor(rew, **tk), torch.as_tensor(done, device=env.device),
                       {"time_outs": torch.as_tensor(info["time_outs"], device=env.device),
                        "obs_before_reset": torch.as_tensor(info["obs_before_reset"], **tk)}, cmd)
    return {"sim_wall_time": time.perf_counter() - t0, **metrics.result()}


def run(checkpoint: str, mjcf: Optional[str] = None, seconds: float = 20.0, num_envs: int = 16, seed: int = 1,
        command: Optional[Sequence[float]] = None, push: bool = True, moreau_eval: bool = True,
        contact: str = "hard", randomize: bool = True, verbose: bool = True, sim_threads: int = 1,
        task_config: Optional[Dict] = None) -> Dict:
    """The function behind the command line: {"mujoco": metrics, "moreau": metrics or None, ...};
    ``task_config``: task options over the checkpoint's (moreau.evaluation.evaluate's)."""
    from ..trainers.checkpoints import load_policy
    from .evaluate import eval_env, evaluate
    policy = load_policy(checkpoint)
    meta = policy.meta["env"]
    if (meta.get("task") or "locomotion") != "locomotion":
        raise SystemExit("moreau.evaluation.mujoco: a locomotion checkpoint is needed")
    kw = dict(command=command, push=push, task_config=task_config)
    if not randomize:
        kw.update(friction=1.0, added_mass=0.0)
    # the task (configuration, default pose, reward terms) for MuJoCo; its simulator is not stepped
    task = eval_env(meta, "locomotion", num_envs, contact, seed=seed, sim_threads=sim_threads, **kw)
    if task.num_obs != meta["num_obs"]:
        raise SystemExit(f"moreau.evaluation.mujoco: the policy has {meta['num_obs']} observations, the task "
                         f"{task.num_obs}")
    menv = MujocoLocomotion(task, num_envs, mjcf=mjcf, seed=seed, verbose=verbose)
    if not randomize:
        menv.friction[:] = 1.0
        menv.added_base_mass[:] = 0.0
        menv._sample_params(np.ones(num_envs, dtype=bool))
    t0 = time.perf_counter()
    res_mj = evaluate_mujoco(menv, policy, seconds)
    res_mj["wall_time"] = time.perf_counter() - t0
    res_mr = None
    if moreau_eval:
        env = eval_env(meta, "locomotion", num_envs, contact, seed=seed, sim_threads=sim_threads, **kw)
        t0 = time.perf_counter()
        res_mr = evaluate(env, policy, seconds, "locomotion", plot=None, seed=seed)
        res_mr["wall_time"] = time.perf_counter() - t0
    return {"checkpoint": checkpoint, "robot": mjcf or "export_mjcf", "num_envs": num_envs, "seconds": seconds,
            "seed": seed, "command": list(command) if command is not None else None, "pushes": push,
            "contact": contact, "task_config_overrides": task_config, "mujoco_version": mujoco.__version__,
            "messages": menv.messages,
            "mujoco": res_mj, "moreau": res_mr}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m moreau.evaluation.mujoco",
                                description="Run a moreau locomotion policy in MuJoCo (and in moreau) side by side")
    p.add_argument("checkpoint")
    p.add_argument("--mjcf", default=None, help="the robot's MJCF (default: moreau.export_mjcf of the task's model)")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--command", type=float, nargs=3, default=None, metavar=("VX", "VY", "WZ"))
    p.add_argument("--no-push", action="store_true")
    p.add_argument("--no-randomize", action="store_true", help="friction 1 and no added base mass")
    p.add_argument("--contact", default="hard", help="moreau's contact mode (default hard)")
    p.add_argument("--no-moreau", action="store_true", help="MuJoCo only")
    p.add_argument("--task-config", default=None, metavar="JSON",
                   help="task options over the checkpoint's, e.g. '{\"terrain\": {}}' (a flat-ground policy on "
                        "legged_gym's terrain)")
    p.add_argument("--json", default=None, metavar="PATH")
    p.add_argument("--torch-threads", type=int, default=1)
    p.add_argument("--sim-threads", type=int, default=1, help="moreau's simulator CPU threads (0 = all cores)")
    a = p.parse_args(argv)
    if a.torch_threads > 0:
        torch.set_num_threads(a.torch_threads)
    res = run(a.checkpoint, mjcf=a.mjcf, seconds=a.seconds, num_envs=a.num_envs, seed=a.seed, command=a.command,
              push=not a.no_push, moreau_eval=not a.no_moreau, contact=a.contact, randomize=not a.no_randomize,
              sim_threads=a.sim_threads, task_config=json.loads(a.task_config) if a.task_config else None)
    if a.json:
        text = json.dumps(res, indent=2)
        if a.json == "-":
            print(text)
            return 0
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            f.write(text + "\n")
    cols = [("MuJoCo (" + ("export" if a.mjcf is None else os.path.basename(a.mjcf)) + ")", res["mujoco"])]
    if res["moreau"] is not None:
        cols.insert(0, (f"moreau ({a.contact})", res["moreau"]))
    print(f"{a.checkpoint}: {a.num_envs} envs × {a.seconds:g} s, seed {a.seed}, MuJoCo {mujoco.__version__}")
    print(f"  {'':22s}" + "".join(f"{name:>24s}" for name, _ in cols))
    keys = ["lin_vel_error", "yaw_rate_error", "falls_per_minute", "mean_reward", "trot_fraction", "diagonal_sync",
            "stance_fraction", "wall_time"]
    for k in keys:
        if all(k in r for _, r in cols):
            print(f"  {k:22s}" + "".join(f"{r[k]:24.4f}" for _, r in cols))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
