"""Pinocchio as an independent oracle for moreau's dynamics derivatives.

moreau's numbers come from the `moreau-derivatives` tool (host/derivatives_main.cc; its path in
$MOREAU_DERIVATIVES, set by ctest), the model from its MJCF export (pinocchio.buildModelFromMJCF).
Compared at random states of anymal_c, 1e-8 relative: RNEA and its derivatives
(computeRNEADerivatives), forward dynamics and its derivatives (computeABADerivatives).

Conventions (docs/gradients.md, "Pinocchio"). Pinocchio's free flyer: q = (p, x, y, z, w), and
v, a, tau and the tangent δ are all in the base BODY frame; a is the derivative of the body
twist (a_lin = Rᵀ p̈ − ω × Rᵀ ṗ). moreau's free joint: q = (p, w, x, y, z), v = (ṗ world,
ω body), tau linear part a WORLD force, tangent δ = (δp world, δθ body). With R the base
rotation, u = Rᵀ ṗ and T = diag(R, 1, 1) (R on the three linear rows):
    v_pin = Tᵀ v,  a_pin = Tᵀ a − (ω × u, 0, 0),  tau = T tau_pin,  δ_pin = Tᵀ δ,
and the Jacobians below follow by the chain rule (rotation-dependent terms in the columns of
δθ, the base angular tangent).
"""
import json
import os
import subprocess

import numpy as np
import pinocchio as pin
import pytest

TOOL = os.environ.get("MOREAU_DERIVATIVES", "moreau-derivatives")
ASSETS = os.environ.get(
    "MOREAU_ASSETS_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "assets"))
ROBOT = os.path.join(ASSETS, "robots", "anymal_c.json")
RTOL = 1e-8
N_STATES = 5


def skew(x):
    return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])


def quat_wxyz_to_matrix(qw):
    w, x, y, z = qw
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def symmetric(upper):
    """Pinocchio fills the upper triangle of M and Minv."""
    return np.triu(upper) + np.triu(upper, 1).T


def assert_close(ours, ref, what):
    ours, ref = np.asarray(ours), np.asarray(ref)
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape} vs {ref.shape}"
    floor = RTOL * max(1.0, np.max(np.abs(ref)))
    tol = np.maximum(RTOL * np.abs(ref), floor)
    err = np.abs(ours - ref)
    if not np.all(err <= tol):
        i = np.unravel_index(np.argmax(err / tol), err.shape)
        raise AssertionError(
            f"{what}{list(i)}: moreau {ours[i]!r} vs pinocchio {ref[i]!r}, |diff| {err[i]:.3e} > tol "
            f"{tol[i]:.3e}; {int(np.sum(err > tol))} of {err.size} entries fail")


def run_tool(*args, stdin=None):
    r = subprocess.run([TOOL, ROBOT, *args], input=stdin, capture_output=True, text=True, check=False)
    assert r.returncode == 0, f"moreau-derivatives failed ({r.returncode}): {r.stderr}"
    return r.stdout


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    mjcf = tmp_path_factory.mktemp("mjcf") / "anymal_c.xml"
    mjcf.write_text(run_tool("--mjcf"))
    model = pin.buildModelFromMJCF(str(mjcf))
    assert model.joints[1].shortname() == "JointModelFreeFlyer"
    return model


def random_states(model, rng):
    states = []
    for _ in range(N_STATES):
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        q = np.concatenate([rng.uniform(-1, 1, 3), quat, rng.uniform(-1.5, 1.5, model.nq - 7)])
        states.append({"q": q.tolist(), "v": rng.normal(size=model.nv).tolist(),
                       "a": rng.normal(size=model.nv).tolist(), "tau": (10 * rng.normal(size=model.nv)).tolist()})
    return states


class Base:
    """The base rotation and the convention maps at one moreau state."""

    def __init__(self, q, v, nv):
        self.R = quat_wxyz_to_matrix(q[3:7])
        self.w = np.asarray(v[3:6])
        self.u = self.R.T @ np.asarray(v[0:3])
        self.T = np.eye(nv)
        self.T[0:3, 0:3] = self.R
        self.q_pin = np.concatenate([q[0:3], q[4:7], q[3:4], q[7:]])
        self.v_pin = self.T.T @ v

    def a_pin(self, a):
        a = self.T.T @ np.asarray(a)
        a[0:3] -= np.cross(self.w, self.u)
        return a

    def a_moreau(self, a_pin):
        a = np.array(a_pin)
        a[0:3] += np.cross(self.w, self.u)
        return self.T @ a


@pytest.fixture(scope="module")
def evaluated(models):
    model = models
    rng = np.random.default_rng(1234)
    states = random_states(model, rng)
    out = json.loads(run_tool(stdin=json.dumps({"states": states})))
    assert out["nq"] == model.nq and out["nv"] == model.nv
    return model, states, out


def test_body_frames_match(evaluated):
    model, states, out = evaluated
    data = model.createData()
    for s, r in zip(states, out["results"]):
        b = Base(np.array(s["q"]), np.array(s["v"]), model.nv)
        pin.framesForwardKinematics(model, data, b.q_pin)
        for i, name in enumerate(out["body_name"]):
            frame = model.getFrameId(name, pin.FrameType.BODY)
            assert_close(r["body_pos"][i], data.oMf[frame].translation, f"body_pos {name}")
            assert_close(quat_wxyz_to_matrix(r["body_quat"][i]), data.oMf[frame].rotation, f"body_rot {name}")


def test_rnea_and_derivatives_match(evaluated):
    model, states, out = evaluated
    model = model.copy()
    model.armature[:] = 0  # moreau's RNEA is the rigid-body one, without armature
    data = model.createData()
    nv = model.nv
    for k, (s, r) in enumerate(zip(states, out["results"])):
        q, v, a = (np.array(s[x]) for x in ("q", "v", "a"))
        b = Base(q, v, nv)
        a_pin = b.a_pin(a)
        tau_pin = pin.rnea(model, data, b.q_pin, b.v_pin, a_pin)
        assert_close(r["tau"], b.T @ tau_pin, f"state {k}: tau")
        dq_pin, dv_pin, da_pin = (np.array(x) for x in pin.computeRNEADerivatives(model, data, b.q_pin, b.v_pin, a_pin))
        M = symmetric(da_pin)
        # tau = T tau_pin(q_pin, v_pin, a_pin), all three depending on the base rotation
        dV = np.zeros((nv, nv))  # ∂v_pin/∂δ
        dV[0:3, 3:6] = skew(b.u)
        dA = np.zeros((nv, nv))  # ∂a_pin/∂δ
        dA[0:3, 3:6] = skew(b.R.T @ a[0:3]) - skew(b.w) @ skew(b.u)
        dT = np.zeros((nv, nv))  # ∂(T tau_pin)/∂δ at fixed tau_pin
        dT[0:3, 3:6] = -b.R @ skew(tau_pin[0:3])
        dtau_dq = b.T @ (dq_pin @ b.T.T + dv_pin @ dV + M @ dA) + dT
        assert_close(r["dtau_dq_tangent"], dtau_dq, f"state {k}: dtau/dq (tangent)")
        dA_dv = np.zeros((nv, nv))  # ∂a_pin/∂v
        dA_dv[0:3, 0:3] = -skew(b.w) @ b.R.T
        dA_dv[0:3, 3:6] = skew(b.u)
        dtau_dv = b.T @ (dv_pin @ b.T.T + M @ dA_dv)
        assert_close(r["dtau_dv"], dtau_dv, f"state {k}: dtau/dv")
        # the raw-coordinate Jacobian: joint columns equal the tangent ones, the base position
        # columns are R times Pinocchio's body-frame ones
        raw = np.array(r["dtau_dq"])
        assert_close(raw[:, 7:], dtau_dq[:, 6:], f"state {k}: dtau/dq raw (joints)")
        assert_close(raw[:, 0:3], dtau_dq[:, 0:3], f"state {k}: dtau/dq raw (base position)")


def test_forward_dynamics_and_derivatives_match(evaluated):
    model, states, out = evaluated
    model = model.copy()
    model.armature[:] = np.array(out["dof_armature"])
    data = model.createData()
    nv = model.nv
    for k, (s, r) in enumerate(zip(states, out["results"])):
        q, v, tau = (np.array(s[x]) for x in ("q", "v", "tau"))
        b = Base(q, v, nv)
        tau_pin = b.T.T @ tau
        A = pin.aba(model, data, b.q_pin, b.v_pin, tau_pin)
        assert_close(r["ddq"], b.a_moreau(A), f"state {k}: ddq")
        dq_pin, dv_pin, dtau_pin = (np.array(x) for x in pin.computeABADerivatives(model, data, b.q_pin, b.v_pin, tau_pin))
        Minv = symmetric(dtau_pin)
        # a = T (A(q_pin, v_pin, Tᵀ tau) + (ω × u, 0, 0))
        dV = np.zeros((nv, nv))
        dV[0:3, 3:6] = skew(b.u)
        dTau = np.zeros((nv, nv))  # ∂tau_pin/∂δ
        dTau[0:3, 3:6] = skew(b.R.T @ tau[0:3])
        extra = np.zeros((nv, nv))  # rotation and ω × u terms of the linear rows
        c = A[0:3] + np.cross(b.w, b.u)
        extra[0:3, 3:6] = -b.R @ skew(c) + b.R @ skew(b.w) @ skew(b.u)
        da_dq = b.T @ (dq_pin @ b.T.T + dv_pin @ dV + Minv @ dTau) + extra
        assert_close(r["dddq_dq_tangent"], da_dq, f"state {k}: dddq/dq (tangent)")
        extra_v = np.zeros((nv, nv))
        extra_v[0:3, 0:3] = b.R @ skew(b.w) @ b.R.T
        extra_v[0:3, 3:6] = -b.R @ skew(b.u)
        da_dv = b.T @ dv_pin @ b.T.T + extra_v
        assert_close(r["dddq_dv"], da_dv, f"state {k}: dddq/dv")
        assert_close(r["dddq_dtau"], b.T @ Minv @ b.T.T, f"state {k}: dddq/dtau")
