"""moreau.studies.gradients: how useful is each contact model's gradient (the gradient study,
docs/studies.md).

    python3 -m moreau.studies.gradients                      # results/gradients/ (a few minutes)
    python3 -m moreau.studies.gradients --quick --out /tmp/g
    python3 -m moreau.studies.gradients --report             # gradients.csv and .png from gradients.json

For ANYmal under a fixed policy (default: the walk_fast policy, results/shac_walk/policy.pt)
and N start states taken from that policy walking under hard contact (commands, friction and
base mass as in training, 2 s after a reset), the H-step return of each start i,

    J_i(b) = Σ_{t<H} γ^t r_t,   actions a_t = π(o_t) + b,  b ∈ R^12 (an action offset, b = 0),

is differentiated two ways, for every contact model and H:
- analytic: g_i = ∂J_i/∂b through moreau.torch.step's adjoint and the policy's feedback;
- smoothed finite differences: ĝ_i = (1/M) Σ_m (J_i(σε_m) − J_i(−σε_m)) / (2σ) · ε_m with
  ε_m ~ N(0, I) (antithetic), the gradient of the Gaussian-smoothed return E_ε J_i(σε), the
  direction a local search would follow (forward passes of the same contact model).
Reported per model and H (means over the starts): ``cosine`` cos(g_i, ĝ_i); ``fd_cosine`` the
cosine between the two halves of ĝ_i's samples (the estimator's own noise: the ceiling of
``cosine`` is ``fd_ceiling`` = 1/√(1 + (1/c − 1)/2) with c = ``fd_cosine``: the expected cosine
of the exact smoothed gradient with the estimate of all M pairs, whose noise variance is half a
half's); ``rel_variance`` Σ_i |g_i − ḡ|² / (N |ḡ|²), the spread of the analytic gradient over
starts (a batch gradient averages it away only as 1/N); ``grad_norm`` the median |g_i| (an
exploding gradient grows with H); ``fd_norm`` the median |ĝ_i|.
Models: hard, soft, smooth at a few (k [1/m], g_max [m]) and hard_smooth_grad (hard forward,
smooth k = 300 gradient). The rollout has no resets (a fall inside the horizon is in the return).
Writes ``gradients.json``, ``gradients.csv`` and ``gradients.png`` under ``--out``; ``--report``
measures nothing and writes the table and the figure again from ``gradients.json``.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import time
from typing import Dict, List, Tuple

import torch

from ..evaluation.evaluate import eval_env
from ..trainers.checkpoints import load_policy
from ..trainers.normalization import normalize

__all__ = ["MODELS", "study_env", "start_states", "returns", "measure", "write_tables", "main"]

# name -> (contact mode, {sim param: value})
MODELS: Dict[str, Tuple[str, Dict[str, float]]] = {
    "hard": ("hard", {}),
    "soft": ("soft", {}),
    "smooth k=100": ("smooth", {"smooth_k": 100.0}),
    "smooth k=300": ("smooth", {"smooth_k": 300.0}),
    "smooth k=1000": ("smooth", {"smooth_k": 1000.0}),
    "smooth k=100 gmax=0.05": ("smooth", {"smooth_k": 100.0, "smooth_gmax": 0.05}),
    "hard_smooth_grad": ("hard_smooth_grad", {"smooth_k": 300.0}),
}


def study_env(meta: Dict, n: int, contact: str, params: Dict[str, float]):
    """``n`` environments of a checkpoint's task (``meta``: its policy's ``meta["env"]``) under
    ``contact`` with the simulator parameters ``params``, no pushes (seed 0)."""
    env = eval_env(meta, "locomotion", n, contact, seed=0, sim_threads=1, push=False)
    for k, v in params.items():
        env.sim.set_param(k, [v])
    return env


@torch.no_grad()
def start_states(policy, meta: Dict, n: int, seconds: float = 2.0, seed: int = 1) -> Dict[str, torch.Tensor]:
    """The states (q, v, last action, gait phase, command, friction, added base mass) of ``n``
    environments after ``seconds`` of ``policy`` under hard contact from a reset."""
    env = study_env(meta, n, "hard", {})
    env.seed(seed)
    obs = env.reset()
    for _ in range(int(round(seconds / env.dt))):
        obs, _, _, _ = env.step(policy(obs))
    return {"q": env.q.clone(), "v": env.v.clone(), "last": env.last_actions.clone(),
            "phase": env.gait_phase.clone(), "cmd": env.commands.clone(), "friction": env.friction.clone(),
            "mass": env.added_base_mass.clone()}


def returns(env, policy, s: Dict[str, torch.Tensor], bias: torch.Tensor, horizons: List[int],
            gamma: float) -> Dict[int, torch.Tensor]:
    """J_i for each H in ``horizons`` (one rollout of max(H) steps from the start states ``s``,
    repeated to ``env.num_envs`` rows; ``bias`` (num_envs, 12) added to the policy's actions),
    differentiable in ``bias``."""
    from .. import torch as mt
    reps = env.num_envs // s["q"].shape[0]
    q, v, last, phase, cmd, fr, mass = (s[k].repeat(reps, *([1] * (s[k].dim() - 1)))
                                        for k in ("q", "v", "last", "phase", "cmd", "friction", "mass"))
    c = env.cfg
    zero = torch.zeros(env.num_envs, dtype=torch.bool)
    obs = env.compute_observations(q, v, cmd, last, phase)
    ret = torch.zeros(env.num_envs, dtype=q.dtype)
    out = {}
    for t in range(max(horizons)):
        a = (policy.actor(normalize(obs, policy.stats)) + bias).clamp(-c.clip_actions, c.clip_actions)
        q1, v1 = mt.step(env.sim, q, v, env.targets(a), friction=fr, added_base_mass=mass)
        phase = torch.remainder(phase + c.gait_frequency * env.dt, 1.0)
        r = env.combine_rewards(env.reward_terms(q, v, q1, v1, a, last, cmd, zero, phase))
        ret = ret + gamma ** t * r
        q, v, last = q1, v1, a
        obs = env.compute_observations(q, v, cmd, last, phase)
        if t + 1 in horizons:
            out[t + 1] = ret
    return out


def _cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1)).clamp_min(1e-30)


def measure(policy, meta: Dict, s: Dict[str, torch.Tensor], contact: str, params: Dict[str, float],
            horizons: List[int], pairs: int = 32, sigma: float = 0.05, gamma: float = 0.99,
            seed: int = 0) -> List[Dict]:
    """The metrics of the module docstring for one contact model, one row per H."""
    n, nu = s["q"].shape[0], 12
    env = study_env(meta, n, contact, params)
    rows = []
    t0 = time.perf_counter()
    grads = {}
    for h in horizons:  # analytic: one rollout per H (the backward of each)
        b = torch.zeros(n, nu, requires_grad=True)
        j = returns(env, policy, s, b, [h], gamma)[h]
        (g,) = torch.autograd.grad(j.sum(), b)
        grads[h] = g
    t_analytic = time.perf_counter() - t0
    gen = torch.Generator().manual_seed(seed)
    eps = torch.randn(pairs, n, nu, generator=gen)
    fd_env = study_env(meta, n * 2 * pairs, contact, params)
    t0 = time.perf_counter()
    with torch.no_grad():  # rows: (+ε_1, ..., +ε_M, −ε_1, ..., −ε_M), each a block of n starts
        bias = sigma * torch.cat([eps, -eps]).reshape(2 * pairs * n, nu)
        js = returns(fd_env, policy, s, bias, horizons, gamma)
    t_fd = time.perf_counter() - t0
    for h in horizons:
        jp, jm = js[h].reshape(2, pairs, n)
        per = ((jp - jm) / (2 * sigma))[..., None] * eps  # (M, n, 12)
        fd = per.mean(0)
        half = pairs // 2
        g = grads[h]
        gbar = g.mean(0)
        c_half = float(_cos(per[:half].mean(0), per[half:].mean(0)).mean())
        rows.append({
            "horizon": h, "cosine": float(_cos(g, fd).mean()),
            "fd_cosine": c_half,
            "fd_ceiling": 1.0 / math.sqrt(1.0 + (1.0 / c_half - 1.0) / 2.0) if c_half > 0 else 0.0,
            "rel_variance": float(((g - gbar) ** 2).sum(1).mean() / gbar.pow(2).sum().clamp_min(1e-30)),
            "grad_norm": float(g.norm(dim=1).median()), "fd_norm": float(fd.norm(dim=1).median()),
            "finite": bool(torch.isfinite(g).all() and torch.isfinite(fd).all()),
            "seconds_analytic": t_analytic, "seconds_fd": t_fd})
    return rows


def plot(path: str, table: Dict[str, List[Dict]]) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    for name, rows in table.items():
        hs = [r["horizon"] for r in rows]
        axes[0].plot(hs, [r["cosine"] for r in rows], "o-", ms=3, label=name)
        axes[1].plot(hs, [r["rel_variance"] for r in rows], "o-", ms=3, label=name)
        axes[2].plot(hs, [r["grad_norm"] for r in rows], "o-", ms=3, label=name)
    first = next(iter(table.values()))
    axes[0].plot([r["horizon"] for r in first], [r["fd_ceiling"] for r in first], "k:", lw=1,
                 label=f"FD noise ceiling ({next(iter(table))})")
    for ax, label in zip(axes, ("cos(analytic, smoothed FD)", "relative variance over starts",
                                "median |∂J/∂b|")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("horizon H [control steps]")
        ax.set_ylabel(label)
    axes[1].set_yscale("log")
    axes[2].set_yscale("log")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_tables(out: str, table: Dict[str, List[Dict]]) -> None:
    """``gradients.csv`` (one row per model and H) and ``gradients.png`` of ``table`` (gradients.json's "results")."""
    with open(os.path.join(out, "gradients.csv"), "w", newline="") as f:
        w = csv.writer(f)
        keys = list(next(iter(table.values()))[0])
        w.writerow(["model"] + keys)
        for name, rows in table.items():
            for r in rows:
                w.writerow([name] + [r[k] for k in keys])
    plot(os.path.join(out, "gradients.png"), table)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m moreau.studies.gradients", description=__doc__.split("\n\n")[0])
    p.add_argument("--policy", default="results/shac_walk/policy.pt")
    p.add_argument("--out", default="results/gradients")
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    p.add_argument("--horizons", nargs="+", type=int, default=[1, 2, 4, 8, 16, 32, 64])
    p.add_argument("--starts", type=int, default=32, help="N start states")
    p.add_argument("--pairs", type=int, default=32, help="M antithetic perturbation pairs per start")
    p.add_argument("--sigma", type=float, default=0.05, help="perturbation scale of the action offset")
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--quick", action="store_true", help="4 starts, 4 pairs, H 1 and 4, hard and smooth")
    p.add_argument("--report", action="store_true", help="measure nothing: gradients.csv and gradients.png from "
                   "--out/gradients.json")
    a = p.parse_args(argv)
    if a.report:
        with open(os.path.join(a.out, "gradients.json")) as f:
            write_tables(a.out, json.load(f)["results"])
        print(f"results: {a.out}")
        return 0
    if a.quick:
        a.starts, a.pairs, a.horizons = 4, 4, [1, 4]
        a.models = [m for m in a.models if m in ("hard", "smooth k=300")] or ["hard", "smooth k=300"]
    torch.set_num_threads(1)
    policy = load_policy(a.policy)
    meta = policy.meta["env"]
    s = start_states(policy, meta, a.starts)
    table = {}
    for name in a.models:
        contact, params = MODELS[name]
        table[name] = measure(policy, meta, s, contact, params, sorted(a.horizons), a.pairs, a.sigma, a.gamma)
        for r in table[name]:
            print(f"{name:24s} H {r['horizon']:3d}: cos {r['cosine']:+.3f} (FD ceiling {r['fd_ceiling']:+.3f}), "
                  f"rel. variance {r['rel_variance']:.3g}, |g| {r['grad_norm']:.3g}, |FD| {r['fd_norm']:.3g}",
                  flush=True)
    os.makedirs(a.out, exist_ok=True)
    proto = {"policy": a.policy, "starts": a.starts, "pairs": a.pairs, "sigma": a.sigma, "gamma": a.gamma,
             "horizons": sorted(a.horizons), "models": {m: MODELS[m] for m in a.models}}
    with open(os.path.join(a.out, "gradients.json"), "w") as f:
        json.dump({"protocol": proto, "results": table}, f, indent=1)
    write_tables(a.out, table)
    print(f"results: {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
