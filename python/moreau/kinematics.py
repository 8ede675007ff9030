"""moreau.kinematics: differentiable forward kinematics in torch, built from a Model's arrays.

``Kinematics(model)`` computes world poses of every body and world positions of every contact
point for a batch of configurations q (n, nq), with torch autograd through q. It is the same
tree as the simulator's (kernels/joints.h):

    body b in its parent:  R = R_tree R_J,  p = p_tree + R_tree (a_J + R_J (x − a_J)) at x = 0
      (hinge: R_J = exp(q [axis]×) about the anchor a_J; slide: R_J = I, offset q · axis;
       ball: R_J = R(quat); free: R = R(quat), p = q[0:3] in the world)
    contact k on body b:  x_k = p_b + R_b c_k  (c_k = con_pos, body frame)

Bodies of one depth of the tree are computed together (ANYmal: the four hips, then the four
thighs, then the four shanks), so a call is a few batched tensor operations, not one per body.
On flat ground, a sphere contact's clearance ``x_k,z − radius`` equals the simulator's
``contact_gap`` (python/tests/test_kinematics.py checks both).
"""
from __future__ import annotations

from typing import List, Tuple

import torch

from . import _moreau

__all__ = ["Kinematics", "quat_to_matrix"]


def quat_to_matrix(quat: torch.Tensor) -> torch.Tensor:
    """Rotation matrices (..., 3, 3) of unit quaternions (w, x, y, z) (..., 4) (normalised here)."""
    quat = quat / quat.norm(dim=-1, keepdim=True)
    w, x, y, z = quat.unbind(-1)
    return torch.stack([
        1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
    ], dim=-1).reshape(quat.shape[:-1] + (3, 3))


def _axis_angle(axis: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
    """Rodrigues: exp(angle [axis]×) for unit axes (k, 3) and angles (n, k) -> (n, k, 3, 3)."""
    kx = torch.zeros(axis.shape[0], 3, 3, dtype=axis.dtype, device=axis.device)
    kx[:, 0, 1], kx[:, 0, 2], kx[:, 1, 2] = -axis[:, 2], axis[:, 1], -axis[:, 0]
    kx = kx - kx.transpose(1, 2)
    s, c = torch.sin(angle)[..., None, None], torch.cos(angle)[..., None, None]
    eye = torch.eye(3, dtype=axis.dtype, device=axis.device)
    return eye + s * kx + (1 - c) * (kx @ kx)


class Kinematics:
    """Forward kinematics of ``model`` (a moreau.Model) on ``device`` in ``dtype``.

    ``body_poses(q)`` -> (R (n, nbody, 3, 3), p (n, nbody, 3)) world frames of the bodies;
    ``contact_positions(q)`` -> (n, ncon, 3) world positions of the contact points (sphere
    centres, box corners); ``contact_clearance(q)`` -> (n, ncon) their height above z = 0
    minus their radius. All differentiable with respect to q."""

    def __init__(self, model, dtype=torch.float32, device="cpu"):
        tk = dict(dtype=dtype, device=device)
        nb = model.nbody
        self.nbody, self.ncon = nb, model.ncon
        self.parent = list(model.body_parent)
        self.jnt_type = list(model.jnt_type)
        self.qadr = list(model.jnt_qposadr)
        self.tree_p = torch.tensor(model.body_pos, **tk).reshape(nb, 3)
        self.tree_R = quat_to_matrix(torch.tensor(model.body_quat, **tk).reshape(nb, 4))
        self.axis = torch.tensor(model.jnt_axis, **tk).reshape(nb, 3)
        self.anchor = torch.tensor(model.jnt_pos, **tk).reshape(nb, 3)
        self.con_body = torch.tensor(list(model.con_body), dtype=torch.long, device=device)
        self.con_pos = torch.tensor(model.con_pos, **tk).reshape(-1, 3)
        self.con_radius = torch.tensor(model.con_radius, **tk)
        depth = []
        for b in range(nb):
            p = self.parent[b]
            if p >= b:
                raise ValueError(f"Kinematics: body {b} ({model.body_name[b]}) comes before its parent {p}")
            depth.append(0 if p < 0 else depth[p] + 1)
        # levels: per depth and joint type, (type, bodies, the same as a list, parents, q indices);
        # every index a tensor made here, so that a call copies nothing from the host
        width = {_moreau.JOINT_FREE: 7, _moreau.JOINT_BALL: 4}
        self.levels: List[Tuple[int, torch.Tensor, List[int], List[int], torch.Tensor]] = []
        for d in range(max(depth) + 1 if depth else 0):
            for t in sorted({self.jnt_type[b] for b in range(nb) if depth[b] == d}):
                bodies = [b for b in range(nb) if depth[b] == d and self.jnt_type[b] == t]
                adr = torch.tensor([self.qadr[b] for b in bodies], device=device)
                qidx = adr[:, None] + torch.arange(width[t], device=device) if t in width else adr
                self.levels.append((t, torch.tensor(bodies, device=device), bodies,
                                    [self.parent[b] for b in bodies], qidx))

    def _local(self, t: int, bodies: torch.Tensor, qidx: torch.Tensor, q: torch.Tensor):
        """Parent -> body rotation (n, k, 3, 3) and origin (n, k, 3) of the bodies of one level."""
        n, k = q.shape[0], qidx.shape[0]
        Rt, pt = self.tree_R[bodies], self.tree_p[bodies]
        qi = q[:, qidx]
        if t == _moreau.JOINT_FREE:
            return quat_to_matrix(qi[..., 3:7]), qi[..., :3]
        if t == _moreau.JOINT_BALL:
            RJ = quat_to_matrix(qi)
            a = self.anchor[bodies]
            rJ = a - (RJ @ a[..., None])[..., 0]
        elif t == _moreau.JOINT_PRISMATIC:
            RJ = torch.eye(3, dtype=q.dtype, device=q.device).expand(n, k, 3, 3)
            rJ = qi[..., None] * self.axis[bodies]
        else:  # revolute about the anchor
            RJ = _axis_angle(self.axis[bodies], qi)
            a = self.anchor[bodies]
            rJ = a - (RJ @ a[..., None])[..., 0]
        return Rt @ RJ, pt + (Rt @ rJ[..., None])[..., 0]

    def body_poses(self, q: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        R: List[torch.Tensor] = [None] * self.nbody  # type: ignore[list-item]
        p: List[torch.Tensor] = [None] * self.nbody  # type: ignore[list-item]
        for t, bodies, body_list, parents, qidx in self.levels:
            Rl, pl = self._local(t, bodies, qidx, q)
            if parents[0] >= 0:  # a level's parents are all bodies or all the world
                Rp = torch.stack([R[j] for j in parents], 1)
                pp = torch.stack([p[j] for j in parents], 1)
                Rl, pl = Rp @ Rl, pp + (Rp @ pl[..., None])[..., 0]
            for i, b in enumerate(body_list):
                R[b], p[b] = Rl[:, i], pl[:, i]
        return torch.stack(R, 1), torch.stack(p, 1)

    def contact_positions(self, q: torch.Tensor) -> torch.Tensor:
        R, p = self.body_poses(q)
        Rb, pb = R[:, self.con_body], p[:, self.con_body]
        return pb + (Rb @ self.con_pos[..., None])[..., 0]

    def contact_clearance(self, q: torch.Tensor) -> torch.Tensor:
        return self.contact_positions(q)[..., 2] - self.con_radius
