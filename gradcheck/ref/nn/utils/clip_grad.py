"""Gradient clipping: `clip_grad_norm_` and `clip_grad_value_`."""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from gradcheck import ref as torch


def _grads(parameters: Any) -> list[Any]:
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters: Iterable[Any] | Any, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: Any = None) -> Any:
    """Scale all gradients together so their joint norm is at most `max_norm`.

    Returns the total norm *before* clipping, as a tensor. Gradients are only ever scaled
    down (the factor max_norm / (norm + 1e-6) is clamped at 1).

    Example:
        >>> import gradcheck.ref as torch
        >>> w = torch.nn.Parameter(torch.zeros(2)); w.grad = torch.tensor([3.0, 4.0])
        >>> clip_grad_norm_([w], max_norm=1.0).item()
        5.0
    """
    grads = _grads(parameters)
    norm_type = float(norm_type)
    if not grads:
        return torch.tensor(0.0)
    if norm_type == 2.0 and _plain_arrays(grads):
        return _clip_arrays(grads, max_norm, error_if_nonfinite)
    with torch.no_grad():
        if math.isinf(norm_type):
            norms = [g.detach().abs().max() for g in grads]
            total_norm = norms[0] if len(norms) == 1 else torch.stack(norms).max()
        else:
            norms = [_vector_norm(g.detach(), norm_type) for g in grads]
            total_norm = _vector_norm(torch.stack(norms), norm_type)
        if error_if_nonfinite and not math.isfinite(total_norm.item()):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is "
                "non-finite, so it cannot be clipped. To disable this error and scale the "
                "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
        clip_coef = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(clip_coef.to(g.dtype))
    return total_norm


def _plain_arrays(grads: list) -> bool:
    dtype = grads[0]._data.dtype
    return all(type(g._data) is np.ndarray and g._data.dtype == dtype for g in grads)


def _clip_arrays(grads: list, max_norm: float, error_if_nonfinite: bool) -> Any:
    """The 2-norm case on the arrays directly, in torch's order of operations: each
    gradient's norm, the norm of those norms, then one scale factor clamped at 1.

    NOTE: as Tensor ops this was ~6 dispatches per parameter, a fifth of a small
    language model's step."""
    from gradcheck.ref.tensors import _make

    dtype = grads[0]._data.dtype
    norms = np.empty(len(grads), dtype=dtype)
    with np.errstate(all="ignore"):
        for k, g in enumerate(grads):
            flat = g._data.reshape(-1)
            norms[k] = np.sqrt(np.dot(flat, flat)) if flat.size else 0.0
        total = np.sqrt(np.dot(norms, norms)).astype(dtype)
        if error_if_nonfinite and not math.isfinite(total):
            raise RuntimeError(
                "The total norm of order 2.0 for gradients from `parameters` is non-finite, so "
                "it cannot be clipped. To disable this error and scale the gradients by the "
                "non-finite norm anyway, set `error_if_nonfinite=False`")
        coef = min(dtype.type(max_norm) / (total + dtype.type(1e-6)), dtype.type(1.0))
        for g in grads:
            g._data *= coef
            g._vc[0] += 1
    return _make(np.asarray(total))


def _vector_norm(t: Any, p: float) -> Any:
    flat = t.reshape(-1).abs()
    if p == 2.0:
        return (flat * flat).sum().sqrt()
    if p == 1.0:
        return flat.sum()
    if p == 0.0:
        return (flat != 0).to(t.dtype).sum()
    return (flat**p).sum() ** (1.0 / p)


def clip_grad_value_(parameters: Iterable[Any] | Any, clip_value: float,
                     foreach: Any = None) -> None:
    """Clamp every gradient element into [-clip_value, clip_value] in place.

    Example:
        >>> import gradcheck.ref as torch
        >>> w = torch.nn.Parameter(torch.zeros(2)); w.grad = torch.tensor([3.0, -4.0])
        >>> clip_grad_value_([w], 1.0); w.grad.tolist()
        [1.0, -1.0]
    """
    with torch.no_grad():
        for g in _grads(parameters):
            g.clamp_(min=-clip_value, max=clip_value)


def clip_grad_norm(parameters: Iterable[Any] | Any, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: Any = None) -> Any:
    """The deprecated spelling of ``clip_grad_norm_``, with torch's warning."""
    import warnings

    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite)
