"""Distances and similarities: ``cosine_similarity``, ``pairwise_distance``, ``cdist``,
``pdist`` and their modules ``CosineSimilarity`` and ``PairwiseDistance``.

NOTE: a Euclidean distance of exactly 0 has no derivative; torch's backward gives 0 there,
and so does ``cdist`` here (the square root is taken of a value that is never 0).

Example:
    >>> import gradcheck.ref as torch
    >>> cdist(torch.tensor([[0.0, 0.0]]), torch.tensor([[3.0, 4.0], [0.0, 0.0]]))
    tensor([[5., 0.]])
"""
from __future__ import annotations

from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.nn.module import Module

Tensor = Any


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """x1 / max(|x1|, eps) . x2 / max(|x2|, eps) along ``dim`` (torch's separate clamping)."""
    n1 = x1.norm(2, dim, keepdim=True).clamp(min=eps)
    n2 = x2.norm(2, dim, keepdim=True).clamp(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """The p-norm of ``x1 - x2 + eps`` along the last dim."""
    return (x1 - x2 + eps).norm(p, -1, keepdim=keepdim)


def _safe_root(total: Tensor, p: float) -> Tensor:
    zero = total == 0
    root = torch.where(zero, torch.ones((), dtype=total.dtype), total) ** (1.0 / p)
    return torch.where(zero, torch.zeros((), dtype=total.dtype), root)


def _pnorm(diff: Tensor, p: float) -> Tensor:
    """The p-norm of ``|diff|`` along the last dim."""
    if p == 0:
        return (diff != 0).to(diff.dtype).sum(-1)
    if p == float("inf"):
        return diff.amax(-1)
    if p == 1:
        return diff.sum(-1)
    return _safe_root((diff ** p).sum(-1), p)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str = "") -> Tensor:
    """Distances between each row of x1 ``(*, P, M)`` and each row of x2 ``(*, R, M)``."""
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    return _pnorm((x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs(), p)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The upper triangle (i < j, row-major) of ``cdist(input, input)``."""
    rows, cols = torch.triu_indices(input.shape[0], input.shape[0], 1)
    return _pnorm((input[rows] - input[cols]).abs(), p)


class CosineSimilarity(Module):
    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
