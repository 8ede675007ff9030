"""One rank of the data-parallel runs of test_distributed.py (started by torchrun; also imported
by the test for the single-process references).

    torchrun --standalone --nproc_per_node 2 python/tests/distributed_worker.py shac OUT
    torchrun --standalone --nproc_per_node 2 python/tests/distributed_worker.py ppo OUT

Each rank writes OUT/<mode>_rank<r>.pt: what the test compares between ranks and with one process.
"""
import json
import os
import sys

import torch

from moreau.evaluation.metrics import episode_return
from moreau.tasks.cartpole import CartPole
from moreau.trainers import distributed
from moreau.trainers.shac import SHAC, SHACConfig

N_STEP = 16   # cart-poles in all in the one-iteration comparison, split over the ranks
N_LEARN = 32  # ... in the learning runs (test_shac's short run uses 32 in one process)


def cfg(**kw):
    base = dict(horizon=32, iterations=30, critic_iterations=8, critic_minibatches=2, actor_hidden=(64, 64),
                critic_hidden=(64, 64), actor_lr=2e-3, critic_lr=2e-3, seed=0)
    base.update(kw)
    return SHACConfig(**base)


def shac_one_iteration(rank: int, world: int):
    """One SHAC iteration (horizon 8, no episode ends) from N_STEP fixed states, this rank's share
    of them: returns the actor's gradient (averaged over the ranks), its norm and the merged
    observation statistics."""
    n = N_STEP // world
    q, v = (0.1 * (2 * torch.rand(N_STEP, 2, generator=torch.Generator().manual_seed(7)) - 1) for _ in range(2))
    env = CartPole(num_envs=n, seed=rank, n_threads=1)
    agent = SHAC(env, cfg(horizon=8, iterations=1), progress=False)
    env.reset()
    env.set_state(q[rank * n:(rank + 1) * n], v[rank * n:(rank + 1) * n])
    agent.started = True  # keep these states (the first iteration would reset the env)
    s = agent.iteration()
    return {"grads": [p.grad.clone() for p in agent.actor.parameters()], "grad_norm": s["grad_norm"],
            "obs_mean": agent.obs_rms.mean.clone(), "obs_var": agent.obs_rms.var.clone(), "steps": agent.steps}


def shac_learn(rank: int, world: int):
    """test_shac's short run (30 iterations, 32 cart-poles in all) over the ranks."""
    agent = SHAC(CartPole(num_envs=N_LEARN // world, seed=rank, n_threads=1), cfg(), progress=False)
    eval_env = CartPole(num_envs=32, seed=123, n_threads=1)
    before = episode_return(eval_env, agent.act, 150, seed=123)
    agent.train()
    after = episode_return(eval_env, agent.act, 150, seed=123)
    return {"actor": agent.actor.state_dict(), "critic": agent.critic.state_dict(), "before": before,
            "after": after, "steps": agent.steps}


def ppo_learn(rank: int, world: int, log_dir=None):
    """test_ppo's cart-pole run (40 iterations, 64 cart-poles in all) over the ranks."""
    from moreau.trainers.ppo import train
    out = train("cartpole", iterations=40, num_envs=64 // world, contact=None, seed=0, n_threads=1, verbose=False,
                log_dir=log_dir)
    return {"actor": out["runner"].alg.get_policy().state_dict(), "initial": out["initial"], "final": out["final"]}


def main(mode: str, out: str) -> None:
    torch.set_num_threads(1)
    rank, world, _ = distributed.init("cpu")
    if mode == "shac":
        res = {"step": shac_one_iteration(rank, world), "learn": shac_learn(rank, world)}
    else:
        res = {"learn": ppo_learn(rank, world, log_dir=os.path.join(out, "ppo_log"))}
    res["rank"], res["world"] = rank, world
    torch.save(res, os.path.join(out, f"{mode}_rank{rank}.pt"))
    if rank == 0:
        print(json.dumps({k: v for k, v in res["learn"].items() if k in ("before", "after", "initial", "final")}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
