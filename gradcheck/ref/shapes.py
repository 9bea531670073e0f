"""Shape ops and indexing: reshape/view, transpose/permute, squeeze, expand, cat/stack,
``__getitem__``, gather/scatter_add, split/chunk."""
from __future__ import annotations

import builtins

import numpy as np

from gradcheck.ref import dtypes as dt
from gradcheck.ref import ops
from gradcheck.ref.arguments import (
    _cast,
    _dims,
    _normalise_index,
    _shape_args,
    is_basic_index,
    split_int_selects,
)
from gradcheck.ref.derivatives import TABLE
from gradcheck.ref.dispatch import apply
from gradcheck.ref.tensors import Tensor, _dim, _make


def reshape(input, *shape):  # noqa: A002
    """A tensor with the same elements in a new shape (-1 infers one dimension).

    >>> import gradcheck.ref as torch
    >>> torch.reshape(torch.arange(6), 2, -1)
    tensor([[0, 1, 2],
            [3, 4, 5]])
    """
    shape = _shape_args(shape)
    return apply(TABLE["reshape"], input, shape=shape)


def view(input, *shape):  # noqa: A002
    """Like ``reshape`` but never copies: torch's error when the strides do not allow it.

    >>> import gradcheck.ref as torch
    >>> torch.ones(2, 3).view(-1).shape
    torch.Size([6])
    """
    if len(shape) == 1 and isinstance(shape[0], dt.dtype):
        return _view_as_dtype(input, shape[0])
    return apply(TABLE["view"], input, shape=_shape_args(shape))


def _view_as_dtype(input, dtype):  # noqa: A002
    """``view(dtype)``: the same bytes read as ``dtype`` (the last dim scales by the ratio of
    element sizes); like torch, the result has no gradient."""
    data, target = input._data, dtype.np
    if data.dtype.itemsize != np.dtype(target).itemsize:
        ratio = np.dtype(target).itemsize / data.dtype.itemsize
        if data.ndim == 0 or data.strides[-1] != data.dtype.itemsize:
            raise RuntimeError(f"self.stride(-1) must be 1 to view {input.dtype} as {dtype} "
                               f"(different element sizes); call .contiguous() first")
        if ratio > 1 and data.shape[-1] % ratio:
            raise RuntimeError(f"self.size(-1) must be divisible by {int(ratio)} to view "
                               f"{input.dtype} as {dtype} (different element sizes), but got "
                               f"{data.shape[-1]}")
    return _make(data.view(target))


def flatten(input, start_dim=0, end_dim=-1):  # noqa: A002
    """Merge dims start_dim..end_dim into one.

    >>> import gradcheck.ref as torch
    >>> torch.flatten(torch.ones(2, 3, 4), 1).shape
    torch.Size([2, 12])
    """
    shape = input._data.shape
    if not shape:
        return reshape(input, 1)
    s, e = _dim(start_dim, len(shape)), _dim(end_dim, len(shape))
    return reshape(input, shape[:s] + (-1 if 0 not in shape[s:e + 1] else 0,) + shape[e + 1:])


def unflatten(input, dim, sizes):  # noqa: A002
    """Split dim ``dim`` into ``sizes``.

    >>> import gradcheck.ref as torch
    >>> torch.unflatten(torch.ones(2, 6), 1, (2, 3)).shape
    torch.Size([2, 2, 3])
    """
    d = _dim(dim, input._data.ndim)
    shape = input._data.shape
    return reshape(input, shape[:d] + tuple(sizes) + shape[d + 1:])


def transpose(input, dim0, dim1):  # noqa: A002
    """Swap two dims (a view).

    >>> import gradcheck.ref as torch
    >>> torch.transpose(torch.ones(2, 3), 0, 1).shape
    torch.Size([3, 2])
    """
    n = input._data.ndim
    return apply(TABLE["transpose"], input, dim0=_dim(dim0, n), dim1=_dim(dim1, n))


swapaxes = transpose


def t(input):  # noqa: A002
    """Transpose of a <= 2-D tensor.

    >>> import gradcheck.ref as torch
    >>> torch.t(torch.arange(6).reshape(2, 3))
    tensor([[0, 3],
            [1, 4],
            [2, 5]])
    """
    if input._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input._data.ndim}D")
    return transpose(input, 0, 1) if input._data.ndim == 2 else input.view(input.shape)


def permute(input, *dims):  # noqa: A002
    """Reorder dims (a view).

    >>> import gradcheck.ref as torch
    >>> torch.permute(torch.ones(2, 3, 4), 2, 0, 1).shape
    torch.Size([4, 2, 3])
    """
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
    """Drop size-1 dims (only ``dim`` when given; a dim whose size is not 1 is kept).

    >>> import gradcheck.ref as torch
    >>> torch.squeeze(torch.ones(2, 1, 3)).shape, torch.squeeze(torch.ones(2, 3), 0).shape
    (torch.Size([2, 3]), torch.Size([2, 3]))
    """
    shape = input._data.shape
    if dim is None:
        dims = tuple(i for i, s in enumerate(shape) if s == 1)
    else:
        dims = tuple(d for d in (_dims(dim, len(shape)) or ()) if shape[d] == 1)
    return apply(TABLE["squeeze"], input, dim=dims)


def unsqueeze(input, dim):  # noqa: A002
    """Insert a size-1 dim at ``dim``.

    >>> import gradcheck.ref as torch
    >>> torch.unsqueeze(torch.ones(3), 0).shape
    torch.Size([1, 3])
    """
    return apply(TABLE["unsqueeze"], input, dim=_dim(dim, input._data.ndim + 1))


def expand(input, *sizes):  # noqa: A002
    """Broadcast to ``sizes`` without copying (-1 keeps a dim).

    >>> import gradcheck.ref as torch
    >>> torch.expand(torch.tensor([[1.0], [2.0]]), 2, 3)
    tensor([[1., 1., 1.],
            [2., 2., 2.]])
    """
    return apply(TABLE["expand"], input, shape=_shape_args(sizes))


def broadcast_to(input, shape):  # noqa: A002
    """Same as ``expand(input, *shape)``.

    >>> import gradcheck.ref as torch
    >>> torch.broadcast_to(torch.tensor([1.0, 2.0]), (2, 2)).shape
    torch.Size([2, 2])
    """
    return expand(input, *shape)


def repeat(input, *sizes):  # noqa: A002
    """Tile the tensor ``sizes[i]`` times along each dim.

    >>> import gradcheck.ref as torch
    >>> torch.repeat(torch.tensor([1, 2]), 2)
    tensor([1, 2, 1, 2])
    """
    sizes = _shape_args(sizes)
    x = reshape(input, (1,) * (len(sizes) - input._data.ndim) + input._data.shape)
    inter, target = [], []
    for r, s in zip(sizes, x._data.shape):
        inter += [1, s]
        target += [r, s]
    out_shape = tuple(r * s for r, s in zip(sizes, x._data.shape))
    return reshape(expand(reshape(x, inter), target), out_shape)


def cat(tensors, dim=0):
    """Join tensors along an existing dim.

    >>> import gradcheck.ref as torch
    >>> torch.cat([torch.ones(1, 2), torch.zeros(1, 2)])
    tensor([[1., 1.],
            [0., 0.]])
    """
    tensors = [t for t in tensors if not (t._data.ndim == 1 and t._data.shape[0] == 0)] or list(
        tensors)
    d = dt.result_type(*tensors) if len({t._data.dtype for t in tensors}) > 1 else None
    if d is not None:
        tensors = [_cast(t, d) for t in tensors]
    return apply(TABLE["cat"], *tensors, dim=_dim(dim, tensors[0]._data.ndim))


concat = concatenate = cat


def stack(tensors, dim=0):
    """Join tensors along a new dim.

    >>> import gradcheck.ref as torch
    >>> torch.stack([torch.ones(2), torch.zeros(2)], dim=1).shape
    torch.Size([2, 2])
    """
    tensors = list(tensors)
    d = dt.result_type(*tensors) if len({t._data.dtype for t in tensors}) > 1 else None
    if d is not None:
        tensors = [_cast(t, d) for t in tensors]
    return apply(TABLE["stack"], *tensors, dim=_dim(dim, tensors[0]._data.ndim + 1))


def getitem(input, index):  # noqa: A002
    """``input[index]`` with slices, ints, None, Ellipsis, integer arrays and boolean masks.

    >>> import gradcheck.ref as torch
    >>> torch.ops.getitem(torch.arange(6).reshape(2, 3), (slice(None), torch.tensor([0, 2])))
    tensor([[0, 2],
            [3, 5]])
    """
    index = _normalise_index(index)
    split = split_int_selects(index)
    if split is not None:
        return getitem(getitem(input, split[0]), split[1])
    if is_basic_index(index):
        if not builtins.any(i is Ellipsis for i in index):
            index = index + (Ellipsis,)  # numpy then returns a 0-d view, never a scalar copy
        return apply(TABLE["getitem_view"], input, index=index)
    return apply(TABLE["getitem"], input, index=index)


def narrow(input, dim, start, length):  # noqa: A002
    """``length`` elements of ``dim`` starting at ``start`` (a view).

    >>> import gradcheck.ref as torch
    >>> torch.narrow(torch.arange(5), 0, 1, 3)
    tensor([1, 2, 3])
    """
    d = _dim(dim, input._data.ndim)
    return getitem(input, (slice(None),) * d + (slice(start, start + length),))


def select(input, dim, index):  # noqa: A002
    """The slice at ``index`` of ``dim``, with that dim removed (a view).

    >>> import gradcheck.ref as torch
    >>> torch.select(torch.arange(6).reshape(2, 3), 1, 2)
    tensor([2, 5])
    """
    d = _dim(dim, input._data.ndim)
    return getitem(input, (slice(None),) * d + (index,))


def unbind(input, dim=0):  # noqa: A002
    """All slices along ``dim``, as a tuple.

    >>> import gradcheck.ref as torch
    >>> torch.unbind(torch.arange(4).reshape(2, 2))
    (tensor([0, 1]), tensor([2, 3]))
    """
    d = _dim(dim, input._data.ndim)
    return tuple(select(input, d, i) for i in range(input._data.shape[d]))


def split(tensor, split_size_or_sections, dim=0):
    """Pieces of ``split_size`` (or the listed sizes) along ``dim``.

    >>> import gradcheck.ref as torch
    >>> [p.tolist() for p in torch.split(torch.arange(5), 2)]
    [[0, 1], [2, 3], [4]]
    """
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
    """``chunks`` pieces of (nearly) equal size along ``dim``.

    >>> import gradcheck.ref as torch
    >>> [p.tolist() for p in torch.chunk(torch.arange(5), 2)]
    [[0, 1, 2], [3, 4]]
    """
    n = input._data.shape[_dim(dim, input._data.ndim)]
    return split(input, -(-n // chunks), dim)


def gather(input, dim, index):  # noqa: A002
    """out[i][j] = input[index[i][j]][j] (for dim=0), the op behind cross_entropy.

    >>> import gradcheck.ref as torch
    >>> torch.gather(torch.tensor([[1.0, 2.0], [3.0, 4.0]]), 1, torch.tensor([[1], [0]]))
    tensor([[2.],
            [3.]])
    """
    d = _dim(dim, input._data.ndim)
    check_index(index, input, d, "gather")
    return apply(TABLE["gather"], input, index, dim=d)


def check_index(index, input, dim, name):  # noqa: A002
    """torch's errors for an index tensor of the wrong dtype or out of range along ``dim``."""
    if not isinstance(index, Tensor) or index._data.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")
    if index._data.ndim != input._data.ndim and input._data.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input "
                           "tensor")
    size = input._data.shape[dim] if input._data.ndim else 1
    bad = (index._data < 0) | (index._data >= size)
    if bad.any():
        value = int(index._data[bad].flat[0])
        raise RuntimeError(f"index {value} is out of bounds for dimension {dim} with size {size}")


def check_scatter(index, input, dim, src, name):  # noqa: A002
    """torch's errors for scatter-like ops: ``check_index``'s, an index larger than ``input``
    outside ``dim`` or larger than ``src``, and a ``src`` of another dtype than ``input``."""
    check_index(index, input, dim, name)
    shape, src_shape = index._data.shape, getattr(src, "shape", None)
    if any(n > m for k, (n, m) in enumerate(zip(shape, input._data.shape)) if k != dim) or (
            src_shape is not None and any(n > m for n, m in zip(shape, src_shape))):
        raise RuntimeError(f"{name}(): Expected index {list(shape)} to be no larger than self "
                           f"{list(input.shape)} apart from dimension {dim} and to be no larger "
                           f"than src {list(src_shape or ())}")
    if isinstance(src, Tensor) and src._data.dtype != input._data.dtype:
        raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype, got "
                           f"{input.dtype} and {src.dtype}; convert src with .to(self.dtype)")


def scatter_add(input, dim, index, src):  # noqa: A002
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim``.

    >>> import gradcheck.ref as torch
    >>> torch.scatter_add(torch.zeros(3), 0, torch.tensor([0, 0, 2]), torch.tensor([1.0, 2.0, 3.0]))
    tensor([3., 0., 3.])
    """
    return apply(TABLE["scatter_add"], input, index, src, dim=_dim(dim, input._data.ndim))


def index_select(input, dim, index):  # noqa: A002
    """Entries ``index`` (an int tensor) along ``dim``.

    >>> import gradcheck.ref as torch
    >>> torch.index_select(torch.arange(6).reshape(3, 2), 0, torch.tensor([2, 0]))
    tensor([[4, 5],
            [0, 1]])
    """
    d = _dim(dim, input._data.ndim)
    return getitem(input, (slice(None),) * d + (index,))


def index_put(input, index, values):  # noqa: A002
    """A copy of ``input`` with ``values`` written at ``index``.

    >>> import gradcheck.ref as torch
    >>> torch.ops.index_put(torch.zeros(3), (torch.tensor([1]),), torch.tensor([5.0]))
    tensor([0., 5., 0.])
    """
    index = _normalise_index(index)
    return apply(TABLE["index_put"], input, _cast(values, input.dtype), index=index)


def index_backward(grad, shape, index):
    """Scatter ``grad`` into zeros of ``shape`` at ``index`` (the backward of indexing)."""
    return apply(TABLE["index_backward"], grad, shape=shape, index=index)


def tril(input, diagonal=0):  # noqa: A002
    """Lower triangle of the last two dims (the rest zeroed).

    >>> import gradcheck.ref as torch
    >>> torch.tril(torch.ones(2, 2))
    tensor([[1., 0.],
            [1., 1.]])
    """
    return _triangle(input, np.tril, diagonal)


def triu(input, diagonal=0):  # noqa: A002
    """Upper triangle of the last two dims (the rest zeroed).

    >>> import gradcheck.ref as torch
    >>> torch.triu(torch.ones(2, 2))
    tensor([[1., 1.],
            [0., 1.]])
    """
    return _triangle(input, np.triu, diagonal)


def _triangle(input, band, diagonal):  # noqa: A002
    """``input`` where ``band`` (np.tril or np.triu) keeps the last two dims, else zero."""
    mask = band(np.ones(input._data.shape[-2:], dtype=bool), diagonal)
    kind = input._data.dtype.kind
    return ops.where(_make(mask), input, 0.0 if kind == "f" else (False if kind == "b" else 0))


def sort(input, dim=-1, descending=False, stable=False):  # noqa: A002
    """``(values, indices)`` sorted along ``dim``; values stay differentiable (via gather).

    >>> import gradcheck.ref as torch
    >>> torch.sort(torch.tensor([3.0, 1.0, 2.0]))
    torch.return_types.sort(
    values=tensor([1., 2., 3.]),
    indices=tensor([1, 2, 0]))
    """
    from gradcheck.ref.reductions import return_sort

    dt.refuse_complex_order("sort", input)
    d = _dim(dim, input._data.ndim) if input._data.ndim else 0
    if not input._data.ndim:
        return return_sort(input.clone(), _make(np.asarray(0)))
    key = -input._data if descending else input._data
    order = np.argsort(key, axis=d, kind="stable")
    indices = _make(order.astype(np.int64))
    return return_sort(gather(input, d, indices), indices)


def argsort(input, dim=-1, descending=False, stable=False):  # noqa: A002
    """Indices that sort ``input`` along ``dim``.

    >>> import gradcheck.ref as torch
    >>> torch.argsort(torch.tensor([3.0, 1.0, 2.0]))
    tensor([1, 2, 0])
    """
    return sort(input, dim, descending, stable)[1]


def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    """The ``k`` largest (or smallest) entries along ``dim`` as ``(values, indices)``.

    >>> import gradcheck.ref as torch
    >>> torch.topk(torch.tensor([3.0, 1.0, 2.0]), 2).values
    tensor([3., 2.])
    """
    from gradcheck.ref.reductions import return_topk

    values, indices = sort(input, dim, descending=largest)
    d = _dim(dim, input._data.ndim)
    return return_topk(narrow(values, d, 0, k), narrow(indices, d, 0, k))


def nonzero(input, *, as_tuple=False):  # noqa: A002
    """Indices of the nonzero elements: an (n, ndim) int64 tensor, or one tensor per dim.

    >>> import gradcheck.ref as torch
    >>> torch.nonzero(torch.tensor([0, 1, 1]))
    tensor([[1],
            [2]])
    """
    found = np.nonzero(np.atleast_1d(input._data))
    if input._data.ndim == 0 and not as_tuple:  # torch: one dimensionless row per hit
        return _make(np.zeros((int(bool(input._data)), 0), dtype=np.int64))
    if as_tuple:
        return tuple(_make(i.astype(np.int64)) for i in found)
    return _make(np.stack(found, axis=1).astype(np.int64))
