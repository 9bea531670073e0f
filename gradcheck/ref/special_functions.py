"""``lgamma`` and ``digamma`` as rows of the derivatives table (d lgamma = digamma,
d digamma = trigamma), with scipy's kernels when installed and the standard library's
otherwise; and ``torch.special``'s common names.

>>> import gradcheck.ref as torch
>>> torch.lgamma(torch.tensor([1.0, 5.0]))
tensor([0.0000, 3.1781])
"""
from __future__ import annotations

import math
import types

import numpy as np

from gradcheck.ref.arguments import _float
from gradcheck.ref.derivatives import TABLE, _unary, _x
from gradcheck.ref.dispatch import apply


def _scipy(name: str):
    try:
        import scipy.special
    except ImportError:
        return None
    return getattr(scipy.special, name)


def _lgamma_forward(a):
    fn = _scipy("gammaln")
    out = fn(a) if fn is not None else np.vectorize(math.lgamma, otypes=[np.float64])(a)
    return np.asarray(out, dtype=a.dtype)


def _polygamma_forward(a, n=0):
    """digamma (n=0) or trigamma (n=1); without scipy, by recurrence and asymptotic series."""
    fn = _scipy("polygamma")
    if fn is not None:
        return np.asarray(fn(n, a), dtype=a.dtype)
    x = np.asarray(a, dtype=np.float64).copy()
    acc = np.zeros_like(x)
    while (x < 6).any():  # NOTE: shift up until the asymptotic series is accurate
        small = x < 6
        acc += np.where(small, 1 / x if n == 0 else 1 / x ** 2, 0)
        x = np.where(small, x + 1, x)
    if n == 0:
        series = np.log(x) - 1 / (2 * x) - 1 / (12 * x ** 2) + 1 / (120 * x ** 4) - \
            1 / (252 * x ** 6)
        return (series - acc).astype(a.dtype)
    series = 1 / x + 1 / (2 * x ** 2) + 1 / (6 * x ** 3) - 1 / (30 * x ** 5) + 1 / (42 * x ** 7)
    return (series + acc).astype(a.dtype)


TABLE.update({
    "lgamma": _unary("LgammaBackward0", _lgamma_forward, lambda ctx, g: (g * digamma(_x(ctx)),)),
    "digamma": _unary("DigammaBackward0", _polygamma_forward,
                      lambda ctx, g: (g * _trigamma(_x(ctx)),)),
    "trigamma": _unary("PolygammaBackward0", lambda a: _polygamma_forward(a, 1),
                       lambda ctx, g: (None,)),
})


def lgamma(input):  # noqa: A002
    return apply(TABLE["lgamma"], _float(input))


def digamma(input):  # noqa: A002
    return apply(TABLE["digamma"], _float(input))


def _trigamma(input):  # noqa: A002
    return apply(TABLE["trigamma"], _float(input))


def polygamma(n: int, input):  # noqa: A002
    if n == 0:
        return digamma(input)
    if n == 1:
        return _trigamma(input)
    raise NotImplementedError(f"torch.polygamma(n={n}) is not available in gradcheck.ref; "
                              "n = 0 and 1 are")


def _special_namespace():
    from gradcheck import ref as torch

    return types.SimpleNamespace(
        erf=torch.erf, erfinv=torch.erfinv, expit=torch.sigmoid, logit=torch.logit,
        gammaln=lgamma, digamma=digamma, psi=digamma, polygamma=polygamma,
        logsumexp=torch.logsumexp, log_softmax=torch.log_softmax, softmax=torch.softmax,
        xlogy=lambda x, y: torch.where(x == 0, torch.zeros_like(x * y), x * torch.log(y)),
        expm1=torch.expm1, exp2=torch.exp2, log1p=torch.log1p, sinc=lambda x: torch.where(
            x == 0, torch.ones_like(x), torch.sin(math.pi * x) / (math.pi * x)))
