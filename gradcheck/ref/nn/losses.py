"""Loss functions of ``nn.functional``, with torch's signatures (legacy ``size_average`` and
``reduce`` included), messages and reductions.

Every loss is a composition of differentiable ops. The logits losses are written so that the
composed *gradient* is exact, not only the value.

Example:
    >>> import gradcheck.ref as torch
    >>> mse_loss(torch.tensor([1.0, 3.0]), torch.tensor([0.0, 0.0])).item()
    5.0
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from gradcheck import ref as torch
from gradcheck.ref.dispatch import apply
from gradcheck.ref.fused import FUSED, on_numpy

Tensor = Any
_REDUCTIONS = ("mean", "sum", "none")


def legacy_reduction(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """torch's mapping of the deprecated ``size_average``/``reduce`` pair to ``reduction``."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    result = "none" if not reduce else ("mean" if size_average else "sum")
    warnings.warn(f"size_average and reduce args will be deprecated, please use "
                  f"reduction='{result}' instead.", UserWarning, stacklevel=3)
    return result


def _check_reduction(reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    _check_reduction(reduction)
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _warn_broadcast(input: Tensor, target: Tensor) -> None:
    # torch only warns here and broadcasts; we keep its behaviour so scripts run identically.
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input "
                      f"size ({input.shape}). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", UserWarning,
                      stacklevel=3)


def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean squared error (warns, like torch, when the shapes differ and broadcast)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _warn_broadcast(input, target)
    diff = input - target
    loss = diff * diff
    return _reduce(loss * weight if weight is not None else loss, reduction)


def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
            reduction: str = "mean") -> Tensor:
    """Mean absolute error."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _warn_broadcast(input, target)
    return _reduce((input - target).abs(), reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _warn_broadcast(input, target)
    diff = input - target
    if beta == 0:
        return _reduce(diff.abs(), reduction)
    size = diff.abs()
    return _reduce(torch.where(size < beta, 0.5 * diff * diff / beta, size - 0.5 * beta),
                   reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)."""
    _warn_broadcast(input, target)
    diff = input - target
    size = diff.abs()
    loss = torch.where(size < delta, 0.5 * diff * diff, delta * (size - 0.5 * delta))
    return _reduce(loss * weight if weight is not None else loss, reduction)


def _check_class_target(target: Tensor) -> None:
    if target.dtype not in (torch.int64, torch.uint8, torch.int32):
        name = {"float32": "Float", "float64": "Double", "float16": "Half", "bool": "Bool"}.get(
            str(target.dtype).replace("torch.", ""), str(target.dtype))
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {name}")


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean", *,
             fused: bool = True) -> Tensor:
    """Negative log-likelihood of class indices, given log-probabilities ``input`` (N, C, ...).

    With reduction="mean" the sum is divided by the total weight of non-ignored targets.
    On numpy arrays it is one node (``fused.py``), as torch's kernel.
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    checked = _checked_target(input, target, ignore_index)
    if fused and _fusable(input, weight, reduction):
        return _fused_nll(input, checked, weight, ignore_index, reduction, 0.0, False)
    class_dim = 1 if input.dim() > 1 else 0
    target = target.long()
    valid = target != ignore_index
    if weight is None and not (~valid).any().item():
        picked = input.gather(class_dim, target.unsqueeze(class_dim)).squeeze(class_dim)
        return _reduce(-picked, reduction)
    safe_target = torch.where(valid, target, torch.zeros_like(target))
    picked = input.gather(class_dim, safe_target.unsqueeze(class_dim)).squeeze(class_dim)
    w = valid.to(input.dtype)
    if weight is not None:
        w = w * weight[safe_target]
    loss = -picked * w
    if reduction == "mean":
        return loss.sum() / w.sum()
    return _reduce(loss, reduction)


def _checked_target(input: Tensor, target: Tensor, ignore_index: int) -> Any:
    """torch's checks of class-index targets; returns them as an int64 array."""
    _check_class_target(target)
    if input.dim() == 2 and target.dim() != 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    batch = input.shape[0] if input.dim() > 1 else 1
    if input.dim() > 1 and tuple(target.shape) != (batch,) + tuple(input.shape[2:]):
        raise ValueError(f"Expected input batch_size ({batch}) to match target batch_size "
                         f"({target.shape[0] if target.dim() else 1}).")
    classes = input.shape[1 if input.dim() > 1 else 0]
    labels = target.cpu()._data.astype(np.int64, copy=False)
    bad = (labels != ignore_index) & ((labels < 0) | (labels >= classes))
    if bad.any():
        raise IndexError(f"Target {labels[bad][0]} is out of bounds.")
    return labels


def _fusable(input: Tensor, weight: Tensor | None, reduction: str) -> bool:
    if reduction not in _REDUCTIONS:
        return False
    if weight is None:
        return on_numpy(input)
    return not weight.requires_grad and on_numpy(input, weight)


def _fused_nll(input: Tensor, target: Any, weight: Tensor | None, ignore_index: int,
               reduction: str, smoothing: float, logits: bool) -> Tensor:
    """One node for the whole loss (``NllLossBackward0``), numpy forward and backward."""
    return apply(FUSED["cross_entropy"], input, logits=logits, target=target,
                 weight=None if weight is None else weight._data, ignore_index=ignore_index,
                 reduction=reduction, smoothing=smoothing, class_dim=1 if input.dim() > 1 else 0,
                 aux=[], unchecked=(0,) if logits else ())


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0, *,
                  fused: bool = True) -> Tensor:
    """log_softmax over the class dim, then NLL of class indices or of class probabilities
    (a float target of the input's shape), with optional label smoothing.

    With class indices on numpy arrays it is one node (``fused.py``), torch's fused kernel."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if fused and _fusable(input, weight, reduction) and not target.is_floating_point():
        checked = _checked_target(input, target, ignore_index)
        return _fused_nll(input, checked, weight, ignore_index, reduction,
                          float(label_smoothing), True)
    class_dim = 1 if input.dim() > 1 else 0
    log_p = torch.log_softmax(input, class_dim)
    classes = input.shape[class_dim]
    if target.dtype.is_floating_point and tuple(target.shape) == tuple(input.shape):
        if label_smoothing:
            target = target * (1 - label_smoothing) + label_smoothing / classes
        shape = [1] * input.dim()
        shape[class_dim] = -1
        terms = log_p * target * (weight.reshape(shape) if weight is not None else 1)
        loss = -terms.sum(class_dim)
        if reduction == "mean":
            return loss.sum() / (loss.numel() if input.dim() > 1 else 1)
        return _reduce(loss, reduction)
    nll = nll_loss(log_p, target, weight, None, ignore_index, None, reduction)
    if not label_smoothing:
        return nll
    return _smoothed(log_p, target, weight, ignore_index, reduction, label_smoothing, nll,
                     class_dim)


def _smoothed(log_p, target, weight, ignore_index, reduction, eps, nll, class_dim):
    """torch's label smoothing for class indices: (1 - eps) * nll + eps * mean over classes."""
    valid = (target != ignore_index).to(log_p.dtype)
    shape = [1] * log_p.dim()
    shape[class_dim] = -1
    per_class = log_p * weight.reshape(shape) if weight is not None else log_p
    smooth = -per_class.sum(class_dim) * valid
    if reduction == "mean":
        if weight is not None:
            safe = torch.where(target != ignore_index, target, torch.zeros_like(target))
            smooth = smooth.sum() / (weight[safe] * valid).sum()
        else:
            smooth = smooth.sum() / valid.sum()
    else:
        smooth = _reduce(smooth, reduction)
    return (1 - eps) * nll + eps / log_p.shape[class_dim] * smooth


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """BCE on probabilities; like torch, each log term is clamped at -100 so 0 and 1 stay
    finite."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input "
                         f"size ({input.shape}) is deprecated. Please ensure they have the same "
                         "size.")
    with torch.no_grad():
        if ((input < 0) | (input > 1)).any().item():
            raise RuntimeError("all elements of input should be between 0 and 1")
    log_p = input.log().clamp(min=-100)
    log_1mp = (1 - input).log().clamp(min=-100)
    loss = -(target * log_p + (1 - target) * log_1mp)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None, size_average=None,
                                     reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """sigmoid + BCE fused stably: (1 - y) x - log(sigmoid(x)), weighted per element/class."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")
    # NOTE: -log(sigmoid(x)) = m + log(exp(-m) + exp(-x - m)) with m = max(-x, 0), so no exp
    # overflows. m is only a shift (the result's derivative in m is 0), so detaching it is
    # exact and saves graph nodes. The tempting relu(-x) + log1p(exp(-|x|)) is NOT: relu and
    # abs have zero slope at 0, giving gradient 1 - y instead of 0.5 - y at x = 0.
    m = (-input.detach()).clamp(min=0)
    neg_log_sigmoid = m + ((-m).exp() + (-input - m).exp()).log()
    if pos_weight is not None:
        neg_log_sigmoid = neg_log_sigmoid * ((pos_weight - 1) * target + 1)
    loss = (1 - target) * input + neg_log_sigmoid
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """KL(target || exp(input)) pointwise: target * (log target - input)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        safe = torch.where(target > 0, target, torch.ones_like(target))
        loss = torch.where(target > 0, target * (safe.log() - input), -target * input * 0)
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    return _reduce(loss, reduction)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """Class indices -> int64 one-hot vectors along a new last dim."""
    if tensor.dtype != torch.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        num_classes = int(tensor.max().item()) + 1 if tensor.numel() else 0
    if tensor.numel() and (tensor.min().item() < 0 or tensor.max().item() >= num_classes):
        raise RuntimeError("Class values must be smaller than num_classes." if
                           tensor.min().item() >= 0 else "Class values must be non-negative.")
    return (tensor.unsqueeze(-1) == torch.arange(num_classes)).long()
