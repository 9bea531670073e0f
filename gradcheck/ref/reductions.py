"""Reductions: sum, mean, amax/amin, max/min (with indices), var/std, logsumexp, norm, ..."""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from gradcheck.ref import dtypes as dt
from gradcheck.ref import ops
from gradcheck.ref.arguments import _cast, _const, _dims, _float
from gradcheck.ref.derivatives import TABLE
from gradcheck.ref.devices import as_array
from gradcheck.ref.dispatch import apply
from gradcheck.ref.tensors import Tensor, _dim, _make

class _ReturnType:
    """``(values, indices)`` with torch's ``torch.return_types.max(...)`` repr."""

    __slots__ = ()

    def __repr__(self) -> str:
        return (f"torch.return_types.{type(self).__name__}(\nvalues={self.values!r},\n"
                f"indices={self.indices!r})")


class return_max(_ReturnType, namedtuple("max", ["values", "indices"])):  # noqa: N801
    __slots__ = ()


class return_min(_ReturnType, namedtuple("min", ["values", "indices"])):  # noqa: N801
    __slots__ = ()


class return_sort(_ReturnType, namedtuple("sort", ["values", "indices"])):  # noqa: N801
    __slots__ = ()


class return_topk(_ReturnType, namedtuple("topk", ["values", "indices"])):  # noqa: N801
    __slots__ = ()


return_max.__name__ = "max"
return_min.__name__ = "min"
return_sort.__name__ = "sort"
return_topk.__name__ = "topk"


def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001, A002
    """Sum over ``dim`` (all dims when None).

    >>> from gradcheck.ref import ones
    >>> sum(ones(2, 3), dim=1)
    tensor([3., 3.])
    """
    if dtype is not None:
        input = _cast(input, dt.as_dtype(dtype))
    dims = _dims(dim, input._data.ndim)
    return apply(TABLE["sum" if dims else "sum_all"], input, dim=dims, keepdim=keepdim)


def mean(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """Mean over ``dim`` (all dims when None); integer inputs are an error, as in torch.

    >>> import gradcheck.ref as torch
    >>> torch.mean(torch.tensor([[1.0, 2.0], [3.0, 4.0]]), dim=0)
    tensor([2., 3.])
    """
    if dtype is not None:
        input = _cast(input, dt.as_dtype(dtype))
    if input._data.dtype.kind not in "fc":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or "
            f"complex dtype. Got: {input.dtype._tensor_type.replace('Tensor', '')}"
        )
    dims = _dims(dim, input._data.ndim)
    return apply(TABLE["mean" if dims else "mean_all"], input, dim=dims, keepdim=keepdim)


def amax(input, dim=(), keepdim=False):  # noqa: A002
    """Largest value over ``dim`` (all dims by default); ties share the gradient.

    >>> import gradcheck.ref as torch
    >>> torch.amax(torch.tensor([[1.0, 5.0], [3.0, 4.0]]), dim=1)
    tensor([5., 4.])
    """
    return apply(TABLE["amax"], input, dim=_dims(dim, input._data.ndim), keepdim=keepdim)


def amin(input, dim=(), keepdim=False):  # noqa: A002
    """Smallest value over ``dim`` (all dims by default); ties share the gradient.

    >>> import gradcheck.ref as torch
    >>> torch.amin(torch.tensor([[1.0, 5.0], [3.0, 4.0]]), dim=1)
    tensor([1., 3.])
    """
    return apply(TABLE["amin"], input, dim=_dims(dim, input._data.ndim), keepdim=keepdim)


def _extreme(name, input, dim, keepdim, other):
    if isinstance(dim, Tensor):
        other, dim = dim, None
    if other is not None:
        return ops.maximum(input, other) if name == "max" else ops.minimum(input, other)
    if dim is None:
        if input._data.size == 0:
            raise RuntimeError(
                f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument."
            )
        return amax(input) if name == "max" else amin(input)
    d = _dim(dim, input._data.ndim)
    if not input._data.ndim:
        return (return_max if name == "max" else return_min)(input.clone(), _make(np.asarray(0)))
    arg = np.argmax if name == "max" else np.argmin
    idx = np.expand_dims(arg(input._data, axis=d), d)
    values = apply(TABLE[f"{name}_dim"], input, dim=d, keepdim=keepdim, indices=idx)
    indices = _make(idx if keepdim else idx.squeeze(axis=d))
    return (return_max if name == "max" else return_min)(values, indices)


def max(input, dim=None, keepdim=False, *, other=None):  # noqa: A001, A002
    """Full max, ``(values, indices)`` along ``dim``, or elementwise max with a tensor.

    >>> import gradcheck.ref as torch
    >>> torch.max(torch.tensor([[1.0, 5.0], [3.0, 4.0]]), dim=1).indices
    tensor([1, 1])
    """
    return _extreme("max", input, dim, keepdim, other)


def min(input, dim=None, keepdim=False, *, other=None):  # noqa: A001, A002
    """Full min, ``(values, indices)`` along ``dim``, or elementwise min with a tensor.

    >>> import gradcheck.ref as torch
    >>> torch.min(torch.tensor([3.0, 1.0]))
    tensor(1.)
    """
    return _extreme("min", input, dim, keepdim, other)


def argmax(input, dim=None, keepdim=False):  # noqa: A002
    """Index of the largest value (over the flattened tensor or along ``dim``).

    >>> import gradcheck.ref as torch
    >>> torch.argmax(torch.tensor([[1.0, 5.0], [3.0, 4.0]]), dim=1)
    tensor([1, 1])
    """
    dt.refuse_complex_order("argmax", input)
    if dim is None:
        return _make(as_array(np.argmax(input._data), dtype=np.int64))
    d = _dim(dim, input._data.ndim)
    return _make(as_array(np.argmax(input._data, axis=d, keepdims=keepdim), dtype=np.int64))


def argmin(input, dim=None, keepdim=False):  # noqa: A002
    """Index of the smallest value (over the flattened tensor or along ``dim``).

    >>> import gradcheck.ref as torch
    >>> torch.argmin(torch.tensor([3.0, 1.0]))
    tensor(1)
    """
    dt.refuse_complex_order("argmin", input)
    if dim is None:
        return _make(as_array(np.argmin(input._data), dtype=np.int64))
    d = _dim(dim, input._data.ndim)
    return _make(as_array(np.argmin(input._data, axis=d, keepdims=keepdim), dtype=np.int64))


def _correction(unbiased, correction) -> int:
    if correction is not None:
        return correction
    return 1 if unbiased is None or unbiased else 0


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    """Variance with Bessel's correction by default (``correction=1``).

    >>> import gradcheck.ref as torch
    >>> torch.var(torch.tensor([1.0, 2.0, 3.0]))
    tensor(1.)
    """
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    return apply(TABLE["var"], _float(input), dim=_dims(dim, input._data.ndim),
                 correction=_correction(unbiased, correction), keepdim=keepdim)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    """Standard deviation with Bessel's correction by default.

    >>> import gradcheck.ref as torch
    >>> torch.std(torch.tensor([1.0, 2.0, 3.0]), correction=0)
    tensor(0.8165)
    """
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    return apply(TABLE["std"], _float(input), dim=_dims(dim, input._data.ndim),
                 correction=_correction(unbiased, correction), keepdim=keepdim)


def logsumexp(input, dim, keepdim=False):  # noqa: A002
    """log(sum(exp(input))) over ``dim``, computed stably.

    >>> import gradcheck.ref as torch
    >>> torch.logsumexp(torch.tensor([0.0, 0.0]), dim=0)
    tensor(0.6931)
    """
    return apply(TABLE["logsumexp"], _float(input), dim=_dims(dim, input._data.ndim),
                 keepdim=keepdim)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):  # noqa: A002
    """Vector p-norm over ``dim`` (all elements when None).

    >>> import gradcheck.ref as torch
    >>> torch.norm(torch.tensor([3.0, 4.0])), torch.norm(torch.tensor([3.0, -4.0]), p=1)
    (tensor(5.), tensor(7.))
    """
    x = _float(input)
    if x._data.dtype.kind == "c":  # a complex vector's p-norm is the p-norm of its moduli
        return norm(ops.abs(x), p, dim, keepdim, dtype)
    dims = _dims(dim, x._data.ndim)
    if p in ("fro", 2, 2.0):
        return apply(TABLE["norm"], x, dim=dims, keepdim=keepdim)
    if p in (float("inf"), "inf"):
        return amax(ops.abs(x), dims or (), keepdim)
    if p in (-float("inf"), "-inf"):
        return amin(ops.abs(x), dims or (), keepdim)
    if p == 0:  # the count of nonzeros: piecewise constant, so no gradient flows
        return sum((x != 0).to(x.dtype), dims, keepdim)
    if p == 1:
        return sum(ops.abs(x), dims, keepdim)
    # NOTE: |x|**p is taken from 1 where x == 0 so that its gradient there is 0 (as torch's
    # norm backward says) instead of inf * 0 = nan for p < 1
    zero = x == 0
    powered = ops.where(zero, float("inf") if p < 0 else 0.0,
                        ops.pow(ops.where(zero, 1.0, ops.abs(x)), p))
    return ops.pow(sum(powered, dims, keepdim), 1.0 / p)


def all(input, dim=None, keepdim=False):  # noqa: A001, A002
    """True where every element is nonzero (along ``dim``).

    >>> import gradcheck.ref as torch
    >>> torch.all(torch.tensor([True, False]))
    tensor(False)
    """
    return _truth_reduce(np.all, input, dim, keepdim)


def any(input, dim=None, keepdim=False):  # noqa: A001, A002
    """True where some element is nonzero (along ``dim``).

    >>> import gradcheck.ref as torch
    >>> torch.any(torch.tensor([True, False]))
    tensor(True)
    """
    return _truth_reduce(np.any, input, dim, keepdim)


def _truth_reduce(reduce, input, dim, keepdim):  # noqa: A002
    """``np.all`` or ``np.any`` over ``dim`` (all dims when None) as a bool tensor."""
    axis = _dims(dim, input._data.ndim)
    return _make(as_array(reduce(input._data, axis=axis, keepdims=keepdim)))


def cumsum(input, dim):  # noqa: A002
    """Cumulative sum along ``dim``.

    >>> import gradcheck.ref as torch
    >>> torch.cumsum(torch.tensor([1.0, 2.0, 3.0]), dim=0)
    tensor([1., 3., 6.])
    """
    d = _dim(dim, input._data.ndim)
    if input._data.ndim == 0:
        return input.clone()
    n = input._data.shape[d]
    tri = _const(np.tril(np.ones((n, n))), input, input._data.dtype)
    moved = ops.transpose(input, d, -1)
    return ops.transpose(ops.matmul(moved, tri.mT), d, -1)


def _axis_alias(fn):
    """Accept numpy's ``axis=`` and ``keepdims=`` spellings, as torch does."""
    def wrapper(*args, axis=None, keepdims=None, **kwargs):
        if axis is not None:
            kwargs["dim"] = axis
        if keepdims is not None:
            kwargs["keepdim"] = keepdims
        return fn(*args, **kwargs)

    wrapper.__name__, wrapper.__doc__, wrapper.__wrapped__ = fn.__name__, fn.__doc__, fn
    return wrapper


sum, mean, amax, amin, max, min = map(_axis_alias, (sum, mean, amax, amin, max, min))  # noqa: A001
argmax, argmin, var, std, logsumexp, norm = map(_axis_alias, (argmax, argmin, var, std,
                                                              logsumexp, norm))
all, any, cumsum = map(_axis_alias, (all, any, cumsum))  # noqa: A001
