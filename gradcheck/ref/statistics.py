"""Order statistics and counting: ``median``, ``mode``, ``kthvalue``, ``quantile``,
``unique``, ``bincount``, ``histc``, ``bucketize``/``searchsorted``, ``count_nonzero``,
``nansum``/``nanmean``, ``diff``, ``cov``/``corrcoef``, ``isin``.

Selections (median, kthvalue, quantile) gather the chosen elements, so the gradient flows to
exactly those; counts have no gradient. Ties follow torch's CPU choices: ``median`` and
``kthvalue`` pick the lower middle element, ``mode`` the smallest most frequent value with
the index of its last occurrence.

>>> import gradcheck.ref as torch
>>> torch.median(torch.tensor([3.0, 1.0, 2.0, 2.0]))
tensor(2.)
>>> torch.unique(torch.tensor([2, 1, 2]), return_counts=True)
(tensor([1, 2]), tensor([1, 2]))
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from gradcheck.ref import creation, ops, shapes
from gradcheck.ref import dtypes as dt
from gradcheck.ref.reductions import _ReturnType
from gradcheck.ref.tensors import Tensor, _dim, _make


class return_median(_ReturnType, namedtuple("median", ["values", "indices"])):  # noqa: N801
    pass


class return_mode(_ReturnType, namedtuple("mode", ["values", "indices"])):  # noqa: N801
    pass


class return_kthvalue(_ReturnType, namedtuple("kthvalue", ["values", "indices"])):  # noqa: N801
    pass


return_median.__name__, return_mode.__name__ = "median", "mode"
return_kthvalue.__name__ = "kthvalue"


def _select(input: Tensor, index: np.ndarray, d: int, keepdim: bool, kind) -> tuple:
    """The elements at ``index`` (shaped like input with ``d`` of size 1) and the index."""
    index_t = _make(index.astype(np.int64))
    values = input.gather(d, index_t)
    if not keepdim:
        values, index_t = values.squeeze(d), index_t.squeeze(d)
    return kind(values, index_t)


def _kth(input: Tensor, k: int, dim: int, keepdim: bool, kind):
    if input._data.ndim == 0:
        return kind(input.clone(), _make(np.asarray(0, dtype=np.int64)))
    d = _dim(dim, input._data.ndim)
    order = np.argsort(input._data, axis=d, kind="stable")
    index = np.take(order, [k], axis=d)
    return _select(input, index, d, keepdim, kind)


def median(input: Tensor, dim: int | None = None, keepdim: bool = False):  # noqa: A002
    """The lower median of all elements, or ``(values, indices)`` along ``dim``."""
    if dim is None:
        flat = input.reshape(-1)
        if flat._data.size == 0:
            return flat.new_full((), float("nan"))
        if np.isnan(flat._data).any():  # torch: NaN is the median when present
            return flat[int(np.argmax(np.isnan(flat._data)))]
        return _kth(flat, (flat._data.size - 1) // 2, 0, False, return_median).values
    d = _dim(dim, max(input._data.ndim, 1))
    n = input._data.shape[d] if input._data.ndim else 1
    return _kth(input, (n - 1) // 2, d, keepdim, return_median)


def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False):  # noqa: A002
    if dim is None:
        kept = input.reshape(-1)[_make(~np.isnan(input._data.reshape(-1)))]
        return median(kept)
    return median(input, dim, keepdim)


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False):  # noqa: A002
    """The k-th smallest value (1-based) along ``dim`` and its index."""
    d = _dim(dim, max(input._data.ndim, 1))
    n = input._data.shape[d] if input._data.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    return _kth(input, k - 1, d, keepdim, return_kthvalue)


def mode(input: Tensor, dim: int = -1, keepdim: bool = False):  # noqa: A002
    """The most frequent value along ``dim`` (the smallest on ties), with its last index."""
    if input._data.ndim == 0:
        return return_mode(input.clone(), _make(np.asarray(0, dtype=np.int64)))
    d = _dim(dim, input._data.ndim)
    moved = np.moveaxis(input._data, d, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    picks = np.empty(flat.shape[0], dtype=np.int64)
    for row, values in enumerate(flat):
        uniq, counts = np.unique(values, return_counts=True)
        best = uniq[np.argmax(counts)]
        picks[row] = np.nonzero(values == best)[0][-1]
    index = np.moveaxis(picks.reshape(moved.shape[:-1] + (1,)), -1, d)
    return _select(input, index, d, keepdim, return_mode)


def quantile(input: Tensor, q, dim: int | None = None, keepdim: bool = False,  # noqa: A002
             *, interpolation: str = "linear") -> Tensor:
    """Quantiles ``q`` (a float or a 1-D tensor in [0, 1]) of the sorted values; NaN anywhere
    in a slice makes that slice's quantiles NaN, as in torch."""
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=False)


def nanquantile(input: Tensor, q, dim: int | None = None, keepdim: bool = False,  # noqa: A002
                *, interpolation: str = "linear") -> Tensor:
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=True)


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan):
    scalar_q = not isinstance(q, Tensor)
    qs = np.atleast_1d(np.asarray(q.tolist() if isinstance(q, Tensor) else q, dtype=np.float64))
    if ((qs < 0) | (qs > 1)).any():
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else _dim(dim, x._data.ndim)
    ordered = x.sort(dim=d).values  # NaN sorts last
    nans = np.isnan(ordered._data).sum(axis=d, keepdims=True)
    n = ordered._data.shape[d]
    count = (n - nans) if ignore_nan else np.full_like(nans, n)
    results = []
    for level in qs:
        rank = level * np.maximum(count - 1, 0)
        low, high = np.floor(rank).astype(np.int64), np.ceil(rank).astype(np.int64)
        if interpolation == "lower":
            high = low
        elif interpolation == "higher":
            low = high
        elif interpolation == "nearest":
            low = high = np.round(rank).astype(np.int64)  # half to even, as torch
        a, b = ordered.gather(d, _make(low)), ordered.gather(d, _make(high))
        if interpolation == "midpoint":
            value = a + (b - a) * 0.5
        else:
            weight = _make((rank - low).astype(x._data.dtype))
            value = a + (b - a) * weight
        bad = (nans > 0) if not ignore_nan else (count == 0)
        value = ops.masked_fill(value, _make(bad), float("nan")) if bad.any() else value
        results.append(value if keepdim and dim is not None else value.squeeze(d))
    if dim is None and keepdim:
        results = [r.reshape((1,) * input._data.ndim) for r in results]
    return results[0] if scalar_q else shapes.stack(results, 0)


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim: int | None = None):
    """The distinct values (sorted), optionally with the inverse map and the counts."""
    values, inverse, counts = np.unique(input._data, return_inverse=True, return_counts=True,
                                        axis=dim)
    out = [_make(values)]
    if return_inverse:
        shape = input._data.shape if dim is None else (input._data.shape[dim],)
        out.append(_make(inverse.reshape(shape).astype(np.int64)))
    if return_counts:
        out.append(_make(counts.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


def unique_consecutive(input: Tensor, return_inverse: bool = False,  # noqa: A002
                       return_counts: bool = False, dim: int | None = None):
    """Collapse runs of equal values (or equal slices along ``dim``)."""
    data = input._data.reshape(-1) if dim is None else np.moveaxis(input._data, dim, 0)
    if data.shape[0] == 0:
        starts = np.zeros(0, dtype=bool)
    else:
        same = (data[1:] == data[:-1]).reshape(data.shape[0] - 1, -1).all(axis=1)
        starts = np.concatenate([[True], ~same])
    values = data[starts]
    out = [_make(values if dim is None else np.moveaxis(values, 0, dim).copy())]
    if return_inverse:
        inverse = np.cumsum(starts) - 1
        out.append(_make(inverse.reshape(input._data.shape if dim is None else -1)
                         .astype(np.int64)))
    if return_counts:
        bounds = np.append(np.nonzero(starts)[0], data.shape[0])
        out.append(_make(np.diff(bounds).astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:  # noqa: A002
    """Occurrences of each non-negative integer (summed weights, in the weights' dtype)."""
    if input._data.ndim != 1 or input._data.dtype.kind not in "iu":
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if (input._data < 0).any():
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return _make(np.bincount(input._data, minlength=minlength).astype(np.int64))
    out = np.bincount(input._data, weights=weights._data.astype(np.float64), minlength=minlength)
    return _make(out.astype(weights._data.dtype if weights._data.dtype.kind == "f"
                            else np.float64))


def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:  # noqa: A002
    """Counts in ``bins`` equal bins over [min, max] (the data's range when both are 0)."""
    data = input._data.reshape(-1)
    low, high = float(min), float(max)
    if low == high and data.size:
        low, high = float(data.min()), float(data.max())
    if low == high:
        low, high = low - 1, high + 1
    counts, _ = np.histogram(data[(data >= low) & (data <= high)], bins=bins, range=(low, high))
    return _make(counts.astype(input._data.dtype))


def bucketize(input, boundaries: Tensor, *, out_int32: bool = False,  # noqa: A002
              right: bool = False) -> Tensor:
    """The bucket of each value: boundaries[i-1] < x <= boundaries[i] (``right``: < and <=
    swapped)."""
    values = input._data if isinstance(input, Tensor) else np.asarray(input)
    out = np.searchsorted(boundaries._data, values, side="right" if right else "left")
    return _make(np.asarray(out, dtype=np.int32 if out_int32 else np.int64))


def searchsorted(sorted_sequence: Tensor, values, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None, sorter=None) -> Tensor:
    """Insertion points of ``values`` into each row of ``sorted_sequence``."""
    side = side or ("right" if right else "left")
    seq = sorted_sequence._data
    vals = values._data if isinstance(values, Tensor) else np.asarray(values)
    if sorter is not None:
        seq = np.take_along_axis(seq, sorter._data, -1)
    if seq.ndim == 1:
        out = np.searchsorted(seq, vals, side=side)
    else:
        rows_s, rows_v = seq.reshape(-1, seq.shape[-1]), vals.reshape(-1, vals.shape[-1])
        out = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(rows_s, rows_v)])
        out = out.reshape(vals.shape)
    return _make(np.asarray(out, dtype=np.int32 if out_int32 else np.int64))


def count_nonzero(input: Tensor, dim=None) -> Tensor:  # noqa: A002
    return _make(np.asarray(np.count_nonzero(input._data, axis=dim), dtype=np.int64))


def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    clean = ops.masked_fill(input, ops.isnan(input), 0.0) if input.is_floating_point() else input
    return clean.sum() if dim is None else clean.sum(dim, keepdim=keepdim)


def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    kept = (~ops.isnan(input)).to(input.dtype)
    total = nansum(input, dim, keepdim)
    return total / (kept.sum() if dim is None else kept.sum(dim, keepdim=keepdim))


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,  # noqa: A002
         append: Tensor | None = None) -> Tensor:
    """The n-th forward difference along ``dim`` (after prepending/appending)."""
    d = _dim(dim, input._data.ndim)
    x = shapes.cat([t for t in (prepend, input, append) if t is not None], d)
    for _ in range(n):
        length = x._data.shape[d]
        if input._data.dtype == np.bool_:
            x = ops.logical_xor(x.narrow(d, 1, length - 1), x.narrow(d, 0, length - 1))
        else:
            x = x.narrow(d, 1, max(length - 1, 0)) - x.narrow(d, 0, max(length - 1, 0))
    return x


def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,  # noqa: A002
        aweights: Tensor | None = None) -> Tensor:
    """Covariance of the rows (variables) over the columns (observations)."""
    x = input.reshape(1, -1) if input._data.ndim == 1 else input
    x = x if x.is_floating_point() else x.to(dt.get_default_dtype())
    n = x._data.shape[1]
    weights = None
    if fweights is not None:
        weights = fweights.to(x.dtype)
    if aweights is not None:
        weights = aweights.to(x.dtype) if weights is None else weights * aweights
    if weights is None:
        mean = x.mean(1, keepdim=True)
        norm = n - correction
        centred = x - mean
        out = centred @ centred.t() / norm
    else:
        total = weights.sum()
        mean = (x * weights).sum(1, keepdim=True) / total
        if aweights is None or correction == 0:
            norm = total - correction
        else:
            norm = total - correction * (weights * aweights).sum() / total
        centred = x - mean
        out = (centred * weights) @ centred.t() / norm
    return out.squeeze() if input._data.ndim == 1 or x._data.shape[0] == 1 else out


def corrcoef(input: Tensor) -> Tensor:  # noqa: A002
    c = cov(input)
    if c._data.ndim == 0:
        return c / c
    std = ops.diagonal(c).sqrt()
    return ops.clamp(c / std.unsqueeze(1) / std.unsqueeze(0), -1, 1)


def isin(elements, test_elements, *, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    a = elements._data if isinstance(elements, Tensor) else np.asarray(elements)
    b = test_elements._data if isinstance(test_elements, Tensor) else np.asarray(test_elements)
    return _make(np.isin(a, b, invert=invert))


def histogram(input: Tensor, bins=100, *, range=None, weight=None, density=False):  # noqa: A002
    """(hist, bin_edges) as numpy computes them, in the input's dtype."""
    edges = bins._data if isinstance(bins, Tensor) else bins
    hist, bin_edges = np.histogram(input._data, bins=edges, range=range, density=density,
                                   weights=None if weight is None else weight._data)
    return (creation.tensor(hist, dtype=input.dtype), creation.tensor(bin_edges, dtype=input.dtype))
