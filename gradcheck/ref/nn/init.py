"""`nn.init`: in-place initialisers, with torch's fan and gain conventions.

All of them run under `no_grad`, so they may be applied to parameters that require grad.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradcheck import ref as torch

Tensor = Any

_LINEAR_GAINS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                 "conv_transpose2d", "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (torch's table).

    Example:
        >>> round(calculate_gain("relu"), 4)
        1.4142
    """
    if nonlinearity in _LINEAR_GAINS:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise ValueError(f"negative_slope {slope} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}; use one of linear, sigmoid, "
                     "tanh, relu, leaky_relu, selu")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         f"dimensions (got shape {tuple(tensor.shape)})")
    receptive_field = math.prod(tensor.shape[2:]) if tensor.dim() > 2 else 1
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with U(a, b).

    Example:
        >>> import gradcheck.ref as torch
        >>> bool(uniform_(torch.empty(100), -1, 1).abs().max() <= 1)
        True
    """
    with torch.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with N(mean, std^2).

    Example:
        >>> import gradcheck.ref as torch
        >>> tuple(normal_(torch.empty(3), std=0.1).shape)
        (3,)
    """
    with torch.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with `val`.

    Example:
        >>> import gradcheck.ref as torch
        >>> constant_(torch.empty(2), 3.0).tolist()
        [3.0, 3.0]
    """
    with torch.no_grad():
        return tensor.fill_(val)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with 0.

    Example:
        >>> import gradcheck.ref as torch
        >>> zeros_(torch.empty(2)).tolist()
        [0.0, 0.0]
    """
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with 1.

    Example:
        >>> import gradcheck.ref as torch
        >>> ones_(torch.empty(2)).tolist()
        [1.0, 1.0]
    """
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio).

    Example:
        >>> import gradcheck.ref as torch
        >>> bool(xavier_uniform_(torch.empty(3, 5)).abs().max() <= 0.8661)
        True
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator: Any = None) -> Tensor:
    """U(-b, b) with b = gain * sqrt(3 / fan) (He et al.); Linear's default uses a=sqrt(5).

    Example:
        >>> import gradcheck.ref as torch
        >>> bool(kaiming_uniform_(torch.empty(4, 9), a=5 ** 0.5).abs().max() <= 1 / 3)
        True
    """
    if 0 in tuple(tensor.shape):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator: Any = None) -> Tensor:
    """N(0, std^2) with std = gain / sqrt(fan)."""
    if 0 in tuple(tensor.shape):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """A (semi-)orthogonal matrix from the QR factorisation of a Gaussian draw, torch's way:
    the rows are flattened to a matrix, Q's columns take the signs of R's diagonal (so the
    draw is uniform over orthogonal matrices), and the result is scaled by ``gain``.

    Example:
        >>> import gradcheck.ref as torch
        >>> w = orthogonal_(torch.empty(3, 5))
        >>> torch.allclose(w @ w.T, torch.eye(3), atol=1e-6)
        True
    """
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with torch.no_grad():
        flattened = tensor.new_empty((rows, cols)).normal_(0, 1, generator=generator)
        matrix = flattened.numpy()
        if rows < cols:
            matrix = matrix.T
        q, r = np.linalg.qr(matrix)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        tensor.view(rows, cols).copy_(torch.tensor(q, dtype=tensor.dtype))
        tensor.mul_(gain)
    return tensor


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator: Any = None) -> Tensor:
    """N(mean, std^2) truncated to [a, b], torch's way: uniform draws mapped through the
    inverse normal CDF (erfinv), then clamped.

    Example:
        >>> import gradcheck.ref as torch
        >>> bool(trunc_normal_(torch.empty(100), std=0.02, a=-0.04, b=0.04).abs().max() <= 0.04)
        True
    """
    def cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    with torch.no_grad():
        low, high = cdf((a - mean) / std), cdf((b - mean) / std)
        tensor.uniform_(2 * low - 1, 2 * high - 1, generator=generator)
        tensor.erfinv_()
        tensor.mul_(std * math.sqrt(2.0))
        tensor.add_(mean)
        tensor.clamp_(min=a, max=b)
    return tensor


def eye_(tensor: Tensor) -> Tensor:
    """The identity matrix (in a 2-D tensor)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with torch.no_grad():
        tensor.copy_(torch.eye(*tensor.shape, dtype=tensor.dtype))
    return tensor


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Convolution weights that pass each input channel through unchanged."""
    dims = tensor.dim()
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    out_per_group = tensor.shape[0] // groups
    channels = min(out_per_group, tensor.shape[1])
    with torch.no_grad():
        tensor.zero_()
        centre = tuple(size // 2 for size in tensor.shape[2:])
        for g in range(groups):
            for d in range(channels):
                tensor[(g * out_per_group + d, d) + centre] = 1
    return tensor


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Any = None) -> Tensor:
    """N(0, std^2) with a fraction ``sparsity`` of each column set to zero."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    zeros = int(math.ceil(sparsity * rows))
    with torch.no_grad():
        tensor.normal_(0, std, generator=generator)
        for col in range(cols):
            picked = torch.randperm(rows, generator=generator)[:zeros]
            tensor[picked, col] = 0
    return tensor


def _deprecated(fn):
    """torch's old names without the trailing underscore, with its warning."""
    import warnings

    def old(*args, **kwargs):
        warnings.warn(f"`nn.init.{fn.__name__[:-1]}` is now deprecated in favor of "
                      f"`nn.init.{fn.__name__}`.", FutureWarning, stacklevel=2)
        return fn(*args, **kwargs)

    old.__name__ = fn.__name__[:-1]
    return old


uniform, normal, constant, eye, dirac = (_deprecated(f) for f in (uniform_, normal_, constant_,
                                                                   eye_, dirac_))
xavier_uniform, xavier_normal = _deprecated(xavier_uniform_), _deprecated(xavier_normal_)
kaiming_uniform, kaiming_normal = _deprecated(kaiming_uniform_), _deprecated(kaiming_normal_)
orthogonal, sparse = _deprecated(orthogonal_), _deprecated(sparse_)
