"""A first robot configuration for the locomotion task (moreau.tasks.robots) from a robot file:

    python3 -m moreau.tasks.new_robot ROBOT_FILE [--out CONFIG.json]

It loads the file (URDF, MJCF or moreau JSON; the loader's warnings are shown), guesses, prints
what it guessed and what it could not, and writes the configuration for the user to edit:

- feet: on each leaf body with contact points, the sphere (else the point) farthest from the
  body's origin (the end of the shank); four feet are ordered left-front, right-front, left-hind, right-hind by their position in the base frame;
- default pose: an MJCF file's first keyframe, else the model's ``qpos0``; a joint outside its
  range is moved to the range's middle;
- gains: the file's position actuators' kp and kd where it has them; the torque limits are not
  read (set ``torque_limit``), nor the action scale (``action_scale``: the joint targets' range);
  the file's joint damping is kept and pointed out (``damping_scale`` 0 leaves it out);
- control: 50 Hz, with the file's physics step where it divides 0.02 s;
- heights: the base at rest with the feet on the ground in the default pose (``init_base_height``
  2 cm above it, the base_height term's target at it, the failure limit at half of it); the swing
  apex 0.15 of that height (ANYmal C: 0.08 m).

``python3 -m moreau.evaluation.evaluate`` and the trainers take the written file as
``--task-config '{"robot": "CONFIG.json"}'``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import warnings
import xml.etree.ElementTree as ET
from typing import Dict, List, Optional, Tuple

import torch

import moreau
from moreau.kinematics import Kinematics

from .locomotion import quat_rotate_inverse
from .robots import RobotConfig

__all__ = ["guess_config", "main"]


def _keyframe(path: str, nq: int) -> Optional[List[float]]:
    """An MJCF file's first <key qpos=...> of nq numbers, or None."""
    if not path.endswith(".xml"):
        return None
    try:
        key = ET.parse(path).getroot().find("keyframe/key")
    except ET.ParseError:
        return None
    if key is None or key.get("qpos") is None:
        return None
    qpos = [float(x) for x in key.get("qpos").split()]
    return qpos if len(qpos) == nq else None


def guess_config(path: str) -> Tuple[Dict, List[str], List[str]]:
    """(configuration dict, what was guessed, what could not be) for the robot file at ``path``."""
    model = moreau.load(path)
    guessed, missing = [], []
    if model.nbody == 0 or model.jnt_type[0] != moreau.JOINT_FREE:
        raise ValueError(f"{path}: a legged robot needs a floating base (a free root joint)")
    q = list(model.qpos0)
    key = _keyframe(path, model.nq)
    guessed.append("default pose: " + ("the file's first keyframe" if key else "the model's qpos0"))
    if key:
        q = key
    pose = {}
    for j in range(1, model.nbody):
        if model.jnt_type[j] not in (moreau.JOINT_REVOLUTE, moreau.JOINT_PRISMATIC):
            continue
        a, (lo, hi) = model.jnt_qposadr[j], model.jnt_range[2 * j:2 * j + 2]
        if model.jnt_limited[j] and not lo <= q[a] <= hi:
            guessed.append(f"joint {model.jnt_name[j]}: {q[a]:g} is outside its range [{lo:g}, {hi:g}]; "
                           f"its middle {(lo + hi) / 2:g} instead")
            q[a] = (lo + hi) / 2
        pose[model.jnt_name[j]] = round(q[a], 6)
    # the feet: each leaf body's sphere (else point) farthest from its origin
    qt = torch.tensor(q, dtype=torch.float64)[None]
    qt[0, :3] = 0.0
    kin = Kinematics(model, dtype=torch.float64)
    world = kin.contact_positions(qt)[0]
    bottom = world[:, 2] - torch.tensor(model.con_radius, dtype=torch.float64)
    pos = quat_rotate_inverse(qt[:, 3:7].expand(model.ncon, 4), world)  # in the base frame
    parents = set(model.body_parent)
    feet = []
    for b in range(model.nbody):
        points = [k for k in range(model.ncon) if model.con_body[k] == b]
        if b not in parents and points:
            feet.append(max(points, key=lambda k: (model.con_radius[k] > 0,
                                                    math.dist(model.con_pos[3 * k:3 * k + 3], (0, 0, 0)))))
    if len(feet) == 4:  # left-front, right-front, left-hind, right-hind: x forward, y left in the base frame
        front = sorted(feet, key=lambda k: -float(pos[k, 0]))
        pairs = [sorted(front[:2], key=lambda k: -float(pos[k, 1])), sorted(front[2:], key=lambda k: -float(pos[k, 1]))]
        feet = pairs[0] + pairs[1]
        guessed.append("feet (left-front, right-front, left-hind, right-hind): " +
                       ", ".join(model.con_name[k] for k in feet))
    else:
        missing.append(f"feet: {len(feet)} leaf bodies carry contact points, the task needs 4 "
                       f"(name them in 'feet')")
    cfg: Dict = {"file": os.path.abspath(path), "feet": [model.con_name[k] for k in feet], "default_joint_pos": pose}
    h = model.timestep
    decimation = round(0.02 / h)
    if abs(decimation * h - 0.02) > 1e-9:
        cfg.update(timestep=0.005, decimation=4)
        guessed.append(f"control: 50 Hz, 4 physics steps of 5 ms (the file's step {h:g} s does not divide 0.02 s)")
    else:
        cfg.update(timestep=h, decimation=decimation)
        guessed.append(f"control: 50 Hz, {decimation} physics steps of the file's {h:g} s")
    if model.nu and any(model.actuator_kp):
        cfg.update(kp=float(model.actuator_kp[0]), kd=float(model.actuator_kd[0]))
        guessed.append(f"gains: the file's first actuator's kp {cfg['kp']:g}, kd {cfg['kd']:g}"
                       + ("" if len(set(model.actuator_kp)) == 1 else " (the actuators' gains differ: check them)"))
    else:
        missing.append(f"gains: the file has no position actuators with gains (kp, kd: the defaults "
                       f"{RobotConfig.kp:g}, {RobotConfig.kd:g})")
    damped = max(model.dof_damping[6:], default=0.0)
    if damped > 0:
        guessed.append(f"joint damping: the file's (up to {damped:g} N m s/rad) is simulated (damping_scale 1); where it "
                       f"stands for the file's servos' derivative gain and you give the task's own kd, set "
                       f"damping_scale 0 (the Go1's configuration does)")
    missing.append(f"torque limits: not read from the file (torque_limit: the default {RobotConfig.torque_limit:g} N m)")
    missing.append(f"action scale: not in the file (action_scale: the default {RobotConfig.action_scale:g} rad: actions lie "
                   f"in ±1, so it is the joint targets' range about the default pose)")
    if feet:
        stand = -min(float(bottom[k]) for k in feet)
        cfg.update(init_base_height=round(stand + 0.02, 3), base_height_target=round(stand, 3),
                   base_height_limit=round(stand / 2, 3), foot_height_apex=round(0.15 * stand, 3))
        guessed.append(f"heights: the base stands at {stand:.3f} m in the default pose (init {stand + 0.02:.3f}, "
                       f"failure below {stand / 2:.3f}); swing apex {0.15 * stand:.3f} m")
    return cfg, guessed, missing


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m moreau.tasks.new_robot", description=__doc__.split("\n")[0])
    p.add_argument("robot_file")
    p.add_argument("--out", default=None, help="where to write the configuration (default: print it)")
    a = p.parse_args(argv)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            cfg, guessed, missing = guess_config(a.robot_file)
        except (ValueError, moreau.Error) as e:
            print(f"moreau.tasks.new_robot: {e}", file=sys.stderr)
            return 2
    for w in caught:
        print(f"loader: {w.message}")
    for g in guessed:
        print(f"guessed: {g}")
    for m in missing:
        print(f"not guessed: {m}")
    text = json.dumps(cfg, indent=2)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
        print(f"wrote {a.out}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
