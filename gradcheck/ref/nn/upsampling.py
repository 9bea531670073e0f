"""``F.interpolate`` (nearest, nearest-exact, linear, bilinear, trilinear) and ``Upsample``.

Every mode is a linear map along each spatial dim, so the output is ``A_h @ x @ A_w^T`` (one
product per spatial dim) with constant interpolation matrices built from torch's source-index formulas; the gradient is the
transposed products, from the matmul rule.

Example:
    >>> import gradcheck.ref as torch
    >>> interpolate(torch.tensor([[[1.0, 2.0]]]), scale_factor=2).tolist()
    [[[1.0, 1.0, 2.0, 2.0]]]
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradcheck.ref.nn.module import Module

Tensor = Any
_SPATIAL = {"nearest": None, "linear": 1, "bilinear": 2, "trilinear": 3, "nearest-exact": None}


def _matrix(size: int, out: int, mode: str, align_corners: bool | None,
            scale: float | None) -> np.ndarray:
    """(out, size) matrix mapping an input line to the interpolated output line."""
    m = np.zeros((out, size))
    dst = np.arange(out)
    if mode in ("nearest", "nearest-exact"):
        ratio = 1.0 / scale if scale else size / out
        offset = 0.5 if mode == "nearest-exact" else 0.0
        src = np.minimum(np.floor((dst + offset) * ratio).astype(np.int64), size - 1)
        m[dst, src] = 1.0
        return m
    if align_corners:
        src = dst * ((size - 1) / (out - 1)) if out > 1 else np.zeros(out)
    else:
        ratio = 1.0 / scale if scale else size / out
        src = np.maximum((dst + 0.5) * ratio - 0.5, 0.0)
    low = np.minimum(np.floor(src).astype(np.int64), size - 1)
    high = np.minimum(low + 1, size - 1)
    frac = src - low
    np.add.at(m, (dst, low), 1.0 - frac)
    np.add.at(m, (dst, high), frac)
    return m


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of an (N, C, L) or (N, C, H, W) input."""
    if mode not in _SPATIAL:
        raise NotImplementedError(f"interpolate(mode={mode!r}) is not supported by "
                                  "gradcheck.ref; use nearest, linear or bilinear")
    if align_corners is not None and mode.startswith("nearest"):
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    spatial = input.dim() - 2
    if _SPATIAL[mode] is not None and _SPATIAL[mode] != spatial:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs "
                                  f"{_SPATIAL[mode] + 2}D input")
    if (size is None) == (scale_factor is None):
        raise ValueError("either size or scale_factor should be defined" if size is None else
                         "only one of size or scale_factor should be defined")
    scales = (list(scale_factor) if isinstance(scale_factor, (list, tuple)) else
              [scale_factor] * spatial) if scale_factor is not None else [None] * spatial
    sizes = (list(size) if isinstance(size, (list, tuple)) else [size] * spatial) \
        if size is not None else [math.floor(n * s) for n, s in zip(input.shape[2:], scales)]
    if recompute_scale_factor:
        scales = [None] * spatial
    out = input
    for axis, (n, o, s) in enumerate(zip(input.shape[2:], sizes, scales)):
        m = input.new_tensor(_matrix(n, int(o), mode, align_corners, s))
        # one product per spatial dim: move it last, multiply by the (in, out) matrix, move back
        out = (out.movedim(axis + 2, -1) @ m.mT).movedim(-1, axis + 2)
    return out


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated alias of ``interpolate``."""
    return interpolate(input, size, scale_factor, mode, align_corners)


class Upsample(Module):
    """Module form of ``interpolate``."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest",
                 align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.size, self.mode, self.align_corners = size, mode, align_corners
        self.scale_factor = float(scale_factor) if isinstance(scale_factor, (int, float)) \
            else scale_factor
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                           self.recompute_scale_factor)

    def extra_repr(self) -> str:
        shown = f"scale_factor={self.scale_factor}" if self.scale_factor is not None \
            else f"size={self.size}"
        return f"{shown}, mode='{self.mode}'"


class UpsamplingNearest2d(Upsample):
    """``Upsample`` with mode nearest."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, "nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample`` with mode bilinear and ``align_corners=True``."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, "bilinear", True)
