"""Numpy kernels of the running and scattered reductions: ``cummax``/``cummin`` with torch's
indices, and ``scatter_reduce``.

>>> import numpy as np
>>> running_extreme(np.array([1.0, 3.0, 2.0, 3.0]), 0, np.maximum)
(array([1., 3., 3., 3.]), array([0, 1, 1, 3]))
"""
from __future__ import annotations

import numpy as np


def running_extreme(a, dim, ufunc):
    """Running max (``np.maximum``) or min along ``dim``, with the index of the latest element
    that equals the running value (torch's tie rule)."""
    values = ufunc.accumulate(a, axis=dim)
    shape = [1] * a.ndim
    shape[dim] = a.shape[dim]
    positions = np.arange(a.shape[dim]).reshape(shape)
    hit = (a == values) | (np.isnan(a) if a.dtype.kind == "f" else False)
    indices = np.maximum.accumulate(np.where(hit, positions, 0), axis=dim)
    return values, indices


_UFUNCS = {"sum": np.add, "prod": np.multiply, "mean": np.add, "amax": np.maximum,
           "amin": np.minimum}
_IDENTITY = {"sum": 0, "prod": 1, "mean": 0, "amax": -np.inf, "amin": np.inf}


def scatter_index(index, dim):
    """The full numpy index that sends element ``i`` of ``index`` to ``index[i]`` along dim."""
    idx = list(np.indices(index.shape, sparse=True))
    idx[dim] = index
    return tuple(idx)


def scatter_reduce(a, dim, index, src, reduce, include_self=True):
    """torch.scatter_reduce's forward: fold ``src`` into ``a`` at ``index`` along ``dim``."""
    if reduce not in _UFUNCS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    where = scatter_index(index, dim)
    src = src[tuple(slice(0, s) for s in index.shape)]
    out = a.copy()
    if not include_self:
        fill = _IDENTITY[reduce]
        if a.dtype.kind != "f" and reduce in ("amax", "amin"):
            info = np.iinfo(a.dtype)
            fill = info.min if reduce == "amax" else info.max
        out[where] = fill
    _UFUNCS[reduce].at(out, where, src)
    if reduce == "mean":
        counts = np.full(a.shape, 1 if include_self else 0, dtype=np.int64)
        np.add.at(counts, where, 1)
        out = np.where(counts > 0, out / np.maximum(counts, 1), out).astype(a.dtype)
        if a.dtype.kind != "f":
            out = (out // 1).astype(a.dtype)
    return out
