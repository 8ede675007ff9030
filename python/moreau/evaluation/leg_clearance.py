"""moreau.evaluation.leg_clearance: how close a locomotion policy brings its legs to each other.

    python3 -m moreau.evaluation.leg_clearance results/shac_walk/policy.pt [--contact hard]

moreau's contact has no leg-against-leg collision, so a policy may swing a foot through its
partner's leg; in another simulator or on a robot the legs hit. This runs moreau's evaluation
protocol (moreau.evaluation.evaluate's task: 128 environments × 20 s, seed 1, hard contact) and
counts, over every control step and the left–right foot pairs (LF, RF) and (LH, RH): the
fraction of pair-steps whose foot spheres come within ``--near`` (6 cm) of each other
(centre distance minus both radii), and the fraction in which the legs are crossed (the left
foot's lateral position in the base frame to the right of its partner's).
"""
from __future__ import annotations

import argparse
import json
from typing import Dict

import torch

__all__ = ["leg_clearance", "main"]


def leg_clearance(checkpoint: str, contact: str = "hard", num_envs: int = 128, seconds: float = 20.0, seed: int = 1,
                  near: float = 0.06, sim_threads: int = 1) -> Dict:
    from moreau.tasks.locomotion import quat_rotate_inverse
    from moreau.trainers.checkpoints import load_policy
    from .evaluate import eval_env
    policy = load_policy(checkpoint)
    env = eval_env(policy.meta["env"], "locomotion", num_envs, contact, seed=seed, sim_threads=sim_threads)
    feet = env.feet
    r = env.kinematics.con_radius[feet]
    obs = env.reset()
    close = crossed = pairs = 0
    with torch.no_grad():
        for _ in range(max(1, int(round(seconds / env.dt)))):
            obs, _, _, _ = env.step(policy(obs))
            q = env.q
            x = env.kinematics.contact_positions(q)[:, feet]  # (n, 4, 3), feet LF, RF, LH, RH
            y = quat_rotate_inverse(q[:, None, 3:7].expand(-1, len(feet), 4), x - q[:, None, 0:3])[..., 1]
            for left, right in ((0, 1), (2, 3)):
                gap = (x[:, left] - x[:, right]).norm(dim=1) - r[left] - r[right]
                close += int((gap < near).sum())
                crossed += int((y[:, left] < y[:, right]).sum())
                pairs += q.shape[0]
    return {"checkpoint": checkpoint, "contact": contact, "num_envs": num_envs, "seconds": seconds, "seed": seed,
            "near": near, "pair_steps": pairs, "near_fraction": close / pairs, "crossed_fraction": crossed / pairs}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m moreau.evaluation.leg_clearance", description=__doc__.split("\n")[0])
    p.add_argument("checkpoint")
    p.add_argument("--contact", default="hard")
    p.add_argument("--num-envs", type=int, default=128)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--near", type=float, default=0.06, help="[m] foot-sphere distance counted as near")
    p.add_argument("--json", default=None, metavar="PATH")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    res = leg_clearance(a.checkpoint, a.contact, a.num_envs, a.seconds, a.seed, a.near)
    print(f"{a.checkpoint}: feet within {a.near:g} m in {100 * res['near_fraction']:.2f} % of pair-steps, legs crossed "
          f"in {100 * res['crossed_fraction']:.2f} % ({res['pair_steps']} pair-steps)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
