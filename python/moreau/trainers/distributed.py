"""moreau.trainers.distributed: data-parallel training over processes with torch.distributed.

    torchrun --standalone --nproc_per_node 2 -m moreau.trainers.shac --task cartpole --num-envs 32 --logdir logs/c
    torchrun --standalone --nproc_per_node 2 -m moreau.trainers.ppo --task cartpole --num-envs 32

Each rank (process) holds one simulator with its own ``num_envs`` environments, seeded
``seed + rank``; the networks start equal (rank 0's are broadcast), and every optimizer step
uses the gradient averaged over the ranks, so the ranks stay equal and one run of N ranks with
n environments each is, per environment-sample, the run of one process with N n environments
(up to the order of the sums and the per-rank command curricula). Observation statistics are
merged over the ranks. Rank 0 alone logs, evaluates and writes checkpoints; ``env_steps``
counts the samples of every rank. Backends: NCCL when the device is CUDA (rank r on
``cuda:LOCAL_RANK``), gloo on the CPU.
"""
from __future__ import annotations

import os
from typing import Iterable, Tuple

import torch
import torch.distributed as dist

__all__ = ["init", "rank", "world_size", "is_main", "broadcast_modules", "average_gradients", "all_reduce_sum",
           "any_rank"]


def init(device="cpu") -> Tuple[int, int, str]:
    """Joins the process group that torchrun describes (WORLD_SIZE, RANK, LOCAL_RANK, MASTER_ADDR
    in the environment); a no-op in a single process. Returns (rank, world size, this rank's
    device as a string: ``device`` itself, or ``cuda:LOCAL_RANK`` for CUDA under torchrun)."""
    name, device = str(device), torch.device(device)
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size > 1 and device.type == "cuda":
        name = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
        torch.cuda.set_device(name)
    if size > 1 and not dist.is_initialized():
        dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    return rank(), world_size(), name


def rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def is_main() -> bool:
    return rank() == 0


def broadcast_modules(*modules: torch.nn.Module) -> None:
    """Every rank's parameters and buffers become rank 0's."""
    if world_size() == 1:
        return
    for m in modules:
        for t in m.state_dict().values():
            dist.broadcast(t, src=0)


def average_gradients(params: Iterable[torch.nn.Parameter]) -> None:
    """g ← (1/N) Σ_ranks g for every parameter with a gradient (one all-reduce of the packed vector)."""
    n = world_size()
    if n == 1:
        return
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    flat /= n
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()


def all_reduce_sum(t: torch.Tensor) -> torch.Tensor:
    """Σ_ranks t (in place; ``t`` itself in a single process)."""
    if world_size() > 1:
        dist.all_reduce(t)
    return t


def any_rank(flag: bool, device) -> bool:
    """Whether ``flag`` is true on any rank (every rank gets the same answer: a decision, such as
    stopping, that the ranks must take together); ``flag`` itself in a single process."""
    if world_size() == 1:
        return bool(flag)
    return bool(all_reduce_sum(torch.tensor([float(flag)], device=device)).item() > 0)
