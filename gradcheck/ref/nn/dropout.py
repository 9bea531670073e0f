"""`Dropout`: random zeroing in training mode, the identity in eval mode."""
from __future__ import annotations

from typing import Any

from gradcheck.ref.nn import functional as F
from gradcheck.ref.nn.module import Module


class Dropout(Module):
    """Zero elements with probability `p` while `self.training`; scale survivors by 1/(1-p).

    Example:
        >>> import gradcheck.ref as torch
        >>> Dropout(0.5).eval()(torch.ones(2)).tolist()
        [1.0, 1.0]
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Any) -> Any:
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout2d(Dropout):
    """Zero whole channels with probability `p` while `self.training` (also 1-d and 3-d).

    Example:
        >>> import gradcheck.ref as torch
        >>> Dropout2d(0.5).eval()(torch.ones(1, 2, 3)).shape
        torch.Size([1, 2, 3])
    """

    def forward(self, input: Any) -> Any:
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout1d(Dropout2d):
    """`Dropout2d` for (N, C, L) inputs."""


class Dropout3d(Dropout2d):
    """`Dropout2d` for (N, C, D, H, W) inputs."""
