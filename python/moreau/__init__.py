"""moreau — batched differentiable rigid-body simulation, with PyTorch tensors.

    import torch, moreau, moreau.torch
    sim = moreau.Simulator(moreau.asset("anymal_c.json"), n_env=4096, device="cuda", contact="hard")
    sim.action[:] = torch.as_tensor(sim.model.qpos0[7:], device=sim.device)  # zero-copy view
    sim.step(10)
    q1, v1 = moreau.torch.step(sim, q, v, a)                                 # differentiable

Modules: ``moreau`` (models, Simulator, zero-copy views), ``moreau.torch`` (autograd step and
rollout), ``moreau.kinematics`` (body poses and contact points in torch). Built on them:
``moreau.tasks`` (batched differentiable environments and their presets), ``moreau.rl``
(gymnasium and rsl_rl adapters), ``moreau.trainers`` (SHAC, PPO, checkpoints),
``moreau.evaluation`` (evaluating policies, learning curves); ``moreau.studies`` holds the
studies' runners.

Errors: ``moreau.Error`` (RuntimeError) for what the library rejects (files, names, sizes),
``moreau.TensorError`` (ValueError and TypeError) for a tensor argument of the wrong dtype,
device, shape or layout. ``moreau.ModelWarning`` (a UserWarning) for what a robot file asks for
and moreau does not simulate (an ignored attribute, a joint limit not enforced, a ground plane
not at z = 0), one per entry of ``Model.warnings``.
"""
from ._moreau import (  # noqa: F401
    JOINT_BALL,
    JOINT_FREE,
    JOINT_PRISMATIC,
    JOINT_REVOLUTE,
    STATUS_CONTACTS_DROPPED,
    STATUS_FATAL,
    STATUS_NAN_ACTION,
    STATUS_NAN_GRADIENT,
    STATUS_NAN_STATE,
    STATUS_NO_GRADIENT,
    STATUS_OK,
    STATUS_SINGULAR_MASS,
    STATUS_SOLVER_NOT_CONVERGED,
    ContactMode,
    ContactOptions,
    Device,
    DType,
    Error,
    Model,
    SimulatorOptions,
    TensorError,
    built_with_cuda,
    contact_mode_from_name,
    cuda_available,
)
from .simulator import ModelWarning, Simulator, asset, contact_mode_name, export_mjcf, load, load_mjcf, load_model, load_model_from_string, load_urdf, select_contacts, with_heightfield, with_self_collisions  # noqa: F401
from . import torch  # noqa: F401,E402  (moreau.torch)

__version__ = "0.1.0"
