"""``affine_grid`` and ``grid_sample`` (2-D): sample an image at the normalised coordinates
of a grid, as spatial transformers and warping losses do.

``grid_sample`` reads the four neighbours of each point (bilinear) or the nearest one with
gathers, so the gradient reaches both the image and the grid (torch's bilinear rule). Padding
``zeros`` and ``border``, ``align_corners`` either way; ``reflection`` padding and bicubic
interpolation raise NotImplementedError naming the option.

Example:
    >>> import gradcheck.ref as torch
    >>> image = torch.arange(4.0).reshape(1, 1, 2, 2)
    >>> grid = affine_grid(torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]]), [1, 1, 2, 2],
    ...                    align_corners=True)
    >>> grid_sample(image, grid, align_corners=True).equal(image)
    True
"""
from __future__ import annotations

from typing import Any

from gradcheck import ref as torch

Tensor = Any


def _base_coordinates(size: int, align_corners: bool, dtype: Any) -> Tensor:
    if size == 1:
        return torch.zeros(1, dtype=dtype)
    steps = torch.linspace(-1, 1, size, dtype=dtype)
    return steps if align_corners else steps * (size - 1) / size


def affine_grid(theta: Tensor, size: list, align_corners: bool | None = None) -> Tensor:
    """The sampling grid (N, H, W, 2) of the affine maps ``theta`` (N, 2, 3)."""
    if len(size) != 4:
        raise NotImplementedError("affine_grid is available in gradcheck.ref for 4-D sizes "
                                  "(N, C, H, W) only")
    n, _, h, w = size
    align = bool(align_corners)
    xs = _base_coordinates(w, align, theta.dtype)
    ys = _base_coordinates(h, align, theta.dtype)
    base = torch.stack([xs.reshape(1, w).expand(h, w), ys.reshape(h, 1).expand(h, w),
                        torch.ones(h, w, dtype=theta.dtype)], -1)  # (H, W, 3)
    return (base.reshape(1, h * w, 3) @ theta.transpose(1, 2)).reshape(n, h, w, 2)


def _unnormalise(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _gather(input: Tensor, ys: Tensor, xs: Tensor, padding_mode: str) -> Tensor:
    """input[n, :, y, x] for integer tensors ys, xs of shape (N, Hg, Wg); zeros outside
    (or the nearest edge with ``border``)."""
    n, c, h, w = input.shape
    inside = (xs >= 0) & (xs < w) & (ys >= 0) & (ys < h)
    xc, yc = xs.clamp(0, w - 1), ys.clamp(0, h - 1)
    flat = (yc * w + xc).reshape(n, 1, -1).expand(n, c, -1)
    values = input.reshape(n, c, h * w).gather(2, flat).reshape(n, c, *xs.shape[1:])
    if padding_mode == "border":
        return values
    return values * inside.unsqueeze(1).to(input.dtype)


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """Sample ``input`` (N, C, H, W) at ``grid`` (N, Hg, Wg, 2) of (x, y) in [-1, 1]."""
    if input.dim() != 4:
        raise NotImplementedError("grid_sample is available in gradcheck.ref for 4-D inputs only")
    if padding_mode not in ("zeros", "border"):
        raise NotImplementedError(f"grid_sample(padding_mode={padding_mode!r}) is not available "
                                  "in gradcheck.ref; use 'zeros' or 'border'")
    if mode not in ("bilinear", "nearest"):
        raise NotImplementedError(f"grid_sample(mode={mode!r}) is not available in "
                                  "gradcheck.ref; use 'bilinear' or 'nearest'")
    align = bool(align_corners)
    h, w = input.shape[2], input.shape[3]
    x = _unnormalise(grid[..., 0], w, align)
    y = _unnormalise(grid[..., 1], h, align)
    if padding_mode == "border":
        x, y = x.clamp(0, w - 1), y.clamp(0, h - 1)
    if mode == "nearest":  # round half to even, as torch's nearbyint
        return _gather(input, y.round().long(), x.round().long(), padding_mode)
    x0, y0 = x.floor(), y.floor()
    wx, wy = (x - x0).unsqueeze(1), (y - y0).unsqueeze(1)
    x0, y0 = x0.long(), y0.long()
    x1, y1 = x0 + 1, y0 + 1
    top = _gather(input, y0, x0, padding_mode) * (1 - wx) + _gather(input, y0, x1,
                                                                   padding_mode) * wx
    bottom = _gather(input, y1, x0, padding_mode) * (1 - wx) + _gather(input, y1, x1,
                                                                      padding_mode) * wx
    return top * (1 - wy) + bottom * wy
