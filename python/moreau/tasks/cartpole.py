"""moreau.tasks.cartpole: cart-pole balance as a batched, differentiable DiffEnv.

Robot: assets/robots/cartpole.json (a 1 kg cart on a slider, a 0.1 kg, 1 m pole on a hinge;
one motor on the slider, gear 10: action 1 = 10 N). Control at 50 Hz (physics 0.01 s,
decimation 2), no contact.

- State: q = (x, θ) — cart position [m], pole angle from upright [rad] — and v = (ẋ, θ̇).
- Observation (4): x, θ, ẋ, θ̇.
- Reward per control step: 1 − 4 (1 − cos θ) − 0.1 x² − 0.01 a² (upright pole, centred cart,
  small action; the first term is ≈ 1 − 2θ²); at most 1 per step, about 1 while balanced.
  (With cos θ alone, ≈ 1 − θ²/2, the reward's gradient near upright is weak and SHAC needs
  several times more iterations to learn to balance.)
- Failure: |θ| > ``max_angle`` (0.8 rad), |x| > ``max_cart`` (1.5 m), or a failed step
  (status bits, non-finite state). Time-out: ``max_episode_length`` control steps (300 = 6 s).
- Reset: x, θ ~ U(±0.3), ẋ, θ̇ ~ U(±0.3) (``init_noise``), drawn from the env's generator
  (``seed``); inside ``step`` under the ``done`` mask, new states drawn in every step (no host
  read: moreau.tasks.base).

Differentiable: ``step`` goes through moreau.torch.step, so obs and reward carry gradients
with respect to the actions and the pre-step state while grad mode is on (see
moreau.tasks.base).
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import torch

import moreau
import moreau.torch as mt

from .base import DiffEnv, ended_mean

__all__ = ["CartPole"]


class CartPole(DiffEnv):
    """``num_envs`` cart-poles to balance.

    Args:
        num_envs: number of environments.
        device: "cpu" or "cuda".
        contact: accepted for a uniform interface (the cart-pole has no contact); default "none".
        seed: seed of the env's generator (resets).
        max_episode_length: time-out in control steps.
        max_angle, max_cart: failure thresholds [rad], [m].
        init_noise: half-width of the uniform reset distribution of x, θ, ẋ, θ̇.
        dtype, n_threads: passed to moreau.Simulator.
    """

    num_obs = 4
    num_actions = 1
    balanced_angle = 0.2  # |θ| below this counts as balanced (moreau.evaluation.metrics)

    def __init__(self, num_envs: int = 64, device="cpu", contact="none", seed: int = 0,
                 max_episode_length: int = 300, max_angle: float = 0.8, max_cart: float = 1.5,
                 init_noise: float = 0.3, dtype=torch.float32, n_threads: int = 0, **_ignored):
        self.sim = moreau.Simulator(moreau.asset("cartpole.json"), n_env=num_envs, device=device, dtype=dtype,
                                    contact=contact or "none", decimation=2, n_threads=n_threads)
        self.num_envs = int(num_envs)
        self.device = self.sim.device
        self.dtype = dtype
        self.dt = self.sim.model.timestep * 2
        self.max_episode_length = int(max_episode_length)
        self.max_angle = float(max_angle)
        self.max_cart = float(max_cart)
        self.init_noise = float(init_noise)
        self.w_upright = 4.0
        self.w_cart = 0.1
        self.w_action = 0.01
        self._gen = torch.Generator(device=self.device)
        self.seed(seed)
        self.episode_length_buf = torch.zeros(self.num_envs, dtype=torch.long, device=self.device)
        self._episode_sums = {k: torch.zeros(self.num_envs, dtype=dtype, device=self.device)
                              for k in ("upright", "cart", "action", "total")}
        self.q = torch.zeros(self.num_envs, 2, dtype=dtype, device=self.device)
        self.v = torch.zeros(self.num_envs, 2, dtype=dtype, device=self.device)
        self.obs = self.compute_observations(self.q, self.v)

    # ---- pieces (also used by the tests on hand-built states) -------------------------
    @staticmethod
    def compute_observations(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.cat([q, v], dim=1)

    def reward_terms(self, q: torch.Tensor, v: torch.Tensor, actions: torch.Tensor) -> Dict[str, torch.Tensor]:
        return {"upright": 1.0 - self.w_upright * (1.0 - torch.cos(q[:, 1])),
                "cart": -self.w_cart * q[:, 0] ** 2,
                "action": -self.w_action * (actions ** 2).sum(1)}

    def compute_reward(self, q: torch.Tensor, v: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        terms = self.reward_terms(q, v, actions)
        return terms["upright"] + terms["cart"] + terms["action"]

    def compute_failure(self, q: torch.Tensor, v: torch.Tensor, status: Optional[torch.Tensor] = None) -> torch.Tensor:
        """(num_envs,) bool: pole past ``max_angle``, cart past ``max_cart``, non-finite state
        or (with ``status``) a failed simulator step."""
        qd, vd = q.detach(), v.detach()
        bad = ~(torch.isfinite(qd).all(1) & torch.isfinite(vd).all(1))
        fail = (qd[:, 1].abs() > self.max_angle) | (qd[:, 0].abs() > self.max_cart) | bad
        if status is not None:
            fail |= status.reshape(-1) != 0
        return fail

    def is_balanced(self, q: torch.Tensor) -> torch.Tensor:
        return q[:, 1].abs() < self.balanced_angle

    def sample_states(self, n: int) -> Tuple[torch.Tensor, torch.Tensor]:
        r = self.init_noise * (2 * torch.rand(n, 4, generator=self._gen, device=self.device, dtype=self.dtype) - 1)
        return r[:, :2].contiguous(), r[:, 2:].contiguous()

    # ---- DiffEnv --------------------------------------------------------------------
    def seed(self, seed: int) -> None:
        self._gen.manual_seed(int(seed))

    def reset(self) -> torch.Tensor:
        self.q, self.v = self.sample_states(self.num_envs)
        self.episode_length_buf.zero_()
        for s in self._episode_sums.values():
            s.zero_()
        self.obs = self.compute_observations(self.q, self.v)
        return self.obs

    def set_state(self, q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Puts every environment in the state (q, v) (tensors (num_envs, 2)); returns the obs."""
        self.q = torch.as_tensor(q, dtype=self.dtype, device=self.device).clone()
        self.v = torch.as_tensor(v, dtype=self.dtype, device=self.device).clone()
        self.obs = self.compute_observations(self.q, self.v)
        return self.obs

    def detach(self) -> None:
        self.q = self.q.detach()
        self.v = self.v.detach()
        self.obs = self.obs.detach()

    def get_observations(self) -> torch.Tensor:
        return self.obs

    def step(self, actions: torch.Tensor):
        a = actions.to(dtype=self.dtype).clamp(-1.0, 1.0)
        q, v, status = mt.step(self.sim, self.q, self.v, a, return_status=True)
        self.episode_length_buf += 1
        terms = self.reward_terms(q, v, a)
        reward = terms["upright"] + terms["cart"] + terms["action"]
        failed = self.compute_failure(q, v, status)
        time_outs = (self.episode_length_buf >= self.max_episode_length) & ~failed
        done = failed | time_outs
        obs_before_reset = self.compute_observations(q, v)
        with torch.no_grad():
            for k, t in terms.items():
                self._episode_sums[k] += t.detach()
            self._episode_sums["total"] += reward.detach()
            # the means over the environments that end here (NaN where none does)
            episode = {k: ended_mean(s, done) for k, s in self._episode_sums.items()}
            episode["length"] = ended_mean(self.episode_length_buf.float(), done)
        info = {"obs_before_reset": obs_before_reset, "time_outs": time_outs, "episode": episode,
                "log": {"/balanced": self.is_balanced(q.detach()).float().mean()}}
        # the ended environments start again (under the mask, no host read: new states are drawn
        # in every step)
        qn, vn = self.sample_states(self.num_envs)
        d = done[:, None]
        q = torch.where(d, qn, q)
        v = torch.where(d, vn, v)
        self.episode_length_buf.masked_fill_(done, 0)
        for s in self._episode_sums.values():
            s.masked_fill_(done, 0)
        # Non-finite rows (a failed step) were replaced above; keep NaN out of the graph anyway.
        self.q, self.v = q, v
        self.obs = self.compute_observations(q, v)
        return self.obs, reward, done, info
