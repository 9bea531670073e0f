"""Ops that write along one dim at a list of positions: ``index_fill``, ``index_add``,
``index_copy``. Each is composed from differentiable ops (a mask and ``where``, or
``index_put``), so its gradients come from those rows of the table.

>>> import gradcheck.ref as torch
>>> torch.zeros(2, 3).index_fill(1, torch.tensor([0, 2]), 1.0)
tensor([[1., 0., 1.],
        [1., 0., 1.]])
>>> torch.zeros(3).index_add(0, torch.tensor([0, 0]), torch.tensor([1.0, 2.0]), alpha=2)
tensor([6., 0., 0.])
"""
from __future__ import annotations

import numpy as np

from gradcheck.ref import ops, shapes
from gradcheck.ref.inplace import inplace
from gradcheck.ref.tensors import Tensor, _dim, _make


def _positions(name: str, input: Tensor, dim: int, index: Tensor) -> tuple[int, np.ndarray]:
    """``dim`` normalised and ``index`` as a checked flat int64 array, with torch's errors:
    index_fill wraps negative positions, index_add and index_copy refuse them."""
    d = _dim(dim, input._data.ndim)
    if index._data.dtype != np.int64:
        raise IndexError(f"{name}(): Expected dtype int64 for index.")
    if index._data.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    positions = np.asarray(index._data).reshape(-1)
    size = input._data.shape[d] if input._data.ndim else 1
    low = -size if name == "index_fill_" else 0
    bad = (positions >= size) | (positions < low)
    if bad.any():
        if name == "index_add_":
            raise IndexError("index out of range in self")
        prefix = "index_copy_(): " if name == "index_copy_" else ""
        raise IndexError(f"{prefix}index {int(positions[bad][0])} is out of bounds for dimension "
                         f"{d} with size {size}")
    return d, positions % max(size, 1)


def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """A copy of ``input`` with ``value`` at ``index`` along ``dim``; a 0-d tensor value
    receives the sum of the gradient at the filled places, as in torch."""
    d, positions = _positions("index_fill_", input, dim, index)
    mask = np.zeros(input._data.shape[d] if input._data.ndim else 1, dtype=bool)
    mask[positions] = True
    shape = [1] * input._data.ndim
    if shape:
        shape[d] = mask.size
    mask_t = _make(mask.reshape(shape))
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value._data.ndim} dimension(s).")
        return ops.where(mask_t, value.to(input.dtype), input)
    return ops.masked_fill(input, mask_t, value)


def _check_source(name: str, input: Tensor, d: int, positions: np.ndarray, source: Tensor):
    expected = source._data.shape[d] if source._data.ndim else 1
    if positions.size != expected:
        raise RuntimeError(f"{name}(): Number of indices ({positions.size}) should be equal to "
                           f"source.size(dim): ({expected}), for dim: {d}")


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """``input`` plus ``alpha * source`` added at ``index`` along ``dim`` (repeats add up)."""
    d, positions = _positions("index_add_", input, dim, index)
    _check_source("index_add_", input, d, positions, source)
    where = (slice(None),) * d + (positions,)
    if alpha != 1:
        source = ops.mul(source, alpha)
    # the backward of indexing is exactly a scatter that accumulates repeated positions
    added = shapes.index_backward(source.to(input.dtype), input._data.shape, where)
    return ops.add(input, added)


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with ``source``'s slices written at ``index`` along ``dim``."""
    d, positions = _positions("index_copy_", input, dim, index)
    _check_source("index_copy_", input, d, positions, source)
    return shapes.index_put(input, (slice(None),) * d + (_make(positions),), source)


def index_fill_(self: Tensor, dim: int, index: Tensor, value) -> Tensor:
    return inplace(self, index_fill, dim, index, value)


def index_add_(self: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    return inplace(self, index_add, dim, index, source, alpha=alpha)


def index_copy_(self: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    return inplace(self, index_copy, dim, index, source)
