"""Pixel shuffle: trade channels for resolution (``C*r*r, H, W -> C, H*r, W*r``) and back.
Both are a reshape, a permute and a reshape, so their gradients are the shape ops' rules.

Example:
    >>> import gradcheck.ref as torch
    >>> x = torch.arange(8.0).reshape(1, 8, 1, 1)
    >>> pixel_shuffle(x, 2).shape, pixel_unshuffle(pixel_shuffle(x, 2), 2).equal(x)
    (torch.Size([1, 2, 2, 2]), True)
"""
from __future__ import annotations

from typing import Any

from gradcheck.ref.nn.module import Module

Tensor = Any


def _check(name: str, input: Tensor, factor: int, what: str) -> None:
    if input.dim() < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got input "
                           f"with {input.dim()} dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{name} expects a positive {what}, but got {factor}")


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``(*, C*r*r, H, W) -> (*, C, H*r, W*r)``."""
    r = upscale_factor
    _check("pixel_shuffle", input, r, "upscale_factor")
    *batch, channels, height, width = input.shape
    if channels % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
            f"of upscale_factor, but input.size(-3)={channels} is not divisible by {r * r}")
    n = len(batch)
    x = input.reshape(*batch, channels // (r * r), r, r, height, width)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*batch, channels // (r * r), height * r, width * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """``(*, C, H*r, W*r) -> (*, C*r*r, H, W)``, the inverse of ``pixel_shuffle``."""
    r = downscale_factor
    _check("pixel_unshuffle", input, r, "downscale_factor")
    *batch, channels, height, width = input.shape
    for side, size in (("height", height), ("width", width)):
        if size % r:
            index = -2 if side == "height" else -1
            raise RuntimeError(
                f"pixel_unshuffle expects {side} to be divisible by downscale_factor, but "
                f"input.size({index})={size} is not divisible by {r}")
    n = len(batch)
    x = input.reshape(*batch, channels, height // r, r, width // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*batch, channels * r * r, height // r, width // r)


class PixelShuffle(Module):
    """``nn.PixelShuffle(upscale_factor)``: sub-pixel convolution's rearrangement."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """``nn.PixelUnshuffle(downscale_factor)``: the inverse rearrangement."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
