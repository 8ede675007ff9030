#!/usr/bin/env python3
"""Python overhead of one control step, and where a SHAC iteration's time goes (CPU).

    python3 bench/python_overhead.py [--n-env 4096] [--rounds 7] [--shac-envs 1024]
    python3 bench/python_overhead.py --skip-steps --shac-preset walk --shac-envs 256 --sim-threads 1

Part 1 — one control step at ``--n-env`` environments (ANYmal C, hard contact, standing; and
the cart-pole, no contact, where the step itself is cheapest and any overhead shows most),
timed as the median over interleaved rounds of the per-step time of:

  direct step        sim._sim.step(1)               the C++ Simulator::step through the extension, in place
  direct step_pure   sim._sim.step_pure(q, v, a, ...) with preallocated field-major outputs
  Simulator.step     the Python wrapper of the in-place step
  mt.step no_grad    moreau.torch.step under torch.no_grad()
  mt.step grad       moreau.torch.step with inputs that require grad (forward; the graph is recorded)
  direct adjoint     sim._sim.step_adjoint(...) with preallocated outputs
  mt.step backward   torch.autograd.backward through one moreau.torch.step (outputs' adjoints given)

Overhead = time / (the direct call of the same C++ work) − 1; target ≤ 10 %.

Part 2 — one SHAC iteration (moreau.trainers.shac, default configuration, H = 32) on the cart-pole at
``--n-env`` and on the quadruped (smooth contact) at ``--shac-envs``, split into simulation
forward (Simulator::step_pure inside moreau.torch.step), simulation backward
(Simulator::step_adjoint), the rest of the environment step (rewards, observations, resets in
torch), the policy and value calls of the rollout, the rest of the actor's backward (networks,
rewards), and the critic's training. The C++ calls are timed by a proxy around the extension
object. torch runs on 1 intra-op thread (moreau.trainers.shac's command-line default), the simulator
on all cores.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

import torch

import moreau
import moreau.torch as mt
from moreau._checks import empty_field_major


def _timeit(fn, steps):
    t = time.perf_counter()
    for _ in range(steps):
        fn()
    return (time.perf_counter() - t) / steps


def step_overhead(robot: str, contact: str, n_env: int, rounds: int, steps: int, bwd_steps: int):
    sim = moreau.Simulator(moreau.asset(robot), n_env=n_env, contact=contact)
    if robot == "anymal_c.json":
        sim.action[:] = torch.tensor(sim.model.qpos0, dtype=sim.dtype)[torch.tensor(sim.model.actuator_qposadr)]
    sim.step(25)  # settle (standing)
    q, v = sim.get_state()
    q, v = q.t().contiguous().t(), v.t().contiguous().t()
    a = sim.action.clone().t().contiguous().t()
    n = sim.n_env
    qo, vo = empty_field_major(n, sim.nq, dtype=sim.dtype, device="cpu"), empty_field_major(n, sim.nv, dtype=sim.dtype, device="cpu")
    st = empty_field_major(n, 1, dtype=torch.int32, device="cpu")
    gq, gv = empty_field_major(n, sim.nq, dtype=sim.dtype, device="cpu"), empty_field_major(n, sim.nv, dtype=sim.dtype, device="cpu")
    gu = empty_field_major(n, sim.nu, dtype=sim.dtype, device="cpu")
    adj_q = torch.ones((sim.nq, n), dtype=sim.dtype).t()
    adj_v = torch.ones((sim.nv, n), dtype=sim.dtype).t()
    qg, vg, ag = (x.clone().requires_grad_() for x in (q, v, a))

    def direct_step():
        sim.set_state(q, v)  # not timed separately: see below (the same copy in both)
        sim._sim.step(1)

    def wrapper_step():
        sim.set_state(q, v)
        sim.step()

    def direct_pure():
        sim._sim.step_pure(q, v, a, qo, vo, st)

    def mt_nograd():
        with torch.no_grad():
            mt.step(sim, q, v, a)

    def mt_grad():
        mt.step(sim, qg, vg, ag)

    def direct_adjoint():
        sim._sim.step_adjoint(q, v, a, adj_q, adj_v, gq, gv, gu, st)

    def mt_backward():
        q1, v1 = mt.step(sim, qg, vg, ag)
        t = time.perf_counter()
        torch.autograd.backward((q1, v1), (adj_q, adj_v))
        return time.perf_counter() - t

    def set_state_only():
        sim.set_state(q, v)

    fwd = {"direct step": direct_step, "Simulator.step": wrapper_step, "direct step_pure": direct_pure,
           "mt.step no_grad": mt_nograd, "mt.step grad": mt_grad, "set_state copy": set_state_only}
    res = {k: [] for k in list(fwd) + ["direct adjoint", "mt.step backward"]}
    for f in fwd.values():  # warm-up
        f()
    direct_adjoint()
    mt_backward()
    for _ in range(rounds):
        for k, f in fwd.items():
            res[k].append(_timeit(f, steps))
        res["direct adjoint"].append(_timeit(direct_adjoint, bwd_steps))
        res["mt.step backward"].append(sum(mt_backward() for _ in range(bwd_steps)) / bwd_steps)
    med = {k: statistics.median(x) for k, x in res.items()}
    # the in-place steps include a state copy (to step the same state every time): subtract it
    for k in ("direct step", "Simulator.step"):
        med[k] -= med["set_state copy"]
    return med


def shac_breakdown(task: str, contact, n_env: int, iterations: int, preset=None, sim_threads: int = 0):
    """Per-iteration times of SHAC on ``task`` (or the SHAC preset ``preset``: its task
    preset and SHAC settings); the simulator's share from moreau.torch.timing."""
    from moreau.tasks import make_env
    from moreau.tasks.presets import SHAC_DEFAULTS, SHAC_PRESETS, TASK_PRESETS
    from moreau.trainers.shac import SHAC, SHACConfig

    task_kw = dict(TASK_PRESETS[SHAC_PRESETS[preset]["task_preset"]]) if preset else {}
    env = make_env(task, n_env, contact=contact, seed=0, n_threads=sim_threads, **task_kw)
    cfg = SHACConfig(**(SHAC_PRESETS[preset]["shac"] if preset else SHAC_DEFAULTS[task]))
    agent = SHAC(env, cfg, progress=False)
    agent.iteration()  # warm-up
    sim0 = dict(mt.timing)
    agent.timers.clear()
    for _ in range(iterations):
        agent.iteration()
    timers = {"step_pure": mt.timing["forward"] - sim0["forward"], "step_adjoint": mt.timing["adjoint"] - sim0["adjoint"]}
    tm = {k: v / iterations for k, v in agent.timers.items()}
    sim_f, sim_b = timers["step_pure"] / iterations, timers["step_adjoint"] / iterations
    return {
        "iteration": tm["iteration"],
        "sim forward (step_pure)": sim_f,
        "env step rest (torch: rewards, obs, resets, wrapper)": tm["env_step"] - sim_f,
        "policy + values in the rollout": tm["policy"],
        "sim backward (step_adjoint)": sim_b,
        "actor backward rest (networks, rewards, autograd)": tm["backward"] - sim_b,
        "actor update (clip, Adam)": tm["actor_update"],
        f"critic training (TD(λ), {cfg.critic_iterations} × {cfg.critic_minibatches} minibatches)": tm["critic"],
        "_samples": cfg.horizon * n_env,
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n-env", type=int, default=4096)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--shac-envs", type=int, default=1024)
    p.add_argument("--shac-iterations", type=int, default=2)
    p.add_argument("--skip-shac", action="store_true")
    p.add_argument("--shac-preset", default=None, help="a SHAC preset (moreau.tasks.presets) for the quadruped (e.g. walk: the trot "
                   "task at --shac-envs environments)")
    p.add_argument("--skip-steps", action="store_true", help="only the SHAC breakdown")
    p.add_argument("--sim-threads", type=int, default=0, help="simulator threads of the SHAC breakdown (0 = all)")
    a = p.parse_args()
    torch.set_num_threads(1)
    print(f"# {time.strftime('%Y-%m-%d %H:%M')}  {platform.node()}  {platform.processor() or platform.machine()}  "
          f"{os.cpu_count()} CPUs  load {os.getloadavg()[0]:.1f}  torch {torch.__version__}  python {sys.version.split()[0]}")
    print(f"# command: python3 {' '.join(sys.argv)}")
    for robot, contact, steps, bsteps in (() if a.skip_steps else (("anymal_c.json", "hard", 5, 2),
                                                                       ("cartpole.json", "none", 50, 20))):
        med = step_overhead(robot, contact, a.n_env, a.rounds, steps, bsteps)
        print(f"\n## one control step, {robot} ({contact}), {a.n_env} envs, float32, median of {a.rounds} rounds\n")
        print("| call | µs / step | overhead |")
        print("|---|--:|--:|")
        base = {"direct step": None, "Simulator.step": "direct step", "direct step_pure": None,
                "mt.step no_grad": "direct step_pure", "mt.step grad": "direct step_pure",
                "direct adjoint": None, "mt.step backward": "direct adjoint"}
        for k, ref in base.items():
            ov = f"{100 * (med[k] / med[ref] - 1):+.1f} % vs {ref}" if ref else "—"
            print(f"| {k} | {1e6 * med[k]:.1f} | {ov} |")
        print(f"| (mt.step no_grad vs direct step) | | {100 * (med['mt.step no_grad'] / med['direct step'] - 1):+.1f} % |")
        print(f"| (set_state copy, subtracted from the in-place rows) | {1e6 * med['set_state copy']:.1f} | |")
        sys.stdout.flush()
    if a.skip_shac:
        return
    cases = [("cartpole", None, a.n_env), ("locomotion", "smooth", a.shac_envs)]
    for task, contact, n in cases[1:] if a.shac_preset else cases:
        b = shac_breakdown(task, contact, n, a.shac_iterations, a.shac_preset if task == "locomotion" else None,
                           a.sim_threads)
        samples = b.pop("_samples")
        it = b.pop("iteration")
        name = f"preset {a.shac_preset}" if a.shac_preset and task == "locomotion" else task
        print(f"\n## SHAC iteration, {name}{' (' + contact + ')' if contact else ''}, {n} envs, H = 32: "
              f"{it:.3f} s ({samples / it:,.0f} env-steps/s), mean of {a.shac_iterations}\n")
        print("| part | s / iteration | share |")
        print("|---|--:|--:|")
        for k, v in b.items():
            print(f"| {k} | {v:.4f} | {100 * v / it:.1f} % |")
        rest = it - sum(b.values())
        print(f"| other | {rest:.4f} | {100 * rest / it:.1f} % |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
