"""Building tensors out of pieces: ``tile``, ``rot90``, ``diag_embed``, the ``*stack`` family,
``tensor_split``, ``take``/``take_along_dim``, ``masked_scatter``, ``tril_indices``,
``cartesian_prod``, ``block_diag`` and ``range``. All are compositions of indexing, reshaping
and concatenation, so their gradients come from those rows.

>>> import gradcheck.ref as torch
>>> torch.tile(torch.tensor([1, 2]), (2,))
tensor([1, 2, 1, 2])
>>> torch.diag_embed(torch.tensor([1.0, 2.0]))
tensor([[1., 0.],
        [0., 2.]])
"""
from __future__ import annotations

import math

import numpy as np

from gradcheck.ref import creation, ops, shapes
from gradcheck.ref import dtypes as dt
from gradcheck.ref.tensors import Tensor, _dim, _make


def tile(input: Tensor, dims) -> Tensor:  # noqa: A002
    """``repeat`` with missing leading reps taken as 1 (and extra ones adding dims)."""
    dims = tuple(dims)
    ndim = input._data.ndim
    if len(dims) < ndim:
        dims = (1,) * (ndim - len(dims)) + dims
    return input.repeat(*dims)


def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:  # noqa: A002
    """Rotate by 90 degrees ``k`` times in the plane of ``dims`` (from the first towards the
    second)."""
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    d0, d1 = (_dim(d, input._data.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k %= 4
    if k == 1:
        return input.flip(d1).transpose(d0, d1)
    if k == 2:
        return input.flip(d0, d1)
    if k == 3:
        return input.flip(d0).transpose(d0, d1)
    return input.clone()


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:  # noqa: A002
    """Each last-dim vector becomes the ``offset`` diagonal of a matrix in (dim1, dim2)."""
    n = input._data.shape[-1] + abs(offset)
    eye = np.zeros((input._data.shape[-1], n, n), dtype=input._data.dtype)
    k = np.arange(input._data.shape[-1])
    eye[k, k + max(-offset, 0), k + max(offset, 0)] = 1
    out = ops.einsum("...k,kij->...ij", input, _make(eye))
    return ops.movedim(out, (-2, -1), (dim1, dim2))


def _at_least(input: Tensor, ndim: int) -> Tensor:
    t = input
    while t._data.ndim < ndim:
        t = t.unsqueeze(0) if ndim < 3 or t._data.ndim < 2 else t.unsqueeze(-1)
    return t


def atleast_1d(input: Tensor) -> Tensor:  # noqa: A002
    return _at_least(input, 1)


def atleast_2d(input: Tensor) -> Tensor:  # noqa: A002
    return _at_least(input, 2)


def atleast_3d(input: Tensor) -> Tensor:  # noqa: A002
    if input._data.ndim == 0:
        return input.reshape(1, 1, 1)
    if input._data.ndim == 1:
        return input.reshape(1, -1, 1)
    if input._data.ndim == 2:
        return input.unsqueeze(-1)
    return input


def vstack(tensors) -> Tensor:
    return shapes.cat([atleast_2d(t) for t in tensors], 0)


row_stack = vstack


def hstack(tensors) -> Tensor:
    tensors = [atleast_1d(t) for t in tensors]
    return shapes.cat(tensors, 0 if tensors[0]._data.ndim == 1 else 1)


def dstack(tensors) -> Tensor:
    return shapes.cat([atleast_3d(t) for t in tensors], 2)


def column_stack(tensors) -> Tensor:
    return shapes.cat([t.reshape(-1, 1) if t._data.ndim < 2 else t for t in tensors], 1)


def tensor_split(input: Tensor, indices_or_sections, dim: int = 0) -> tuple:  # noqa: A002
    """Split into n nearly equal parts (the first ``size % n`` one longer), or at indices."""
    d = _dim(dim, input._data.ndim)
    size = input._data.shape[d]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        lengths = [size // n + (1 if i < size % n else 0) for i in range(n)]
        bounds = np.cumsum([0] + lengths)
    else:
        bounds = [0] + [min(max(int(i), 0), size) for i in indices_or_sections] + [size]
    return tuple(input.narrow(d, int(lo), max(int(hi) - int(lo), 0))
                 for lo, hi in zip(bounds[:-1], bounds[1:]))


def take(input: Tensor, index: Tensor) -> Tensor:  # noqa: A002
    """Elements of the flattened input at ``index`` (negative wraps), shaped like index."""
    flat = input.reshape(-1)
    size = flat._data.shape[0]
    positions = index._data
    if ((positions >= size) | (positions < -size)).any():
        bad = int(positions[(positions >= size) | (positions < -size)].reshape(-1)[0])
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {size} "
                         "elements.")
    return flat[_make(positions % max(size, 1))]


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:  # noqa: A002
    """``gather`` after broadcasting input and indices (all but ``dim``)."""
    if dim is None:
        return input.reshape(-1).gather(0, indices.reshape(-1))
    d = _dim(dim, input._data.ndim)
    shape_in, shape_ix = list(input.shape), list(indices.shape)
    shape_in[d] = shape_ix[d] = 1
    common = np.broadcast_shapes(tuple(shape_in), tuple(shape_ix))
    in_shape, ix_shape = list(common), list(common)
    in_shape[d], ix_shape[d] = input._data.shape[d], indices._data.shape[d]
    return input.expand(*in_shape).gather(d, indices.expand(*ix_shape))


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:  # noqa: A002
    """A copy of input with the first ``mask.sum()`` elements of source, in order, where mask
    is True."""
    mask = mask.expand(*input.shape) if tuple(mask.shape) != tuple(input.shape) else mask
    count = int(mask._data.sum())
    if count > source.numel():
        raise RuntimeError("masked_scatter: expected source to have at least as many elements "
                           "as ones in mask")
    values = source.reshape(-1)[:count]
    return shapes.index_put(input, (mask,), values)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None) -> Tensor:
    rows, cols = np.tril_indices(row, offset, col)
    return creation.tensor(np.stack([rows, cols]), dtype=dtype or dt.int64)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None) -> Tensor:
    rows, cols = np.triu_indices(row, offset, col)
    return creation.tensor(np.stack([rows, cols]), dtype=dtype or dt.int64)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    if len(tensors) == 1:
        return tensors[0]
    grids = ops.meshgrid(*tensors, indexing="ij")
    return shapes.stack([g.reshape(-1) for g in grids], 1)


def block_diag(*tensors: Tensor) -> Tensor:
    """The matrices on the diagonal of one larger zero matrix."""
    mats = [t.reshape(1, -1) if t._data.ndim < 2 else t for t in tensors]
    total = sum(m._data.shape[1] for m in mats)
    rows, start = [], 0
    for m in mats:
        width = m._data.shape[1]
        left = m.new_zeros(m._data.shape[0], start)
        right = m.new_zeros(m._data.shape[0], total - start - width)
        rows.append(shapes.cat([left, m, right], 1))
        start += width
    return shapes.cat(rows, 0)


def torch_range(start=0, end=None, step=1, *, dtype=None, device=None,
                requires_grad=False) -> Tensor:
    """The deprecated ``torch.range``: like arange but including ``end``; float by default."""
    if end is None:
        start, end = 0, start
    count = int(math.floor((end - start) / step)) + 1
    values = start + step * np.arange(count)
    return creation.tensor(values, dtype=dtype or dt.get_default_dtype(),
                           requires_grad=requires_grad)


def broadcast_tensors(*tensors: Tensor) -> tuple:
    """Every tensor expanded to the common broadcast shape (views, as in torch)."""
    shape = np.broadcast_shapes(*(tuple(t.shape) for t in tensors))
    return tuple(t.expand(*shape) for t in tensors)
