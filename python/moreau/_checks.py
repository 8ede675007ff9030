"""Argument checks shared by moreau.Simulator, moreau.torch and moreau.rl.

Every wrong tensor argument raises ``moreau.TensorError`` (a subclass of both ``ValueError``
and ``TypeError``) with a message naming the function, the argument, what was expected and
what was received, e.g.::

    moreau.torch.step: argument 'q': wrong dtype: expected torch.float64, got torch.float32
"""
from __future__ import annotations

import numpy as np
import torch

from ._moreau import TensorError


def fail(fn: str, arg: str, what: str, expected, got) -> None:
    raise TensorError(f"{fn}: argument '{arg}': wrong {what}: expected {expected}, got {got}")


def _shape_str(shape) -> str:
    shape = tuple(int(s) for s in shape)
    return str(shape)


def check_tensor(fn: str, arg: str, x, *, dtype: torch.dtype, device: torch.device, shapes) -> torch.Tensor:
    """Checks that ``x`` is a torch.Tensor of ``dtype`` on ``device`` whose shape is one of
    ``shapes`` (a list of tuples). Returns ``x``."""
    if not isinstance(x, torch.Tensor):
        fail(fn, arg, "type", "a torch.Tensor", type(x).__name__)
    if x.dtype != dtype:
        fail(fn, arg, "dtype", dtype, x.dtype)
    if not same_device(x.device, device):
        fail(fn, arg, "device", device, x.device)
    if tuple(x.shape) not in [tuple(s) for s in shapes]:
        expected = " or ".join(_shape_str(s) for s in shapes)
        fail(fn, arg, "shape", expected, _shape_str(x.shape))
    return x


def same_device(a: torch.device, b: torch.device) -> bool:
    if a.type != b.type:
        return False
    if a.type == "cuda":
        ia = a.index if a.index is not None else torch.cuda.current_device()
        ib = b.index if b.index is not None else torch.cuda.current_device()
        return ia == ib
    return True


def is_field_major(x: torch.Tensor) -> bool:
    """(n_env, width) with strides (1, n_env) along every dimension longer than 1."""
    n, w = x.shape
    return (n <= 1 or x.stride(0) == 1) and (w <= 1 or x.stride(1) == n)


def field_major(x: torch.Tensor) -> torch.Tensor:
    """``x`` (n_env, width) in moreau's field-major layout (element k of environment e at
    k * n_env + e): ``x`` itself when it already is, else a copy (``x.t().contiguous().t()``)."""
    return x if is_field_major(x) else x.t().contiguous().t()


def empty_field_major(n_env: int, width: int, *, dtype, device) -> torch.Tensor:
    return torch.empty((width, n_env), dtype=dtype, device=device).t()


def as_int(fn: str, arg: str, x) -> int:
    """``x`` as an int (a Python or numpy integer, or an integer tensor of one element)."""
    if isinstance(x, torch.Tensor) and x.numel() == 1 and not x.is_floating_point() and x.dtype != torch.bool:
        return int(x.item())
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        fail(fn, arg, "type", "an int", type(x).__name__)
    return int(x)


def as_float(fn: str, arg: str, x) -> float:
    """``x`` as a float (a Python or numpy real number, or a tensor of one element)."""
    if isinstance(x, torch.Tensor) and x.numel() == 1 and x.dtype != torch.bool:
        return float(x.item())
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        fail(fn, arg, "type", "a number", type(x).__name__)
    return float(x)


def as_bool(fn: str, arg: str, x) -> bool:
    """``x`` as a bool (a Python or numpy bool)."""
    if not isinstance(x, (bool, np.bool_)):
        fail(fn, arg, "type", "a bool", type(x).__name__)
    return bool(x)
