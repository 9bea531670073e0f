"""`LayerNorm`: per-sample normalisation over the trailing dimensions."""
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

    def forward(self, input: Any) -> Any:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")
