"""moreau.trainers.checkpoints: a training run's checkpoint files, and the policies they hold.

A run folder (``--logdir`` of moreau.trainers.shac, ``--log-dir`` of moreau.trainers.ppo) holds
``model_<it>.pt`` every few iterations and ``model_final.pt`` at the end of the run. Two formats,
both ``torch.load`` dicts of plain data and state_dicts (no pickled moreau classes):

- SHAC (``"format": SHAC_FORMAT``, moreau.trainers.shac.SHAC.state_dict): "config" (SHACConfig
  as a dict), "env" (num_obs, num_actions, task, contact, task_preset, task_config, ...),
  "actor", "critic", "target_critic", their optimizers, "obs_rms", "iteration", "env_steps",
  "wall_time", "env_schedule", "recent_grad_norms";
- PPO (rsl_rl's OnPolicyRunner.save with ``infos["moreau"]``, ``"format": PPO_FORMAT``): the
  task as above, "train_cfg", "iteration", "env_steps", "wall_time", "env_schedule".

``load_policy(path)`` gives the deterministic policy of either (``policy(obs) -> actions``, with
``policy.meta``: {"env": the task it was trained on, "config", "iteration", "env_steps",
"wall_time"}).

A **policy file** (``policy.pt``, and results/'s ``policies/<method>.pt``) is a checkpoint stripped
to what ``load_policy`` reads (``strip_checkpoint``; ``"stripped": True``): SHAC's "format",
"config", "env", "actor", "obs_rms", "iteration", "env_steps", "wall_time" (0.23 MB of 1.6),
PPO's "actor_state_dict", "iter", "infos" (0.08 MB of 0.45). It evaluates as the checkpoint
does and resumes nothing. The trainers write one at the end of a run, next to model_final.pt;
for another checkpoint:

    python3 -m moreau.trainers.checkpoints strip runs/walk_s0/model_final.pt policy.pt

A run folder archived without its checkpoints (results/**/runs/<run>/, see
moreau.studies.locomotion.archive_run) describes its newest one in ``checkpoint.json``
(``RUN_STATE``, ``run_state``): file name, iteration, samples, training seconds, whether the run
finished, and where git keeps a checkpoint left out of the tree ("commit", "path": ``git show
<commit>:<path> > <run>/<checkpoint>`` brings it back).
"""
from __future__ import annotations

import argparse
import json
import math
import os
from typing import Dict, List, Optional, Tuple

import torch
from torch import nn

from .networks import ActorMLP
from .normalization import RunningMeanStd, normalize

__all__ = ["SHAC_FORMAT", "PPO_FORMAT", "SHAC_POLICY_KEYS", "PPO_POLICY_KEYS", "RUN_STATE", "save_checkpoint",
           "list_checkpoints", "checkpoint_iteration", "latest_checkpoint", "strip_checkpoint", "is_stripped",
           "write_policy", "checkpoint_state", "run_state", "run_finished", "SHACPolicy", "PPOPolicy",
           "load_shac_policy", "load_ppo_policy", "load_policy", "main"]

SHAC_FORMAT = "moreau.shac/1"  # the format tags the checkpoints carry (unchanged since the first ones)
PPO_FORMAT = "moreau.ppo/1"
# what load_shac_policy / load_ppo_policy read of a checkpoint: a policy file keeps these alone
SHAC_POLICY_KEYS = ("format", "config", "env", "actor", "obs_rms", "iteration", "env_steps", "wall_time")
PPO_POLICY_KEYS = ("actor_state_dict", "iter", "infos")
RUN_STATE = "checkpoint.json"  # an archived run folder's description of its newest checkpoint


def save_checkpoint(obj: Dict, path: str) -> None:
    """torch.save of ``obj`` to ``path`` through a temporary file, so that an interrupted save
    never leaves a truncated checkpoint."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    torch.save(obj, tmp)
    os.replace(tmp, path)


def checkpoint_iteration(path: str) -> float:
    """model_<it>.pt -> it; model_final.pt -> infinity."""
    name = os.path.basename(path)[6:-3]
    return int(name) if name.isdigit() else math.inf


def list_checkpoints(run: str) -> List[str]:
    """The run folder's checkpoints, oldest first (model_<it>.pt by iteration, model_final.pt last);
    [] when the folder does not exist."""
    if not os.path.isdir(run):
        return []
    its = sorted(int(f[6:-3]) for f in os.listdir(run) if f.startswith("model_") and f.endswith(".pt")
                 and f[6:-3].isdigit())
    out = [os.path.join(run, f"model_{i}.pt") for i in its]
    if os.path.exists(os.path.join(run, "model_final.pt")):
        out.append(os.path.join(run, "model_final.pt"))
    return out


def latest_checkpoint(run: str) -> Optional[str]:
    """The newest checkpoint of a run folder (model_final.pt, else the highest model_<it>.pt), or None."""
    cks = list_checkpoints(run)
    return cks[-1] if cks else None


def _is_ppo(ck: Dict) -> bool:
    return isinstance(ck, dict) and "actor_state_dict" in ck


def strip_checkpoint(ck: Dict) -> Dict:
    """A checkpoint (SHAC's or PPO's, as torch.load gives it) without what evaluation never reads:
    the critics, the optimizers, the training schedules (SHAC_POLICY_KEYS, PPO_POLICY_KEYS kept,
    ``"stripped": True`` added). ``load_policy`` rebuilds the same policy from it."""
    keys, required = (PPO_POLICY_KEYS, ("infos",)) if _is_ppo(ck) else (SHAC_POLICY_KEYS, ("config", "env", "actor"))
    missing = [k for k in required if k not in ck]
    if missing:
        raise ValueError(f"not a moreau checkpoint: no {', '.join(missing)}")
    return {**{k: ck[k] for k in keys if k in ck}, "stripped": True}


def is_stripped(ck: Dict) -> bool:
    """Whether a loaded checkpoint is a policy file (strip_checkpoint's), which resumes nothing."""
    return bool(isinstance(ck, dict) and ck.get("stripped"))


def _equal(a, b) -> bool:
    """Same nested contents (dicts, lists, tensors, plain values)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype \
            and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and (a == b or (a != a and b != b))


def write_policy(src, dst: str) -> Tuple[int, int]:
    """Writes the policy file of ``src`` (a checkpoint path, or a checkpoint already loaded) to
    ``dst``; a ``dst`` that holds the same policy already is left as it is (a link stays a link),
    another one is replaced through a temporary file (a link replaced, never written through).
    Returns the sizes in bytes (``src``'s, 0 for a loaded one, and ``dst``'s)."""
    ck = torch.load(src, map_location="cpu", weights_only=False) if isinstance(src, str) else src
    policy = strip_checkpoint(ck)
    if not (os.path.exists(dst) and _equal(torch.load(dst, map_location="cpu", weights_only=False), policy)):
        save_checkpoint(policy, dst)
    return (os.path.getsize(src) if isinstance(src, str) else 0), os.path.getsize(dst)


def checkpoint_state(path: str, ck: Optional[Dict] = None) -> Dict:
    """What RUN_STATE records of a checkpoint: its file name, trainer, iteration, samples,
    training seconds and whether the run finished (model_final.pt)."""
    ck = ck if ck is not None else torch.load(path, map_location="cpu", weights_only=False)
    src = ck["infos"]["moreau"] if _is_ppo(ck) else ck
    name = os.path.basename(path)
    return {"checkpoint": name, "finished": name == "model_final.pt", "iteration": src.get("iteration"),
            "env_steps": src.get("env_steps"), "wall_time": src.get("wall_time"),
            "trainer": "ppo" if _is_ppo(ck) else "shac"}


def run_state(run: str) -> Optional[Dict]:
    """The run folder's RUN_STATE (checkpoint_state of its newest checkpoint, where an archive left
    the checkpoint out; "commit" and "path" where git keeps it), or None."""
    path = os.path.join(run, RUN_STATE)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def run_finished(run: str) -> bool:
    """Whether the run in this folder trained to its end: model_final.pt there, or its RUN_STATE
    says so (an archived run)."""
    if os.path.exists(os.path.join(run, "model_final.pt")):
        return True
    state = run_state(run)
    return bool(state and state.get("finished"))


class SHACPolicy(nn.Module):
    """A saved SHAC actor with its observation statistics: ``policy(obs) -> actions``."""

    def __init__(self, actor: ActorMLP, stats, meta: Dict):
        super().__init__()
        self.actor = actor
        self.stats = stats
        self.meta = meta

    @torch.no_grad()
    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor(normalize(obs.to(torch.float32), self.stats))


class PPOPolicy(nn.Module):
    """The deterministic actor (the Gaussian's mean) of a PPO checkpoint: ``policy(obs) -> actions``;
    ``meta`` as SHACPolicy's."""

    def __init__(self, actor: nn.Module, obs_group: str, meta: Dict):
        super().__init__()
        self.actor = actor
        self.obs_group = obs_group
        self.meta = meta

    @torch.no_grad()
    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        from tensordict import TensorDict
        td = TensorDict({self.obs_group: obs.to(torch.float32)}, batch_size=[obs.shape[0]], device=obs.device)
        return self.actor(td)


def _load(path: str, device, checkpoint: Optional[Dict]) -> Dict:
    return checkpoint if checkpoint is not None else torch.load(path, map_location=device, weights_only=False)


def load_shac_policy(path: str, device="cpu", checkpoint: Optional[Dict] = None) -> SHACPolicy:
    """The deterministic policy of a SHAC checkpoint; ``checkpoint``: the file's already-loaded contents."""
    ck = _load(path, device, checkpoint)
    cfg, env = ck["config"], ck["env"]
    actor = ActorMLP(env["num_obs"], env["num_actions"], cfg["actor_hidden"]).to(device)
    actor.load_state_dict(ck["actor"])
    actor.eval()
    stats = None
    if ck.get("obs_rms") is not None:
        rms = RunningMeanStd((env["num_obs"],), device=device)
        rms.load_state_dict(ck["obs_rms"])
        stats = rms.frozen()
    return SHACPolicy(actor, stats, {"config": cfg, "env": env, "iteration": ck.get("iteration", 0),
                                     "env_steps": ck.get("env_steps", 0), "wall_time": ck.get("wall_time")})


def load_ppo_policy(path: str, device="cpu", checkpoint: Optional[Dict] = None) -> PPOPolicy:
    """The policy of a PPO checkpoint (rsl_rl's format with ``infos["moreau"]``; needs rsl_rl);
    ``checkpoint``: the file's already-loaded contents."""
    from rsl_rl.utils import resolve_class
    from tensordict import TensorDict
    ck = _load(path, device, checkpoint)
    info = (ck.get("infos") or {}).get("moreau")
    if not info or "actor_state_dict" not in ck:
        raise ValueError(f"{path}: not a moreau PPO checkpoint (expected rsl_rl's 'actor_state_dict' and "
                         f"infos['moreau'])")
    cfg = info["train_cfg"]
    group = cfg["obs_groups"]["actor"][0]
    obs = TensorDict({group: torch.zeros(1, info["num_obs"])}, batch_size=[1])
    cls, kw = resolve_class(cfg["actor"])
    actor = cls(obs, cfg["obs_groups"], "actor", info["num_actions"], **kw).to(device)
    actor.load_state_dict(ck["actor_state_dict"])
    actor.eval()
    return PPOPolicy(actor, group, {"config": cfg, "env": info, "iteration": info["iteration"],
                                    "env_steps": info["env_steps"], "wall_time": info["wall_time"]})


def load_policy(path: str, device="cpu") -> nn.Module:
    """The deterministic policy of a SHAC or a PPO checkpoint (SHACPolicy or PPOPolicy), with its
    ``meta`` ({"env": the task, contact and task configuration it was trained with, ...,
    "iteration", "env_steps", "wall_time"})."""
    ck = torch.load(path, map_location=device, weights_only=False)
    if isinstance(ck, dict) and "actor_state_dict" in ck:
        return load_ppo_policy(path, device, checkpoint=ck)
    return load_shac_policy(path, device, checkpoint=ck)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m moreau.trainers.checkpoints",
                                description="Checkpoint files: strip one to the policy evaluation loads.")
    sub = p.add_subparsers(dest="cmd", required=True)
    st = sub.add_parser("strip", help="write IN's policy file (critics, optimizers, schedules dropped) to OUT "
                        "(OUT may be IN: replaced in place)")
    st.add_argument("input", metavar="IN")
    st.add_argument("output", metavar="OUT")
    a = p.parse_args(argv)
    before, after = write_policy(a.input, a.output)
    load_policy(a.output)  # it loads as the checkpoint did
    print(f"{a.input} ({before / 1e6:.2f} MB) -> {a.output} ({after / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
