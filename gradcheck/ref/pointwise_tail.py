"""The third census round's elementwise ops: ``copysign``, ``sinc``, ``hardshrink``,
``isposinf``/``isneginf``, ``gcd``/``lcm`` and ``special.ndtri``.

``copysign``, ``sinc`` and ``ndtri`` are rows of the derivatives table (their gradients have
torch's values at the points where a composition would give NaN: ``sinc'(0) = 0``,
``copysign`` passes no gradient to a zero input and none to the sign source); the rest are
piecewise or integer functions built from existing rows.

>>> import gradcheck.ref as torch
>>> torch.copysign(torch.tensor([1.0, -2.0]), -1.0)
tensor([-1., -2.])
>>> torch.sinc(torch.tensor([0.0, 0.5]))
tensor([1.0000, 0.6366])
"""
from __future__ import annotations

import math

import numpy as np

from gradcheck.ref.arguments import _float, _pair
from gradcheck.ref.derivatives import TABLE, _binary, _mask, _unary
from gradcheck.ref.dispatch import apply
from gradcheck.ref.tensors import Tensor, _make


def _copysign(ctx, g):
    a, b = ctx.saved_tensors
    flips = np.signbit(a._data) != np.signbit(b._data)
    factor = np.where(a._data == 0, 0.0, np.where(flips, -1.0, 1.0))
    grad_a = g * _mask(_make(factor), g) if ctx.needs_input_grad[0] else None
    return grad_a, (g * 0 if ctx.needs_input_grad[1] else None)


def _sinc_forward(a):
    return np.sinc(a).astype(a.dtype)


def _sinc(ctx, g):
    (x,) = ctx.saved_tensors
    px = x._data * math.pi
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(x._data == 0, 0.0, (px * np.cos(px) - np.sin(px)) / (px * x._data))
    return (g * _make(slope.astype(x._data.dtype)),)


def _ndtri_forward(a):
    from gradcheck.ref.pointwise import _erfinv_forward

    return (math.sqrt(2.0) * _erfinv_forward(2 * a - 1)).astype(a.dtype)


TABLE.update({
    "copysign": _binary("CopysignBackward0", np.copysign, _copysign),
    "sinc": _unary("SincBackward0", _sinc_forward, _sinc),
    # d ndtri(p) / dp = sqrt(2 pi) exp(ndtri(p)^2 / 2)
    "ndtri": _unary("SpecialNdtriBackward0", _ndtri_forward,
                    lambda ctx, g: (g * math.sqrt(2 * math.pi) * (ctx.result ** 2 / 2).exp(),),
                    saves_input=False, saves_output=True),
})


def copysign(input: Tensor, other) -> Tensor:  # noqa: A002
    """|input| with the sign bit of ``other`` (-0.0 counts as negative)."""
    a, b = _pair(_float(input), other)
    return apply(TABLE["copysign"], a, b)


def sinc(input: Tensor) -> Tensor:  # noqa: A002
    """sin(pi x) / (pi x), 1 at x = 0."""
    return apply(TABLE["sinc"], _float(input))


def ndtri(input: Tensor) -> Tensor:  # noqa: A002
    """The inverse of the standard normal CDF (-inf at 0, inf at 1, NaN outside [0, 1])."""
    return apply(TABLE["ndtri"], _float(input))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """x where |x| > lambd, else 0; the gradient passes where x is kept."""
    keep = np.abs(input._data) > lambd
    return input * _mask(_make(keep), input)


def isposinf(input: Tensor) -> Tensor:  # noqa: A002
    return _make(np.isposinf(input._data) if input._data.dtype.kind == "f"
                 else np.zeros(input._data.shape, dtype=bool))


def isneginf(input: Tensor) -> Tensor:  # noqa: A002
    return _make(np.isneginf(input._data) if input._data.dtype.kind == "f"
                 else np.zeros(input._data.shape, dtype=bool))


def _integers(name: str, input: Tensor, other: Tensor) -> tuple:
    a, b = _pair(input, other)
    if a._data.dtype.kind not in "iub":
        raise RuntimeError(f'"{name}_cpu" not implemented for '
                           f"'{_dtype_title(a)}'")
    return a, b


def _dtype_title(t: Tensor) -> str:
    return {"float64": "Double", "float32": "Float", "float16": "Half"}.get(
        str(t._data.dtype), str(t._data.dtype))


def gcd(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """The greatest common divisor of integers (gcd(0, 0) = 0)."""
    a, b = _integers("gcd", input, other)
    return _make(np.gcd(a._data, b._data))


def lcm(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """The least common multiple of integers (0 when either is 0)."""
    a, b = _integers("lcm", input, other)
    return _make(np.lcm(a._data, b._data))


FUNCTIONS = {"copysign": copysign, "sinc": sinc, "hardshrink": hardshrink,
             "isposinf": isposinf, "isneginf": isneginf, "gcd": gcd, "lcm": lcm}
IN_PLACE = ("copysign", "sinc", "gcd", "lcm")


def attach() -> None:
    """The functions are Tensor methods too; ``gcd_`` and the others work in place."""
    from gradcheck.ref.tensor_extras import _inplace_of

    for name, fn in FUNCTIONS.items():
        setattr(Tensor, name, fn)
    for name in IN_PLACE:
        setattr(Tensor, name + "_", _inplace_of(FUNCTIONS[name]))


