"""The long-tail functions the API census asked for, one row each, against torch in float64:
values and, where the function is differentiable, the gradient of every floating input.

A row is ``(name, fn(lib, *tensors), input makers)``; each input maker turns a numpy
generator into an array. The same arrays go to both libraries.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest

import gradcheck.ref as ref


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def normal(*shape):
    return lambda rng: rng.normal(size=shape)


def positive(*shape):
    return lambda rng: rng.uniform(0.5, 2.0, size=shape)


def unit(*shape):
    return lambda rng: rng.uniform(-0.9, 0.9, size=shape)


def ints(high, *shape):
    return lambda rng: rng.integers(0, high, size=shape)


def spd(n):
    def make(rng):
        a = rng.normal(size=(n, n))
        return a @ a.T + n * np.eye(n)

    return make


def distinct(*shape):
    """Values far apart, so sorting-based selections are not near ties."""
    def make(rng):
        return rng.permutation(int(np.prod(shape))).reshape(shape) * 0.37 + rng.normal(
            size=shape) * 0.01

    return make


@dataclass
class Row:
    name: str
    fn: Callable
    inputs: list
    grad: bool = True
    kwargs: dict = field(default_factory=dict)


ROWS = [
    Row("atan2", lambda m, a, b: m.atan2(a, b), [normal(3, 4), normal(3, 4)]),
    Row("erfinv", lambda m, a: m.erfinv(a), [unit(5)]),
    Row("fmin", lambda m, a, b: m.fmin(a, b), [normal(4), normal(4)]),
    Row("fmax", lambda m, a, b: m.fmax(a, b), [normal(4), normal(4)]),
    Row("logaddexp", lambda m, a, b: m.logaddexp(a * 30, b), [normal(5), normal(5)]),
    Row("frac", lambda m, a: m.frac(a * 3), [normal(6)]),
    Row("log10", lambda m, a: m.log10(a), [positive(4)]),
    Row("logit", lambda m, a: m.logit(a, eps=1e-3), [lambda r: r.uniform(0.01, 0.99, 5)]),
    Row("nan_to_num", lambda m, a: m.nan_to_num(a / (a > 0)), [normal(6)], grad=False),
    Row("float_power", lambda m, a: m.float_power(a, 3), [normal(4)]),
    Row("clamp_min", lambda m, a: a.clamp_min(0.1), [normal(5)]),
    Row("trace", lambda m, a: m.trace(a), [normal(3, 3)]),
    Row("inverse", lambda m, a: m.inverse(a), [spd(3)]),
    Row("det", lambda m, a: m.linalg.det(a), [normal(2, 3, 3)]),
    Row("slogdet", lambda m, a: m.linalg.slogdet(a)[1], [normal(3, 3)]),
    Row("logdet", lambda m, a: m.logdet(a), [spd(3)]),
    Row("solve", lambda m, a, b: m.linalg.solve(a, b), [spd(3), normal(3, 2)]),
    Row("solve_vector", lambda m, a, b: m.linalg.solve(a, b), [spd(3), normal(3)]),
    Row("solve_triangular", lambda m, a, b: m.linalg.solve_triangular(a, b, upper=False),
        [spd(3), normal(3, 2)]),
    Row("cholesky", lambda m, a: m.linalg.cholesky(a), [spd(4)]),
    Row("svdvals", lambda m, a: m.linalg.svdvals(a), [normal(4, 3)]),
    Row("eigvalsh", lambda m, a: m.linalg.eigvalsh(a), [spd(3)]),
    Row("vector_norm", lambda m, a: m.linalg.vector_norm(a, 3, dim=1), [normal(3, 4)]),
    Row("matrix_norm_fro", lambda m, a: m.linalg.matrix_norm(a), [normal(2, 3, 4)]),
    Row("matrix_norm_nuc", lambda m, a: m.linalg.matrix_norm(a, "nuc"), [normal(3, 4)]),
    Row("linalg_norm", lambda m, a: m.linalg.norm(a), [normal(3, 4)]),
    Row("cross", lambda m, a, b: m.linalg.cross(a, b), [normal(2, 3), normal(2, 3)]),
    Row("matrix_power", lambda m, a: m.linalg.matrix_power(a, 3), [normal(3, 3)]),
    Row("mv", lambda m, a, b: m.mv(a, b), [normal(3, 4), normal(4)]),
    Row("addmm", lambda m, a, b, c: m.addmm(a, b, c, beta=0.5, alpha=2.0),
        [normal(2, 4), normal(2, 3), normal(3, 4)]),
    Row("baddbmm", lambda m, a, b, c: m.baddbmm(a, b, c, alpha=0.5),
        [normal(2, 2, 4), normal(2, 2, 3), normal(2, 3, 4)]),
    Row("tensordot", lambda m, a, b: m.tensordot(a, b, dims=([1, 2], [0, 1])),
        [normal(2, 3, 4), normal(3, 4, 5)]),
    Row("inner", lambda m, a, b: m.inner(a, b), [normal(2, 3), normal(4, 3)]),
    Row("kron", lambda m, a, b: m.kron(a, b), [normal(2, 3), normal(3, 2)]),
    Row("median", lambda m, a: m.median(a), [distinct(7)]),
    Row("median_dim", lambda m, a: m.median(a, 1).values, [distinct(3, 5)]),
    Row("kthvalue", lambda m, a: m.kthvalue(a, 2, 0).values, [distinct(4, 3)]),
    Row("quantile", lambda m, a: m.quantile(a, m.tensor([0.0, 0.3, 0.75, 1.0],
                                                         dtype=m.float64), dim=1, keepdim=True),
        [distinct(3, 6)]),
    Row("nanquantile", lambda m, a: m.nanquantile(a, 0.4), [distinct(7)]),
    Row("unique", lambda m, a: m.unique(a, return_inverse=True, return_counts=True),
        [ints(4, 9)], grad=False),
    Row("unique_consecutive", lambda m, a: m.unique_consecutive(a, return_counts=True),
        [ints(3, 9)], grad=False),
    Row("bincount", lambda m, a, w: m.bincount(a, w, minlength=6), [ints(5, 8), normal(8)],
        grad=False),
    Row("histc", lambda m, a: m.histc(a, bins=5, min=-1, max=1), [normal(20)], grad=False),
    Row("bucketize", lambda m, a: m.bucketize(a, m.tensor([-1.0, 0.0, 1.0]), right=True),
        [normal(7)], grad=False),
    Row("searchsorted", lambda m, s, v: m.searchsorted(s.sort(-1).values, v),
        [normal(2, 5), normal(2, 3)], grad=False),
    Row("count_nonzero", lambda m, a: m.count_nonzero(a, dim=0), [ints(2, 4, 3)], grad=False),
    Row("nansum", lambda m, a: m.nansum(a / (a > -0.5)), [normal(6)], grad=False),
    Row("diff", lambda m, a, b: m.diff(a, n=2, dim=1, prepend=b), [normal(2, 5), normal(2, 1)]),
    Row("cov", lambda m, a: m.cov(a), [normal(3, 6)]),
    Row("corrcoef", lambda m, a: m.corrcoef(a), [normal(3, 6)]),
    Row("isin", lambda m, a, b: m.isin(a, b), [ints(6, 8), ints(6, 3)], grad=False),
    Row("tile", lambda m, a: m.tile(a, (2, 1, 2)), [normal(2, 3)]),
    Row("rot90", lambda m, a: m.rot90(a, 3, (0, 2)), [normal(2, 3, 4)]),
    Row("diag_embed", lambda m, a: m.diag_embed(a, offset=1), [normal(2, 3)]),
    Row("vstack", lambda m, a, b: m.vstack([a, b]), [normal(3), normal(2, 3)]),
    Row("hstack", lambda m, a, b: m.hstack([a, b]), [normal(2, 3), normal(2, 1)]),
    Row("tensor_split", lambda m, a: m.cat(m.tensor_split(a, 3, 1)[::-1], 1), [normal(2, 7)]),
    Row("take", lambda m, a, i: m.take(a, i), [normal(3, 4), ints(12, 2, 3)]),
    Row("take_along_dim", lambda m, a, i: m.take_along_dim(a, i, 1),
        [normal(3, 4), ints(4, 3, 2)]),
    Row("masked_scatter", lambda m, a, s: a.masked_scatter(a > 0, s), [normal(3, 4),
                                                                          normal(12)]),
    Row("cdist", lambda m, a, b: m.cdist(a, b), [normal(2, 3, 4), normal(2, 5, 4)]),
    Row("cdist_p1", lambda m, a, b: m.cdist(a, b, p=1.5), [normal(3, 4), normal(5, 4)]),
    Row("pdist", lambda m, a: m.pdist(a), [normal(4, 3)]),
    Row("cosine_similarity", lambda m, a, b: m.nn.functional.cosine_similarity(a, b),
        [normal(3, 4), normal(3, 4)]),
    Row("pairwise_distance", lambda m, a, b: m.nn.functional.pairwise_distance(a, b),
        [normal(3, 4), normal(3, 4)]),
    Row("lgamma", lambda m, a: m.lgamma(a), [positive(5)]),
    Row("digamma", lambda m, a: m.digamma(a), [positive(5)]),
    Row("grid_sample", lambda m, a, g: m.nn.functional.grid_sample(a, g, align_corners=False),
        [normal(2, 3, 4, 5), lambda r: r.uniform(-1.1, 1.1, (2, 3, 2, 2))]),
    Row("affine_grid", lambda m, t: m.nn.functional.affine_grid(t, [2, 1, 3, 4],
                                                                align_corners=True),
        [normal(2, 2, 3)]),
    Row("instance_norm", lambda m, a: m.nn.functional.instance_norm(a), [normal(2, 3, 5)]),
    Row("local_response_norm", lambda m, a: m.nn.functional.local_response_norm(a, 3),
        [normal(2, 5, 4)]),
    Row("glu", lambda m, a: m.nn.functional.glu(a, 1), [normal(2, 4, 3)]),
    Row("bilinear", lambda m, a, b, w: m.nn.functional.bilinear(a, b, w),
        [normal(3, 2), normal(3, 4), normal(5, 2, 4)]),
    Row("embedding_bag", lambda m, i, w: m.nn.functional.embedding_bag(
        i, w, m.tensor([0, 2, 2]), mode="sum"), [ints(6, 5), normal(6, 3)]),
    Row("rms_norm", lambda m, a, w: m.nn.functional.rms_norm(a, [4], w, eps=1e-6),
        [normal(3, 4), normal(4)]),
    Row("adaptive_max_pool3d", lambda m, a: m.nn.functional.adaptive_max_pool3d(a, (2, 3, 2)),
        [distinct(1, 2, 5, 6, 4)]),
    Row("adaptive_avg_pool3d", lambda m, a: m.nn.functional.adaptive_avg_pool3d(a, (2, 3, 3)),
        [normal(1, 2, 5, 6, 4)]),
    Row("margin_ranking", lambda m, a, b: m.nn.functional.margin_ranking_loss(
        a, b, m.tensor([1.0, -1.0, 1.0]), margin=0.2), [normal(3), normal(3)]),
    Row("triplet_margin", lambda m, a, b, c: m.nn.functional.triplet_margin_loss(
        a, b, c, swap=True), [normal(4, 3), normal(4, 3), normal(4, 3)]),
    Row("cosine_embedding", lambda m, a, b: m.nn.functional.cosine_embedding_loss(
        a, b, m.tensor([1.0, -1.0, 1.0]), margin=0.1), [normal(3, 4), normal(3, 4)]),
    Row("hinge_embedding", lambda m, a: m.nn.functional.hinge_embedding_loss(
        a, m.tensor([1.0, -1.0, -1.0, 1.0])), [normal(4)]),
    Row("soft_margin", lambda m, a: m.nn.functional.soft_margin_loss(
        a, m.tensor([1.0, -1.0, 1.0])), [normal(3)]),
    Row("multilabel_soft_margin", lambda m, a, t: m.nn.functional.multilabel_soft_margin_loss(
        a, t), [normal(3, 4), ints(2, 3, 4)]),
    Row("multi_margin", lambda m, a, t: m.nn.functional.multi_margin_loss(a, t, p=2),
        [normal(3, 4), ints(4, 3)]),
    Row("poisson_nll", lambda m, a, t: m.nn.functional.poisson_nll_loss(a, t, full=True),
        [normal(5), positive(5)]),
    Row("gaussian_nll", lambda m, a, t, v: m.nn.functional.gaussian_nll_loss(a, t, v),
        [normal(5), normal(5), positive(5)]),
]


def _tensor(lib, array):
    if array.dtype.kind in "iu":
        return lib.tensor(array.astype(np.int64))
    return lib.tensor(array, dtype=lib.float64, requires_grad=True)


def _flat(value):
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flat(v)]
    return [value]


def _run(lib, row, arrays):
    tensors = [_tensor(lib, a) for a in arrays]
    outputs = _flat(row.fn(lib, *tensors))
    grads = []
    if row.grad:
        total = sum((o * lib.tensor(np.cos(np.arange(o.numel())).reshape(tuple(o.shape)))).sum()
                    for o in outputs if o.is_floating_point())
        total.backward()
        grads = [t.grad for t in tensors if t.is_floating_point()]
    return ([np.asarray(o.detach().numpy()) for o in outputs],
            [None if g is None else g.numpy() for g in grads])


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
@pytest.mark.parametrize("seed", [0, 1])
def test_long_tail_function_matches_torch(row, seed, torch):
    rng = np.random.default_rng(seed)
    arrays = [make(rng) for make in row.inputs]
    (ours, our_grads), (theirs, their_grads) = _run(ref, row, arrays), _run(torch, row, arrays)
    assert len(ours) == len(theirs)
    for mine, expected in zip(ours, theirs):
        assert mine.shape == expected.shape, f"{row.name}: shape {mine.shape} != {expected.shape}"
        np.testing.assert_allclose(mine, expected, rtol=1e-9, atol=1e-10, err_msg=row.name)
    for i, (mine, expected) in enumerate(zip(our_grads, their_grads)):
        if expected is None:
            assert mine is None or not np.any(mine), f"{row.name}: torch has no grad {i}"
            continue
        assert mine is not None, f"{row.name}: no gradient for input {i}"
        np.testing.assert_allclose(mine, expected, rtol=1e-8, atol=1e-10,
                                   err_msg=f"{row.name}: gradient {i}")


@pytest.mark.parametrize("call", [
    lambda m: m.linalg.inv(m.ones(2, 3)),
    lambda m: m.linalg.cholesky(-m.eye(2, dtype=m.float64)),
    lambda m: m.bincount(m.tensor([-1, 2])),
    lambda m: m.kthvalue(m.ones(3), 4),
    lambda m: m.quantile(m.ones(3), 1.5),
    lambda m: m.take(m.ones(2, 2), m.tensor([4])),
    lambda m: m.nn.functional.glu(m.ones(3)),
    lambda m: m.cdist(m.ones(2, 3), m.ones(2, 4)),
])
def test_long_tail_errors_have_torchs_type_and_message(call, torch):
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(Exception) as ours:
        call(ref)
    # torch's LinAlgError is torch._C._LinAlgError: compare the class names
    assert type(ours.value).__name__.lstrip("_") == type(theirs.value).__name__.lstrip("_")
    assert isinstance(ours.value, type(theirs.value).__mro__[1])


def test_factorisations_refuse_to_fake_a_gradient():
    a = ref.eye(3, dtype=ref.float64, requires_grad=True)
    with pytest.raises(NotImplementedError, match="differentiating torch.linalg.svd"):
        ref.linalg.svd(a)
    u, s, vh = ref.linalg.svd(a.detach())
    np.testing.assert_allclose((u * s) @ vh, np.eye(3), atol=1e-12)


@pytest.mark.parametrize("method", ["values", "indices", "coalesce"])
def test_dense_tensors_answer_sparse_queries_as_torch_does(method, torch):
    with pytest.raises(RuntimeError) as theirs:
        getattr(torch.ones(2), method)()
    with pytest.raises(RuntimeError, match=str(theirs.value)):
        getattr(ref.ones(2), method)()


def test_storage_and_legacy_api_match_torch(torch):
    for lib in (torch, ref):
        x = lib.arange(6.0)
        assert (x[2:].storage_offset(), x.storage().size(), x.nbytes, x.itemsize) == (2, 6, 24,
                                                                                        4)
        assert x.new(2, 3).shape == (2, 3) and x.new([1, 2]).dtype == lib.float32
        assert x.name is None and not x.is_pinned() and x.real.equal(x)
        y = lib.zeros(2, 3)
        y.resize_(3, 2)
        assert tuple(y.shape) == (3, 2)
        assert lib.ByteTensor(lib.ByteStorage.from_buffer(b"ab")).tolist() == [97, 98]
    strided = ref.arange(12.0).reshape(3, 4).as_strided((2, 2), (1, 4), 1)
    expected = torch.arange(12.0).reshape(3, 4).as_strided((2, 2), (1, 4), 1)
    assert strided.tolist() == expected.tolist()


def test_torch_checkpoints_load_on_the_engine(torch, tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    path = tmp_path / "model.pt"
    torch.save({"state": model.state_dict(), "step": 7, "t": torch.arange(6.0).reshape(2, 3).t()},
               path)
    loaded = ref.load(path)
    ours = ref.nn.Sequential(ref.nn.Linear(3, 2), ref.nn.BatchNorm1d(2))
    result = ours.load_state_dict(loaded["state"])
    assert not result.missing_keys and not result.unexpected_keys and loaded["step"] == 7
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(ours.state_dict()[name].numpy(), value.numpy())
    assert loaded["t"].tolist() == torch.arange(6.0).reshape(2, 3).t().tolist()
