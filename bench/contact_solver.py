"""The contact solve where feet slide: its sweeps and the step's time on ANYmal C.

    python3 bench/contact_solver.py [--contact hard,smooth] [--envs 256] [--repeats 5]
                                    [--policy results/shac_walk/policy.pt] [--spin-friction 0,0.02]
                                    [--rolling-friction 0,0.01]
                                    [--drives DAMPING,FRICTIONLOSS] [--no-limits] [--json-out PATH]
                                    [--walking-states PATH]

moreau-bench-forward times a standing robot, whose four feet stick: the block Gauss-Seidel
solve then takes about 4 sweeps. This benchmark times state sets where feet slide, lift and
land, each a list of batches of (q, v, action, friction, added base mass):

- standing: 1 s after the default pose, every environment the same;
- holding: the same robot's next second, every 5th control step (its joints' friction-loss rows,
  with ``--drives``, hold it still);
- perturbed: standing, then v + N(0, 0.5²) and action + N(0, 0.3²) per environment (seeded);
- walking: the states along the walk_fast policy's trot (``--policy``) under hard contact,
  moreau.evaluation.evaluate's protocol (commands uniform in the training ranges, pushes), every 5th
  control step of 4 s. The set depends on the build (the trajectory follows its solves):
  ``--walking-states PATH`` loads it from PATH where that file exists and else saves it there,
  so that two builds can be compared on the same states.

``--drives 0.5,0.1`` puts a viscous damping [N m s/rad] and a friction loss [N m] on every leg
joint (the ``trot_transfer`` task's drives): the friction-loss rows then join every solve;
``--no-limits`` takes the joint limits out (their rows join a solve where a joint is within reach
of its limit).

For each set, contact mode, spin friction μ_spin (``--spin-friction``, a list; default 0: none)
and rolling friction μ_roll (``--rolling-friction``, a list; default 0: none) it reports the solve's sweeps per control step (the largest over
its physics steps, ``Simulator.solver_iterations``): mean, median, 99th percentile, max and how
many reached the cap; the mean over groups of 32 environments of their largest count (a CUDA
warp runs as long as its slowest thread); and the stateful step's time per physics step (one
simulator thread, the calling thread's CPU time, so that other work on a shared machine counts
less; the median over ``--repeats`` passes over the set; tables before 2026-12-06 were taken in
wall-clock time).
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import time

import torch

import moreau

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def robot(drives, limits: bool = True):
    """ANYmal C, with (damping, friction loss) on every revolute joint unless drives is None, and
    without its joint limits unless limits."""
    if drives is None and limits:
        return moreau.load(moreau.asset("anymal_c.json"))
    with open(moreau.asset("anymal_c.json")) as f:
        spec = json.load(f)
    for body in spec["bodies"]:
        joint = body.get("joint", {})
        if joint.get("type") == "revolute" and drives is not None:
            joint["damping"], joint["frictionloss"] = drives
        if not limits:
            joint.pop("range", None)
            joint.pop("limited", None)
    return moreau.load_model_from_string(json.dumps(spec), source=moreau.asset("anymal_c.json"))


def standing(model, envs: int):
    sim = moreau.Simulator(model, n_env=envs, contact="hard", n_threads=1)
    sim.step(int(round(1.0 / (sim.model.timestep * sim.model.decimation))))
    return sim.q.clone(), sim.v.clone(), sim.action.clone()


def holding(model, envs: int, seconds: float = 1.0, every: int = 5):
    """The standing robot's next second after standing's, every 5th control step."""
    sim = moreau.Simulator(model, n_env=envs, contact="hard", n_threads=1)
    sim.step(int(round(1.0 / (sim.model.timestep * sim.model.decimation))))
    batches = []
    for t in range(int(round(seconds / (sim.model.timestep * sim.model.decimation)))):
        if t % every == 0:
            batches.append((sim.q.clone(), sim.v.clone(), sim.action.clone(), None, None))
        sim.step(1)
    return batches


def perturbed(model, envs: int, seed: int = 0):
    q, v, a = standing(model, envs)
    g = torch.Generator().manual_seed(seed)
    return [(q, v + 0.5 * torch.randn(v.shape, generator=g, dtype=v.dtype),
             a + 0.3 * torch.randn(a.shape, generator=g, dtype=a.dtype), None, None)]


def walking(envs: int, policy_path: str, seconds: float = 4.0, every: int = 5):
    from moreau.evaluation.evaluate import eval_env
    from moreau.trainers.checkpoints import load_policy
    policy = load_policy(policy_path)
    env = eval_env(policy.meta["env"], "locomotion", envs, "hard", seed=1)
    obs = env.reset()
    batches = []
    with torch.no_grad():
        for t in range(int(round(seconds / env.dt))):
            act = policy(obs)
            if t % every == 0:
                a = act.to(dtype=env.dtype).clamp(-env.cfg.clip_actions, env.cfg.clip_actions)
                batches.append((env.q.clone(), env.v.clone(), env.targets(a).clone(), env.friction.clone(),
                                env.added_base_mass.clone()))
            obs = env.step(act)[0]
    return batches


def run(model, batches, envs: int, contact: str, repeats: int, spin: float = 0.0, roll: float = 0.0):
    sim = moreau.Simulator(model, n_env=envs, contact=contact, n_threads=1, condim=6 if roll > 0 else None)
    sim.set_param("spin_friction", spin)
    sim.set_param("rolling_friction", roll)
    physics = envs * sim.model.decimation * sim.substeps
    passes, sweeps = [], []
    for r in range(repeats + 1):  # the first pass warms up
        spent = 0.0
        for q, v, a, friction, added in batches:
            sim.set_state(q, v)
            sim.action.copy_(a)
            if friction is not None:
                sim.set_param("friction", friction.reshape(-1, 1))
                sim.set_param("added_base_mass", added.reshape(-1, 1))
            t0 = time.thread_time()
            sim.step(1)
            spent += time.thread_time() - t0
            if r == 0:
                sweeps.append(sim.solver_iterations.clone().reshape(-1).float())
        if r > 0:
            passes.append(1e9 * spent / (len(batches) * physics))
    it = torch.cat(sweeps)
    cap = sim.options.contact.max_iterations
    return {"solves": it.numel(), "sweeps_mean": it.mean().item(), "sweeps_median": it.median().item(),
            "sweeps_p99": it.quantile(0.99).item(), "sweeps_max": it.max().item(),
            "at_cap": int((it >= cap).sum()), "warp32_max_mean": it.reshape(-1, 32).max(1).values.mean().item(),
            "ns_per_physics_step": sorted(passes)[len(passes) // 2], "ns_trials": passes}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--contact", default="hard,smooth")
    p.add_argument("--envs", type=int, default=256, help="a multiple of 32")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--policy", default=os.path.join(ROOT, "results", "shac_walk", "policy.pt"),
                   help="'none': no walking set")
    p.add_argument("--spin-friction", default="0", help="comma-separated μ_spin values [m]")
    p.add_argument("--rolling-friction", default="0", help="comma-separated μ_roll values [m]")
    p.add_argument("--drives", default=None, metavar="DAMPING,FRICTIONLOSS",
                   help="damping [N m s/rad] and friction loss [N m] on every leg joint (default: the file's)")
    p.add_argument("--no-limits", action="store_true", help="without the robot file's joint limits")
    p.add_argument("--json-out", default=None)
    p.add_argument("--walking-states", default=None, metavar="PATH",
                   help="load the walking set from PATH if it exists, else save it there")
    a = p.parse_args(argv)
    if a.envs % 32:
        raise SystemExit("contact_solver.py: --envs must be a multiple of 32")
    torch.set_num_threads(1)
    drives = None if a.drives is None else tuple(float(x) for x in a.drives.split(","))
    model = robot(drives, limits=not a.no_limits)
    q, v, act = standing(model, a.envs)
    sets = {"standing": [(q, v, act, None, None)], "holding": holding(model, a.envs),
            "perturbed": perturbed(model, a.envs)}
    if a.policy != "none":
        if a.walking_states and os.path.exists(a.walking_states):
            sets["walking"] = torch.load(a.walking_states)
        else:
            sets["walking"] = walking(a.envs, a.policy)
            if a.walking_states:
                torch.save(sets["walking"], a.walking_states)
    print(f"# {time.strftime('%Y-%m-%d %H:%M')}  {platform.node()}  {os.cpu_count()} CPUs  "
          f"load {os.getloadavg()[0]:.1f}  moreau {moreau.__file__}  drives {drives}  limits {not a.no_limits}")
    print(f"{'contact':8s} {'spin':>5s} {'roll':>5s} {'states':10s} {'solves':>7s} {'mean':>6s} {'median':>6s} {'p99':>5s} {'max':>5s} "
          f"{'at cap':>6s} {'warp max':>8s} {'ns/step':>8s}")
    rows = []
    for contact in a.contact.split(","):
        for spin, roll in itertools.product((float(x) for x in a.spin_friction.split(",")),
                                            [float(x) for x in a.rolling_friction.split(",")]):
            for name, batches in sets.items():
                r = run(model, batches, a.envs, contact, a.repeats, spin, roll)
                r.update(contact=contact, spin_friction=spin, rolling_friction=roll, states=name, envs=a.envs,
                         drives=drives, limits=not a.no_limits, policy=a.policy)
                rows.append(r)
                print(f"{contact:8s} {spin:5.3f} {roll:5.3f} {name:10s} {r['solves']:7d} {r['sweeps_mean']:6.2f} {r['sweeps_median']:6.0f} "
                      f"{r['sweeps_p99']:5.0f} {r['sweeps_max']:5.0f} {r['at_cap']:6d} {r['warp32_max_mean']:8.1f} "
                      f"{r['ns_per_physics_step']:8.0f}", flush=True)
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
