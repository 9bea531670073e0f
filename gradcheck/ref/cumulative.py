"""Products and running reductions: ``prod``, ``cumprod``, ``cummax``, ``cummin``.

>>> import gradcheck.ref as torch
>>> torch.cummax(torch.tensor([1.0, 3.0, 2.0]), 0)
torch.return_types.cummax(
values=tensor([1., 3., 3.]),
indices=tensor([0, 1, 1]))
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from gradcheck.ref import scans

from gradcheck.ref.derivatives import TABLE
from gradcheck.ref.dispatch import apply
from gradcheck.ref.reductions import _ReturnType
from gradcheck.ref.tensors import _dim, _make


def _int_to_long(input):  # noqa: A002
    return input.long() if input._data.dtype.kind in "biu" else input


def prod(input, dim=None, keepdim=False, *, dtype=None, axis=None):  # noqa: A002
    """Product of all elements, or along ``dim``.

    >>> import gradcheck.ref as torch
    >>> torch.prod(torch.tensor([[1.0, 2.0], [3.0, 4.0]]), 1)
    tensor([ 2., 12.])
    """
    dim = axis if dim is None else dim
    input = _int_to_long(input) if dtype is None else input.to(dtype)
    d = None if dim is None else _dim(dim, max(input._data.ndim, 1))
    if input._data.ndim == 0:
        return input.clone()
    return apply(TABLE["prod"], input, dim=d, keepdim=keepdim)


def cumprod(input, dim, *, dtype=None):  # noqa: A002
    """Cumulative product along ``dim`` (gradient exact at zeros).

    >>> import gradcheck.ref as torch
    >>> torch.cumprod(torch.tensor([1.0, 2.0, 3.0]), 0)
    tensor([1., 2., 6.])
    """
    input = _int_to_long(input) if dtype is None else input.to(dtype)
    d = _dim(dim, input._data.ndim)
    if input._data.ndim == 0:
        return input.clone()
    return apply(TABLE["cumprod"], input, dim=d)


class return_cummax(_ReturnType, namedtuple("cummax", ["values", "indices"])):  # noqa: N801
    __slots__ = ()


class return_cummin(_ReturnType, namedtuple("cummin", ["values", "indices"])):  # noqa: N801
    __slots__ = ()


return_cummax.__name__ = "cummax"
return_cummin.__name__ = "cummin"


def _running(result, ufunc, input, dim):  # noqa: A002
    d = _dim(dim, input._data.ndim)
    if input._data.ndim == 0:
        return result(input.clone(), _make(np.zeros((), dtype=np.int64)))
    _, indices = scans.running_extreme(input._data, d, ufunc)
    values = apply(TABLE["running_extreme"], input, dim=d, indices=indices)
    return result(values, _make(indices.astype(np.int64)))


def cummax(input, dim):  # noqa: A002
    """Running maximum along ``dim`` and the index where it was reached (the latest on ties)."""
    return _running(return_cummax, np.maximum, input, dim)


def cummin(input, dim):  # noqa: A002
    """Running minimum along ``dim`` and the index where it was reached (the latest on ties)."""
    return _running(return_cummin, np.minimum, input, dim)


