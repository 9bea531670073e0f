"""More elementwise ops: ``atan2``, ``erfinv``, ``fmin``/``fmax``, ``logaddexp``, ``frac``,
``log10``, ``logit``, ``nan_to_num``, ``clamp_min``/``clamp_max``, ``float_power``, ``angle``.

Three are new rows of the derivatives table (``atan2``, ``erfinv``, ``fmin``/``fmax`` pick
through a mask); the rest are compositions of existing rows, so their gradients follow.

>>> import gradcheck.ref as torch
>>> torch.atan2(torch.tensor([1.0]), torch.tensor([-1.0]))
tensor([2.3562])
>>> torch.nan_to_num(torch.tensor([float("nan"), float("inf"), 1.0]), posinf=9.0)
tensor([0., 9., 1.])
"""
from __future__ import annotations

import math

import numpy as np

from gradcheck.ref import ops
from gradcheck.ref.arguments import _float, _pair
from gradcheck.ref.derivatives import TABLE, _binary, _mask, _unary
from gradcheck.ref.dispatch import apply
from gradcheck.ref.tensors import Tensor, _make


def _atan2(ctx, g):
    y, x = ctx.saved_tensors
    scale = g / (x * x + y * y)
    return (scale * x if ctx.needs_input_grad[0] else None,
            -scale * y if ctx.needs_input_grad[1] else None)


def _erfinv_forward(a):
    try:
        from scipy.special import erfinv as scipy_erfinv
    except ImportError:
        return _erfinv_newton(a)
    return np.asarray(scipy_erfinv(a), dtype=a.dtype)


def _erfinv_newton(a):
    """erfinv without scipy: Giles' single-precision approximation, refined by Newton steps
    on erf (two steps reach float64 round-off)."""
    from gradcheck.ref.special import erf

    x = np.asarray(a, dtype=np.float64)
    w = -np.log((1.0 - x) * (1.0 + x))
    small = w - 2.5
    large = np.sqrt(np.maximum(w, 0)) - 3.0
    p_small = np.polyval([2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                          0.00021858087, -0.00125372503, -0.00417768164, 0.246640727,
                          1.50140941], small)
    p_large = np.polyval([-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                          0.00573950773, -0.0076224613, 0.00943887047, 1.00167406,
                          2.83297682], large)
    y = np.where(w < 5.0, p_small, p_large) * x
    for _ in range(2):
        y = y - (erf(y) - x) / (2 / math.sqrt(math.pi) * np.exp(-y * y))
    y = np.where(np.abs(x) == 1, np.sign(x) * np.inf, y)
    return np.where(np.abs(x) > 1, np.nan, y).astype(a.dtype)


def _pick(ufunc):
    """fmin/fmax: the gradient goes to the operand that was picked (the first on ties,
    the non-NaN one where one is NaN)."""

    def rule(ctx, g):
        a, b = ctx.saved_tensors
        chosen = ufunc(a._data, b._data)
        first = (a._data == chosen) | np.isnan(b._data)
        first_t = _mask(_make(first), g)
        return (g * first_t if ctx.needs_input_grad[0] else None,
                g * (1 - first_t) if ctx.needs_input_grad[1] else None)

    return rule


TABLE.update({
    "atan2": _binary("Atan2Backward0", np.arctan2, _atan2),
    "erfinv": _unary("ErfinvBackward0", _erfinv_forward,
                     lambda ctx, g: (g * (math.sqrt(math.pi) / 2) * (ctx.result ** 2).exp(),),
                     saves_input=False, saves_output=True),
    "fmin": _binary("FminBackward0", np.fmin, _pick(np.fmin)),
    "fmax": _binary("FmaxBackward0", np.fmax, _pick(np.fmax)),
})


def atan2(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """The angle of the point (other, input), in (-pi, pi]."""
    a, b = _pair(input, other)
    return apply(TABLE["atan2"], _float(a), _float(b))


arctan2 = atan2


def erfinv(input: Tensor) -> Tensor:  # noqa: A002
    """The inverse error function on (-1, 1) (±inf at ±1, NaN outside)."""
    return apply(TABLE["erfinv"], _float(input))


def fmin(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """Elementwise minimum that ignores NaN (NaN only where both are NaN)."""
    return apply(TABLE["fmin"], *_pair(input, other))


def fmax(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """Elementwise maximum that ignores NaN."""
    return apply(TABLE["fmax"], *_pair(input, other))


def logaddexp(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """log(exp(a) + exp(b)) without overflow: max + log1p(exp(-|a - b|))."""
    high = ops.maximum(input, other)
    return high + ops.log1p(ops.exp(-ops.abs(ops.sub(input, other))))


def frac(input: Tensor) -> Tensor:  # noqa: A002
    """The fractional part, x - trunc(x), with x's sign."""
    return ops.sub(input, ops.trunc(input).detach())


def log10(input: Tensor) -> Tensor:  # noqa: A002
    return ops.log(input) / math.log(10.0)


def logit(input: Tensor, eps: float | None = None) -> Tensor:  # noqa: A002
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given."""
    p = _float(input)
    if eps is not None:
        p = ops.clamp(p, eps, 1 - eps)
    return ops.log(p / (1 - p))


def deg2rad(input: Tensor) -> Tensor:  # noqa: A002
    return _float(input) * (math.pi / 180.0)


def rad2deg(input: Tensor) -> Tensor:  # noqa: A002
    return _float(input) * (180.0 / math.pi)


def clamp_min(input: Tensor, min: float) -> Tensor:  # noqa: A002
    return ops.clamp(input, min=min)


def clamp_max(input: Tensor, max: float) -> Tensor:  # noqa: A002
    return ops.clamp(input, max=max)


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None,  # noqa: A002
               neginf: float | None = None) -> Tensor:
    """NaN -> ``nan``, +inf -> ``posinf`` (the dtype's max), -inf -> ``neginf`` (its min)."""
    if input._data.dtype.kind != "f":
        return ops.clone(input)
    info = np.finfo(input._data.dtype)
    high = float(info.max) if posinf is None else posinf
    low = float(info.min) if neginf is None else neginf
    out = ops.masked_fill(input, ops.isnan(input), nan)
    out = ops.masked_fill(out, _make(input._data == np.inf), high)
    return ops.masked_fill(out, _make(input._data == -np.inf), low)


def float_power(input: Tensor, exponent) -> Tensor:  # noqa: A002
    """``pow`` computed in float64, as torch does."""
    from gradcheck.ref import dtypes as dt

    base = input.to(dt.float64) if isinstance(input, Tensor) else input
    power = exponent.to(dt.float64) if isinstance(exponent, Tensor) else exponent
    return ops.pow(base, power)


def angle(input: Tensor) -> Tensor:  # noqa: A002
    """The argument of a real number: 0 for x >= 0, pi for x < 0, NaN for NaN."""
    x = _float(input)
    value = np.where(x._data < 0, np.pi, 0.0).astype(x._data.dtype)
    return ops.where(ops.isnan(x), x, _make(value))  # NaN passes through, with its gradient


def positive(input: Tensor) -> Tensor:  # noqa: A002
    return input


def trace(input: Tensor) -> Tensor:  # noqa: A002
    """The sum of the main diagonal of a matrix."""
    if input._data.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim "
                           f"{input._data.ndim}")
    return ops.diagonal(input).sum()

