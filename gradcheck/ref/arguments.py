"""Argument normalisation shared by the functional ops: scalars, dtypes, dims and indices.

torch's type promotion and dim conventions live here so each op stays a few lines long.
"""
from __future__ import annotations

import builtins

import numpy as np

from gradcheck.ref import dtypes as dt
from gradcheck.ref.devices import is_cupy, module_of
from gradcheck.ref.dispatch import apply
from gradcheck.ref.tensors import Tensor, _dim, _make

_NUMBER = (int, float, complex, bool, np.number, np.bool_)


def _table():
    from gradcheck.ref.derivatives import TABLE

    return TABLE


def _wrap(array) -> Tensor:
    return _make(array)


def _const(value, like: Tensor, np_dtype) -> Tensor:
    xp = module_of(like._data)
    return _make(xp.asarray(value, dtype=np_dtype))


def _cast(t: Tensor, d: dt.dtype) -> Tensor:
    return t if t._data.dtype == d.np else apply(_table()["to"], t, dtype=d.np)


def _pair(a, b):
    """Two Tensors of torch's promoted dtype from Tensor/scalar operands."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        if a._data.dtype == b._data.dtype:
            return a, b
        d = dt.result_type(a, b)
        return _cast(a, d), _cast(b, d)
    t, s, swap = (a, b, False) if isinstance(a, Tensor) else (b, a, True)
    if not isinstance(s, _NUMBER):
        if isinstance(s, np.ndarray):
            s = _make(s)
            return _pair(s, t) if swap else _pair(t, s)
        return NotImplemented, None
    kind = t._data.dtype.kind
    if kind == "c" or kind == "f" and not isinstance(s, (bool, np.bool_, complex,
                                                          np.complexfloating)):
        c = _const(s, t, t._data.dtype)
    else:
        d = dt.result_type(t, s)
        t = _cast(t, d)
        c = _const(s, t, d.np)
    return (c, t) if swap else (t, c)


def _float(t: Tensor) -> Tensor:
    """Integer inputs of float functions (exp, log, ...) become the default float dtype."""
    return t if t._data.dtype.kind in "fc" else _cast(t, dt.get_default_dtype())


def _dims(dim, ndim: int):
    """None, an int or a sequence of ints -> None or a sorted tuple of non-negative dims."""
    if dim is None:
        return None
    if ndim == 0:  # a 0-d tensor accepts dim 0 or -1, and reducing it changes nothing
        for d in dim if isinstance(dim, (list, tuple)) else (dim,):
            _dim(d, 0)
        return None
    if isinstance(dim, (list, tuple)):
        if len(dim) == 0:
            return None
        return tuple(sorted(_dim(d, ndim) for d in dim))
    return (_dim(dim, ndim),)


def _shape_args(args) -> tuple:
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(int(s) for s in args[0])
    return tuple(int(s) for s in args)


def is_basic_index(index) -> bool:
    return not builtins.any(isinstance(i, np.ndarray) or is_cupy(i) for i in index)


def _is_int(i) -> bool:
    return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def split_int_selects(index):
    """``(first, rest)`` when ``index`` mixes Python ints with index arrays, else None.

    torch applies ints (with slices and None) as basic indexing before the index tensors;
    numpy counts ints as advanced indices, so ints between two arrays would move the result's
    dims to the front. ``input[first][rest]`` is torch's result.
    """
    if is_basic_index(index) or not builtins.any(_is_int(i) for i in index) or builtins.any(
            isinstance(i, (bool, np.bool_)) for i in index):
        return None
    first, rest = [], []
    for i in index:
        if _is_int(i):
            first.append(i)
        elif i is Ellipsis:
            first.append(i)
            rest.append(i)
        elif isinstance(i, (slice, type(None))):
            first.append(i)
            rest.append(slice(None))  # None's new dim now exists; the slice is applied
        else:  # an index array or sequence: a boolean mask spans as many dims as it has
            array = i if hasattr(i, "ndim") else np.asarray(i)
            first += [slice(None)] * (array.ndim if array.dtype == bool else 1)
            rest.append(i)
    return tuple(first), tuple(rest)


def _normalise_index(index):
    if not isinstance(index, tuple):
        index = (index,)
    out = []
    for i in index:
        if isinstance(i, Tensor):
            i = i._data
            if i.dtype.kind == "f":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        elif isinstance(i, (list, tuple)):  # a sequence inside the index is an index array
            i = np.asarray(i)
        out.append(i)
    return tuple(out)


def zeros_like_shape(like: Tensor, shape) -> Tensor:
    xp = module_of(like._data)
    return _make(xp.zeros(shape, dtype=like._data.dtype))
