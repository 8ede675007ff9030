"""moreau.trainers.normalization: running observation statistics and the normalisation a policy
applies with them.

    rms = RunningMeanStd((num_obs,))
    rms.update(obs)                       # a batch (rows with a non-finite entry are skipped)
    stats = rms.frozen()                  # (mean, std): a snapshot
    x = normalize(obs, stats)             # (obs - mean) / std, clipped to ±10

Under moreau.trainers.distributed the statistics of an update are those of every rank's batch.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import torch

from . import distributed

__all__ = ["RunningMeanStd", "normalize"]


class RunningMeanStd:
    """Running mean and variance over batches (Chan et al.'s parallel update)."""

    def __init__(self, shape, device="cpu", epsilon: float = 1e-4):
        self.mean = torch.zeros(shape, dtype=torch.float64, device=device)
        self.var = torch.ones(shape, dtype=torch.float64, device=device)
        self.count = torch.tensor(epsilon, dtype=torch.float64, device=device)  # on the device: no host read

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Adds the rows of ``x`` without a non-finite entry (masked: no host read); a batch
        without such rows changes nothing."""
        x = x.detach().to(torch.float64)
        ok = torch.isfinite(x).all(1)
        x = torch.where(ok[:, None], x, torch.zeros_like(x))
        b_count = ok.sum().to(torch.float64)
        if distributed.world_size() > 1:  # the batch of every rank: all-reduce (n, Σx, Σx²)
            sums = distributed.all_reduce_sum(torch.cat([b_count.reshape(1), x.sum(0), (x * x).sum(0)]))
            b_count = sums[0]
            n = b_count.clamp_min(1.0)
            b_mean = sums[1:1 + x.shape[1]] / n
            b_var = (sums[1 + x.shape[1]:] / n - b_mean ** 2).clamp_min(0.0)
        else:
            n = b_count.clamp_min(1.0)
            b_mean = x.sum(0) / n
            b_var = (torch.where(ok[:, None], x - b_mean, torch.zeros_like(x)) ** 2).sum(0) / n
        delta = b_mean - self.mean
        tot = self.count + b_count
        m2 = self.var * self.count + b_var * b_count + delta ** 2 * self.count * b_count / tot
        some = b_count > 0
        self.mean = torch.where(some, self.mean + delta * b_count / tot, self.mean)
        self.var = torch.where(some, m2 / tot, self.var)
        self.count = torch.where(some, tot, self.count)

    def frozen(self, dtype=torch.float32) -> Tuple[torch.Tensor, torch.Tensor]:
        """(mean, std) as constant tensors of ``dtype`` (a snapshot: later updates do not change them)."""
        return self.mean.to(dtype).clone(), torch.sqrt(self.var + 1e-5).to(dtype)

    def state_dict(self) -> Dict:
        return {"mean": self.mean.cpu(), "var": self.var.cpu(), "count": float(self.count)}

    def load_state_dict(self, d: Dict) -> None:
        self.mean = d["mean"].to(self.mean.device, torch.float64)
        self.var = d["var"].to(self.var.device, torch.float64)
        self.count = torch.tensor(float(d["count"]), dtype=torch.float64, device=self.mean.device)


def normalize(obs: torch.Tensor, stats: Optional[Tuple[torch.Tensor, torch.Tensor]],
              clip: float = 10.0) -> torch.Tensor:
    """(obs − mean) / std clipped to ±``clip``, with ``stats`` = (mean, std) (``RunningMeanStd.frozen()``);
    ``obs`` itself when ``stats`` is None."""
    if stats is None:
        return obs
    mean, std = stats
    return ((obs - mean) / std).clamp(-clip, clip)
