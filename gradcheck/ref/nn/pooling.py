"""Pooling: ``max_pool1d/2d``, ``avg_pool1d/2d``, ``adaptive_avg_pool1d/2d`` and their modules.

Average pooling reuses the convolution's windows: the input is zero-padded, unfolded into
columns and summed per window, so its gradient comes from ``pad`` and ``unfold``. Max pooling
finds each window's first maximum in numpy (padding counts as -inf) and then gathers those
elements (``plane_gather`` in the table; its adjoint scatters the gradient back). Adaptive average pooling is
two products with constant averaging matrices, ``P_h @ x @ P_w^T``.

Example:
    >>> import gradcheck.ref as torch
    >>> max_pool2d(torch.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradcheck.ref import im2col
from gradcheck.ref.derivatives import TABLE
from gradcheck.ref.dispatch import apply
from gradcheck.ref.nn.conv import _columns, _tuple
from gradcheck.ref.nn.module import Module
from gradcheck.ref.nn.padding import pad

Tensor = Any


def _windows(input: Tensor, kernel, stride, padding, dilation, ceil_mode, fill):
    """(C, k, N, oh, ow) columns of each pooling window, padded with ``fill``."""
    kernel = _tuple(kernel, 2)
    stride = kernel if stride is None or stride == [] else _tuple(stride, 2)
    padding, dilation = _tuple(padding, 2), _tuple(dilation, 2)
    _check_padding(padding, kernel, dilation)
    n, c, h, w = input.shape
    out = [im2col.out_size(s, k, d, p, st, ceil_mode)
           for s, k, d, p, st in zip((h, w), kernel, dilation, padding, stride)]
    # extra right padding so the last (ceil_mode) window exists; its cells hold ``fill``
    extra = [max((o - 1) * st + d * (k - 1) + 1 - s - 2 * p, 0)
             for o, st, d, k, s, p in zip(out, stride, dilation, kernel, (h, w), padding)]
    padded = pad(input, (padding[1], padding[1] + extra[1], padding[0], padding[0] + extra[0]),
                 value=fill)
    cols = _columns(padded, kernel, dilation, (0, 0), stride)
    return cols.reshape(c, kernel[0] * kernel[1], n, out[0], out[1]), kernel, stride, padding


def _check_padding(padding, kernel, dilation) -> None:
    if any(2 * p > k for p, k in zip(padding, kernel)):
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                           f"pad={padding[0]}, kernel_size={kernel[0]} and dilation="
                           f"{dilation[0]}")


def _batched(fn, input: Tensor, *args, spatial: int = 2):
    """Run a 4-D pooling function on unbatched or 1-D inputs."""
    if spatial == 1:
        return _batched(lambda x: fn(x, *args).squeeze(-2), input.unsqueeze(-2))
    if input.dim() == 3:
        return fn(input.unsqueeze(0), *args).squeeze(0)
    return fn(input, *args)


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False) -> Tensor:
    """Max over each window; the gradient goes to the first maximum, as in torch."""
    if return_indices:
        raise NotImplementedError("max_pool2d(return_indices=True) is not supported by "
                                  "gradcheck.ref")

    def run(x):
        kernel = _tuple(kernel_size, 2)
        steps = kernel if stride is None or stride == [] else _tuple(stride, 2)
        pads, dils = _tuple(padding, 2), _tuple(dilation, 2)
        _check_padding(pads, kernel, dils)
        out = tuple(im2col.out_size(s, k, d, p, st, ceil_mode)
                    for s, k, d, p, st in zip(x.shape[2:], kernel, dils, pads, steps))
        index = im2col.window_argmax(x._data, kernel, dils, pads, steps, out)
        # windows that cannot overlap send each gradient to a distinct pixel
        unique = all(st >= d * (k - 1) + 1 for st, d, k in zip(steps, dils, kernel))
        return apply(TABLE["plane_gather"], x, index=index, out_hw=out, unique=unique)

    return _batched(run, input)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Mean over each window (padding zeros count unless ``count_include_pad=False``)."""

    def run(x):
        cols, kernel, stride_, padding_ = _windows(x, kernel_size, stride, padding, 1,
                                                   ceil_mode, 0.0)
        total = cols.sum(1).permute(1, 0, 2, 3)
        if divisor_override:
            return total / divisor_override
        if count_include_pad and not ceil_mode:
            return total / (kernel[0] * kernel[1])
        h, w = x.shape[-2:]
        counts = _window_counts((h, w), kernel, stride_, padding_, total.shape[-2:],
                                count_include_pad)
        return total / x.new_tensor(counts)

    return _batched(run, input)


def _window_counts(size, kernel, stride, padding, out, include_pad) -> np.ndarray:
    """How many cells of each window are counted: inside the input, or inside input+padding."""
    per_dim = []
    for s, k, st, p, o in zip(size, kernel, stride, padding, out):
        start = np.arange(o) * st - p
        stop = np.minimum(start + k, s + p if include_pad else s)
        per_dim.append(stop - np.maximum(start, -p if include_pad else 0))
    return np.outer(per_dim[0], per_dim[1]).astype(np.float64)


def _averaging(size: int, out: int) -> np.ndarray:
    """(out, size) matrix whose row i averages torch's adaptive window i."""
    m = np.zeros((out, size))
    for i in range(out):
        start, stop = (i * size) // out, math.ceil((i + 1) * size / out)
        m[i, start:stop] = 1.0 / (stop - start)
    return m


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Average over torch's adaptive windows, as two products with constant matrices."""
    h, w = input.shape[-2:]
    oh, ow = _tuple(output_size, 2)
    oh, ow = oh or h, ow or w
    rows = input.new_tensor(_averaging(h, oh))
    cols = input.new_tensor(_averaging(w, ow).T)
    return rows @ input @ cols


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False) -> Tensor:
    """Max over windows along the last dim."""
    stride = kernel_size if stride is None else stride
    return _batched(max_pool2d, input, (1, _tuple(kernel_size, 1)[0]), (1, _tuple(stride, 1)[0]),
                    (0, _tuple(padding, 1)[0]), (1, _tuple(dilation, 1)[0]), ceil_mode,
                    spatial=1)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """Mean over windows along the last dim."""
    stride = kernel_size if stride is None else stride
    return _batched(avg_pool2d, input, (1, _tuple(kernel_size, 1)[0]), (1, _tuple(stride, 1)[0]),
                    (0, _tuple(padding, 1)[0]), ceil_mode, count_include_pad, spatial=1)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Adaptive average over the last dim."""
    length = input.shape[-1]
    return input @ input.new_tensor(_averaging(length, _tuple(output_size, 1)[0]).T)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False) -> Tensor:
    """Max over torch's adaptive windows (one max per output cell)."""
    h, w = input.shape[-2:]
    oh, ow = _tuple(output_size, 2)
    oh, ow = oh or h, ow or w
    if h % oh == 0 and w % ow == 0:
        return max_pool2d(input, (h // oh, w // ow))
    from gradcheck import ref as torch

    rows = []
    for i in range(oh):
        r0, r1 = (i * h) // oh, math.ceil((i + 1) * h / oh)
        row = [input[..., r0:r1, (j * w) // ow:math.ceil((j + 1) * w / ow)].amax((-2, -1))
               for j in range(ow)]
        rows.append(torch.stack(row, -1))
    return torch.stack(rows, -2)


class _Pool(Module):
    _fn = None
    _fields: tuple = ()

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()
        values = dict(zip(self._fields, args))
        values.update(kwargs)
        for name, default in self._defaults.items():
            setattr(self, name, values.get(name, default))

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, *[getattr(self, f) for f in self._defaults])

    def extra_repr(self) -> str:
        return ", ".join(f"{f}={getattr(self, f)}" for f in self._shown)


def _pool_class(name, fn, defaults, shown):
    return type(name, (_Pool,), {"_fn": staticmethod(fn), "_defaults": defaults,
                                 "_fields": tuple(defaults), "_shown": shown,
                                 "__doc__": f"Module form of ``{fn.__name__}``."})


_MAX = {"kernel_size": None, "stride": None, "padding": 0, "dilation": 1,
        "return_indices": False, "ceil_mode": False}
_AVG = {"kernel_size": None, "stride": None, "padding": 0, "ceil_mode": False,
        "count_include_pad": True}


def _max(fn):
    def call(x, kernel_size, stride, padding, dilation, return_indices, ceil_mode):
        return fn(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices)

    call.__name__ = fn.__name__
    return call


MaxPool2d = _pool_class("MaxPool2d", _max(max_pool2d), _MAX,
                        ("kernel_size", "stride", "padding", "dilation", "ceil_mode"))
MaxPool1d = _pool_class("MaxPool1d", _max(max_pool1d), _MAX,
                        ("kernel_size", "stride", "padding", "dilation", "ceil_mode"))
AvgPool2d = _pool_class("AvgPool2d", avg_pool2d, _AVG, ("kernel_size", "stride", "padding"))
AvgPool1d = _pool_class("AvgPool1d", avg_pool1d, _AVG, ("kernel_size", "stride", "padding"))
AdaptiveAvgPool2d = _pool_class("AdaptiveAvgPool2d", adaptive_avg_pool2d,
                                {"output_size": None}, ("output_size",))
AdaptiveAvgPool1d = _pool_class("AdaptiveAvgPool1d", adaptive_avg_pool1d,
                                {"output_size": None}, ("output_size",))
AdaptiveMaxPool2d = _pool_class("AdaptiveMaxPool2d", adaptive_max_pool2d,
                                {"output_size": None, "return_indices": False},
                                ("output_size",))
