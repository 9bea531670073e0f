"""Sliding windows as matrices, in any number of spatial dims: ``unfold`` (im2col), its
adjoint ``fold`` (col2im), and ``pad``.

These three numpy kernels are the only new forwards that convolution and pooling need. A
convolution is ``weight @ unfold(x)``: one matrix product, so its backward is the matmul rule
plus ``fold``. ``unfold`` and ``fold`` are linear and each other's adjoint, so each is the
other's derivative and higher derivatives come for free.

The columns are batch-last, ``(C * kh * kw, N * L)`` with ``L = out_h * out_w``; torch's
``F.unfold`` layout ``(N, C * kh * kw, L)`` is a permutation of it.

>>> import numpy as np
>>> x = np.arange(16.0).reshape(1, 1, 4, 4)
>>> unfold(x, (2, 2), (1, 1), (0, 0), (2, 2)).shape
(4, 4)
"""
from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from gradcheck.ref.devices import module_of


def out_size(size: int, kernel: int, dilation: int, padding: int, stride: int,
             ceil_mode: bool = False) -> int:
    """Output length of a sliding window along one spatial dim (torch's formula)."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    if ceil_mode:
        out = -(-span // stride) + 1
        # NOTE: torch drops a last window that would start inside the right padding only.
        return out - 1 if (out - 1) * stride >= size + padding else out
    return span // stride + 1


def _offsets(kernel, dilation, stride, grid):
    """For each kernel offset (i, j, ...): the strided slices of the padded input it reads."""
    for offset in itertools.product(*[range(k) for k in kernel]):
        yield offset, tuple(slice(i * d, i * d + s * (o - 1) + 1, s)
                            for i, d, s, o in zip(offset, dilation, stride, grid))


def _grid(size, kernel, dilation, padding, stride):
    return tuple(out_size(s, k, d, p, st) for s, k, d, p, st in
                 zip(size, kernel, dilation, padding, stride))


def _pad_spatial(x, before, after=None, value=0.0):
    """Pad the spatial dims of an (N, C, *spatial) array (``after`` defaults to ``before``)."""
    after = before if after is None else after
    if not any(before) and not any(after):
        return x
    xp = module_of(x)  # numpy, or CuPy for a cuda tensor's array
    if min(before) < 0 or min(after) < 0:
        return xp.pad(x, ((0, 0), (0, 0)) + tuple(zip(before, after)), constant_values=value)
    # NOTE: a filled array and one slice write: np.pad spends ~15 us in Python per call
    shape = x.shape[:2] + tuple(s + b + a for s, b, a in zip(x.shape[2:], before, after))
    out = xp.full(shape, value, dtype=x.dtype) if value else xp.zeros(shape, dtype=x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(b, b + s) for s, b in
                                           zip(x.shape[2:], before))] = x
    return out


def unfold(x, kernel, dilation, padding, stride, grid=None):
    """im2col: ``(N, C, *spatial)`` -> ``(C * prod(kernel), N * prod(out))``, any number of
    spatial dims (``(N, C, H, W)`` -> ``(C * kh * kw, N * out_h * out_w)`` in 2-D).

    NOTE: batch-last columns make a convolution ONE matrix product (``W @ cols``) instead of
    N small ones, about 3x faster in numpy; the copy is one strided slice per kernel offset.
    """
    n, c, *size = x.shape
    # ``grid`` (a transposed convolution's input size) may keep fewer windows than fit
    grid = tuple(grid or _grid(size, kernel, dilation, padding, stride))
    x = _pad_spatial(x, padding)
    cols = module_of(x).empty((c, *kernel, n) + grid, dtype=x.dtype)
    if type(x) is np.ndarray and x.size <= _ONE_COPY_LIMIT:
        # NOTE: every window at once as a strided view (C, *kernel, N, *grid) and one copy:
        # on small inputs the per-offset loop is all Python overhead (~3 us per offset)
        spatial = x.strides[2:]
        shape = (c, *kernel, n) + grid
        strides = ((x.strides[1],) + tuple(st * d for st, d in zip(spatial, dilation))
                   + (x.strides[0],) + tuple(st * s for st, s in zip(spatial, stride)))
        if x.flags.c_contiguous:  # NOTE: the ndarray constructor skips as_strided's wrapper
            view = np.ndarray(shape, x.dtype, buffer=x, strides=strides)
        else:
            view = np.lib.stride_tricks.as_strided(x, shape, strides, writeable=False)
        np.copyto(cols, view)
    else:
        for offset, window in _offsets(kernel, dilation, stride, grid):
            cols[(slice(None),) + offset] = x[(slice(None), slice(None)) + window].swapaxes(0, 1)
    return cols.reshape(c * math.prod(kernel), n * math.prod(grid))


# inputs up to this many elements are unfolded by one strided copy (larger ones by offset,
# where the per-offset copies' better memory order wins)
_ONE_COPY_LIMIT = 1 << 16


def fold(cols, size, kernel, dilation, padding, stride, grid=None):
    """col2im, the adjoint of ``unfold``: each column entry is added back to the input pixel
    it was read from (overlapping windows sum); ``size`` is the input's (N, C, *spatial)."""
    n, c, *spatial = size
    grid = tuple(grid or _grid(spatial, kernel, dilation, padding, stride))
    padded = (n, c) + tuple(s + 2 * p for s, p in zip(spatial, padding))
    if type(cols) is np.ndarray and cols.dtype.kind == "f" and cols.size <= _BINCOUNT_LIMIT:
        # NOTE: one bincount over a cached map (column entry -> padded pixel) instead of one
        # strided add per kernel offset: 10-40 us against ~70 us on small images
        index = _fold_index(padded, tuple(kernel), tuple(dilation), tuple(stride), grid)
        out = np.bincount(index, weights=cols.ravel(), minlength=math.prod(padded))
        out = out.astype(cols.dtype, copy=False).reshape(padded)
    else:
        blocks = cols.reshape((c, *kernel, n) + grid)
        out = module_of(cols).zeros(padded, dtype=cols.dtype)
        for offset, window in _offsets(kernel, dilation, stride, grid):
            out[(slice(None), slice(None)) + window] += blocks[(slice(None),) + offset].swapaxes(
                0, 1)
    if not any(padding):
        return out
    inside = tuple(slice(p, p + s) for s, p in zip(spatial, padding))
    return module_of(out).ascontiguousarray(out[(slice(None), slice(None)) + inside])


_BINCOUNT_LIMIT = 1 << 17


@functools.lru_cache(maxsize=64)
def _fold_index(padded, kernel, dilation, stride, grid):
    """For each entry of the columns, the flat index of the padded pixel it was read from."""
    pixels = np.arange(math.prod(padded), dtype=np.intp).reshape(padded)
    return unfold(pixels, kernel, dilation, (0,) * len(kernel), stride, grid).ravel()


def pad(x, widths, value=0.0):
    """Constant padding; ``widths`` is one ``(before, after)`` per dim, negative crops.

    Its adjoint is ``pad`` with the widths negated (and zeros): crop what was added, add back
    zeros where the input was cropped.
    """
    crop = tuple(slice(max(-b, 0), x.shape[d] - max(-a, 0)) for d, (b, a) in enumerate(widths))
    grow = [(max(b, 0), max(a, 0)) for b, a in widths]
    return module_of(x).pad(x[crop], grow, constant_values=value)


def window_argmax(x, kernel, dilation, padding, stride, grid):
    """Flat index into each spatial plane (H * W in 2-D) of the first maximum of every window
    (padding counts as -inf, and NaN wins, as in torch); shape (N, C, prod(grid))."""
    n, c, *size = x.shape
    extra = [max((o - 1) * s + d * (k - 1) + 1 - n_ - 2 * p, 0)
             for o, s, d, k, n_, p in zip(grid, stride, dilation, kernel, size, padding)]
    fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = _pad_spatial(x, padding, [p + e for p, e in zip(padding, extra)], fill)
    offsets, views = zip(*[(offset, xp[(slice(None), slice(None)) + window])
                           for offset, window in _offsets(kernel, dilation, stride, grid)])
    # NOTE: one compare and two masked copies per kernel offset, tracking only which offset
    # won (int16); NaN handling costs three more passes, so it runs only when NaNs exist.
    has_nan = x.dtype.kind == "f" and bool(np.isnan(x).any())
    best = views[0].copy()
    which = np.zeros(best.shape, dtype=np.int8 if len(views) < 128 else np.int16)
    for k, view in enumerate(views[1:], 1):
        better = view > best
        if has_nan:
            better |= np.isnan(view) & ~np.isnan(best)
        np.copyto(best, view, where=better)
        np.copyto(which, k, where=better)
    # flat plane index = sum over dims of position * plane stride (row-major)
    plane_strides = [math.prod(size[k + 1:]) for k in range(len(size))]
    starts = sum((np.arange(o) * s - p).reshape([-1 if j == k else 1 for j in range(len(grid))])
                 * ps for k, (o, s, p, ps) in enumerate(zip(grid, stride, padding, plane_strides)))
    shift = np.array([sum(i * d * ps for i, d, ps in zip(offset, dilation, plane_strides))
                      for offset in offsets])
    return (starts + shift[which]).reshape(n, c, math.prod(grid))


def plane_gather(x, index, out_hw, unique=False):
    """``x[n, c].flat[index[n, c]]``, shaped (N, C, *out_hw)."""
    n, c = x.shape[:2]
    flat = x.reshape(n, c, -1)
    return np.take_along_axis(flat, index, axis=2).reshape(n, c, *out_hw)


def plane_scatter(g, index, size, unique=False):
    """The adjoint of ``plane_gather``: each value added at its flat index (repeats sum).
    ``unique`` (windows that cannot overlap) allows a plain write instead of a sum."""
    n, c = g.shape[:2]
    plane = math.prod(size)
    offsets = (np.arange(n * c) * plane).reshape(n, c, 1)
    if unique:
        out = np.zeros(n * c * plane, dtype=g.dtype)
        out[(index + offsets).ravel()] = g.ravel()
        return out.reshape(n, c, *size)
    total = np.bincount((index + offsets).ravel(), weights=g.reshape(n, c, -1).ravel(),
                        minlength=n * c * plane)
    return total.astype(g.dtype, copy=False).reshape(n, c, *size)
