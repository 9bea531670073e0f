"""torch.fft: discrete Fourier transforms computed by numpy.fft, with torch's gradients.

The Hermitian transforms (``hfft``, ``ihfft`` and their 2-d and n-d forms) are not here: no
repository of the census uses them, and they raise NotImplementedError naming themselves.

Three rows do the work, as in torch: complex to complex (C2C), real to one-sided complex
(R2C) and one-sided complex to real (C2R); cropping or zero-padding to the requested sizes
is a row of its own. Each transform is linear, so its backward is the adjoint transform:
the inverse direction with the dual normalisation ("backward" <-> "forward"). numpy and torch
name the normalisations alike: "backward" scales the inverse by 1/n, "forward" the forward
transform, "ortho" both by 1/sqrt(n).
"""
from __future__ import annotations

import numpy as np

from gradcheck.ref import dtypes as dt
from gradcheck.ref.complex_numbers import as_complex, real
from gradcheck.ref.dispatch import COMPLEX_ROWS, Op, apply
from gradcheck.ref.tensors import Tensor, _dim, _make

_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


# ---- the rows ------------------------------------------------------------------------------
def _fit_forward(a, axes, lengths):
    """``a`` cropped or zero-padded to ``lengths`` along ``axes`` (always a new array)."""
    index = [slice(None)] * a.ndim
    pads = [(0, 0)] * a.ndim
    for axis, n in zip(axes, lengths):
        index[axis] = slice(0, min(n, a.shape[axis]))
        pads[axis] = (0, max(n - a.shape[axis], 0))
    return np.pad(a[tuple(index)], pads)


def _fit_rule(ctx, g):
    shape = ctx.in_meta[0][0]
    return (fit(g, ctx.axes, [shape[axis] for axis in ctx.axes]),)


def _c2c_forward(a, axes, norm, forward):
    transform = np.fft.fftn if forward else np.fft.ifftn
    return transform(a, axes=axes, norm=norm).astype(a.dtype, copy=False)


def _c2c_rule(ctx, g):
    return (c2c(g, ctx.axes, _DUAL[ctx.norm], not ctx.forward),)


def _r2c_forward(a, axes, norm):
    return np.fft.rfftn(a, axes=axes, norm=norm)


def _r2c_rule(ctx, g):
    last = ctx.axes[-1]
    # the dropped half of the spectrum is zero in the adjoint; a real input keeps the real part
    g = fit(g, (last,), (ctx.in_meta[0][0][last],))
    return (real(c2c(g, ctx.axes, _DUAL[ctx.norm], False)),)


def _c2r_forward(a, axes, norm, last_size):
    sizes = [a.shape[axis] for axis in axes[:-1]] + [last_size]
    return np.fft.irfftn(a, s=sizes, axes=axes, norm=norm)


def _c2r_rule(ctx, g):
    # torch's rule: the one-sided transform of the grad, with the bins that stand for two
    # (a bin and its mirror image) counted twice; bin 0 and an even length's middle bin
    # have no mirror
    grad = r2c(g, ctx.axes, _DUAL[ctx.norm])
    last = ctx.axes[-1]
    bins = grad._data.shape[last]
    weight = np.ones(bins, dtype=g._data.dtype)
    weight[1:1 + ctx.last_size - bins] = 2
    shape = [1] * grad._data.ndim
    shape[last] = bins
    return (grad * _make(weight.reshape(shape)),)


PAD = Op("ConstantPadNdBackward0", _fit_forward, _fit_rule)
CROP = Op("SliceBackward0", _fit_forward, _fit_rule)
C2C = Op("FftC2CBackward0", _c2c_forward, _c2c_rule)
R2C = Op("FftR2CBackward0", _r2c_forward, _r2c_rule)
C2R = Op("FftC2RBackward0", _c2r_forward, _c2r_rule)
COMPLEX_ROWS.update(id(row) for row in (PAD, CROP, C2C, R2C, C2R))


def fit(x: Tensor, axes, lengths) -> Tensor:
    """``x`` cropped or zero-padded to ``lengths`` along ``axes`` (unchanged when it fits)."""
    have = [x._data.shape[axis] for axis in axes]
    if list(have) == list(lengths):
        return x
    row = PAD if all(n >= h for n, h in zip(lengths, have)) else CROP
    return apply(row, x, axes=tuple(axes), lengths=tuple(lengths))


def c2c(x: Tensor, axes, norm: str, forward: bool) -> Tensor:
    return apply(C2C, x, axes=tuple(axes), norm=norm, forward=forward)


def r2c(x: Tensor, axes, norm: str) -> Tensor:
    return apply(R2C, x, axes=tuple(axes), norm=norm)


def c2r(x: Tensor, axes, norm: str, last_size: int) -> Tensor:
    return apply(C2R, x, axes=tuple(axes), norm=norm, last_size=last_size)


# ---- arguments -----------------------------------------------------------------------------
def _norm(name: str, norm) -> str:
    if norm is None:
        return "backward"
    if norm not in _DUAL:
        raise RuntimeError(f"torch.fft.{name}: Invalid normalization mode: {norm!r}; use "
                           "'backward', 'forward' or 'ortho'")
    return norm


def _real_input(name: str, x: Tensor) -> Tensor:
    if x._data.dtype.kind == "c":
        raise RuntimeError(f"torch.fft.{name} expects a real input tensor, but got {x.dtype}")
    if x._data.dtype.kind != "f":
        x = x.to(dt.get_default_dtype())
    if x._data.dtype not in (np.float32, np.float64):
        raise NotImplementedError(f"torch.fft.{name} on {x.dtype} is not available in "
                                  "gradcheck.ref (numpy has no complex32); use float32")
    return x


def _complex_input(name: str, x: Tensor) -> Tensor:
    return x if x._data.dtype.kind == "c" else as_complex(_real_input(name, x))


def _dims_and_sizes(name: str, x: Tensor, s, dim, default_dim):
    """torch's rules: ``dim`` defaults to the last len(s) dims (or ``default_dim``); -1 in
    ``s`` keeps a dim's size."""
    ndim = x._data.ndim
    if dim is None:
        dims = list(range(ndim - len(s), ndim)) if s is not None else (
            list(range(ndim)) if default_dim is None else list(default_dim))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
    dims = [_dim(d, ndim) for d in dims]
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"torch.fft.{name}: dims must be unique, got {dim}")
    if s is None:
        sizes = [x._data.shape[d] for d in dims]
    else:
        if len(s) != len(dims):
            raise RuntimeError(f"torch.fft.{name}: when given, dim and shape arguments must "
                               f"have the same length, got s={list(s)} and dim={dims}")
        sizes = [x._data.shape[d] if n == -1 else int(n) for n, d in zip(s, dims)]
    for n in sizes:
        if n < 1:
            raise RuntimeError(f"torch.fft.{name}: invalid number of data points ({n}) "
                               "specified")
    return dims, sizes


def _no_out(name: str, out) -> None:
    if out is not None:
        raise NotImplementedError(f"torch.fft.{name}(out=...) is not supported in "
                                  "gradcheck.ref; assign the returned tensor instead")


def _one_dim(transform):
    """The 1-d signature (input, n, dim=-1, norm) over the n-d transform."""

    def one(input: Tensor, n=None, dim: int = -1, norm=None, *, out=None) -> Tensor:  # noqa: A002
        return transform(input, None if n is None else (n,), dim, norm, out=out)

    one.__name__, one.__doc__ = transform.__name__, transform.__doc__
    return one


# ---- complex to complex ----------------------------------------------------------------------
def _c2c_transform(name: str, forward: bool, default_dim=None, one_dim: bool = False):
    def transform(input: Tensor, s=None, dim=None, norm=None, *, out=None) -> Tensor:  # noqa: A002
        _no_out(name, out)
        dims, sizes = _dims_and_sizes(name, input, s, dim, default_dim)
        x = fit(_complex_input(name, input), dims, sizes)
        return c2c(x, dims, _norm(name, norm), forward)

    transform.__name__ = name
    transform.__doc__ = f"torch.fft.{name}: numpy.fft's transform with torch's gradient."
    return _one_dim(transform) if one_dim else transform


fft = _c2c_transform("fft", True, one_dim=True)
ifft = _c2c_transform("ifft", False, one_dim=True)
fft2 = _c2c_transform("fft2", True, default_dim=(-2, -1))
ifft2 = _c2c_transform("ifft2", False, default_dim=(-2, -1))
fftn = _c2c_transform("fftn", True)
ifftn = _c2c_transform("ifftn", False)


# ---- real to one-sided complex and back ------------------------------------------------------
def _rfft_transform(name: str, default_dim=None, one_dim: bool = False):
    def transform(input: Tensor, s=None, dim=None, norm=None, *, out=None) -> Tensor:  # noqa: A002
        _no_out(name, out)
        dims, sizes = _dims_and_sizes(name, input, s, dim, default_dim)
        x = fit(_real_input(name, input), dims, sizes)
        return r2c(x, dims, _norm(name, norm))

    transform.__name__ = name
    transform.__doc__ = f"torch.fft.{name}: the one-sided transform of a real tensor."
    return _one_dim(transform) if one_dim else transform


def _irfft_transform(name: str, default_dim=None, one_dim: bool = False):
    def transform(input: Tensor, s=None, dim=None, norm=None, *, out=None) -> Tensor:  # noqa: A002
        _no_out(name, out)
        dims, sizes = _dims_and_sizes(name, input, s, dim, default_dim)
        if s is None or s[-1] == -1:  # the last dim's default: the even length it came from
            sizes[-1] = 2 * (input._data.shape[dims[-1]] - 1)
        if sizes[-1] < 1:
            raise RuntimeError(f"torch.fft.{name}: invalid number of data points "
                               f"({sizes[-1]}) specified")
        bins = sizes[:-1] + [sizes[-1] // 2 + 1]
        x = fit(_complex_input(name, input), dims, bins)
        return c2r(x, dims, _norm(name, norm), sizes[-1])

    transform.__name__ = name
    transform.__doc__ = f"torch.fft.{name}: the inverse of the one-sided transform (real)."
    return _one_dim(transform) if one_dim else transform


rfft = _rfft_transform("rfft", one_dim=True)
rfft2 = _rfft_transform("rfft2", default_dim=(-2, -1))
rfftn = _rfft_transform("rfftn")
irfft = _irfft_transform("irfft", one_dim=True)
irfft2 = _irfft_transform("irfft2", default_dim=(-2, -1))
irfftn = _irfft_transform("irfftn")


# ---- helpers ---------------------------------------------------------------------------------
def _shift(input: Tensor, dim, sign: int) -> Tensor:  # noqa: A002
    ndim = input._data.ndim
    dims = list(range(ndim)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    dims = [_dim(d, ndim) for d in dims]
    shifts = [sign * (input._data.shape[d] // 2) for d in dims]
    return input.roll(shifts, dims)


def fftshift(input: Tensor, dim=None) -> Tensor:  # noqa: A002
    """Move the zero frequency to the centre (a roll by n // 2 on each dim).

    >>> import gradcheck.ref as torch
    >>> torch.fft.fftshift(torch.fft.fftfreq(4))
    tensor([-0.5000, -0.2500,  0.0000,  0.2500])
    """
    return _shift(input, dim, 1)


def ifftshift(input: Tensor, dim=None) -> Tensor:  # noqa: A002
    """Undo fftshift (a roll by -(n // 2) on each dim)."""
    return _shift(input, dim, -1)


def _frequencies(values: np.ndarray, dtype, device, requires_grad) -> Tensor:
    from gradcheck.ref import creation

    d = dt.as_dtype(dtype) if dtype is not None else dt.get_default_dtype()
    return creation.tensor(values, dtype=d, device=device, requires_grad=requires_grad)


def fftfreq(n: int, d: float = 1.0, *, out=None, dtype=None, layout=None, device=None,
            requires_grad: bool = False) -> Tensor:
    """The sample frequencies of an n-point transform: [0, 1, ..., -1] / (d * n)."""
    return _frequencies(np.fft.fftfreq(n, d), dtype, device, requires_grad)


def rfftfreq(n: int, d: float = 1.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """The sample frequencies of rfft's bins: [0, 1, ..., n // 2] / (d * n)."""
    return _frequencies(np.fft.rfftfreq(n, d), dtype, device, requires_grad)


def _hermitian(name: str):
    def refuse(*args, **kwargs):
        raise NotImplementedError(f"torch.fft.{name} is not available in gradcheck.ref; "
                                  "hfft(x, n) is irfft(x.conj(), n, norm='forward') and "
                                  "ihfft(x) is rfft(x, norm='forward').conj()")

    refuse.__name__ = name
    return refuse


hfft, ihfft, hfft2, ihfft2, hfftn, ihfftn = (
    _hermitian(name) for name in ("hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn"))
