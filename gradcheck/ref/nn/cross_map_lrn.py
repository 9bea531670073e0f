"""``nn.CrossMapLRN2d``: Lua torch's local response normalization across channels, kept by
torch as a Function with its own forward and backward (which this mirrors step for step:
the running window sum of squares, and torch's hand-written gradient).

>>> import gradcheck.ref as torch
>>> torch.nn.CrossMapLRN2d(3, alpha=1.0, beta=1.0, k=1.0)(torch.ones(1, 2, 1, 1)).flatten()
tensor([0.6000, 0.6000])
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gradcheck.ref.autograd import Function
from gradcheck.ref.nn.module import Module

Tensor = Any


def _window_scale(squares: np.ndarray, size: int, alpha: float, k: float) -> np.ndarray:
    """k + alpha/size * (the running channel-window sum of squares), torch's recurrence."""
    channels = squares.shape[1]
    pre_pad = int((size - 1) / 2 + 1)
    scale = np.zeros_like(squares)
    scale[:, 0] = squares[:, :min(pre_pad, channels)].sum(axis=1)
    for c in range(1, channels):
        scale[:, c] = scale[:, c - 1]
        if c < channels - pre_pad + 1:
            scale[:, c] += squares[:, c + pre_pad - 1]
        if c > pre_pad:
            scale[:, c] -= squares[:, c - pre_pad]
    return scale * (alpha / size) + k


class _CrossMapLRN2dFunction(Function):
    @staticmethod
    def forward(ctx: Any, input: Tensor, size: int, alpha: float = 1e-4,  # noqa: A002
                beta: float = 0.75, k: float = 1) -> Tensor:
        from gradcheck.ref.tensors import _make

        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D "
                             f"instead.")
        x = input._data
        scale = _window_scale(x * x, size, alpha, k)
        output = _make(scale ** -beta * x)
        ctx.size, ctx.alpha, ctx.beta, ctx.scale = size, alpha, beta, scale
        ctx.save_for_backward(input, output)
        return output

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> tuple:
        from gradcheck.ref.tensors import _make

        input, output = ctx.saved_tensors  # noqa: A001
        x, out, g = input._data, output._data, grad_output._data
        channels, size = x.shape[1], ctx.size
        ratio = 2 * ctx.alpha * ctx.beta / size
        grad = ctx.scale ** -ctx.beta * g
        inverse_pre_pad = int(size - (size - 1) / 2)
        padded = np.zeros((x.shape[0], channels + size - 1, *x.shape[2:]), dtype=x.dtype)
        if inverse_pre_pad + channels > channels + size - 1:  # torch's narrow fails here too
            raise RuntimeError(f"start ({inverse_pre_pad}) + length ({channels}) exceeds "
                               f"dimension size ({channels + size - 1}).")
        padded[:, inverse_pre_pad:inverse_pre_pad + channels] = g * out / ctx.scale
        accumulated = padded[:, :size - 1].sum(axis=1)
        for c in range(channels):
            accumulated = accumulated + padded[:, c + size - 1]
            grad[:, c] -= ratio * x[:, c] * accumulated
            accumulated = accumulated - padded[:, c]
        return _make(grad), None, None, None, None


class CrossMapLRN2d(Module):
    """Normalize each channel by the squares of the ``size`` channels around it."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return _CrossMapLRN2dFunction.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
