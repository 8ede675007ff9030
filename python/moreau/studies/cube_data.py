"""moreau.studies.cube_data: Study A's data (the cube study, docs/studies.md): batched cube
tosses under every contact setting, motion-capture noise, datasets on disk.

The cube (assets/robots/cube.json: 0.10 m, 0.37 kg, inertia 6.167e-4·I, box contact: its 8
corners), time step 0.00674 s, μ = 1. Toss j starts from the reference state perturbed by
U(±0.1) on position, linear and angular velocity and by a rotation of U(±1) rad about a random
axis (``initial_states``); all tosses of one setting are one batched simulation of 500 steps
(float64), cut at rest (``rest_index``).

Settings (``SETTINGS``): soft (penalty) contact at MuJoCo's stiffnesses {100, 300, 2500}
converted to N/m (``mujoco_to_penalty``) and at 1e3–1e6 N/m, critically damped; hard contact;
smooth contact at k ∈ {100, 300, 1000} 1/m.

Stiffness conversion. MuJoCo's "stiffness" k [1/s²] is an acceleration-level reference
a_ref = −k r − b ṙ with critical damping b = 2 √k: the contact time constant τ = 1/√k
(0.10, 0.058, 0.02 s for 100, 300, 2500). A cube lying on a face rests on 4 corners; pushed
straight down it is a mass m on 4 parallel spring-dampers, so ω = √(4 k_n / m) and
ζ = 4 k_d / (2 √(4 k_n m)). The same τ and ζ = 1 give

    k_n = m k / 4 [N/m per corner],   k_d = (m / 2) √k [N s/m per corner]

(9.25, 27.75, 231.25 N/m for 100, 300, 2500; the damping is set per corner with
``contact_kd``, since moreau's ``contact_zeta`` is relative to one point's effective mass).
The static sink is then m g / (4 k_n) = g / k (9.8, 3.3, 0.39 cm): MuJoCo's soft constraint
sinks less (its impedance d ≈ 0.95 mixes the reference with the unconstrained acceleration),
so only the time constant, not the sink, is matched. For the stiffer settings k_d follows
from the same ζ = 1: k_d = 2 √(k_n m / 4). moreau's penalty damper acts only while the
corner approaches (f_n = k_n (−g) − k_d min(v_n, 0), docs/contact.md): a compression from
rest follows the critically damped x(t) = v₀ t e^{−t/τ} exactly to its deepest point at t = τ
(the test), and the rebound is undamped, so the penalty cube bounces more than MuJoCo's.

Noise (``add_noise``), as motion capture: per toss a constant offset, U(±2 mm) per position
axis and a rotation of U(±2°) about a random axis; per sample U(±0.02 mm) and U(±0.02°) the
same way; velocities are then recomputed from the noisy poses by backward differences
(v_t = (p_t − p_{t−1}) / h, ω_t = log(q_{t−1}⁻¹ q_t) / h in the body frame), so a sample is
(p, quat, v, ω_body), 13 values, and the first pose of each toss is dropped.

Datasets: ``<data>/<setting>.npz`` with ``states`` (n, T, 13) float32 (noisy), ``clean`` (the
simulator's states), ``lengths`` (n,) and the toss indices; ``<data>/manifest.json`` lists
every setting with its parameters, toss count, generation time and seed. Existing files are
reused (``make_datasets``).
"""
from __future__ import annotations

import json
import math
import os
import time
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch

__all__ = ["MASS", "DT", "REFERENCE", "SETTINGS", "mujoco_to_penalty", "lowest_corner", "initial_states", "simulate",
           "substeps", "rest_index", "add_noise", "quat_mul", "quat_exp", "quat_log", "make_datasets", "load_dataset"]

MASS = 0.37          # [kg]
DT = 0.00674         # [s] (148 Hz)
STEPS = 500
FRICTION = 1.0
G = 9.81
# reference toss (docs/studies.md): position, quaternion (w, x, y, z), linear velocity, angular velocity (world)
REFERENCE = dict(p=(0.18629883, 0.02622872, 0.12283257), quat=(-0.52503014, 0.39360754, -0.29753734, -0.67794127),
                 v=(0.01438053, 1.29095332, -0.21252927), w=(1.46313532, -4.85439428, 9.86961928))


def mujoco_to_penalty(k: float, mass: float = MASS) -> Tuple[float, float]:
    """(k_n [N/m], k_d [N s/m]) per corner of the penalty model with MuJoCo stiffness k's contact
    time constant 1/√k and critical damping (module docstring)."""
    return mass * k / 4.0, 0.5 * mass * math.sqrt(k)


def _critical_kd(kn: float, mass: float = MASS) -> float:
    return 2.0 * math.sqrt(kn * mass / 4.0)


def _settings() -> Dict[str, Dict]:
    out = {}
    for k in (100, 300, 2500):
        kn, kd = mujoco_to_penalty(k)
        out[f"soft_mj{k}"] = {"contact": "soft", "contact_kn": kn, "contact_kd": kd, "mujoco_stiffness": k}
    for kn in (1e3, 1e4, 1e5, 1e6):
        out[f"soft_{kn:.0e}".replace("+0", "")] = {"contact": "soft", "contact_kn": kn, "contact_kd": _critical_kd(kn)}
    out["hard"] = {"contact": "hard"}
    for k in (100, 300, 1000):
        out[f"smooth_k{k}"] = {"contact": "smooth", "smooth_k": float(k)}
    return out


SETTINGS: Dict[str, Dict] = _settings()


# ---- quaternions (w, x, y, z) ---------------------------------------------------------------
def quat_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    aw, ax, ay, az = a.unbind(-1)
    bw, bx, by, bz = b.unbind(-1)
    return torch.stack([aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
                        aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw], -1)


def quat_exp(r: torch.Tensor) -> torch.Tensor:
    """The unit quaternion of rotation vector r (..., 3): rotation by |r| about r/|r|."""
    angle = r.norm(dim=-1, keepdim=True)
    half = 0.5 * angle
    # sin(|r|/2)/|r| with its limit 1/2 at 0
    s = torch.where(angle > 1e-12, torch.sin(half) / angle.clamp_min(1e-12), 0.5 - angle ** 2 / 48.0)
    return torch.cat([torch.cos(half), s * r], -1)


def quat_log(q: torch.Tensor) -> torch.Tensor:
    """The rotation vector (..., 3) of unit quaternion q, angle in [0, π] (q and −q alike)."""
    q = torch.where(q[..., :1] < 0, -q, q)
    u = q[..., 1:]
    s = u.norm(dim=-1, keepdim=True)
    angle = 2.0 * torch.atan2(s, q[..., :1])
    return torch.where(s > 1e-12, angle / s.clamp_min(1e-12), 2.0 / q[..., :1].clamp_min(1e-12)) * u


def _random_axes(n: int, gen: torch.Generator) -> torch.Tensor:
    a = torch.randn(n, 3, generator=gen, dtype=torch.float64)
    return a / a.norm(dim=1, keepdim=True)


def _uniform(gen, lo, hi, *shape) -> torch.Tensor:
    return lo + (hi - lo) * torch.rand(*shape, generator=gen, dtype=torch.float64)


HALF = 0.05  # [m] half edge
CORNERS = torch.tensor([[x, y, z] for x in (-HALF, HALF) for y in (-HALF, HALF) for z in (-HALF, HALF)],
                       dtype=torch.float64)


def lowest_corner(q: torch.Tensor) -> torch.Tensor:
    """Height of each pose's lowest corner (n,), poses q (n, 7)."""
    from ..tasks.locomotion import quat_rotate
    n = q.shape[0]
    c = quat_rotate(q[:, None, 3:7].expand(n, 8, 4), CORNERS.expand(n, 8, 3))
    return q[:, 2] + c[..., 2].min(1).values


def initial_states(n: int, seed: int = 0) -> Tuple[torch.Tensor, torch.Tensor]:
    """(q (n, 7), v (n, 6)) of ``n`` tosses: the reference perturbed as the protocol says (v[3:6]
    in the body frame, moreau's free-joint convention). Draws that put a corner below the
    ground (the reference is 0.123 m up and the perturbation reaches 0.1 m: about 20 % do) are
    drawn again, so every toss starts in the air. Candidates come from one generator in blocks
    of 1024, so the first n tosses of a larger set are the same tosses."""
    from ..tasks.locomotion import quat_rotate_inverse
    gen = torch.Generator().manual_seed(seed)
    r = REFERENCE
    qs, vs, have = [], [], 0
    while have < n:
        m = 1024
        p = torch.tensor(r["p"], dtype=torch.float64) + _uniform(gen, -0.1, 0.1, m, 3)
        v = torch.tensor(r["v"], dtype=torch.float64) + _uniform(gen, -0.1, 0.1, m, 3)
        w = torch.tensor(r["w"], dtype=torch.float64) + _uniform(gen, -0.1, 0.1, m, 3)
        rot = quat_exp(_random_axes(m, gen) * _uniform(gen, -1.0, 1.0, m, 1))
        quat = quat_mul(rot, torch.tensor(r["quat"], dtype=torch.float64).expand(m, 4))
        quat = quat / quat.norm(dim=1, keepdim=True)
        q = torch.cat([p, quat], 1)
        ok = lowest_corner(q) > 0.0
        qs.append(q[ok])
        vs.append(torch.cat([v, quat_rotate_inverse(quat, w)], 1)[ok])
        have += int(ok.sum())
    return torch.cat(qs)[:n], torch.cat(vs)[:n]


def substeps(setting: Dict, phase: float = 0.05) -> int:
    """Physics substeps per sample: soft contact advances the flat cube's contact mode ω = √(4 k_n / m)
    by at most ``phase`` rad per substep (moreau's automatic rule bounds the spring alone, at
    0.5 rad of one corner's mode, which leaves the explicit damper's decay per substep
    2ζωh too coarse to keep the time constant); 0 (automatic) for the other models."""
    if setting["contact"] != "soft":
        return 0
    return max(1, math.ceil(DT * math.sqrt(4.0 * setting["contact_kn"] / MASS) / phase))


def simulate(setting: Dict, q0: torch.Tensor, v0: torch.Tensor, steps: int = STEPS,
             n_threads: int = 1) -> torch.Tensor:
    """States (n, steps + 1, 13) = (q, v) of every toss from (q0, v0) under ``setting`` (one
    batched float64 simulation)."""
    import moreau
    n = q0.shape[0]
    sim = moreau.Simulator(moreau.asset("cube.json"), n_env=n, dtype=torch.float64, contact=setting["contact"],
                           timestep=DT, decimation=1, n_threads=n_threads, substeps=substeps(setting))
    sim.set_param("friction", [FRICTION])
    for k in ("contact_kn", "contact_kd", "smooth_k"):
        if k in setting:
            sim.set_param(k, [setting[k]])
    sim.set_state(q0, v0)
    out = torch.empty(n, steps + 1, 13, dtype=torch.float64)
    out[:, 0, :7], out[:, 0, 7:] = q0, v0
    for t in range(steps):
        sim.step()
        out[:, t + 1, :7], out[:, t + 1, 7:] = sim.q, sim.v
    if not bool(torch.isfinite(out).all()):
        bad = (~torch.isfinite(out).all(2).all(1)).nonzero().flatten().tolist()
        raise RuntimeError(f"cube toss: non-finite states in tosses {bad[:10]} (setting {setting})")
    return out


def rest_index(states: torch.Tensor, speed: float = 0.01, rate: float = 0.1, hold: int = 10) -> torch.Tensor:
    """Per toss (n,), the number of samples to keep: up to the first sample after which the
    cube stays at rest (|v| < ``speed`` m/s and |ω| < ``rate`` rad/s) for ``hold`` samples, plus
    those ``hold`` samples; the whole toss if it never rests."""
    v = states[..., 7:10].norm(dim=-1)
    w = states[..., 10:13].norm(dim=-1)
    still = (v < speed) & (w < rate)
    n, t = still.shape
    # still for the next `hold` samples, from each sample on
    run = torch.stack([still[:, i:t - hold + 1 + i] for i in range(hold)]).all(0)
    first = torch.where(run.any(1), run.float().argmax(1), torch.full((n,), t, dtype=torch.long))
    return torch.clamp(first + hold, max=t)


def add_noise(states: torch.Tensor, seed: int = 0, offset_pos: float = 2e-3, offset_deg: float = 2.0,
              sample_pos: float = 2e-5, sample_deg: float = 0.02) -> torch.Tensor:
    """Noisy samples (n, T − 1, 13) of clean states (n, T, 13) (module docstring)."""
    gen = torch.Generator().manual_seed(seed)
    n, t, _ = states.shape
    p, quat = states[..., 0:3], states[..., 3:7]
    p = p + _uniform(gen, -offset_pos, offset_pos, n, 1, 3) + _uniform(gen, -sample_pos, sample_pos, n, t, 3)
    off = quat_exp(_random_axes(n, gen) * _uniform(gen, -1, 1, n, 1) * math.radians(offset_deg))[:, None]
    per = quat_exp(_random_axes(n * t, gen).reshape(n, t, 3) * _uniform(gen, -1, 1, n, t, 1)
                   * math.radians(sample_deg))
    quat = quat_mul(quat_mul(off.expand(n, t, 4), quat), per)
    quat = quat / quat.norm(dim=-1, keepdim=True)
    v = (p[:, 1:] - p[:, :-1]) / DT
    w = quat_log(quat_mul(_conj(quat[:, :-1]), quat[:, 1:])) / DT  # body frame
    return torch.cat([p[:, 1:], quat[:, 1:], v, w], -1)


def _conj(q: torch.Tensor) -> torch.Tensor:
    return q * torch.tensor([1.0, -1.0, -1.0, -1.0], dtype=q.dtype)


def make_datasets(data: str, settings: Optional[List[str]] = None, n: int = 11000, seed: int = 0,
                  n_threads: int = 1, progress: bool = True) -> Dict:
    """Writes ``<data>/<setting>.npz`` for every setting not there yet (same tosses, same noise
    seed, for every setting) and the manifest; returns the manifest."""
    os.makedirs(data, exist_ok=True)
    path = os.path.join(data, "manifest.json")
    manifest = json.load(open(path)) if os.path.exists(path) else {"settings": {}}
    q0, v0 = initial_states(n, seed)
    names = settings or list(SETTINGS)
    bar = None
    if progress:
        try:
            from tqdm import tqdm
            bar = tqdm(names, desc="tosses", dynamic_ncols=True)
        except ImportError:
            pass
    for name in names:
        f = os.path.join(data, f"{name}.npz")
        done = manifest["settings"].get(name)
        if not (os.path.exists(f) and done and done["tosses"] == n and done["seed"] == seed):
            t0 = time.perf_counter()
            clean = simulate(SETTINGS[name], q0, v0, n_threads=n_threads)
            seconds = time.perf_counter() - t0
            lengths = rest_index(clean)
            noisy = add_noise(clean, seed=seed + 1)
            np.savez_compressed(f, states=noisy.float().numpy(), clean=clean[:, 1:].float().numpy(),
                                lengths=(lengths - 1).clamp_min(1).numpy())
            manifest["settings"][name] = {**SETTINGS[name], "tosses": n, "seed": seed, "steps": STEPS, "dt": DT,
                                          "seconds": seconds, "tosses_per_second": n / seconds,
                                          "mean_length": float(lengths.double().mean())}
            with open(path + ".tmp", "w") as fh:
                json.dump(manifest, fh, indent=1)
            os.replace(path + ".tmp", path)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return manifest


def load_dataset(data: str, name: str) -> Dict[str, np.ndarray]:
    with np.load(os.path.join(data, f"{name}.npz")) as z:
        return {k: z[k] for k in z.files}
