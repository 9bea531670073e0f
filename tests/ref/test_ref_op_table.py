"""Every differentiable op, one row each, checked against torch and by central differences.

One parametrized property test runs over the table (the "uber" style): hypothesis draws
shapes that broadcast, values inside the op's domain and an upstream gradient; forward
values and gradients must agree with torch to 1e-10 relative in float64.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gradcheck.ref as ref

SIDE = 3
# Two property tests per op row: half the profile's budget each keeps the table fast.
HALF = max(10, settings.default.max_examples // 2)
# Rows with kinks discard draws that land on them (hypothesis likes 0.0): that is expected.
FILTERING = [HealthCheck.filter_too_much, HealthCheck.too_slow]


@dataclass
class Row:
    name: str
    fn: Callable  # fn(module, *tensors, **params): the same code runs on the engine and torch
    n: int = 1
    lo: float | tuple = -2.0
    hi: float | tuple = 2.0
    shapes: Callable | None = None  # () -> strategy of a list of n shapes
    params: Callable | None = None  # (shapes) -> strategy of keyword arguments
    smooth: Callable | None = None  # (*arrays, **params) -> True when away from kinks
    min_dims: int = 0
    ties_differ: bool = False  # torch's tie-breaking is unspecified: compare away from ties
    second: bool = True  # False: torch's own second derivative is nan where ours is 0
    extra: dict = field(default_factory=dict)
    second_atol: float = 1e-11  # rounding noise allowed in second derivatives


def _shapes(n, min_dims=0):
    if n == 1:
        return hnp.array_shapes(min_dims=min_dims, max_dims=3, min_side=1, max_side=SIDE).map(
            lambda s: [s])
    return hnp.mutually_broadcastable_shapes(
        num_shapes=n, min_dims=min_dims, max_dims=3, min_side=1, max_side=SIDE
    ).map(lambda r: list(r.input_shapes))


def _dim(shapes):
    nd = len(shapes[0])
    return st.integers(-nd, nd - 1)


def _dims_kw(shapes):
    nd = len(shapes[0])
    dims = st.one_of(st.none(), st.integers(-nd, nd - 1),
                     st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True)
                     .map(tuple)) if nd else st.none()
    return st.fixed_dictionaries({"dim": dims, "keepdim": st.booleans()})


def _dim_kw(shapes):
    return st.fixed_dictionaries({"dim": _dim(shapes)})


def _dim_keep_kw(shapes):
    return st.fixed_dictionaries({"dim": _dim(shapes), "keepdim": st.booleans()})


def _away(points, gap=1e-3):
    def check(*arrays, **_):
        return all(np.all(np.abs(a - p) > gap) for a in arrays for p in points)

    return check


def _apart(*arrays, **_):
    a, b = np.broadcast_arrays(*arrays)
    return bool(np.all(np.abs(a - b) > 1e-3))


def _distinct(x, **_):
    flat = np.sort(x.reshape(-1))
    return bool(np.all(np.diff(flat) > 1e-3))


def _matmul_shapes():
    dims = st.integers(1, SIDE)

    @st.composite
    def build(draw):
        m, k, n, b = draw(dims), draw(dims), draw(dims), draw(dims)
        return draw(st.sampled_from([
            [(k,), (k,)], [(k,), (k, n)], [(m, k), (k,)], [(m, k), (k, n)],
            [(b, m, k), (k, n)], [(m, k), (b, k, n)], [(b, 1, m, k), (b, k, n)], [(k,), (b, k, n)],
            [(b, m, k), (k,)],
        ]))

    return build()


def _linear(m):
    return m.nn.functional.linear if m.__name__ == "torch" else m.ops.linear


def _linear_shapes():
    dims = st.lists(st.integers(1, SIDE), min_size=0, max_size=2)
    return st.tuples(dims, st.integers(1, SIDE), st.integers(1, SIDE)).map(
        lambda d: [tuple(d[0]) + (d[1],), (d[2], d[1]), (d[2],)])


def _cat_shapes():
    @st.composite
    def build(draw):
        base = list(draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=SIDE)))
        dim = draw(st.integers(0, len(base) - 1))
        other = list(base)
        other[dim] = draw(st.integers(1, SIDE))
        return [tuple(base), tuple(other), dim]

    return build()


def _index_kw(shapes):
    shape = shapes[0]
    ints = hnp.arrays(np.int64, st.integers(1, 5), elements=st.integers(-shape[0], shape[0] - 1))
    mask = hnp.arrays(np.bool_, shape)
    basic = st.sampled_from([
        (slice(None, None, 2),), (Ellipsis, None), (0,), (slice(1, None), Ellipsis),
        (-1, Ellipsis, None),
    ])
    return st.fixed_dictionaries({"index": st.one_of(basic, ints, mask)})


def _index(m, x, index):
    if isinstance(index, np.ndarray):
        index = m.from_numpy(index)
    return x[index]


def _gather_kw(shapes):
    shape = shapes[0]

    @st.composite
    def build(draw):
        dim = draw(st.integers(0, len(shape) - 1))
        idx_shape = tuple(draw(st.integers(1, s)) if i != dim else draw(st.integers(1, 5))
                          for i, s in enumerate(shape))
        index = draw(hnp.arrays(np.int64, idx_shape, elements=st.integers(0, shape[dim] - 1)))
        return {"dim": dim, "index": index}

    return build()


def _reshape_kw(shapes):
    size = int(np.prod(shapes[0]))
    return st.sampled_from([{"shape": (size,)}, {"shape": (-1, 1)}, {"shape": (1, size, 1)}])


def _permute_kw(shapes):
    return st.permutations(range(len(shapes[0]))).map(lambda p: {"dims": tuple(p)})


def _expand_kw(shapes):
    shape = shapes[0]
    return st.integers(1, 3).map(
        lambda k: {"sizes": (2,) + tuple(k if s == 1 else s for s in shape)})


def _transpose_kw(shapes):
    return st.fixed_dictionaries({"dim0": _dim(shapes), "dim1": _dim(shapes)})


def _pos(lo=0.2, hi=3.0):
    return {"lo": lo, "hi": hi}


ROWS = [
    Row("add", lambda m, a, b: a + b, 2),
    Row("add_alpha", lambda m, a, b: m.add(a, b, alpha=-1.5), 2),
    Row("sub", lambda m, a, b: a - b, 2),
    Row("mul", lambda m, a, b: a * b, 2),
    Row("div", lambda m, a, b: a / b, 2, lo=(-2.0, 0.5), hi=(2.0, 3.0)),
    Row("pow", lambda m, a, b: a ** b, 2, lo=(0.5, -2.0), hi=(2.0, 2.0)),
    Row("maximum", lambda m, a, b: m.maximum(a, b), 2, smooth=_apart),
    Row("minimum", lambda m, a, b: m.minimum(a, b), 2, smooth=_apart),
    Row("where", lambda m, a, b: m.where(a > 0, a, b), 2, smooth=_away([0.0])),
    Row("radd_scalar", lambda m, a: 1.5 + a),
    Row("rsub_scalar", lambda m, a: 1.5 - a),
    Row("rmul_scalar", lambda m, a: 2.5 * a),
    Row("rdiv_scalar", lambda m, a: 2.5 / a, **_pos()),
    Row("pow_scalar", lambda m, a: a ** 3),
    Row("pow_frac", lambda m, a: a ** 0.5, **_pos()),
    Row("rpow_scalar", lambda m, a: 2.0 ** a),
    Row("neg", lambda m, a: -a),
    Row("exp", lambda m, a: m.exp(a)),
    Row("log", lambda m, a: m.log(a), **_pos()),
    Row("log1p", lambda m, a: m.log1p(a), lo=-0.5, hi=2.0),
    Row("expm1", lambda m, a: m.expm1(a)),
    Row("sqrt", lambda m, a: m.sqrt(a), **_pos()),
    Row("rsqrt", lambda m, a: m.rsqrt(a), **_pos()),
    Row("abs", lambda m, a: m.abs(a), smooth=_away([0.0])),
    Row("sin", lambda m, a: m.sin(a)),
    Row("cos", lambda m, a: m.cos(a)),
    Row("tan", lambda m, a: m.tan(a), lo=-1.2, hi=1.2),
    Row("tanh", lambda m, a: m.tanh(a)),
    Row("sigmoid", lambda m, a: m.sigmoid(a), lo=-8.0, hi=8.0),
    Row("relu", lambda m, a: m.relu(a), smooth=_away([0.0])),
    Row("reciprocal", lambda m, a: m.reciprocal(a), **_pos()),
    Row("square", lambda m, a: m.square(a)),
    Row("clamp", lambda m, a: m.clamp(a, -0.5, 0.7), smooth=_away([-0.5, 0.7])),
    Row("clamp_min", lambda m, a: a.clamp(min=0.1), smooth=_away([0.1])),
    Row("floor", lambda m, a: m.floor(a), smooth=_away([-2, -1, 0, 1, 2])),
    Row("sign", lambda m, a: m.sign(a), smooth=_away([0.0])),
    Row("softmax", lambda m, a, dim: m.softmax(a, dim), min_dims=1, params=_dim_kw),
    Row("log_softmax", lambda m, a, dim: m.log_softmax(a, dim), min_dims=1, params=_dim_kw),
    Row("logsumexp", lambda m, a, dim, keepdim: m.logsumexp(a, dim, keepdim), min_dims=1,
        params=_dim_keep_kw),
    Row("sum", lambda m, a, dim, keepdim: a.sum() if dim is None else a.sum(dim, keepdim),
        params=_dims_kw),
    Row("mean", lambda m, a, dim, keepdim: a.mean() if dim is None else a.mean(dim, keepdim),
        params=_dims_kw),
    Row("amax", lambda m, a, dim, keepdim: m.amax(a, () if dim is None else dim, keepdim),
        params=_dims_kw, smooth=_distinct),
    Row("amin", lambda m, a, dim, keepdim: m.amin(a, () if dim is None else dim, keepdim),
        params=_dims_kw, smooth=_distinct),
    Row("max_full", lambda m, a: a.max(), smooth=_distinct),
    Row("min_full", lambda m, a: a.min(), smooth=_distinct),
    Row("max_dim", lambda m, a, dim, keepdim: a.max(dim, keepdim).values, min_dims=1,
        params=_dim_keep_kw, smooth=_distinct),
    Row("min_dim", lambda m, a, dim, keepdim: m.min(a, dim, keepdim)[0], min_dims=1,
        params=_dim_keep_kw, smooth=_distinct),
    Row("var", lambda m, a, dim, keepdim: a.var(dim, keepdim=keepdim), min_dims=1,
        params=_dim_keep_kw, smooth=lambda a, dim, keepdim: a.shape[dim] > 1),
    Row("var_biased", lambda m, a: m.var(a, unbiased=False)),
    Row("std", lambda m, a, dim, keepdim: a.std(dim, keepdim=keepdim), min_dims=1,
        params=_dim_keep_kw, smooth=lambda a, dim, keepdim: a.shape[dim] > 1 and _distinct(a)),
    Row("norm", lambda m, a: a.norm(), smooth=_away([0.0])),
    Row("norm_dim", lambda m, a, dim, keepdim: m.norm(a, dim=dim, keepdim=keepdim), min_dims=1,
        params=_dim_keep_kw, smooth=_away([0.0])),
    # p=0 counts nonzeros, p=+-inf picks one |x| (torch's pick among ties is unspecified);
    # near 0, x / ||x|| cancels two huge terms, so both sides compare away from 0
    Row("normalize_p", lambda m, a, p: m.nn.functional.normalize(a, p=p, dim=-1), min_dims=1,
        params=lambda shapes: st.fixed_dictionaries({"p": st.sampled_from(
            [0, 1, -1, 3, 0.5, float("inf"), -float("inf")])}),
        smooth=lambda a, p: _away([0.0])(a) and _distinct(np.abs(a)), ties_differ=True),
    Row("matmul", lambda m, a, b: a @ b, 2, shapes=_matmul_shapes),
    Row("linear_layout", lambda m, a, b: a.t() @ b.t(), 2,
        shapes=lambda: st.tuples(*[st.integers(1, SIDE)] * 3).map(
            lambda d: [(d[1], d[0]), (d[2], d[1])])),
    Row("linear", lambda m, x, w, b: _linear(m)(x, w, b), 3, shapes=_linear_shapes),
    Row("linear_no_bias", lambda m, x, w: _linear(m)(x, w), 2,
        shapes=lambda: _linear_shapes().map(lambda s: s[:2])),
    Row("reshape", lambda m, a, shape: a.reshape(shape), params=_reshape_kw),
    Row("view", lambda m, a, shape: a.view(*shape), params=_reshape_kw),
    Row("flatten", lambda m, a: a.flatten()),
    Row("transpose", lambda m, a, dim0, dim1: a.transpose(dim0, dim1), min_dims=1,
        params=_transpose_kw),
    Row("permute", lambda m, a, dims: a.permute(*dims), min_dims=1, params=_permute_kw),
    Row("T", lambda m, a: a.T, min_dims=2, shapes=lambda: _shapes(1, 2).filter(
        lambda s: len(s[0]) == 2)),
    Row("mT", lambda m, a: a.mT, min_dims=2),
    Row("squeeze", lambda m, a: a.squeeze()),
    Row("unsqueeze", lambda m, a, dim: a.unsqueeze(dim), params=lambda s: st.fixed_dictionaries(
        {"dim": st.integers(-len(s[0]) - 1, len(s[0]))})),
    Row("expand", lambda m, a, sizes: a.expand(*sizes), params=_expand_kw),
    Row("repeat", lambda m, a: a.repeat(*([2] * a.dim() + [1]))),
    Row("index", lambda m, a, index: _index(m, a, index), min_dims=1, params=_index_kw),
    Row("cat", lambda m, a, b, dim: m.cat([a, b], dim), 2, shapes=_cat_shapes),
    Row("stack", lambda m, a, b, dim: m.stack([a, b], dim), 2,
        shapes=lambda: _shapes(1).map(lambda s: [s[0], s[0]]),
        params=lambda s: st.integers(-len(s[0]) - 1, len(s[0])).map(lambda d: {"dim": d})),
    Row("gather", lambda m, a, dim, index: a.gather(dim, m.from_numpy(index)), min_dims=1,
        params=_gather_kw),
    Row("masked_fill", lambda m, a: a.masked_fill(a > 0.5, 2.0), smooth=_away([0.5])),
    Row("split", lambda m, a: m.cat([p * (i + 1) for i, p in enumerate(a.split(1, -1))], -1),
        min_dims=1),
    Row("narrow", lambda m, a: a.narrow(0, 0, 1) * 3, min_dims=1),
    Row("clone", lambda m, a: a.clone()),
    Row("cumsum", lambda m, a, dim: a.cumsum(dim), min_dims=1, params=_dim_kw),
    Row("tril", lambda m, a: m.tril(a), min_dims=2),
    Row("einsum_bmm", lambda m, a, b: m.einsum("bij,bjk->bik", a, b), 2,
        shapes=lambda: st.tuples(*[st.integers(1, SIDE)] * 4).map(
            lambda d: [(d[0], d[1], d[2]), (d[0], d[2], d[3])])),
    Row("einsum_reduce", lambda m, a, b: m.einsum("ij,jk->i", a, b), 2,
        shapes=lambda: st.tuples(*[st.integers(1, SIDE)] * 3).map(
            lambda d: [(d[0], d[1]), (d[1], d[2])])),
    Row("einsum_outer", lambda m, a, b: m.einsum("i,j->ji", a, b), 2,
        shapes=lambda: st.tuples(*[st.integers(1, SIDE)] * 2).map(lambda d: [(d[0],), (d[1],)])),
    Row("sort", lambda m, a, dim: a.sort(dim, descending=True).values, min_dims=1,
        params=_dim_kw, smooth=_distinct, ties_differ=True),
    Row("topk", lambda m, a: m.topk(a, 1).values, min_dims=1, smooth=_distinct,
        ties_differ=True),
    Row("erf", lambda m, a: m.erf(a)),
    Row("log2", lambda m, a: m.log2(a), lo=0.1, hi=3.0),
    Row("gelu", lambda m, a: m.nn.functional.gelu(a)),
    Row("gelu_tanh", lambda m, a: m.nn.functional.gelu(a, approximate="tanh")),
    Row("silu", lambda m, a: m.nn.functional.silu(a)),
    Row("mish", lambda m, a: m.nn.functional.mish(a)),
    Row("elu", lambda m, a: m.nn.functional.elu(a, 0.7), smooth=_away([0.0])),
    Row("softplus", lambda m, a: m.nn.functional.softplus(a, beta=2.0, threshold=3.0),
        smooth=_away([1.5])),
    Row("hardtanh", lambda m, a: m.nn.functional.hardtanh(a, -0.5, 1.0),
        smooth=_away([-0.5, 1.0])),
    # NOTE: near 0 torch's prod rules divide by the input and lose the second derivative
    Row("prod", lambda m, a: a.prod(), smooth=_away([0.0])),
    Row("prod_dim", lambda m, a, dim, keepdim: a.prod(dim, keepdim=keepdim), min_dims=1,
        params=_dim_keep_kw, smooth=_away([0.0])),
    Row("prod_zeros", lambda m, a: (a * (a > 0.5)).prod(-1), min_dims=1, smooth=_away([0.5])),
    Row("flip", lambda m, a: a.flip(0) * 2, min_dims=1),
    Row("roll", lambda m, a, dim: a.roll(2, dim), min_dims=1, params=_dim_kw),
    Row("cumprod", lambda m, a, dim: a.cumprod(dim), min_dims=1, params=_dim_kw,
        smooth=_away([0.0])),
    Row("cumprod_zeros", lambda m, a: (a * (a > 0.5)).cumprod(-1), min_dims=1,
        smooth=_away([0.5])),
    Row("logcumsumexp", lambda m, a, dim: m.logcumsumexp(a, dim), min_dims=1, params=_dim_kw),
    # a spread of hundreds: exp overflows in float64 unless the sum stays in log space
    # NOTE: the 400x spread scales rounding noise in a zero second derivative by 400**2
    Row("logcumsumexp_spread", lambda m, a: (a * 400).logcumsumexp(-1), min_dims=1,
        second_atol=1e-7),
    Row("cummax", lambda m, a, dim: a.cummax(dim).values, min_dims=1, params=_dim_kw,
        smooth=_distinct, ties_differ=True),
    Row("cummin", lambda m, a, dim: m.cummin(a, dim).values, min_dims=1, params=_dim_kw,
        smooth=_distinct, ties_differ=True),
    Row("rpow_zero", lambda m, a: 0.0 ** a, lo=0.0, hi=3.0, smooth=_away([0.0]), second=False),
]


def _flush(value: float) -> float:
    # Magnitudes below 1e-100 only probe underflow in squares, where torch itself is inexact.
    return 0.0 if abs(value) < 1e-100 else value


@st.composite
def _case(draw, row: Row):
    shapes = draw(row.shapes() if row.shapes else _shapes(row.n, row.min_dims))
    params = {}
    if row.name == "cat":
        shapes, params = shapes[:2], {"dim": shapes[2]}
    if row.params:
        params.update(draw(row.params(shapes)))
    lows = row.lo if isinstance(row.lo, tuple) else (row.lo,) * row.n
    highs = row.hi if isinstance(row.hi, tuple) else (row.hi,) * row.n
    arrays = [
        draw(hnp.arrays(np.float64, shape, elements=st.floats(lo, hi).map(_flush)))
        for shape, lo, hi in zip(shapes, lows, highs)
    ]
    return arrays, params


def _run(module, row, arrays, params, upstream_of):
    leaves = [module.tensor(a.copy(), dtype=module.float64, requires_grad=True) for a in arrays]
    out = row.fn(module, *leaves, **params)
    upstream = upstream_of(tuple(out.shape))
    up = module.tensor(upstream.copy(), dtype=module.float64)
    out.backward(up)
    return out, leaves, up, upstream


def _drawn_once(draw):
    """``shape -> float64 array`` that draws each shape once, so both engines see the same."""
    seen = {}

    def upstream_of(shape):
        if shape not in seen:
            seen[shape] = draw(hnp.arrays(np.float64, shape, elements=st.floats(-1, 1)))
        return seen[shape]

    return upstream_of


def _check_no_mutation_or_alias(leaves, arrays, up, upstream):
    for leaf, original in zip(leaves, arrays):
        np.testing.assert_array_equal(leaf.detach().numpy(), original)
        assert not np.shares_memory(leaf.grad.numpy(), up.numpy())
    np.testing.assert_array_equal(up.numpy(), upstream)
    for i, a in enumerate(leaves):
        for b in leaves[i + 1:]:
            assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
@settings(max_examples=HALF, suppress_health_check=FILTERING)
@given(data=st.data())
@pytest.mark.filterwarnings("ignore:.*degrees of freedom:UserWarning")
def test_op_matches_torch(row, data):
    torch = pytest.importorskip("torch")
    arrays, params = data.draw(_case(row))
    if row.ties_differ:
        assume(row.smooth(*arrays, **params))
    upstream_of = _drawn_once(data.draw)
    out, leaves, up, upstream = _run(ref, row, arrays, params, upstream_of)
    t_out, t_leaves, _, _ = _run(torch, row, arrays, params, upstream_of)
    assert tuple(out.shape) == tuple(t_out.shape)
    assert out.dtype == ref.float64
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    for leaf, t_leaf in zip(leaves, t_leaves):
        np.testing.assert_allclose(leaf.grad.numpy(), t_leaf.grad.numpy(), rtol=1e-10,
                                   atol=1e-12)
    _check_no_mutation_or_alias(leaves, arrays, up, upstream)


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
@settings(max_examples=HALF, suppress_health_check=FILTERING)
@given(data=st.data())
@pytest.mark.filterwarnings("ignore:.*degrees of freedom:UserWarning")
def test_op_matches_central_differences(row, data, finite_diff):
    arrays, params = data.draw(_case(row))
    if row.smooth is not None:
        assume(row.smooth(*arrays, **params))
    upstream_of = _drawn_once(data.draw)
    out, leaves, up, upstream = _run(ref, row, arrays, params, upstream_of)

    def forward(*xs):
        with ref.no_grad():
            return row.fn(ref, *[ref.from_numpy(x) for x in xs], **params).numpy()

    expected = finite_diff(forward, arrays, upstream)
    for leaf, grad in zip(leaves, expected):
        np.testing.assert_allclose(leaf.grad.numpy(), grad, rtol=1e-5, atol=1e-6)
    _check_no_mutation_or_alias(leaves, arrays, up, upstream)


def _double_backward(module, row, arrays, params, upstream, probe_of):
    """d/dx of sum(grad_x(out . upstream) * probe): exercises the rules' own graphs."""
    leaves = [module.tensor(a.copy(), dtype=module.float64, requires_grad=True) for a in arrays]
    out = row.fn(module, *leaves, **params)
    up = module.tensor(upstream(tuple(out.shape)), dtype=module.float64)
    grads = module.autograd.grad(out, leaves, up, create_graph=True, allow_unused=True)
    total = None
    for g, leaf in zip(grads, leaves):
        if g is not None and g.requires_grad:
            term = (g * module.tensor(probe_of(tuple(leaf.shape)), dtype=module.float64)).sum()
            total = term if total is None else total + term
    if total is None:
        return None
    second = module.autograd.grad(total, leaves, allow_unused=True)
    return [None if s is None else s.detach().numpy(force=True) for s in second]


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
@settings(max_examples=max(5, settings.default.max_examples // 4), suppress_health_check=FILTERING)
@given(data=st.data())
@pytest.mark.filterwarnings("ignore:.*degrees of freedom:UserWarning")
def test_second_derivatives_match_torch(row, data):
    torch = pytest.importorskip("torch")
    if not row.second:
        pytest.skip(f"{row.name}: torch's second derivative is nan here")
    arrays, params = data.draw(_case(row))
    if row.smooth is not None:
        assume(row.smooth(*arrays, **params))
    up_of, probe_of = _drawn_once(data.draw), _drawn_once(data.draw)
    ours = _double_backward(ref, row, arrays, params, up_of, probe_of)
    theirs = _double_backward(torch, row, arrays, params, up_of, probe_of)
    # A derivative that is constant in x has no graph here; torch may return zeros instead.
    ours = ours or [None] * len(arrays)
    theirs = theirs or [None] * len(arrays)
    for mine, expected in zip(ours, theirs):
        if expected is None or mine is None:
            # one side has no graph: the other's derivative must be zero up to rounding
            other = mine if mine is not None else expected
            if other is not None:
                np.testing.assert_allclose(other, 0, atol=row.second_atol)
        else:
            np.testing.assert_allclose(mine if mine is not None else 0 * expected, expected,
                                       rtol=1e-9, atol=row.second_atol)
