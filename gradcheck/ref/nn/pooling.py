"""Pooling: ``max_pool1d/2d/3d`` (with ``return_indices``), ``max_unpool1d/2d/3d``,
``avg_pool1d/2d/3d``, ``adaptive_avg_pool1d/2d`` and their modules; one path per kind for
every spatial rank.

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

import functools
import math
from typing import Any

import numpy as np

from gradcheck.ref import im2col
from gradcheck.ref.derivatives import TABLE
from gradcheck.ref.dispatch import apply
from gradcheck.ref.nn.conv import _columns, _tuple
from gradcheck.ref.nn.module import Module
from gradcheck.ref.nn.padding import pad
from gradcheck.ref.tensors import _make

Tensor = Any


def _geometry(kernel_size, stride, padding, dilation, spatial: int, name: str) -> tuple:
    """(kernel, stride, padding, dilation), one entry per spatial dim; stride defaults to the
    kernel; torch's errors for a tuple of the wrong length or too much padding."""
    kernel = _tuple(kernel_size, spatial)
    stride = kernel if stride is None or stride == [] else _tuple(stride, spatial)
    geometry = (kernel, stride, _tuple(padding, spatial), _tuple(dilation, spatial))
    for what, values in zip(("kernel_size", "stride", "padding", "dilation"), geometry):
        if len(values) != spatial:
            raise RuntimeError(f"{name}: {what} must either be a single int, or a tuple of "
                               f"{spatial} ints, got {list(values)}")
    _check_padding(geometry[2], kernel, geometry[3])
    return geometry


def _out_sizes(size, kernel, stride, padding, dilation, ceil_mode) -> tuple:
    return tuple(im2col.out_size(s, k, d, p, st, ceil_mode)
                 for s, k, d, p, st in zip(size, kernel, dilation, padding, stride))


def _windows(input: Tensor, kernel, stride, padding, ceil_mode, fill):
    """(C, prod(kernel), N, *out) columns of each pooling window, padded with ``fill``."""
    n, c, *size = input.shape
    out = _out_sizes(size, kernel, stride, padding, (1,) * len(size), ceil_mode)
    # extra right padding so the last (ceil_mode) window exists; its cells hold ``fill``
    widths = []
    for o, st, k, s, p in reversed(list(zip(out, stride, kernel, size, padding))):
        widths += [p, p + max((o - 1) * st + k - s - 2 * p, 0)]
    padded = pad(input, tuple(widths), value=fill)
    cols = _columns(padded, kernel, (1,) * len(size), (0,) * len(size), stride)
    return cols.reshape(c, math.prod(kernel), n, *out)


def _check_padding(padding, kernel, dilation) -> None:
    if any(2 * p > k for p, k in zip(padding, kernel)):
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                           f"pad={padding[0]}, kernel_size={kernel[0]} and dilation="
                           f"{dilation[0]}")


def _batched(fn, input: Tensor, spatial: int):
    """Run a pooling function of (N, C, *spatial) inputs on an unbatched one too."""
    if input.dim() != spatial + 1:
        return fn(input)
    out = fn(input.unsqueeze(0))
    return tuple(o.squeeze(0) for o in out) if isinstance(out, tuple) else out.squeeze(0)


def _max_pool(input: Tensor, kernel_size, stride, padding, dilation, ceil_mode: bool,
              return_indices: bool, spatial: int):
    """Max over each window; the gradient goes to the first maximum, as in torch. The
    indices are flat positions in each (N, C) plane, torch's ``return_indices``."""
    kernel, steps, pads, dils = _geometry(kernel_size, stride, padding, dilation, spatial,
                                          f"max_pool{spatial}d")

    def run(x):
        out = _out_sizes(x.shape[2:], kernel, steps, pads, dils, ceil_mode)
        index = im2col.window_argmax(x._data, kernel, dils, pads, steps, out)
        # windows that cannot overlap send each gradient to a distinct pixel
        unique = all(st >= d * (k - 1) + 1 for st, d, k in zip(steps, dils, kernel))
        values = apply(TABLE["plane_gather"], x, index=index, out_hw=out, unique=unique)
        if not return_indices:
            return values
        return values, _make(index.reshape(values.shape).astype(np.int64))

    return _batched(run, input, spatial)


def _avg_pool(input: Tensor, kernel_size, stride, padding, ceil_mode: bool,
              count_include_pad: bool, divisor_override, spatial: int) -> Tensor:
    """Mean over each window (padding zeros count unless ``count_include_pad=False``)."""
    kernel, steps, pads, _ = _geometry(kernel_size, stride, padding, 1, spatial,
                                       f"avg_pool{spatial}d")

    def run(x):
        total = _windows(x, kernel, steps, pads, ceil_mode, 0.0).sum(1).transpose(0, 1)
        if divisor_override:
            return total / divisor_override
        if count_include_pad and not ceil_mode:
            return total / math.prod(kernel)
        counts = _window_counts(x.shape[2:], kernel, steps, pads, total.shape[2:],
                                count_include_pad)
        return total / x.new_tensor(counts)

    return _batched(run, input, spatial)


def _max_unpool(input: Tensor, indices: Tensor, kernel_size, stride, padding, output_size,
                spatial: int) -> Tensor:
    """The partial inverse of ``_max_pool``: each value written at its index in a zero plane
    (the table's ``plane_scatter``; its adjoint gathers the gradient back)."""
    kernel = _tuple(kernel_size, spatial)
    steps = kernel if stride is None else _tuple(stride, spatial)
    pads = _tuple(padding, spatial)

    def run(x, index):
        size = tuple(output_size)[-spatial:] if output_size is not None else tuple(
            (g - 1) * st - 2 * p + k for g, st, p, k in zip(x.shape[2:], steps, pads, kernel))
        flat = index._data.reshape(x.shape[0], x.shape[1], -1)
        if flat.size and (flat.min() < 0 or flat.max() >= math.prod(size)):
            raise RuntimeError(f"max_unpool{spatial}d: found an invalid max index "
                               f"{int(flat.max())} for an output of size {list(size)}; pass "
                               f"the indices from max_pool{spatial}d with the same geometry")
        return apply(TABLE["plane_scatter"], x, index=flat, size=size, unique=True)

    if input.dim() == spatial + 1:
        return run(input.unsqueeze(0), indices.unsqueeze(0)).squeeze(0)
    return run(input, indices)


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False) -> Tensor:
    """Max over windows along the last dim."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     1)


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False) -> Tensor:
    """Max over each 2-D window; the gradient goes to the first maximum, as in torch."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     2)


def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False) -> Tensor:
    """Max over each 3-D window of (N, C, D, H, W) inputs.

    >>> import gradcheck.ref as torch
    >>> max_pool3d(torch.arange(8.0).reshape(1, 1, 2, 2, 2), 2).flatten().tolist()
    [7.0]
    """
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     3)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """Mean over windows along the last dim."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Mean over each 2-D window (padding zeros count unless ``count_include_pad=False``)."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, 2)


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Mean over each 3-D window of (N, C, D, H, W) inputs."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, 3)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Undo ``max_pool1d(return_indices=True)``: values at their indices, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Undo ``max_pool2d(return_indices=True)``: values at their indices, zeros elsewhere.

    >>> import gradcheck.ref as torch
    >>> x = torch.tensor([[[[1.0, 4.0], [3.0, 2.0]]]])
    >>> max_unpool2d(*max_pool2d(x, 2, return_indices=True), 2).tolist()
    [[[[0.0, 4.0], [0.0, 0.0]]]]
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Undo ``max_pool3d(return_indices=True)``: values at their indices, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)


def _window_counts(size, kernel, stride, padding, out, include_pad) -> np.ndarray:
    """How many cells of each window are counted: inside the input, or inside input+padding."""
    per_dim = []
    for s, k, st, p, o in zip(size, kernel, stride, padding, out):
        start = np.arange(o) * st - p
        stop = np.minimum(start + k, s + p if include_pad else s)
        per_dim.append(stop - np.maximum(start, -p if include_pad else 0))
    return functools.reduce(np.multiply.outer, per_dim).astype(np.float64)


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


# torch's intermediate base classes, for isinstance checks and subclassing
_MaxPoolNd = type("_MaxPoolNd", (_Pool,), {"__doc__": "Base of MaxPool1d/2d/3d."})
_AvgPoolNd = type("_AvgPoolNd", (_Pool,), {"__doc__": "Base of AvgPool1d/2d/3d."})
_AdaptiveAvgPoolNd = type("_AdaptiveAvgPoolNd", (_Pool,),
                          {"__doc__": "Base of the adaptive average pools."})
_AdaptiveMaxPoolNd = type("_AdaptiveMaxPoolNd", (_Pool,),
                          {"__doc__": "Base of the adaptive max pools."})
_BASES = {"MaxPool": _MaxPoolNd, "AvgPool": _AvgPoolNd, "AdaptiveAvgPool": _AdaptiveAvgPoolNd,
          "AdaptiveMaxPool": _AdaptiveMaxPoolNd}


def _pool_class(name, fn, defaults, shown):
    base = _BASES[name[:-2]]
    return type(name, (base,), {"_fn": staticmethod(fn), "_defaults": defaults,
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
MaxPool3d = _pool_class("MaxPool3d", _max(max_pool3d), _MAX,
                        ("kernel_size", "stride", "padding", "dilation", "ceil_mode"))
AvgPool2d = _pool_class("AvgPool2d", avg_pool2d, _AVG, ("kernel_size", "stride", "padding"))
AvgPool3d = _pool_class("AvgPool3d", avg_pool3d, _AVG, ("kernel_size", "stride", "padding"))
AvgPool1d = _pool_class("AvgPool1d", avg_pool1d, _AVG, ("kernel_size", "stride", "padding"))
AdaptiveAvgPool2d = _pool_class("AdaptiveAvgPool2d", adaptive_avg_pool2d,
                                {"output_size": None}, ("output_size",))
AdaptiveAvgPool1d = _pool_class("AdaptiveAvgPool1d", adaptive_avg_pool1d,
                                {"output_size": None}, ("output_size",))
AdaptiveMaxPool2d = _pool_class("AdaptiveMaxPool2d", adaptive_max_pool2d,
                                {"output_size": None, "return_indices": False},
                                ("output_size",))
