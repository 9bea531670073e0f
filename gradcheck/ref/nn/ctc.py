"""Connectionist temporal classification: ``F.ctc_loss`` and ``nn.CTCLoss``.

The loss is -log p(target | input) summed over every alignment, by torch's forward and
backward recursions in log space (``log_alpha``, ``log_beta`` over the target with blanks
interleaved). It is one node (``CtcLossBackward0``) whose gradient is torch's formula for the
log-probabilities, ``exp(lp) - exp(log(sum alpha beta) + nll - lp)``, which is the true
gradient once it flows back through the ``log_softmax`` that made them. As in torch, that
gradient has no derivative of its own: differentiating it again raises.

>>> import gradcheck.ref as torch
>>> log_probs = torch.zeros(3, 1, 2).log_softmax(2)   # uniform: 6 of 8 paths read "1"
>>> round(ctc_loss(log_probs, torch.tensor([[1]]), [3], [1], reduction="sum").item(), 4)
0.2877
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gradcheck.ref import grad_mode
from gradcheck.ref.dispatch import Op, apply
from gradcheck.ref.nn.module import Module
from gradcheck.ref.tensors import Tensor, _make

_NO_DOUBLE = "derivative for aten::_ctc_loss_backward is not implemented"


def _log_add(*terms: np.ndarray) -> np.ndarray:
    """log(sum(exp(terms))) elementwise, exact at -inf (torch's max-shift form)."""
    top = np.maximum.reduce(terms)
    shift = np.where(np.isfinite(top), top, 0.0)
    return np.log(sum(np.exp(t - shift) for t in terms)) + shift


def _extended(target: np.ndarray, blank: int) -> np.ndarray:
    out = np.full(2 * len(target) + 1, blank, dtype=np.int64)
    out[1::2] = target
    return out


def _shifted(values: np.ndarray, by: int, fill: float = -np.inf) -> np.ndarray:
    """``values`` moved right (``by`` > 0) or left along the last axis, ``fill`` entering."""
    out = np.full_like(values, fill)
    if by > 0:
        out[by:] = values[:-by]
    else:
        out[:by] = values[-by:]
    return out


def _alpha_beta(lp: np.ndarray, ext: np.ndarray) -> tuple:
    """log_alpha and log_beta, (T, 2S+1) each; both include the emission at t."""
    steps, width = lp.shape[0], len(ext)
    emit = lp[:, ext]
    skip = np.zeros(width, dtype=bool)
    skip[2:] = (ext[2:] != ext[:-2]) & (ext[2:] != ext[0])  # ext[0] is the blank
    alpha = np.full((steps, width), -np.inf)
    beta = np.full((steps, width), -np.inf)
    alpha[0, :min(2, width)] = emit[0, :min(2, width)]
    for t in range(1, steps):
        prev = alpha[t - 1]
        jump = np.where(skip, _shifted(prev, 2), -np.inf)
        alpha[t] = _log_add(prev, _shifted(prev, 1), jump) + emit[t]
    beta[-1, max(width - 2, 0):] = emit[-1, max(width - 2, 0):]
    skip_from = np.zeros(width, dtype=bool)
    skip_from[:-2] = skip[2:]  # s -> s + 2 is allowed when s + 2 may be skipped to
    for t in range(steps - 2, -1, -1):
        nxt = beta[t + 1]
        jump = np.where(skip_from, _shifted(nxt, -2), -np.inf)
        beta[t] = _log_add(nxt, _shifted(nxt, -1), jump) + emit[t]
    return alpha, beta


def _ctc_forward(log_probs, *, targets, input_lengths, target_lengths, blank, zero_infinity,
                 aux):
    """Per-sample negative log-likelihoods (N,), from (T, N, C) log-probabilities."""
    lp = log_probs.astype(np.float64)
    losses, keep = [], []
    for n, (steps, size) in enumerate(zip(input_lengths, target_lengths)):
        ext = _extended(targets[n][:size], blank)
        alpha, beta = _alpha_beta(lp[:steps, n], ext)
        tail = alpha[steps - 1, -2:] if len(ext) > 1 else alpha[steps - 1, -1:]
        nll = -_log_add(*tail)
        keep.append((ext, alpha, beta, nll))
        losses.append(0.0 if zero_infinity and np.isinf(nll) else nll)
    aux[:] = keep
    return np.asarray(losses, dtype=log_probs.dtype)


def _ctc_backward(ctx, g):
    if grad_mode._enabled[0]:  # torch has no derivative for this gradient
        (log_probs,) = ctx.saved_tensors
        return (apply(_UNDIFFERENTIABLE, log_probs, value=_ctc_gradient(ctx, g._data)),)
    return (_make(_ctc_gradient(ctx, g._data)),)


def _ctc_gradient(ctx, g: np.ndarray) -> np.ndarray:
    (log_probs,) = ctx.saved_tensors
    lp = log_probs._data.astype(np.float64)
    grad = np.zeros(lp.shape)
    for n, (ext, alpha, beta, nll) in enumerate(ctx.aux):
        steps = alpha.shape[0]
        if ctx.zero_infinity and np.isinf(nll):
            continue
        both = alpha + beta
        summed = np.full((steps, lp.shape[2]), -np.inf)
        for s, label in enumerate(ext):
            summed[:, label] = _log_add(summed[:, label], both[:, s])
        here = lp[:steps, n]
        grad[:steps, n] = (np.exp(here) - np.exp(summed + nll - here)) * g[n]
    return grad.astype(log_probs._data.dtype)


def _refuse_double(ctx, g):
    raise RuntimeError(_NO_DOUBLE)


_ROW = Op("CtcLossBackward0", _ctc_forward, _ctc_backward, (0,))
_UNDIFFERENTIABLE = Op("NotImplemented", lambda log_probs, value: value, _refuse_double)


def _lengths(value: Any, name: str) -> list:
    if isinstance(value, Tensor):
        value = value.tolist()
    value = [value] if isinstance(value, int) else list(value)
    if any(v < 0 for v in value):
        raise RuntimeError(f"{name} must be non-negative")
    return [int(v) for v in value]


def ctc_loss(log_probs: Any, targets: Any, input_lengths: Any, target_lengths: Any,
             blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> Any:
    """torch's ``F.ctc_loss``: ``log_probs`` (T, N, C) or unbatched (T, C); ``targets``
    (N, S) padded, or 1-D concatenated; lengths as tensors or sequences."""
    from gradcheck.ref.nn.losses import _check_reduction

    _check_reduction(reduction)
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs, targets = log_probs.unsqueeze(1), targets.unsqueeze(0)
    steps, batch, _ = log_probs.shape
    inputs = _lengths(input_lengths, "input_lengths")
    sizes = _lengths(target_lengths, "target_lengths")
    labels = targets.cpu()._data.astype(np.int64)
    if labels.ndim == 1:  # concatenated targets
        starts = np.cumsum([0] + sizes[:-1])
        rows = [labels[s:s + k] for s, k in zip(starts, sizes)]
    else:
        for size in sizes:
            if size > labels.shape[1]:
                raise RuntimeError(
                    f"Expected tensor to have size at least {size} at dimension 1, but got "
                    f"size {labels.shape[1]} for argument #2 'targets' (while checking "
                    "arguments for ctc_loss_allocate_outputs)")
        rows = list(labels)
    for n, length in enumerate(inputs):
        if length > steps:
            raise RuntimeError(f"Expected input_lengths to have value at most {steps}, but got "
                               f"value {length} (while checking arguments for "
                               "ctc_loss_allocate_outputs)")
    losses = apply(_ROW, log_probs, targets=rows, input_lengths=inputs, target_lengths=sizes,
                   blank=blank, zero_infinity=zero_infinity, aux=[])
    if reduction == "mean":
        divisor = _make(np.maximum(np.asarray(sizes, dtype=log_probs._data.dtype), 1))
        return (losses / divisor).mean()
    if reduction == "sum":
        return losses.sum()
    return losses.squeeze(0) if unbatched else losses


class CTCLoss(Module):
    """``nn.CTCLoss(blank=0, reduction="mean", zero_infinity=False)``."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False
                 ) -> None:
        super().__init__()
        self.blank, self.reduction, self.zero_infinity = blank, reduction, zero_infinity

    def forward(self, log_probs: Any, targets: Any, input_lengths: Any,
                target_lengths: Any) -> Any:
        return ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                        self.reduction, self.zero_infinity)
