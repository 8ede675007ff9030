"""Argument checks shared by moreau.Simulator and moreau.torch.

Every wrong tensor argument raises ``moreau.TensorError`` (a subclass of both ``ValueError``
and ``TypeError``) with a message naming the function, the argument, what was expected and
what was received, e.g.::

    moreau.torch.step: argument 'q': wrong dtype: expected torch.float64, got torch.float32
"""
from __future__ import annotations

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
