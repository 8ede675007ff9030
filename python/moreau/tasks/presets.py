"""moreau.tasks.presets: named task configurations and the training recipes built on them.

``TASK_PRESETS``: keyword overrides of moreau.tasks.locomotion.LocomotionConfig (its
``reward_weights`` partial), by name; ``preset_kwargs(name, overrides)`` turns one (and JSON-like
overrides) into constructor arguments::

    from moreau.tasks import make
    from moreau.tasks.presets import preset_kwargs
    env = make("locomotion", num_envs=256, **preset_kwargs("trot_curriculum"))

``SHAC_DEFAULTS``: the SHAC settings (moreau.trainers.shac.SHACConfig fields) of each task on
the command line. ``SHAC_PRESETS``: whole SHAC training recipes (``--preset`` of
``python3 -m moreau.trainers.shac``): the task and its preset, the contact mode, the number of
environments and iterations, and the SHAC settings. PPO (moreau.trainers.ppo) takes a task
preset (``--task-preset``) with rsl_rl's legged_gym settings.
"""
from __future__ import annotations

import copy
from typing import Dict, Optional

__all__ = ["TASK_PRESETS", "preset_kwargs", "SHAC_DEFAULTS", "SHAC_PRESETS"]

# ---- task presets (locomotion) --------------------------------------------------------
TASK_PRESETS: Dict[str, Dict] = {
    "default": {},  # legged_gym's flat ANYmal C
    # a 2 Hz trot clock and swing-foot height tracking (the gait shaping SHAC needs to step)
    "trot": dict(gait_frequency=2.0, reward_weights={"feet_height": -30.0}),
    # the same with a command curriculum: 4 M samples at 0.5 m/s forward, then the ranges grow from
    # a quarter to all of command_ranges over 8 M samples
    "trot_curriculum": dict(gait_frequency=2.0, reward_weights={"feet_height": -30.0},
                            curriculum_command=(0.5, 0.0, 0.0), curriculum_warmup_samples=4e6,
                            curriculum_start_scale=0.25, curriculum_ramp_samples=8e6),
}
# trot_curriculum gated by tracking: the warm-up lasts until r̄ ≥ 0.8 (|v_xy error| ≲ 0.24 m/s),
# the ramp advances only while r̄ ≥ 0.8
TASK_PRESETS["trot_gated"] = dict(TASK_PRESETS["trot_curriculum"], curriculum_tracking_threshold=0.8)
# trot_curriculum with a 1 M-sample warm-up: SHAC tracks 0.5 m/s within about 1 M samples, and the
# rest of the 4 M warm-up only delays the ramp (the warmup1m screen of the walk preset)
TASK_PRESETS["trot_curriculum_1m"] = dict(TASK_PRESETS["trot_curriculum"], curriculum_warmup_samples=1e6)
# trot_curriculum for transfer to other simulators and robots: drives with viscous damping 0.5 N m s/rad
# and friction loss 0.1 N m scaled by U[0, 2] per environment, motor strength U[0.9, 1.1] per
# actuator, and the feet_separation penalty (left and right feet kept at least 15 cm apart
# laterally, the legs clear of each other)
TASK_PRESETS["trot_transfer"] = dict(TASK_PRESETS["trot_curriculum"], joint_damping=0.5, joint_frictionloss=0.1,
                                     randomize_frictionloss=True, frictionloss_scale_range=(0.0, 2.0),
                                     randomize_motor_strength=True, motor_strength_range=(0.9, 1.1),
                                     reward_weights={"feet_height": -30.0, "feet_separation": -100.0})
# "trot_transfer_spin": trot_transfer with the feet's torsional friction randomised per environment,
# μ_spin ~ U[0, 0.04] m about the Menagerie's 0.02
TASK_PRESETS["trot_transfer_spin"] = dict(TASK_PRESETS["trot_transfer"], randomize_spin_friction=True,
                                          spin_friction_range=(0.0, 0.04))
# "trot_transfer_roll" (the shipped policy's task): trot_transfer_spin with the yaw-rate tracking
# term weighed 1.0 (legged_gym: 0.5), the smooth contact's k ~ U[100, 1000] 1/m (feet that feel the
# ground from further away or nearer) and the feet's rolling friction μ_roll ~ U[0, 0.02] m about
# the Menagerie's 0.01 (condim 6), each per environment
TASK_PRESETS["trot_transfer_roll"] = dict(TASK_PRESETS["trot_transfer_spin"],
                                          reward_weights=dict(TASK_PRESETS["trot_transfer_spin"]["reward_weights"],
                                                              tracking_ang_vel=1.0),
                                          randomize_smooth_k=True, randomize_rolling_friction=True,
                                          rolling_friction_range=(0.0, 0.02))

# "rough": legged_gym's rough ANYmal C: the generated terrain (moreau.tasks.terrain's defaults: 10
# levels x 20 columns of 8 m tiles, its level curriculum), 187 height samples in the observation, a
# knee on the ground a failure; "trot_rough" the same under trot_curriculum's gait shaping (SHAC)
_ROUGH = dict(terrain={}, measure_heights=True, knee_contacts=True)
TASK_PRESETS["rough"] = dict(_ROUGH)
TASK_PRESETS["trot_rough"] = dict(TASK_PRESETS["trot_curriculum"], **_ROUGH)


def preset_kwargs(preset: Optional[str] = None, overrides: Optional[Dict] = None) -> Dict:
    """LocomotionConfig keyword arguments of a TASK_PRESETS entry with ``overrides`` (a JSON-like
    dict: its reward_weights merge into the preset's, lists become tuples) on top."""
    kw: Dict = {}
    if preset:
        if preset not in TASK_PRESETS:
            raise ValueError(f"unknown locomotion task preset {preset!r} (have {sorted(TASK_PRESETS)})")
        kw.update(copy.deepcopy(TASK_PRESETS[preset]))
    extra = copy.deepcopy(overrides or {})
    if "reward_weights" in extra and "reward_weights" in kw:
        extra["reward_weights"] = {**kw["reward_weights"], **extra["reward_weights"]}
    kw.update(extra)
    return {k: tuple(v) if isinstance(v, list) else v for k, v in kw.items()}


# ---- SHAC training recipes ------------------------------------------------------------
# SHACConfig overrides per task (the paper's cart-pole settings; a larger net for the quadruped).
SHAC_DEFAULTS: Dict[str, Dict] = {
    "cartpole": dict(actor_hidden=(64, 64), critic_hidden=(64, 64), actor_lr=2e-3, critic_lr=2e-3),
    "locomotion": dict(actor_hidden=(256, 128, 64), critic_hidden=(256, 128, 64), actor_lr=1e-3,
                       critic_lr=1e-3, action_noise=0.0),
}


def _walk(**shac) -> Dict:
    """The quadruped's trot with the command curriculum through smooth contact, 256 environments
    × 2,500 iterations, with ``shac`` over the locomotion defaults."""
    return dict(task="locomotion", task_preset="trot_curriculum", contact="smooth", num_envs=256,
                iterations=2500, shac=dict(SHAC_DEFAULTS["locomotion"], **shac))


# "walk": the trot clock, swing-foot height tracking and the command curriculum with a deterministic
# actor. Its ablations: "walk_skip" with gradient spikes skipped, "walk_gated" with the curriculum
# gated by tracking, "walk_noise" with a stochastic actor (Gaussian noise of std 0.3 before the
# tanh, reparameterised: the gradient flows through it), and "walk_fast", walk_noise with 4 critic
# epochs instead of 16 (the critic was 40 % of an iteration), the SHAC-smooth
# configuration (results/shac_walk/policy.pt); "walk_fast_1m": walk_fast on trot_curriculum_1m
# (a 1 M-sample warm-up instead of 4 M), the locomotion study's SHAC configuration.
SHAC_PRESETS: Dict[str, Dict] = {
    "walk": _walk(),
    "walk_skip": _walk(grad_spike_ratio=10.0),
    "walk_gated": dict(_walk(), task_preset="trot_gated"),
    "walk_noise": _walk(action_noise=0.3),
}
SHAC_PRESETS["walk_fast"] = _walk(action_noise=0.3, critic_iterations=4)
SHAC_PRESETS["walk_fast_1m"] = dict(SHAC_PRESETS["walk_fast"], task_preset="trot_curriculum_1m")
# "walk_transfer": walk_fast on trot_transfer (damped drives with friction loss, randomised strength,
# feet kept apart)
SHAC_PRESETS["walk_transfer"] = dict(SHAC_PRESETS["walk_fast"], task_preset="trot_transfer")
# "walk_transfer_spin": walk_fast on trot_transfer_spin (the same, the feet's torsional friction
# randomised)
SHAC_PRESETS["walk_transfer_spin"] = dict(SHAC_PRESETS["walk_fast"], task_preset="trot_transfer_spin")
# "walk_transfer_roll": walk_fast on trot_transfer_roll, the shipped policy's recipe
# (results/transfer/walk_transfer_roll)
SHAC_PRESETS["walk_transfer_roll"] = dict(SHAC_PRESETS["walk_fast"], task_preset="trot_transfer_roll")
# "walk_rough": walk_fast on trot_rough (legged_gym's generated terrain with its level curriculum,
# 187 height samples in the observation, a knee on the ground a failure)
SHAC_PRESETS["walk_rough"] = dict(SHAC_PRESETS["walk_fast"], task_preset="trot_rough")
