"""`Linear` (y = x W^T + b) and `Identity`."""
from __future__ import annotations

import math
from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.nn import functional as F
from gradcheck.ref.nn import init
from gradcheck.ref.nn.module import Module
from gradcheck.ref.nn.parameter import Parameter


def default_init(weight: Any, bias: Any) -> None:
    """torch's default for Linear and Conv layers: weight ~ kaiming_uniform_(a=sqrt(5)) and
    bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    # NOTE: a=sqrt(5) makes kaiming_uniform_'s bound exactly 1/sqrt(fan_in).
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = init._calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(bias, -bound, bound)


class Identity(Module):
    """Return the input unchanged (accepts and ignores any constructor arguments).

    Example:
        >>> import gradcheck.ref as torch
        >>> Identity()(torch.ones(1)).tolist()
        [1.0]
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Any) -> Any:
        return input


class Linear(Module):
    """Affine map with torch's default init: weight and bias ~ U(-1/sqrt(in), 1/sqrt(in)).

    Example:
        >>> import gradcheck.ref as torch
        >>> Linear(3, 2)(torch.ones(4, 3)).shape
        torch.Size([4, 2])
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(torch.empty(out_features, in_features, dtype=dtype,
                                            device=device))
        if bias:
            self.bias = Parameter(torch.empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        default_init(self.weight, self.bias)

    def forward(self, input: Any) -> Any:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")
