"""`LayerNorm` and `GroupNorm`: per-sample normalisation (over trailing dims, or over groups
of channels)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.nn import functional as F
from gradcheck.ref.nn.module import Module
from gradcheck.ref.nn.parameter import Parameter


class LayerNorm(Module):
    """(x - mean) / sqrt(var + eps) * weight + bias over `normalized_shape`.

    Example:
        >>> import gradcheck.ref as torch
        >>> LayerNorm(4)(torch.randn(2, 4)).shape
        torch.Size([2, 4])
    """

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(torch.ones(*self.normalized_shape, dtype=dtype,
                                               device=device))
            if bias:
                self.bias = Parameter(torch.zeros(*self.normalized_shape, dtype=dtype,
                                                  device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        """weight back to ones and bias to zeros, in place."""
        if self.weight is not None:
            torch.nn.init.ones_(self.weight)
        if self.bias is not None:
            torch.nn.init.zeros_(self.bias)

    def forward(self, input: Any) -> Any:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


def group_norm(input: Any, num_groups: int, weight: Any = None, bias: Any = None,
               eps: float = 1e-5) -> Any:
    """Normalise each group of channels of each sample, then scale and shift per channel."""
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    grouped = input.reshape(n, num_groups, -1)
    mean = grouped.mean(-1, keepdim=True)
    centered = grouped - mean
    var = (centered * centered).mean(-1, keepdim=True)
    return channel_affine((centered * (var + eps).rsqrt()).reshape(input.shape), weight, bias)


def channel_affine(out: Any, weight: Any, bias: Any) -> Any:
    """``out * weight + bias`` with one weight and bias per channel (dim 1), either optional."""
    shape = (1, -1) + (1,) * (out.dim() - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


class GroupNorm(Module):
    """Group normalisation (Wu & He): statistics per sample over groups of channels.

    Example:
        >>> import gradcheck.ref as torch
        >>> GroupNorm(2, 4)(torch.randn(3, 4, 5)).shape
        torch.Size([3, 4, 5])
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = (num_groups, num_channels,
                                                                     eps, affine)
        if affine:
            self.weight = Parameter(torch.ones(num_channels, dtype=dtype, device=device))
            self.bias = Parameter(torch.zeros(num_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input: Any) -> Any:
        return group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"
