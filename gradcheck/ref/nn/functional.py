"""`nn.functional`: activations, layers and losses written with the engine's public ops.

Every function is a composition of differentiable Tensor ops, so its backward comes from the
engine's derivative table; the numerically delicate ones (softmax family, logits losses) are
written so that the composed gradient is exact, not just the forward value.
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from gradcheck import ref as torch

Tensor = Any  # a gradcheck.ref.Tensor; kept loose so this module imports before the engine

_REDUCTIONS = ("mean", "sum", "none")


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = x W^T + b.

    Example:
        >>> import gradcheck.ref as torch
        >>> linear(torch.ones(1, 2), torch.ones(3, 2), torch.zeros(3)).tolist()
        [[2.0, 2.0, 2.0]]
    """
    # NOTE: one fused node (AddmmBackward0, as torch records) measured ~2-3% faster on the
    # MLP step than matmul + t + add; see docs/bench-engine.md.
    return torch.ops.linear(input, weight, bias)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0); the gradient at exactly 0 is 0, as in torch.

    Example:
        >>> import gradcheck.ref as torch
        >>> relu(torch.tensor([-1.0, 2.0])).tolist()
        [0.0, 2.0]
    """
    return input.relu_() if inplace else input.relu()


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x where x > 0, else negative_slope * x (the slope at exactly 0 is negative_slope).

    Example:
        >>> import gradcheck.ref as torch
        >>> leaky_relu(torch.tensor([-2.0, 3.0]), 0.5).tolist()
        [-1.0, 3.0]
    """
    if not inplace:
        return torch.where(input > 0, input, input * negative_slope)
    # The engine's scalar mul saves its tensor operand (torch saves nothing there), and the
    # write below would invalidate it; scaling a clone keeps the graph valid. copy_ records
    # the in-place edit in the graph, as torch's leaky_relu_ does.
    return input.copy_(torch.where(input > 0, input, input.clone() * negative_slope))


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent.

    Example:
        >>> import gradcheck.ref as torch
        >>> tanh(torch.zeros(1)).tolist()
        [0.0]
    """
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    """Logistic function.

    Example:
        >>> import gradcheck.ref as torch
        >>> sigmoid(torch.zeros(1)).tolist()
        [0.5]
    """
    return input.sigmoid()


def log_softmax(input: Tensor, dim: int | None = None) -> Tensor:
    """log(softmax(x)), stable for large |x| (the engine shifts by the max internally).

    Example:
        >>> import gradcheck.ref as torch
        >>> round(log_softmax(torch.tensor([1000.0, 1000.0]), dim=0)[0].item(), 4)
        -0.6931
    """
    return torch.log_softmax(input, _default_dim(input, dim))


def softmax(input: Tensor, dim: int | None = None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim`, computed stably.

    Example:
        >>> import gradcheck.ref as torch
        >>> softmax(torch.tensor([0.0, 0.0]), dim=0).tolist()
        [0.5, 0.5]
    """
    return torch.softmax(input, _default_dim(input, dim))


def _default_dim(input: Tensor, dim: int | None) -> int:
    if dim is not None:
        return dim
    # torch's legacy implicit-dim rule (it warns; we simply follow it).
    return 0 if input.dim() in (0, 1, 3) else 1


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability p and scale the survivors by 1/(1-p) (training only).

    Example:
        >>> import gradcheck.ref as torch
        >>> dropout(torch.ones(3), p=0.5, training=False).tolist()
        [1.0, 1.0, 1.0]
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * torch.zeros_like(input)
    scale = (torch.rand(input.shape) >= p).to(input.dtype) / (1.0 - p)
    return input.mul_(scale) if inplace else input * scale


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """Rows of `weight` at integer `input`; rows at `padding_idx` receive no gradient.

    Example:
        >>> import gradcheck.ref as torch
        >>> embedding(torch.tensor([1]), torch.eye(2)).tolist()
        [[0.0, 1.0]]
    """
    if input.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"embedding indices must be int64 or int32, got {input.dtype}; "
                        "convert them with .long()")
    rows = weight[input]
    if padding_idx is None:
        return rows
    if padding_idx < 0:
        padding_idx += weight.shape[0]
    keep = (input != padding_idx).to(weight.dtype).unsqueeze(-1)
    # Same forward value everywhere; the padding rows' gradient path is cut.
    return rows * keep + rows.detach() * (1 - keep)


def layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize over the trailing `normalized_shape` dims with the biased variance.

    Example:
        >>> import gradcheck.ref as torch
        >>> [round(v, 3) for v in layer_norm(torch.tensor([1.0, 3.0]), (2,)).tolist()]
        [-1.0, 1.0]
    """
    normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) \
        else tuple(normalized_shape)
    if tuple(input.shape[input.dim() - len(normalized_shape):]) != normalized_shape:
        raise RuntimeError(f"layer_norm: input shape {tuple(input.shape)} does not end with "
                           f"normalized_shape {normalized_shape}")
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    mean = input.mean(dim=dims, keepdim=True)
    centered = input - mean
    var = (centered * centered).mean(dim=dims, keepdim=True)
    out = centered / (var + eps).sqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def _check_reduction(reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction!r} is not a valid value for reduction; use one of "
                         f"{', '.join(_REDUCTIONS)}")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    _check_reduction(reduction)
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _check_same_shape(input: Tensor, target: Tensor, name: str) -> None:
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"{name}: target size {tuple(target.shape)} must be the same as input "
                         f"size {tuple(input.shape)}")


def _warn_broadcast(input: Tensor, target: Tensor, name: str) -> None:
    # torch only warns here and broadcasts; we keep its behaviour so scripts run identically.
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(f"{name}: target size {tuple(target.shape)} differs from input size "
                      f"{tuple(input.shape)}; they will broadcast, which is likely a bug. "
                      "Reshape them to the same size.", UserWarning, stacklevel=3)


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean squared error.

    Example:
        >>> import gradcheck.ref as torch
        >>> mse_loss(torch.tensor([1.0, 3.0]), torch.tensor([0.0, 0.0])).item()
        5.0
    """
    _warn_broadcast(input, target, "mse_loss")
    diff = input - target
    return _reduce(diff * diff, reduction)


def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean absolute error.

    Example:
        >>> import gradcheck.ref as torch
        >>> l1_loss(torch.tensor([1.0]), torch.tensor([3.0])).item()
        2.0
    """
    _warn_broadcast(input, target, "l1_loss")
    return _reduce((input - target).abs(), reduction)


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of class indices, given log-probabilities `input` (N, C, ...).

    With reduction="mean" the sum is divided by the total weight of non-ignored targets.

    Example:
        >>> import gradcheck.ref as torch
        >>> nll_loss(torch.tensor([[-1.0, -2.0]]), torch.tensor([1])).item()
        2.0
    """
    if input.dim() < 1 or target.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"nll_loss expects class indices of dtype int64 as target, got "
                        f"{target.dtype}; for probabilities use binary_cross_entropy")
    batch = input.shape[0] if input.dim() > 1 else 1
    if input.dim() > 1 and tuple(target.shape) != (batch,) + tuple(input.shape[2:]):
        raise ValueError(f"nll_loss: expected target of shape {(batch,) + tuple(input.shape[2:])}"
                         f" for input of shape {tuple(input.shape)}, got {tuple(target.shape)}")
    class_dim = 1 if input.dim() > 1 else 0
    if weight is None and not (target == ignore_index).any().item():
        picked = input.gather(class_dim, target.unsqueeze(class_dim)).squeeze(class_dim)
        return _reduce(-picked, reduction)
    valid = target != ignore_index
    safe_target = torch.where(valid, target, torch.zeros_like(target))
    picked = input.gather(class_dim, safe_target.unsqueeze(class_dim)).squeeze(class_dim)
    w = valid.to(input.dtype)
    if weight is not None:
        w = w * weight[safe_target]
    loss = -picked * w
    if reduction == "mean":
        return loss.sum() / w.sum()
    return _reduce(loss, reduction)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    """log_softmax over the class dim followed by nll_loss (class-index targets).

    Example:
        >>> import gradcheck.ref as torch
        >>> round(cross_entropy(torch.zeros(1, 2), torch.tensor([0])).item(), 4)
        0.6931
    """
    class_dim = 1 if input.dim() > 1 else 0
    return nll_loss(log_softmax(input, class_dim), target, weight, ignore_index, reduction)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         reduction: str = "mean") -> Tensor:
    """BCE on probabilities; like torch, each log term is clamped at -100 so 0 and 1 stay finite.

    Example:
        >>> import gradcheck.ref as torch
        >>> round(binary_cross_entropy(torch.tensor([0.5]), torch.tensor([1.0])).item(), 4)
        0.6931
    """
    _check_same_shape(input, target, "binary_cross_entropy")
    with torch.no_grad():
        if ((input < 0) | (input > 1)).any().item():
            raise RuntimeError("binary_cross_entropy: all elements of input should be between "
                               "0 and 1; apply sigmoid first or use "
                               "binary_cross_entropy_with_logits")
    log_p = input.log().clamp(min=-100)
    log_1mp = (1 - input).log().clamp(min=-100)
    loss = -(target * log_p + (1 - target) * log_1mp)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """sigmoid + BCE fused stably: (1 - y) x - log(sigmoid(x)), weighted per element/class.

    Example:
        >>> import gradcheck.ref as torch
        >>> round(binary_cross_entropy_with_logits(torch.tensor([0.0]),
        ...                                        torch.tensor([1.0])).item(), 4)
        0.6931
    """
    _check_same_shape(input, target, "binary_cross_entropy_with_logits")
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
