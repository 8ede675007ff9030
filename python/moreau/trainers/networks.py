"""moreau.trainers.networks: the SHAC actor and critic (ELU MLPs)."""
from __future__ import annotations

from typing import List, Sequence

import torch
from torch import nn

__all__ = ["mlp", "ActorMLP", "CriticMLP"]


def mlp(n_in: int, hidden: Sequence[int], n_out: int) -> nn.Sequential:
    """Linear layers of widths ``hidden`` with ELUs between them, then a linear output layer."""
    layers: List[nn.Module] = []
    for h in hidden:
        layers += [nn.Linear(n_in, h), nn.ELU()]
        n_in = h
    layers.append(nn.Linear(n_in, n_out))
    return nn.Sequential(*layers)


class ActorMLP(nn.Module):
    """Deterministic actor: a = tanh(MLP(obs) + noise), in [-1, 1]; the noise (std ``noise_std``,
    drawn from ``generator``) is reparameterised: the gradient flows through it."""

    def __init__(self, num_obs: int, num_actions: int, hidden: Sequence[int]):
        super().__init__()
        self.net = mlp(num_obs, hidden, num_actions)

    def forward(self, obs: torch.Tensor, noise_std: float = 0.0, generator=None) -> torch.Tensor:
        mu = self.net(obs)
        if noise_std > 0:
            mu = mu + noise_std * torch.randn(mu.shape, generator=generator, device=mu.device, dtype=mu.dtype)
        return torch.tanh(mu)


class CriticMLP(nn.Module):
    """State value V(obs): an MLP with one output, squeezed to (batch,)."""

    def __init__(self, num_obs: int, hidden: Sequence[int]):
        super().__init__()
        self.net = mlp(num_obs, hidden, 1)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs).squeeze(-1)
