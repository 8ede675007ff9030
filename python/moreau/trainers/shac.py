"""moreau.trainers.shac: Short-Horizon Actor-Critic (SHAC; Xu et al., "Accelerated Policy Learning with
Parallel Differentiable Simulation", ICLR 2022) on a moreau DiffEnv (moreau.tasks).

Each iteration rolls the ``num_envs`` environments forward ``horizon`` (H, default 32) control
steps with the current deterministic actor (optionally with Gaussian exploration noise, drawn
by reparameterisation), and

- trains the actor on the analytic gradient of the negated H-step discounted return plus the
  discounted terminal value of the target critic, backpropagated through the environment
  (moreau.torch.step's hand-written adjoint) and the actor; mean over the H·N samples;
- trains the critic on TD(λ) targets computed from that rollout (``critic_iterations`` epochs
  of ``critic_minibatches`` shuffled minibatches, MSE), then moves a target critic towards it
  (Polyak, ``target_alpha``);
- cuts the graph at the horizon boundary (``env.detach()``): the next iteration continues the
  same episodes from where this one stopped.

Episode ends inside the horizon: environments that ended in a step are reset by the env
inside that step. A failure ends the return there (terminal value 0); a time-out
(``info["time_outs"]``) bootstraps with the target critic's value of
``info["obs_before_reset"]`` (differentiable, as in the original). Both close that
environment's partial return in the actor loss and restart its discount. Non-finite
rewards or states are zeroed and treated as failures.

Also: running mean/std observation normalisation (statistics frozen during each rollout),
ELU MLPs, Adam (betas 0.7, 0.95), gradient-norm clipping, learning rates decayed linearly to
``lr_min``, a tqdm progress bar, TensorBoard scalars (``logdir``), checkpoints (``save`` /
``load``; moreau.trainers.checkpoints.load_policy for evaluation). Named training recipes
(``--preset``): moreau.tasks.presets.SHAC_PRESETS.

On a GPU nothing in an iteration waits for the device (``run_iteration``): episode ends are
handled under masks, the statistics stay on the device (moreau.trainers.meters), a skipped actor
step is undone with ``torch.where`` (the actor's Adam keeps its step count on the device), and
the iteration's time breakdown is taken with CUDA events. ``iteration`` then reads the
statistics back once (``read_stats``): the one wait of the iteration.

Command line::

    python3 -m moreau.trainers.shac --task cartpole --iterations 200 --num-envs 64 --logdir runs/cartpole
    python3 -m moreau.trainers.shac --task locomotion --contact smooth --iterations 500 --num-envs 1024 \\
        --logdir runs/anymal_smooth
    torchrun --standalone --nproc_per_node 2 -m moreau.trainers.shac --task cartpole --num-envs 32 --logdir runs/c2

Under torchrun (moreau.trainers.distributed) each rank steps ``--num-envs`` environments of its own and
the actor's and critic's gradients are averaged over the ranks; rank 0 logs and saves.
"""
from __future__ import annotations

import argparse
import collections
import copy
import dataclasses
import json
import os
import time
from typing import Dict, List, Optional, Sequence

import torch
from torch import nn

from ..tasks import env_config, make_env
from ..tasks.presets import SHAC_DEFAULTS, SHAC_PRESETS, preset_kwargs
from . import distributed
from .checkpoints import (RUN_STATE, SHAC_FORMAT, is_stripped, latest_checkpoint, run_finished, save_checkpoint,
                          strip_checkpoint)
from .meters import RecentValues, Stopwatch, host_values
from .networks import ActorMLP, CriticMLP
from .normalization import RunningMeanStd, normalize
from .runlog import CsvLog

__all__ = ["SHACConfig", "SHAC", "main"]


@dataclasses.dataclass
class SHACConfig:
    horizon: int = 32
    gamma: float = 0.99
    lam: float = 0.95
    actor_lr: float = 2e-3
    critic_lr: float = 2e-3
    lr_min: float = 1e-5            # linear decay to this over ``iterations``
    lr_schedule: str = "linear"     # "linear" or "constant"
    betas: Sequence[float] = (0.7, 0.95)
    grad_norm: float = 1.0          # clip of the actor's and the critic's gradient norms
    grad_spike_ratio: float = 0.0   # skip the actor step when its gradient norm exceeds this × the median
    #                                 of the last 50 iterations' norms (0 = off; see SHAC.iteration)
    critic_iterations: int = 16
    critic_minibatches: int = 4
    target_alpha: float = 0.2       # target <- alpha * target + (1 - alpha) * critic
    actor_hidden: Sequence[int] = (64, 64)
    critic_hidden: Sequence[int] = (64, 64)
    action_noise: float = 0.0       # std of Gaussian exploration noise (pre-tanh); 0 = deterministic
    obs_norm: bool = True
    iterations: int = 500
    seed: int = 0
    save_interval: int = 100        # checkpoints every this many iterations (and at the end)
    log_interval: int = 1


class _NullWriter:
    def add_scalar(self, *a, **k):
        pass

    def flush(self):
        pass

    def close(self):
        pass


def _writer(logdir: Optional[str]):
    if not logdir:
        return _NullWriter()
    try:
        from torch.utils.tensorboard import SummaryWriter
    except Exception:  # tensorboard not installed
        return _NullWriter()
    return SummaryWriter(logdir)


def _place_adam_steps(opt: torch.optim.Adam) -> None:
    """On a CUDA device, Adam's step counts on the device with it (``capturable``), so that
    ``_guarded_step`` undoes a step without a host read; elsewhere as torch keeps them (the CPU).
    Also after loading a state saved on another device."""
    for g in opt.param_groups:
        cuda = all(p.device.type == "cuda" for p in g["params"])
        g["capturable"] = cuda
        for p in g["params"]:
            st = opt.state.get(p, {})
            if isinstance(st.get("step"), torch.Tensor):
                st["step"] = st["step"].to(p.device if cuda else "cpu")


@torch.no_grad()
def _guarded_step(opt: torch.optim.Optimizer, skip: torch.Tensor) -> None:
    """``opt.step()`` unless ``skip`` (a 0-dim bool tensor): the parameters and the optimizer's
    state are restored where ``skip`` is set, so that the decision is never read on the host. The
    state before a first step (none yet) restores as zeros, which is what Adam starts from."""
    saved = []
    for g in opt.param_groups:
        for p in g["params"]:
            if p.grad is not None:
                st = opt.state.get(p, {})
                saved.append((p, p.clone(), {k: v.clone() for k, v in st.items() if isinstance(v, torch.Tensor)}))
    opt.step()
    for p, before, state in saved:
        p.copy_(torch.where(skip, before, p))
        for k, v in opt.state[p].items():
            if isinstance(v, torch.Tensor):
                old = state.get(k, torch.zeros_like(v))
                v.copy_(torch.where(skip.to(v.device), old, v))


class SHAC:
    """SHAC on a DiffEnv. ``train()`` runs ``cfg.iterations`` iterations (or ``train(n)``);
    ``iteration()`` runs one and returns its statistics."""

    def __init__(self, env, cfg: Optional[SHACConfig] = None, logdir: Optional[str] = None,
                 progress: bool = True, env_meta: Optional[Dict] = None):
        self.env = env
        self.cfg = cfg = cfg or SHACConfig()
        self.device = torch.device(env.device)
        self.logdir = logdir
        self.progress = progress
        self.env_meta = dict(env_meta or {})
        torch.manual_seed(cfg.seed)
        # (over processes, moreau.trainers.distributed: each rank's own noise and minibatches, rank 0's networks)
        self.gen = torch.Generator(device=self.device).manual_seed(cfg.seed + distributed.rank())
        n_obs, n_act = env.num_obs, env.num_actions
        self.actor = ActorMLP(n_obs, n_act, cfg.actor_hidden).to(self.device)
        self.critic = CriticMLP(n_obs, cfg.critic_hidden).to(self.device)
        self.target_critic = copy.deepcopy(self.critic)
        self.target_critic.requires_grad_(False)
        distributed.broadcast_modules(self.actor, self.critic, self.target_critic)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=cfg.actor_lr, betas=tuple(cfg.betas))
        _place_adam_steps(self.actor_opt)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=cfg.critic_lr, betas=tuple(cfg.betas))
        self.obs_rms = RunningMeanStd((n_obs,), device=self.device) if cfg.obs_norm else None
        self.it = 0
        self.steps = 0
        h, n = cfg.horizon, env.num_envs
        self.obs_buf = torch.zeros(h, n, n_obs, device=self.device)
        self.rew_buf = torch.zeros(h, n, device=self.device)
        self.done_mask = torch.zeros(h, n, device=self.device)
        self.next_values = torch.zeros(h, n, device=self.device)
        self.ep_return = torch.zeros(n, device=self.device)
        self.ep_length = torch.zeros(n, device=self.device)
        self.ended = torch.zeros(h, n, dtype=torch.bool, device=self.device)  # the rollout's episode ends,
        self.ended_return = torch.zeros(h, n, device=self.device)             # their returns and lengths
        self.ended_length = torch.zeros(h, n, device=self.device)
        self.finished_returns = RecentValues(200, self.device)  # the last finished episodes'
        self.finished_lengths = RecentValues(200, self.device)
        self.timers = collections.defaultdict(float)
        self.stopwatch = Stopwatch(self.device)
        self.history: List[Dict] = []
        self.wall_time = 0.0  # seconds of training iterations, over resumes
        self.recent_grad_norms = RecentValues(50, self.device)  # the last iterations' finite norms
        self.started = False  # the first iteration resets the env (set it to keep states set before)
        self.timed_out = False  # the last train() stopped at its max_seconds

    # ---- policy ---------------------------------------------------------------------
    def obs_stats(self):
        return self.obs_rms.frozen() if self.obs_rms is not None else None

    @torch.no_grad()
    def act(self, obs: torch.Tensor) -> torch.Tensor:
        """The deterministic policy's action for raw observations (evaluation)."""
        return self.actor(normalize(obs.to(torch.float32), self.obs_stats()))

    # ---- one iteration --------------------------------------------------------------
    def _lr(self, base: float) -> float:
        if self.cfg.lr_schedule != "linear" or self.cfg.iterations <= 0:
            return base
        frac = min(self.it / self.cfg.iterations, 1.0)
        return base + (self.cfg.lr_min - base) * frac

    def _actor_loss(self) -> torch.Tensor:
        cfg, env, sw = self.cfg, self.env, self.stopwatch
        h, n = cfg.horizon, env.num_envs
        stats = self.obs_stats()  # frozen for the whole rollout (later updates must not enter the graph)
        obs = env.get_observations()
        if self.obs_rms is not None:
            self.obs_rms.update(obs)
        rew_acc = torch.zeros(n, device=self.device)
        disc = torch.ones(n, device=self.device)
        loss = torch.zeros((), device=self.device)
        for i in range(h):
            t0 = sw.mark()
            obs_n = normalize(obs.to(torch.float32), stats)
            self.obs_buf[i] = obs_n.detach()
            actions = self.actor(obs_n, cfg.action_noise, self.gen)
            t1 = sw.mark()
            obs, rew, done, info = env.step(actions)
            t2 = sw.mark()
            obs = obs.to(torch.float32)
            rew = rew.to(torch.float32)
            time_outs = info.get("time_outs")
            time_outs = torch.zeros_like(done) if time_outs is None else time_outs.to(torch.bool)
            # under masks, no host read: a blown-up environment gets no reward and a terminal end
            finite = torch.isfinite(rew.detach())
            rew = torch.where(finite, rew, torch.zeros_like(rew))
            done = done | ~finite
            time_outs = time_outs & finite
            if self.obs_rms is not None:
                self.obs_rms.update(obs)
            next_v = self.target_critic(normalize(obs, stats))
            # an ended episode's next value: the target critic's of its last observation after a
            # time-out (bootstrapped), 0 after a failure
            end_obs = info.get("obs_before_reset", obs).to(torch.float32)
            ok = torch.isfinite(end_obs.detach()).all(1) & (end_obs.detach().abs().amax(1) < 1e6)
            safe = torch.where(ok[:, None], end_obs, torch.zeros_like(end_obs))
            v_end = torch.where(time_outs & ok, self.target_critic(normalize(safe, stats)), torch.zeros_like(next_v))
            next_v = torch.where(done, v_end, next_v)
            rew_acc = rew_acc + disc * rew
            value_term = rew_acc + disc * cfg.gamma * next_v
            if i < h - 1:
                loss = loss - torch.where(done, value_term, torch.zeros_like(value_term)).sum()
            else:
                loss = loss - value_term.sum()
            disc = torch.where(done, torch.ones_like(disc), disc * cfg.gamma)
            rew_acc = torch.where(done, torch.zeros_like(rew_acc), rew_acc)
            with torch.no_grad():
                self.rew_buf[i] = rew.detach()
                self.done_mask[i] = 1.0 if i == h - 1 else done.float()
                self.next_values[i] = next_v.detach()
                self.ep_return += rew.detach()
                self.ep_length += 1
                self.ended[i] = done
                self.ended_return[i] = self.ep_return
                self.ended_length[i] = self.ep_length
                self.ep_return.masked_fill_(done, 0)
                self.ep_length.masked_fill_(done, 0)
            t3 = sw.mark()
            sw.add("policy", t0, t1)
            sw.add("env_step", t1, t2)
            sw.add("policy", t2, t3)  # values, bookkeeping
        # the episodes that ended, in the order they ended (step by step, environment by environment)
        self.finished_returns.extend(self.ended_return, self.ended)
        self.finished_lengths.extend(self.ended_length, self.ended)
        self.steps += h * n * distributed.world_size()
        return loss / (h * n)

    @torch.no_grad()
    def _target_values(self) -> torch.Tensor:
        cfg = self.cfg
        h, n = self.rew_buf.shape
        ai = torch.zeros(n, device=self.device)
        bi = torch.zeros(n, device=self.device)
        lam = torch.ones(n, device=self.device)
        target = torch.zeros(h, n, device=self.device)
        for i in reversed(range(h)):
            d = self.done_mask[i]
            lam = lam * cfg.lam * (1.0 - d) + d
            ai = (1.0 - d) * (cfg.lam * cfg.gamma * ai + cfg.gamma * self.next_values[i]
                              + (1.0 - lam) / (1.0 - cfg.lam) * self.rew_buf[i])
            bi = cfg.gamma * (self.next_values[i] * d + bi * (1.0 - d)) + self.rew_buf[i]
            target[i] = (1.0 - cfg.lam) * ai + lam * bi
        return target

    def _train_critic(self, target: torch.Tensor) -> torch.Tensor:
        """The critic's epochs on the TD(λ) targets; returns the last epoch's mean minibatch loss
        (a float64 tensor: no host read)."""
        cfg = self.cfg
        obs = self.obs_buf.reshape(-1, self.obs_buf.shape[-1])
        tgt = target.reshape(-1)
        total = obs.shape[0]
        nb = max(1, min(cfg.critic_minibatches, total))
        bs = total // nb
        last = torch.zeros((), dtype=torch.float64, device=self.device)
        for _ in range(cfg.critic_iterations):
            perm = torch.randperm(total, generator=self.gen, device=self.device)
            epoch_loss = torch.zeros((), dtype=torch.float64, device=self.device)
            for b in range(nb):
                idx = perm[b * bs:(b + 1) * bs]
                loss = ((self.critic(obs[idx]) - tgt[idx]) ** 2).mean()
                self.critic_opt.zero_grad(set_to_none=True)
                loss.backward()
                distributed.average_gradients(self.critic.parameters())
                if cfg.grad_norm > 0:
                    nn.utils.clip_grad_norm_(self.critic.parameters(), cfg.grad_norm)
                self.critic_opt.step()
                epoch_loss += loss.detach().to(torch.float64)
            last = epoch_loss / nb
        with torch.no_grad():
            a = cfg.target_alpha
            for p, tp in zip(self.critic.parameters(), self.target_critic.parameters()):
                tp.mul_(a).add_(p, alpha=1.0 - a)
        return last

    def iteration(self) -> Dict[str, float]:
        """One SHAC iteration; returns its statistics as Python numbers (``run_iteration``, then
        ``read_stats``: the iteration's one read of the device)."""
        return self.read_stats(self.run_iteration())

    def run_iteration(self) -> Dict:
        """One SHAC iteration without reading anything back from the device; returns its
        statistics, tensors among them (``read_stats`` turns them into numbers)."""
        cfg, sw = self.cfg, self.stopwatch
        if not self.started:
            self.env.reset()
            self.started = True
        t_start = sw.mark()
        from .. import torch as mt
        sim0 = dict(mt.timing)
        actor_lr, critic_lr = self._lr(cfg.actor_lr), self._lr(cfg.critic_lr)
        for g in self.actor_opt.param_groups:
            g["lr"] = actor_lr
        for g in self.critic_opt.param_groups:
            g["lr"] = critic_lr
        self.env.detach()  # the horizon boundary: a new graph from the current state
        self.actor_opt.zero_grad(set_to_none=True)
        loss = self._actor_loss()
        t0 = sw.mark()
        loss.backward()
        distributed.average_gradients(self.actor.parameters())
        t1 = sw.mark()
        grads = [p.grad for p in self.actor.parameters() if p.grad is not None]
        grad_norm = (torch.norm(torch.stack([g.norm() for g in grads])) if grads
                     else torch.zeros((), device=self.device))
        # A spike (an exploding gradient through contact, dominated by a few environments) is
        # skipped, not clipped: clipped, it is still a full step in its direction, and it inflates
        # Adam's second moment, which then damps the next ~1/(1 - beta2) steps. The median is over
        # every recent iteration, skipped or not, so that norms that grow for good are followed.
        # The decision stays on the device: the step is taken and undone where skipped.
        norm = grad_norm.detach().to(torch.float64)
        finite = torch.isfinite(norm)
        skipped = ~finite
        recent = self.recent_grad_norms
        if cfg.grad_spike_ratio > 0:
            skipped = skipped | ((recent.num() >= 10) & (norm > cfg.grad_spike_ratio * recent.median()))
        if cfg.grad_norm > 0:
            nn.utils.clip_grad_norm_(self.actor.parameters(), cfg.grad_norm)
        _guarded_step(self.actor_opt, skipped)
        recent.extend(norm.reshape(1), finite.reshape(1))
        self.env.detach()
        t2 = sw.mark()
        value_loss = self._train_critic(self._target_values())
        t3 = sw.mark()
        sw.add("backward", t0, t1)
        sw.add("actor_update", t1, t2)
        sw.add("critic", t2, t3)
        sw.add("iteration", t_start, t3)
        self.it += 1
        stats = {
            "actor_loss": loss.detach(),
            "value_loss": value_loss,
            "grad_norm": grad_norm.detach(),
            "actor_step_skipped": skipped,
            "actor_lr": actor_lr,
            "mean_reward": self.rew_buf.mean(),
            "episode_return": self.finished_returns.mean(),
            "episode_length": self.finished_lengths.mean(),
            "time_sim_forward": mt.timing["forward"] - sim0["forward"],  # inside env_step
            "time_sim_adjoint": mt.timing["adjoint"] - sim0["adjoint"],  # inside backward
        }
        if hasattr(self.env, "curriculum_stats"):
            stats.update(self.env.curriculum_stats())
        return stats

    def read_stats(self, stats: Dict) -> Dict[str, float]:
        """``run_iteration``'s statistics as Python numbers (one read of the device), with the
        iteration's time breakdown (the Stopwatch's intervals; CUDA events on a GPU); appended to
        ``history``."""
        stats = host_values(stats)
        spans = self.stopwatch.read()
        for k, v in spans.items():
            self.timers[k] += v
        took = spans.get("iteration", 0.0)
        stats["iteration_time"] = took
        stats["fps"] = self.cfg.horizon * self.env.num_envs * distributed.world_size() / max(took, 1e-9)
        for k in ("env_step", "policy", "backward", "critic"):  # this iteration's time breakdown [s]
            stats["time_" + k] = spans.get(k, 0.0)
        self.history.append(stats)
        return stats

    # ---- training loop --------------------------------------------------------------
    def train(self, iterations: Optional[int] = None, final: bool = True,
              max_seconds: Optional[float] = None) -> List[Dict]:
        """Runs ``iterations`` iterations (default ``cfg.iterations``) and saves model_final.pt after
        them with its policy file policy.pt, or, with ``final=False`` (a run stopped before its
        end), model_<it>.pt. ``max_seconds``: stop after the first iteration that ends past this
        many seconds (wall clock) and save model_<it>.pt and policy.pt."""
        n = self.cfg.iterations if iterations is None else int(iterations)
        logdir = self.logdir if distributed.is_main() else None  # rank 0 alone logs and saves
        writer = _writer(logdir)
        log = CsvLog(os.path.join(logdir, "log.csv"), self.it) if logdir else None
        bar = None
        if self.progress and distributed.is_main():
            try:
                from tqdm import tqdm
                bar = tqdm(total=n, desc="SHAC", dynamic_ncols=True)
            except ImportError:
                bar = None
        t_start = time.time()
        self.timed_out = False
        try:
            for i in range(n):
                s = self.iteration()
                self.wall_time += s["iteration_time"]
                if log is not None:
                    log.write({"iteration": self.it, "env_steps": self.steps, "wall_time": self.wall_time,
                               **{k: s[k] for k in sorted(s)}})
                if self.it % self.cfg.log_interval == 0:
                    for k, val in s.items():
                        if val == val:  # not NaN
                            writer.add_scalar(f"shac/{k}", val, self.it)
                    writer.add_scalar("shac/env_steps", self.steps, self.it)
                if bar is not None:
                    bar.set_postfix(ret=f"{s['episode_return']:.1f}", rew=f"{s['mean_reward']:.3f}",
                                    vloss=f"{s['value_loss']:.3g}", fps=f"{s['fps']:.0f}")
                    bar.update(1)
                if logdir and self.cfg.save_interval > 0 and self.it % self.cfg.save_interval == 0:
                    self.save(os.path.join(logdir, f"model_{self.it}.pt"))
                if i < n - 1 and max_seconds is not None and distributed.any_rank(
                        time.time() - t_start >= max_seconds, self.device):
                    self.timed_out = True
                    break
            if logdir:
                done = final and not self.timed_out
                self.save(os.path.join(logdir, "model_final.pt" if done else f"model_{self.it}.pt"))
                if done or self.timed_out:  # the policy alone (checkpoints.strip_checkpoint): what evaluation loads
                    save_checkpoint(strip_checkpoint(self.state_dict()), os.path.join(logdir, "policy.pt"))
        finally:
            if log is not None:
                log.close()
            if bar is not None:
                bar.close()
            writer.flush()
            writer.close()
        return self.history

    # ---- checkpoints ----------------------------------------------------------------
    def state_dict(self) -> Dict:
        return {
            "format": SHAC_FORMAT,
            "config": dataclasses.asdict(self.cfg),
            "env": {"num_obs": self.env.num_obs, "num_actions": self.env.num_actions, **self.env_meta},
            "actor": self.actor.state_dict(),
            "critic": self.critic.state_dict(),
            "target_critic": self.target_critic.state_dict(),
            "actor_opt": self.actor_opt.state_dict(),
            "critic_opt": self.critic_opt.state_dict(),
            "obs_rms": self.obs_rms.state_dict() if self.obs_rms is not None else None,
            "iteration": self.it,
            "env_steps": self.steps,
            "wall_time": self.wall_time,
            "env_schedule": self.env.schedule_state() if hasattr(self.env, "schedule_state") else None,
            "recent_grad_norms": self.recent_grad_norms.tolist(),
        }

    def save(self, path: str) -> None:
        save_checkpoint(self.state_dict(), path)

    def load(self, path: str, load_optimizers: bool = True) -> Dict:
        ck = torch.load(path, map_location=self.device, weights_only=False)
        if is_stripped(ck):
            raise ValueError(f"{path}: a policy file (no critic, optimizer or schedule state): it evaluates, it does "
                             f"not resume training; resume from the run's model_<it>.pt")
        self.actor.load_state_dict(ck["actor"])
        self.critic.load_state_dict(ck["critic"])
        self.target_critic.load_state_dict(ck["target_critic"])
        if load_optimizers:
            self.actor_opt.load_state_dict(ck["actor_opt"])
            self.critic_opt.load_state_dict(ck["critic_opt"])
            _place_adam_steps(self.actor_opt)
        if self.obs_rms is not None and ck.get("obs_rms") is not None:
            self.obs_rms.load_state_dict(ck["obs_rms"])
        self.it = int(ck.get("iteration", 0))
        self.steps = int(ck.get("env_steps", 0))
        self.wall_time = float(ck.get("wall_time", 0.0))
        self.recent_grad_norms.load(ck.get("recent_grad_norms") or [])
        if hasattr(self.env, "load_schedule_state"):  # the task's schedules (command curriculum) go on
            self.env.load_schedule_state(ck.get("env_schedule") or
                                         {"common_step_counter": self.steps // (self.env.num_envs
                                                                                 * distributed.world_size())})
        return ck


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m moreau.trainers.shac", description="SHAC on a moreau task")
    p.add_argument("--preset", default=None, choices=sorted(SHAC_PRESETS),
                   help="a named configuration (task preset, contact, environments, iterations, SHAC settings); "
                        "the other options override it")
    p.add_argument("--task", default=None, choices=["cartpole", "locomotion"], help="default cartpole")
    p.add_argument("--task-preset", default=None, help="a task preset (moreau.tasks.presets.TASK_PRESETS)")
    p.add_argument("--task-config", default=None,
                   help="JSON of task options over the preset, e.g. '{\"gait_frequency\": 2.0, "
                        "\"reward_weights\": {\"feet_height\": -30}}'")
    p.add_argument("--contact", default=None, help="contact mode (locomotion): none, hard, soft, smooth, "
                   "hard_smooth_grad; default: the preset's, else the task's")
    p.add_argument("--iterations", type=int, default=None, help="default: the preset's, else 500")
    p.add_argument("--num-envs", type=int, default=None, help="default: the preset's, else 64 (cartpole), "
                   "1024 (locomotion)")
    p.add_argument("--horizon", type=int, default=None)
    p.add_argument("--logdir", default=None, help="TensorBoard logs, log.csv and checkpoints (model_<it>.pt, "
                   "model_final.pt)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--actor-lr", type=float, default=None)
    p.add_argument("--critic-lr", type=float, default=None)
    p.add_argument("--action-noise", type=float, default=None)
    p.add_argument("--gamma", type=float, default=None)
    p.add_argument("--target-alpha", type=float, default=None)
    p.add_argument("--critic-iterations", type=int, default=None, help="critic epochs per iteration (default 16)")
    p.add_argument("--grad-spike-ratio", type=float, default=None, help="skip the actor step when its gradient "
                   "norm exceeds this x the median of the last 50 iterations' (0 = off)")
    p.add_argument("--until", type=int, default=None, help="stop after this iteration (the schedules still run "
                   "over --iterations; a model_<it>.pt, not model_final.pt, is saved): a run to continue later")
    p.add_argument("--save-interval", type=int, default=100)
    p.add_argument("--max-minutes", type=float, default=None, help="stop after the iteration that ends past this "
                   "many minutes (wall clock), saving model_<it>.pt (to resume) and policy.pt")
    p.add_argument("--resume", default=None, help="a checkpoint to continue from, or 'auto': the newest in --logdir "
                   "(a finished run, model_final.pt, is then not run again)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="torch intra-op threads on the CPU (default 1: the networks are small, and with more threads "
                        "a busy machine makes torch's thread pool spin; 0 = torch's default)")
    p.add_argument("--sim-threads", type=int, default=0,
                   help="simulator CPU worker threads (default 0 = all cores; 1 on a shared machine)")
    a = p.parse_args(argv)
    if a.torch_threads > 0 and torch.device(a.device).type == "cpu":
        torch.set_num_threads(a.torch_threads)
    rank, world, device = distributed.init(a.device)  # under torchrun: one rank of a data-parallel run
    say = print if rank == 0 else (lambda *_a, **_k: None)

    preset = SHAC_PRESETS.get(a.preset, {}) if a.preset else {}
    task = a.task or preset.get("task", "cartpole")
    task_preset = a.task_preset or preset.get("task_preset")
    task_kw: Dict = {}
    if task_preset or a.task_config:
        try:
            task_kw = preset_kwargs(task_preset, json.loads(a.task_config) if a.task_config else None)
        except ValueError as e:
            raise SystemExit(f"moreau.trainers.shac: --task-preset: {e}")
    num_envs = a.num_envs or preset.get("num_envs") or (64 if task == "cartpole" else 1024)
    contact = a.contact or preset.get("contact")
    env = make_env(task, num_envs, contact=contact, device=device, seed=a.seed + rank, n_threads=a.sim_threads,
                   **task_kw)
    cfg = SHACConfig(**(preset.get("shac") or SHAC_DEFAULTS.get(task, {})))
    cfg.iterations = a.iterations or preset.get("iterations", 500)
    cfg.seed, cfg.save_interval = a.seed, a.save_interval
    for name in ("horizon", "actor_lr", "critic_lr", "action_noise", "gamma", "target_alpha", "critic_iterations",
                 "grad_spike_ratio"):
        if getattr(a, name) is not None:
            setattr(cfg, name, getattr(a, name))
    contact = contact or (str(getattr(env.cfg, "contact", "none")) if hasattr(env, "cfg") else "none")
    meta = {"task": task, "contact": contact, "task_preset": task_preset, "preset": a.preset,
            "task_config": env_config(env), "world_size": world}
    agent = SHAC(env, cfg, logdir=a.logdir, progress=not a.no_progress, env_meta=meta)
    resume = a.resume
    if resume == "auto":
        if not a.logdir:
            raise SystemExit("moreau.trainers.shac: --resume auto needs --logdir")
        resume = latest_checkpoint(a.logdir)
        if resume and resume.endswith("model_final.pt"):
            say(f"moreau.trainers.shac: {resume} exists: the run is finished")
            return 0
        if resume is None and run_finished(a.logdir):  # a finished run's record, restored without its checkpoints
            say(f"moreau.trainers.shac: {os.path.join(a.logdir, RUN_STATE)} says the run is finished")
            return 0
    if resume:
        agent.load(resume)
        say(f"moreau.trainers.shac: resumed from {resume} (iteration {agent.it}, {agent.steps} env steps)")
    if a.logdir and rank == 0:
        os.makedirs(a.logdir, exist_ok=True)
        with open(os.path.join(a.logdir, "config.json"), "w") as f:
            json.dump({"args": vars(a), "config": dataclasses.asdict(cfg), "env": meta}, f, indent=2)
    stop = cfg.iterations if a.until is None else min(a.until, cfg.iterations)
    if agent.it >= stop:
        say(f"moreau.trainers.shac: the run is at iteration {agent.it}, past --until {stop}")
        return 0
    hist = agent.train(stop - agent.it, final=stop == cfg.iterations,
                       max_seconds=None if a.max_minutes is None else 60.0 * a.max_minutes)
    if agent.timed_out:
        say(f"moreau.trainers.shac: stopped at iteration {agent.it} by --max-minutes {a.max_minutes:g}")
    if hist:
        last = hist[-1]
        tm = agent.timers
        say(f"done: {agent.it} iterations, {agent.steps} env steps; last: episode return "
              f"{last['episode_return']:.2f}, mean step reward {last['mean_reward']:.4f}; time per iteration "
              f"{tm['iteration'] / len(hist):.3f} s (env step {tm['env_step'] / len(hist):.3f}, backward "
              f"{tm['backward'] / len(hist):.3f}, critic {tm['critic'] / len(hist):.3f})")
    if a.logdir:
        name = f"model_{agent.it}.pt" if agent.timed_out or stop < cfg.iterations else "model_final.pt"
        say(f"checkpoint: {os.path.join(a.logdir, name)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
