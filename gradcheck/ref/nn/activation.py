"""Element-wise activation modules and the softmax family."""
from __future__ import annotations

from typing import Any

from gradcheck.ref.nn import functional as F
from gradcheck.ref.nn.module import Module


class ReLU(Module):
    """max(x, 0).

    Example:
        >>> import gradcheck.ref as torch
        >>> ReLU()(torch.tensor([-1.0, 1.0])).tolist()
        [0.0, 1.0]
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Any) -> Any:
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """x for x > 0, negative_slope * x otherwise.

    Example:
        >>> import gradcheck.ref as torch
        >>> LeakyReLU(0.5)(torch.tensor([-1.0, 1.0])).tolist()
        [-0.5, 1.0]
    """

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Any) -> Any:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class Tanh(Module):
    """Hyperbolic tangent.

    Example:
        >>> import gradcheck.ref as torch
        >>> Tanh()(torch.zeros(1)).tolist()
        [0.0]
    """

    def forward(self, input: Any) -> Any:
        return F.tanh(input)


class Sigmoid(Module):
    """Logistic function.

    Example:
        >>> import gradcheck.ref as torch
        >>> Sigmoid()(torch.zeros(1)).tolist()
        [0.5]
    """

    def forward(self, input: Any) -> Any:
        return F.sigmoid(input)


class Softmax(Module):
    """Softmax over `dim`.

    Example:
        >>> import gradcheck.ref as torch
        >>> Softmax(dim=0)(torch.zeros(2)).tolist()
        [0.5, 0.5]
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Any) -> Any:
        return F.softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """log(softmax(x)) over `dim`, computed stably."""

    def forward(self, input: Any) -> Any:
        return F.log_softmax(input, self.dim)
