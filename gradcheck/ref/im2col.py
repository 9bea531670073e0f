"""Sliding windows as matrices: ``unfold`` (im2col), its adjoint ``fold`` (col2im), and ``pad``.

These three numpy kernels are the only new forwards that convolution and pooling need. A
convolution is ``weight @ unfold(x)``: one matrix product, so its backward is the matmul rule
plus ``fold``. ``unfold`` and ``fold`` are linear and each other's adjoint, so each is the
other's derivative and higher derivatives come for free.

Layout follows torch's ``F.unfold``: ``(N, C * kh * kw, L)`` with ``L = out_h * out_w``.

>>> import numpy as np
>>> x = np.arange(16.0).reshape(1, 1, 4, 4)
>>> unfold(x, (2, 2), (1, 1), (0, 0), (2, 2)).shape
(1, 4, 4)
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided


def out_size(size: int, kernel: int, dilation: int, padding: int, stride: int,
             ceil_mode: bool = False) -> int:
    """Output length of a sliding window along one spatial dim (torch's formula)."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    if ceil_mode:
        out = -(-span // stride) + 1
        # NOTE: torch drops a last window that would start inside the right padding only.
        return out - 1 if (out - 1) * stride >= size + padding else out
    return span // stride + 1


def windows(x, kernel, dilation, padding, stride):
    """A strided view ``(N, C, kh, kw, out_h, out_w)`` of the zero-padded input (no copy
    beyond the padding)."""
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel, dilation, padding, stride
    n, c, h, w = x.shape
    oh, ow = out_size(h, kh, dh, ph, sh), out_size(w, kw, dw, pw, sw)
    if ph or pw:
        x = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    s = x.strides
    return as_strided(x, (n, c, kh, kw, oh, ow),
                      (s[0], s[1], s[2] * dh, s[3] * dw, s[2] * sh, s[3] * sw), writeable=False)


def unfold(x, kernel, dilation, padding, stride):
    """im2col: ``(N, C, H, W)`` -> ``(N, C * kh * kw, out_h * out_w)`` (one copy)."""
    view = windows(x, kernel, dilation, padding, stride)
    n, c, kh, kw, oh, ow = view.shape
    return np.ascontiguousarray(view).reshape(n, c * kh * kw, oh * ow)


def fold(cols, output_size, kernel, dilation, padding, stride):
    """col2im, the adjoint of ``unfold``: each column entry is added back to the input pixel
    it was read from; overlapping windows sum."""
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel, dilation, padding, stride
    h, w = output_size
    n = cols.shape[0]
    c = cols.shape[1] // (kh * kw)
    oh, ow = out_size(h, kh, dh, ph, sh), out_size(w, kw, dw, pw, sw)
    blocks = cols.reshape(n, c, kh, kw, oh, ow)
    out = np.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=cols.dtype)
    # one strided add per kernel offset: kh * kw numpy calls, each over the whole batch
    for i in range(kh):
        for j in range(kw):
            out[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                j * dw:j * dw + sw * (ow - 1) + 1:sw] += blocks[:, :, i, j]
    return out[:, :, ph:ph + h, pw:pw + w]


def pad(x, widths, value=0.0):
    """Constant padding; ``widths`` is one ``(before, after)`` per dim, negative crops.

    Its adjoint is ``pad`` with the widths negated (and zeros): crop what was added, add back
    zeros where the input was cropped.
    """
    crop = tuple(slice(max(-b, 0), x.shape[d] - max(-a, 0)) for d, (b, a) in enumerate(widths))
    grow = [(max(b, 0), max(a, 0)) for b, a in widths]
    return np.pad(x[crop], grow, constant_values=value)
