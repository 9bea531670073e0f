"""Sparse COO tensors: ``sparse_coo_tensor``, ``Tensor.to_sparse``, the legacy
``torch.sparse.FloatTensor(indices, values, size)``, and ``torch.sparse.mm``/``spmm``,
``sum``, ``softmax``.

A ``SparseTensor`` keeps torch's COO data (``_indices()``, ``_values()``, duplicates until
``coalesce()``) and also its dense value, which is what the engine computes with: a product
``sparse.mm(S, D)`` is the matmul of that dense value, so the gradient reaches ``D`` and the
values of ``S``. A sparse leaf made with ``requires_grad=True`` gets its gradient only at its
stored indices, as torch's sparse gradients are. Known limit: any other operation on a
sparse tensor (``S * 2``, ``S + S``) gives the right values as a dense tensor, where torch
would keep the sparse layout.

>>> import gradcheck.ref as torch
>>> s = torch.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3))
>>> torch.sparse.mm(s, torch.ones(3, 1)).flatten()
tensor([3., 9.])
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from gradcheck.ref import creation
from gradcheck.ref import dtypes as dt
from gradcheck.ref.tensors import Tensor, _make


class SparseTensor(Tensor):
    """A COO tensor: integer ``indices`` (sparse_dim x nnz) and ``values`` (nnz x dense
    dims), carried with its dense value."""

    __slots__ = ()
    is_sparse = property(lambda self: True)
    layout = property(lambda self: "sparse_coo")

    def _indices(self) -> Tensor:
        return self.__dict__["_sparse_indices"]

    def _values(self) -> Tensor:
        return self.__dict__["_sparse_values"]

    def is_coalesced(self) -> bool:
        return self.__dict__["_sparse_coalesced"]

    def _need_coalesced(self, what: str) -> None:
        if not self.is_coalesced():
            raise RuntimeError(f"Cannot get {what} on an uncoalesced tensor, please call "
                               ".coalesce() first")

    def indices(self) -> Tensor:
        self._need_coalesced("indices")
        return self._indices()

    def values(self) -> Tensor:
        self._need_coalesced("values")
        return self._values()

    def _nnz(self) -> int:
        return int(self._indices().shape[1])

    def sparse_dim(self) -> int:
        return int(self._indices().shape[0])

    def dense_dim(self) -> int:
        return self._values().dim() - 1

    def coalesce(self) -> SparseTensor:
        """Indices sorted and unique, the values at repeated indices summed."""
        if self.is_coalesced():
            return self
        index = self._indices()._data
        keys = np.ravel_multi_index(tuple(index), tuple(self.shape[:self.sparse_dim()])) \
            if index.size else np.zeros(0, dtype=np.int64)
        unique, slot = np.unique(keys, return_inverse=True)
        values = self._values()
        summed = creation.zeros((len(unique),) + tuple(values.shape[1:]), dtype=values.dtype)
        summed = summed.index_add(0, _make(slot.astype(np.int64)), values)
        coords = np.stack(np.unravel_index(unique, tuple(self.shape[:self.sparse_dim()]))) \
            if len(unique) else np.zeros((self.sparse_dim(), 0), dtype=np.int64)
        return _sparse(coords.astype(np.int64), summed, tuple(self.shape), coalesced=True)

    def to_dense(self, dtype: Any = None, *, masked_grad: bool = True) -> Tensor:
        dense = self.view_as(self)  # a plain tensor on the same graph
        return dense if dtype is None else dense.to(dtype)

    def to_sparse(self, *args: Any, **kwargs: Any) -> SparseTensor:
        return self

    def __repr__(self) -> str:
        def indented(prefix: str, tensor: Tensor) -> str:
            return prefix + repr(tensor.detach()).replace("\n", "\n" + " " * len(prefix))

        return (indented("tensor(indices=", self._indices()) + ",\n"
                + indented("       values=", self._values().detach()) + ",\n"
                + f"       size={tuple(self.shape)}, nnz={self._nnz()}, "
                  "layout=torch.sparse_coo)")


def _sparse(indices: np.ndarray, values: Tensor, size: tuple, coalesced: bool,
            leaf: bool = False) -> SparseTensor:
    """Build the dense value from indices and values (differentiable in the values, or a
    leaf whose gradient is kept to the stored indices)."""
    dense = creation.zeros(size, dtype=values.dtype)
    where = tuple(_make(row) for row in indices)
    if leaf:
        dense = dense.index_put(where, values.detach(), accumulate=True).detach()
        mask = np.zeros(size, dtype=bool)
        mask[tuple(indices)] = True
        dense.requires_grad_(True)
        dense.register_hook(lambda grad: grad * _make(mask.astype(grad._data.dtype)))
    else:
        dense = dense.index_put(where, values, accumulate=True)
    dense.__class__ = SparseTensor
    dense.__dict__.update(_sparse_indices=_make(indices), _sparse_values=values,
                          _sparse_coalesced=coalesced)
    return dense


def sparse_coo_tensor(indices: Any, values: Any, size: Any = None, *, dtype: Any = None,
                      device: Any = None, pin_memory: bool = False,
                      requires_grad: bool = False, check_invariants: bool | None = None,
                      is_coalesced: bool | None = None) -> SparseTensor:
    """A sparse COO tensor with ``values`` at the columns of ``indices``; ``size`` defaults
    to one past the largest index in each sparse dim."""
    index = np.asarray(indices._data if isinstance(indices, Tensor) else indices,
                       dtype=np.int64)
    if index.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(index.shape)}")
    values = values if isinstance(values, Tensor) else creation.tensor(values, dtype=dtype)
    if dtype is not None:
        values = values.to(dtype)
    if size is None:
        size = tuple(int(m) + 1 for m in index.max(axis=1)) if index.size else (0,) * len(index)
        size = size + tuple(values.shape[1:])
    size = tuple(int(n) for n in size)
    for d, row in enumerate(index):
        if row.size and row.max() >= size[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                               f"{size[d]} but found index {int(row.max())}")
    return _sparse(index, values, size, coalesced=bool(is_coalesced), leaf=requires_grad)


def to_sparse(self: Tensor, sparse_dim: int | None = None, *, layout: Any = None,
              blocksize: Any = None, dense_dim: Any = None) -> SparseTensor:
    """The COO form of a dense tensor: its non-zero entries, coalesced."""
    if layout not in (None, "sparse_coo"):
        raise NotImplementedError(f"Tensor.to_sparse(layout={layout}) is not available in "
                                  "gradcheck.ref: only the COO layout is")
    sparse_dim = self.dim() if sparse_dim is None else sparse_dim
    head = np.any(self._data.reshape(self.shape[:sparse_dim] + (-1,)) != 0, axis=-1)
    coords = np.stack(np.nonzero(head)).astype(np.int64) if head.size else np.zeros(
        (sparse_dim, 0), dtype=np.int64)
    values = self[tuple(_make(row) for row in coords)]
    return _sparse(coords, values, tuple(self.shape), coalesced=True)


def mm(sparse: Tensor, dense: Tensor, reduce: str = "sum") -> Tensor:
    """``sparse @ dense`` as a dense tensor (``reduce="sum"``, torch's default)."""
    if reduce != "sum":
        raise NotImplementedError(f"torch.sparse.mm(reduce={reduce!r}) is not available in "
                                  "gradcheck.ref: only the sum reduction is")
    return sparse.to_dense() @ dense


def sum(input: Tensor, dim: Any = None, dtype: Any = None) -> Tensor:  # noqa: A001, A002
    """The sum of the stored values (a dense scalar), or over ``dim``: sparse while sparse
    dims remain."""
    dense = input.to_dense() if dtype is None else input.to_dense().to(dtype)
    if dim is None:
        return dense.sum()
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    reduced = dense.sum(dim=dims)
    kept_sparse = input.sparse_dim() - len([d for d in dims if d % input.dim()
                                            < input.sparse_dim()])
    return to_sparse(reduced, kept_sparse) if kept_sparse else reduced


def softmax(input: SparseTensor, dim: int, dtype: Any = None) -> SparseTensor:
    """Softmax over the stored entries along ``dim``; unstored entries count as -inf and stay
    unstored."""
    from gradcheck.ref import ops

    coalesced = input.coalesce()
    index = coalesced._indices()._data
    mask = np.zeros(tuple(input.shape), dtype=bool)
    mask[tuple(index)] = True
    dense = coalesced.to_dense() if dtype is None else coalesced.to_dense().to(dtype)
    shifted = ops.where(_make(mask), dense, _make(np.array(-np.inf, dtype=dense._data.dtype)))
    probabilities = ops.softmax(shifted, dim)
    values = probabilities[tuple(_make(row) for row in index)]
    return _sparse(index, values, tuple(input.shape), coalesced=True)


def _legacy(name: str, dtype: Any) -> Any:
    """``torch.sparse.FloatTensor(indices, values, size)`` (the values keep their dtype, as
    in torch) or ``torch.sparse.FloatTensor(*size)``, an empty tensor of the legacy dtype."""

    def construct(*args: Any, **kwargs: Any) -> SparseTensor:
        if all(isinstance(a, int) for a in args):
            warnings.warn("torch.sparse.SparseTensor(shape, *, device=) is deprecated.  Please "
                          "use torch.sparse_coo_tensor(shape, dtype=, device=).", UserWarning,
                          stacklevel=2)
            return sparse_coo_tensor(np.zeros((len(args), 0), dtype=np.int64),
                                     creation.zeros(0, dtype=dtype), args)
        warnings.warn("torch.sparse.SparseTensor(indices, values, shape, *, device=) is "
                      "deprecated.  Please use torch.sparse_coo_tensor(indices, values, shape, "
                      "dtype=, device=).", UserWarning, stacklevel=2)
        indices, values, *size = args
        values = values if isinstance(values, Tensor) else creation.tensor(values, dtype=dtype)
        return sparse_coo_tensor(indices, values, size[0] if size else None)

    construct.__name__ = name
    return construct


FloatTensor = _legacy("FloatTensor", dt.float32)
DoubleTensor = _legacy("DoubleTensor", dt.float64)
LongTensor = _legacy("LongTensor", dt.int64)
IntTensor = _legacy("IntTensor", dt.int32)


def attach() -> None:
    """``Tensor.to_sparse`` for dense tensors; ``_nnz`` only on sparse ones."""
    from gradcheck.ref.tensor_extras import _dense_only

    Tensor.to_sparse = to_sparse
    Tensor._nnz = _dense_only("_nnz")
