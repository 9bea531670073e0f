"""Sliding windows as matrices: ``unfold`` (im2col), its adjoint ``fold`` (col2im), and ``pad``.

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

import numpy as np


def out_size(size: int, kernel: int, dilation: int, padding: int, stride: int,
             ceil_mode: bool = False) -> int:
    """Output length of a sliding window along one spatial dim (torch's formula)."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    if ceil_mode:
        out = -(-span // stride) + 1
        # NOTE: torch drops a last window that would start inside the right padding only.
        return out - 1 if (out - 1) * stride >= size + padding else out
    return span // stride + 1


def _offsets(kernel, dilation, stride, out_hw):
    """For each kernel offset (i, j): the strided slice of the padded plane it reads."""
    (kh, kw), (dh, dw), (sh, sw), (oh, ow) = kernel, dilation, stride, out_hw
    for i in range(kh):
        for j in range(kw):
            yield i, j, (slice(i * dh, i * dh + sh * (oh - 1) + 1, sh),
                         slice(j * dw, j * dw + sw * (ow - 1) + 1, sw))


def _grid(size, kernel, dilation, padding, stride):
    return tuple(out_size(s, k, d, p, st) for s, k, d, p, st in
                 zip(size, kernel, dilation, padding, stride))


def unfold(x, kernel, dilation, padding, stride, grid=None):
    """im2col: ``(N, C, H, W)`` -> ``(C * kh * kw, N * out_h * out_w)``.

    NOTE: batch-last columns make a convolution ONE matrix product (``W @ cols``) instead of
    N small ones, about 3x faster in numpy; the copy is one strided slice per kernel offset.
    """
    (kh, kw), (ph, pw) = kernel, padding
    n, c, h, w = x.shape
    # ``grid`` (a transposed convolution's input size) may keep fewer windows than fit
    out_hw = grid or _grid((h, w), kernel, dilation, padding, stride)
    if ph or pw:
        x = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    cols = np.empty((c, kh, kw, n) + out_hw, dtype=x.dtype)
    for i, j, (rows, columns) in _offsets(kernel, dilation, stride, out_hw):
        cols[:, i, j] = x[:, :, rows, columns].transpose(1, 0, 2, 3)
    return cols.reshape(c * kh * kw, n * out_hw[0] * out_hw[1])


def fold(cols, size, kernel, dilation, padding, stride, grid=None):
    """col2im, the adjoint of ``unfold``: each column entry is added back to the input pixel
    it was read from (overlapping windows sum); ``size`` is the input's (N, C, H, W)."""
    (kh, kw), (ph, pw) = kernel, padding
    n, c, h, w = size
    out_hw = grid or _grid((h, w), kernel, dilation, padding, stride)
    blocks = cols.reshape((c, kh, kw, n) + out_hw)
    out = np.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=cols.dtype)
    for i, j, (rows, columns) in _offsets(kernel, dilation, stride, out_hw):
        out[:, :, rows, columns] += blocks[:, i, j].transpose(1, 0, 2, 3)
    return np.ascontiguousarray(out[:, :, ph:ph + h, pw:pw + w]) if ph or pw else out


def pad(x, widths, value=0.0):
    """Constant padding; ``widths`` is one ``(before, after)`` per dim, negative crops.

    Its adjoint is ``pad`` with the widths negated (and zeros): crop what was added, add back
    zeros where the input was cropped.
    """
    crop = tuple(slice(max(-b, 0), x.shape[d] - max(-a, 0)) for d, (b, a) in enumerate(widths))
    grow = [(max(b, 0), max(a, 0)) for b, a in widths]
    return np.pad(x[crop], grow, constant_values=value)


def window_argmax(x, kernel, dilation, padding, stride, out_hw):
    """Flat index into each (H, W) plane of the first maximum of every window (padding counts
    as -inf, and NaN wins, as in torch); shape (N, C, out_h * out_w)."""
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel, dilation, padding, stride
    n, c, h, w = x.shape
    oh, ow = out_hw
    extra_h = max((oh - 1) * sh + dh * (kh - 1) + 1 - h - 2 * ph, 0)
    extra_w = max((ow - 1) * sw + dw * (kw - 1) + 1 - w - 2 * pw, 0)
    fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = x if not (ph or pw or extra_h or extra_w) else np.pad(
        x, ((0, 0), (0, 0), (ph, ph + extra_h), (pw, pw + extra_w)), constant_values=fill)
    rows, cols = np.arange(oh) * sh - ph, np.arange(ow) * sw - pw
    offsets = [(i, j) for i in range(kh) for j in range(kw)]
    views = [xp[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
             for i, j in offsets]
    # NOTE: one compare and two masked copies per kernel offset, tracking only which offset
    # won (int8); NaN handling costs three more passes, so it runs only when NaNs exist.
    has_nan = x.dtype.kind == "f" and bool(np.isnan(x).any())
    best, which = views[0].copy(), np.zeros(views[0].shape, dtype=np.int8)
    for k, view in enumerate(views[1:], 1):
        better = view > best
        if has_nan:
            better |= np.isnan(view) & ~np.isnan(best)
        np.copyto(best, view, where=better)
        np.copyto(which, k, where=better)
    shift = np.array([i * dh * w + j * dw for i, j in offsets])
    index = (rows[:, None] * w + cols[None, :]) + shift[which]
    return index.reshape(n, c, oh * ow)


def plane_gather(x, index, out_hw, unique=False):
    """``x[n, c].flat[index[n, c]]``, shaped (N, C, *out_hw)."""
    n, c = x.shape[:2]
    flat = x.reshape(n, c, -1)
    return np.take_along_axis(flat, index, axis=2).reshape(n, c, *out_hw)


def plane_scatter(g, index, size, unique=False):
    """The adjoint of ``plane_gather``: each value added at its flat index (repeats sum).
    ``unique`` (windows that cannot overlap) allows a plain write instead of a sum."""
    n, c = g.shape[:2]
    plane = size[0] * size[1]
    offsets = (np.arange(n * c) * plane).reshape(n, c, 1)
    if unique:
        out = np.zeros(n * c * plane, dtype=g.dtype)
        out[(index + offsets).ravel()] = g.ravel()
        return out.reshape(n, c, *size)
    total = np.bincount((index + offsets).ravel(), weights=g.reshape(n, c, -1).ravel(),
                        minlength=n * c * plane)
    return total.astype(g.dtype, copy=False).reshape(n, c, *size)
