"""Shape ops and indexing: reshape/view, transpose/permute, squeeze, expand, cat/stack,
``__getitem__``, gather/scatter_add, split/chunk."""
from __future__ import annotations

import builtins

import numpy as np

from gradcheck.ref import dtypes as dt
from gradcheck.ref import ops
from gradcheck.ref.arguments import (  # noqa: F401
    _NUMBER,
    _cast,
    _const,
    _dims,
    _float,
    _normalise_index,
    _pair,
    _shape_args,
    _wrap,
    is_basic_index,
    zeros_like_shape,
)
from gradcheck.ref.derivatives import TABLE
from gradcheck.ref.dispatch import apply
from gradcheck.ref.tensors import _dim, _make


def reshape(input, *shape):  # noqa: A002
    """A tensor with the same elements in a new shape (-1 infers one dimension)."""
    shape = _shape_args(shape)
    return apply(TABLE["reshape"], input, shape=shape)


view = reshape


def flatten(input, start_dim=0, end_dim=-1):  # noqa: A002
    """Merge dims start_dim..end_dim into one."""
    shape = input._data.shape
    if not shape:
        return reshape(input, 1)
    s, e = _dim(start_dim, len(shape)), _dim(end_dim, len(shape))
    return reshape(input, shape[:s] + (-1 if 0 not in shape[s:e + 1] else 0,) + shape[e + 1:])


def unflatten(input, dim, sizes):  # noqa: A002
    d = _dim(dim, input._data.ndim)
    shape = input._data.shape
    return reshape(input, shape[:d] + tuple(sizes) + shape[d + 1:])


def transpose(input, dim0, dim1):  # noqa: A002
    """Swap two dims (a view)."""
    n = input._data.ndim
    return apply(TABLE["transpose"], input, dim0=_dim(dim0, n), dim1=_dim(dim1, n))


swapaxes = transpose


def t(input):  # noqa: A002
    """Transpose of a <= 2-D tensor."""
    if input._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input._data.ndim}D")
    return transpose(input, 0, 1) if input._data.ndim == 2 else input.view(input.shape)


def permute(input, *dims):  # noqa: A002
    """Reorder dims (a view)."""
    dims = _shape_args(dims)
    n = input._data.ndim
    if len(dims) != n:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            "length of the desired ordering of dimensions i.e. input.dim() = "
            f"{n} is not equal to len(dims) = {len(dims)}"
        )
    return apply(TABLE["permute"], input, dims=tuple(_dim(d, n) for d in dims))


def squeeze(input, dim=None):  # noqa: A002
    """Drop size-1 dims (only ``dim`` when given; a dim whose size is not 1 is kept)."""
    shape = input._data.shape
    if dim is None:
        dims = tuple(i for i, s in enumerate(shape) if s == 1)
    else:
        dims = tuple(d for d in (_dims(dim, len(shape)) or ()) if shape[d] == 1)
    return apply(TABLE["squeeze"], input, dim=dims)


def unsqueeze(input, dim):  # noqa: A002
    """Insert a size-1 dim at ``dim``."""
    return apply(TABLE["unsqueeze"], input, dim=_dim(dim, input._data.ndim + 1))


def expand(input, *sizes):  # noqa: A002
    """Broadcast to ``sizes`` without copying (-1 keeps a dim)."""
    return apply(TABLE["expand"], input, shape=_shape_args(sizes))


def broadcast_to(input, shape):  # noqa: A002
    return expand(input, *shape)


def repeat(input, *sizes):  # noqa: A002
    """Tile the tensor ``sizes[i]`` times along each dim."""
    sizes = _shape_args(sizes)
    x = reshape(input, (1,) * (len(sizes) - input._data.ndim) + input._data.shape)
    inter, target = [], []
    for r, s in zip(sizes, x._data.shape):
        inter += [1, s]
        target += [r, s]
    out_shape = tuple(r * s for r, s in zip(sizes, x._data.shape))
    return reshape(expand(reshape(x, inter), target), out_shape)


def cat(tensors, dim=0):
    """Join tensors along an existing dim."""
    tensors = [t for t in tensors if not (t._data.ndim == 1 and t._data.shape[0] == 0)] or list(
        tensors)
    d = dt.result_type(*tensors) if len({t._data.dtype for t in tensors}) > 1 else None
    if d is not None:
        tensors = [_cast(t, d) for t in tensors]
    return apply(TABLE["cat"], *tensors, dim=_dim(dim, tensors[0]._data.ndim))


concat = concatenate = cat


def stack(tensors, dim=0):
    """Join tensors along a new dim."""
    tensors = list(tensors)
    d = dt.result_type(*tensors) if len({t._data.dtype for t in tensors}) > 1 else None
    if d is not None:
        tensors = [_cast(t, d) for t in tensors]
    return apply(TABLE["stack"], *tensors, dim=_dim(dim, tensors[0]._data.ndim + 1))


def getitem(input, index):  # noqa: A002
    """``input[index]`` with slices, ints, None, Ellipsis, integer arrays and boolean masks."""
    index = _normalise_index(index)
    if is_basic_index(index):
        if not builtins.any(i is Ellipsis for i in index):
            index = index + (Ellipsis,)  # numpy then returns a 0-d view, never a scalar copy
        return apply(TABLE["getitem_view"], input, index=index)
    return apply(TABLE["getitem"], input, index=index)


def narrow(input, dim, start, length):  # noqa: A002
    d = _dim(dim, input._data.ndim)
    return getitem(input, (slice(None),) * d + (slice(start, start + length),))


def select(input, dim, index):  # noqa: A002
    d = _dim(dim, input._data.ndim)
    return getitem(input, (slice(None),) * d + (index,))


def unbind(input, dim=0):  # noqa: A002
    d = _dim(dim, input._data.ndim)
    return tuple(select(input, d, i) for i in range(input._data.shape[d]))


def split(tensor, split_size_or_sections, dim=0):
    """Pieces of ``split_size`` (or the listed sizes) along ``dim``."""
    d = _dim(dim, tensor._data.ndim)
    n = tensor._data.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        sizes = [builtins.min(step, n - s) for s in range(0, n, step)]
    else:
        sizes = list(split_size_or_sections)
    out, start = [], 0
    for size in sizes:
        out.append(narrow(tensor, d, start, size))
        start += size
    return tuple(out)


def chunk(input, chunks, dim=0):  # noqa: A002
    n = input._data.shape[_dim(dim, input._data.ndim)]
    return split(input, -(-n // chunks), dim)


def gather(input, dim, index):  # noqa: A002
    """out[i][j] = input[index[i][j]][j] (for dim=0), the op behind cross_entropy."""
    return apply(TABLE["gather"], input, index, dim=_dim(dim, input._data.ndim))


def scatter_add(input, dim, index, src):  # noqa: A002
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim``."""
    return apply(TABLE["scatter_add"], input, index, src, dim=_dim(dim, input._data.ndim))


def index_select(input, dim, index):  # noqa: A002
    d = _dim(dim, input._data.ndim)
    return getitem(input, (slice(None),) * d + (index,))


def index_put(input, index, values):  # noqa: A002
    """A copy of ``input`` with ``values`` written at ``index``."""
    index = _normalise_index(index)
    return apply(TABLE["index_put"], input, _cast(values, input.dtype), index=index)


def index_backward(grad, shape, index):
    """Scatter ``grad`` into zeros of ``shape`` at ``index`` (the backward of indexing)."""
    return apply(TABLE["index_backward"], grad, shape=shape, index=index)


def tril(input, diagonal=0):  # noqa: A002
    mask = np.tril(np.ones(input._data.shape[-2:], dtype=bool), diagonal)
    return ops.where(_make(mask), input, 0.0 if input._data.dtype.kind == "f" else 0)


def triu(input, diagonal=0):  # noqa: A002
    mask = np.triu(np.ones(input._data.shape[-2:], dtype=bool), diagonal)
    return ops.where(_make(mask), input, 0.0 if input._data.dtype.kind == "f" else 0)
