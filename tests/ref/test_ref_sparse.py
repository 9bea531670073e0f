"""Sparse COO tensors against torch: layout answers, coalescing, products and their
gradients (to the dense operand, to the values, to a sparse leaf at its stored indices)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradcheck.ref as ref

INDICES = [[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]]
VALUES = np.array([3.0, 4.0, 5.0, 1.0, -2.0])
DENSE = np.arange(12.0).reshape(3, 4) / 7 - 0.5
WEIGHTS = np.cos(np.arange(12.0)).reshape(3, 4)


def _dense(t):
    return (t.to_dense() if t.is_sparse else t).detach().numpy()


def _products(lib):
    values = lib.tensor(VALUES, requires_grad=True)
    dense = lib.tensor(DENSE, requires_grad=True)
    matrix = lib.sparse_coo_tensor(INDICES, values, (3, 3))
    out = lib.sparse.mm(matrix, dense) + lib.spmm(matrix.coalesce(), dense) * 2
    (out * lib.tensor(WEIGHTS)).sum().backward()
    return [out.detach().numpy(), values.grad.numpy(), dense.grad.numpy()]


def _sparse_leaf(lib):
    matrix = lib.sparse_coo_tensor(INDICES, VALUES, (3, 3), requires_grad=True)
    dense = lib.tensor(DENSE)
    (lib.sparse.mm(matrix, dense) * lib.tensor(WEIGHTS)).sum().backward()
    return [_dense(matrix.grad), matrix.is_leaf]


def _reductions(lib):
    values = lib.tensor(VALUES, requires_grad=True)
    matrix = lib.sparse_coo_tensor(INDICES, values, (3, 3)).coalesce()
    total = lib.sparse.sum(matrix)
    rows = lib.sparse.sum(matrix, dim=1)
    soft = lib.sparse.softmax(matrix, 1)
    loss = total * 0.5 + (_as_dense(rows) * lib.tensor([1.0, -2.0, 3.0])).sum() + (
        _as_dense(soft) * lib.tensor(WEIGHTS[:, :3])).sum()
    loss.backward()
    return [total.item(), _dense(rows), rows.is_sparse, _dense(soft), soft.is_sparse,
            values.grad.numpy()]


def _as_dense(t):
    return t.to_dense() if t.is_sparse else t


def _from_dense(lib):
    dense = lib.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]], requires_grad=True)
    sparse = dense.to_sparse()
    (sparse.to_dense() * lib.tensor(WEIGHTS[:2, :3])).sum().backward()
    return [sparse._indices().numpy(), sparse._values().detach().numpy(), sparse._nnz(),
            sparse.is_coalesced(), dense.grad.numpy()]


@pytest.mark.parametrize("case", [_products, _sparse_leaf, _reductions, _from_dense],
                         ids=lambda f: f.__name__.strip("_"))
def test_sparse_matches_torch(real_torch, case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: invariant checks are off
        mine, theirs = case(ref), case(real_torch)
    for a, b in zip(mine, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_sparse_layout_answers_and_repr_match_torch(real_torch):
    found = []
    for lib in (ref, real_torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            legacy = lib.sparse.FloatTensor(lib.tensor(INDICES), lib.tensor(VALUES), (3, 3))
            empty = lib.sparse.FloatTensor(2, 3)
        matrix = lib.sparse_coo_tensor(INDICES, lib.tensor(VALUES, dtype=lib.float32))
        wide = lib.sparse_coo_tensor(INDICES, lib.ones(5, 2))
        coalesced = matrix.coalesce()
        found.append([repr(matrix), repr(coalesced), repr(wide), tuple(matrix.shape),
                      str(legacy.dtype), str(empty.dtype), empty._nnz(), tuple(empty.shape),
                      matrix.is_sparse, matrix.is_coalesced(),
                      coalesced.is_coalesced(), matrix._nnz(), coalesced._nnz(),
                      matrix.sparse_dim(), wide.dense_dim(), coalesced.indices().tolist(),
                      coalesced.values().tolist(), lib.zeros(2).is_sparse,
                      sum("is deprecated" in str(w.message) for w in caught)])
        with pytest.raises(RuntimeError, match="Cannot get indices on an uncoalesced tensor"):
            matrix.indices()
        # torch checks only when asked; the engine always does
        with pytest.raises(RuntimeError, match="for dim 0, size is 2 but found index 2"):
            lib.sparse_coo_tensor(INDICES, lib.tensor(VALUES), (2, 3), check_invariants=True)
    assert found[0] == found[1]
