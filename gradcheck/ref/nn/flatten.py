"""`Flatten`: merge a range of dimensions (by default everything but the batch dim)."""
from __future__ import annotations

from typing import Any

from gradcheck.ref.nn.module import Module


class Flatten(Module):
    """Flatten dims `start_dim`..`end_dim` into one.

    Example:
        >>> import gradcheck.ref as torch
        >>> tuple(Flatten()(torch.zeros(2, 3, 4)).shape)
        (2, 12)
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Any) -> Any:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size``.

    Example:
        >>> import gradcheck.ref as torch
        >>> tuple(Unflatten(1, (2, 3))(torch.zeros(4, 6)).shape)
        (4, 2, 3)
    """

    def __init__(self, dim: int | str, unflattened_size: Any) -> None:
        super().__init__()
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input: Any) -> Any:
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
