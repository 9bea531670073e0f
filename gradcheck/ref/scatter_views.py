"""Out-of-place writes into a view, and the index helpers around them: ``select_scatter``,
``slice_scatter``, ``diagonal_scatter``, ``expand_copy``, ``as_strided``, ``index_put``,
``argwhere``, ``unravel_index``, ``combinations``, ``cholesky_inverse``.

Each ``*_scatter`` is a clone of ``input`` with ``src`` written where the view would be, done
as an indexed assignment, so ``input`` gets the gradient outside the view and ``src`` the
gradient inside it (torch's rules).

>>> import gradcheck.ref as torch
>>> torch.slice_scatter(torch.zeros(2, 4), torch.ones(2, 2), dim=1, start=2)
tensor([[0., 0., 1., 1.],
        [0., 0., 1., 1.]])
"""
from __future__ import annotations

import itertools

import numpy as np

from gradcheck.ref import creation, ops
from gradcheck.ref.tensors import Tensor, _make


def _dim(dim: int, ndim: int) -> int:
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(ndim, 1)}, {max(ndim, 1) - 1}], but got {dim})")
    return dim % max(ndim, 1)


def _written(input: Tensor, index: tuple, src: Tensor) -> Tensor:  # noqa: A002
    view_shape = input._data[index].shape
    if tuple(src.shape) != view_shape:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size "
                           f"= {list(src.shape)}, slice size = {list(view_shape)}")
    out = input.clone()
    out[index] = src
    return out


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:  # noqa: A002
    """``input`` with ``input.select(dim, index)`` replaced by ``src``."""
    dim = _dim(dim, input.dim())
    return _written(input, (slice(None),) * dim + (index,), src)


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None,  # noqa: A002
                  end: int | None = None, step: int = 1) -> Tensor:
    """``input`` with ``input[..., start:end:step, ...]`` (along ``dim``) replaced by ``src``."""
    dim = _dim(dim, input.dim())
    return _written(input, (slice(None),) * dim + (slice(start, end, step),), src)


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,  # noqa: A002
                     dim2: int = 1) -> Tensor:
    """``input`` with ``input.diagonal(offset, dim1, dim2)`` replaced by ``src``."""
    ndim = input.dim()
    dim1, dim2 = _dim(dim1, ndim), _dim(dim2, ndim)
    moved = ops.movedim(input, (dim1, dim2), (-2, -1))
    rows, cols = moved._data.shape[-2:]
    count = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
    diagonal = np.arange(count)
    index = (Ellipsis, diagonal - min(offset, 0), diagonal + max(offset, 0))
    return ops.movedim(_written(moved, index, src), (-2, -1), (dim1, dim2))


def expand_copy(input: Tensor, size, *, implicit: bool = False) -> Tensor:  # noqa: A002
    """``input.expand(size)`` as a new tensor that owns its memory."""
    return input.expand(size).clone()


def as_strided(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:  # noqa: A002
    return input.as_strided(size, stride, storage_offset)


def index_put(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:  # noqa: A002
    return input.index_put(indices, values, accumulate)


def argwhere(input: Tensor) -> Tensor:  # noqa: A002
    """The indices of the non-zero elements, one row each (``nonzero``)."""
    return ops.nonzero(input)


def unravel_index(indices, shape) -> tuple:
    """Flat indices into coordinates of ``shape``: a tuple of int64 tensors, one per dim.
    Negative indices count from the end, as in torch."""
    flat = indices._data if isinstance(indices, Tensor) else np.asarray(indices)
    if flat.dtype.kind not in "iu":
        raise TypeError(f"expected 'indices' to be integer dtype, but got {flat.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    size = int(np.prod(shape))
    if np.any((flat < -size) | (flat >= size)):
        raise RuntimeError(f"unravel_index: index out of bounds for the shape {list(shape)}")
    coords = np.unravel_index(np.where(flat < 0, flat + size, flat).astype(np.int64), shape)
    return tuple(_make(np.asarray(c, dtype=np.int64)) for c in coords)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:  # noqa: A002
    """The length-``r`` combinations of a 1-D tensor's elements, one per row, in
    ``itertools`` order (gradients flow back through the indexing)."""
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    pick = (itertools.combinations_with_replacement if with_replacement
            else itertools.combinations)
    rows = list(pick(range(input.shape[0]), r))
    if r == 0 or not rows:
        return creation.empty(0, dtype=input.dtype) if r == 0 else creation.empty(
            0, r, dtype=input.dtype)
    return input[_make(np.asarray(rows, dtype=np.int64))]


def cholesky_inverse(input: Tensor, upper: bool = False) -> Tensor:  # noqa: A002
    """The inverse of A from its Cholesky factor: (L L^T)^-1, or (U^T U)^-1 if ``upper``."""
    from gradcheck.ref import linalg

    factor = input.transpose(-2, -1) if upper else input
    return linalg.inv(factor @ factor.transpose(-2, -1))


FUNCTIONS = {"select_scatter": select_scatter, "slice_scatter": slice_scatter,
             "diagonal_scatter": diagonal_scatter, "expand_copy": expand_copy,
             "as_strided": as_strided, "index_put": index_put, "argwhere": argwhere,
             "unravel_index": unravel_index, "combinations": combinations,
             "cholesky_inverse": cholesky_inverse}
METHODS = ("select_scatter", "slice_scatter", "diagonal_scatter", "argwhere",
           "cholesky_inverse")


def attach() -> None:
    for name in METHODS:
        setattr(Tensor, name, FUNCTIONS[name])
