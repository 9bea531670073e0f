"""einsum with ``...`` and with traces (a letter repeated in one operand): forward values and
gradients against torch."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gradcheck.ref as ref

torch = pytest.importorskip("torch")

# (equation, operand shapes): batched, broadcast (size-1 and missing dims), implicit output.
CASES = [
    ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)]),
    ("...ij,jk", [(1, 2, 3), (3, 4)]),
    ("...ij,...jk", [(2, 1, 2, 3), (4, 3, 2)]),
    ("i...->...", [(3, 2, 4)]),
    ("b...,b...->b", [(2, 3, 4), (2, 1, 4)]),
    ("...,...", [(3,), (2, 3)]),
    ("a...c,...c->a...", [(2, 3, 1, 4), (5, 4)]),
    ("...", [(2, 3)]),
    ("...ij->...ji", [(2, 3)]),
    ("... i j , j -> ... i", [(4, 2, 3), (3,)]),
    ("ij...,jk...->ik...", [(2, 3, 5), (3, 4, 1)]),
    ("...ii->...i", [(3, 4, 4)]),
    ("...ii->...", [(3, 4, 4)]),
]


def _run(m, equation, arrays, upstream_seed=0):
    tensors = [m.tensor(a, requires_grad=True) for a in arrays]
    out = m.einsum(equation, *tensors)
    upstream = np.cos(np.arange(out.numel()) + upstream_seed).reshape(tuple(out.shape))
    out.backward(m.tensor(upstream))
    return out.detach().numpy(), [t.grad.numpy() for t in tensors]


def _assert_matches_torch(equation, arrays):
    out, grads = _run(ref, equation, arrays)
    expected_out, expected_grads = _run(torch, equation, arrays)
    assert out.shape == expected_out.shape
    np.testing.assert_allclose(out, expected_out, rtol=1e-10, atol=1e-12)
    for got, want in zip(grads, expected_grads):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("equation, shapes", CASES, ids=[c[0] for c in CASES])
def test_ellipsis_matches_torch(equation, shapes):
    rng = np.random.default_rng(len(equation))
    _assert_matches_torch(equation, [rng.standard_normal(s) for s in shapes])


@given(batch=st.lists(st.integers(1, 3), min_size=0, max_size=3),
       drop=st.integers(0, 3), ones=st.lists(st.booleans(), min_size=3, max_size=3),
       seed=st.integers(0, 2**16))
def test_batched_matmul_with_broadcast_ellipsis_matches_torch(batch, drop, ones, seed):
    """'...ij,...jk->...ik' with the second operand missing leading dims or having 1s."""
    other = [1 if flag else n for n, flag in zip(batch, ones)][min(drop, len(batch)):]
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal((*batch, 2, 3)), rng.standard_normal((*other, 3, 2))]
    _assert_matches_torch("...ij,...jk->...ik", arrays)


def test_ellipsis_records_one_einsum_node_and_respects_dtype():
    x = ref.ones(2, 3, 4, requires_grad=True)
    out = ref.einsum("...ij,j->...i", x, ref.ones(4))
    assert out.grad_fn.name() == "EinsumBackward0" and out.dtype == ref.float32


def test_too_many_subscripts_is_a_clear_error():
    with pytest.raises(RuntimeError, match="more than the number of dimensions"):
        ref.einsum("...ijk", ref.ones(2, 3))


@st.composite
def trace_equation(draw):
    """An equation whose first operand repeats a letter, with an optional second operand and an
    explicit output drawn from the letters used; sizes per letter in 1..3."""
    sizes = {c: draw(st.integers(1, 3)) for c in "abcd"}
    first = draw(st.lists(st.sampled_from("abc"), min_size=2, max_size=4)
                 .filter(lambda s: len(set(s)) < len(s)))
    second = draw(st.lists(st.sampled_from("abcd"), max_size=3, unique=True))
    used = sorted(set(first) | set(second))
    out = draw(st.lists(st.sampled_from(used), unique=True).flatmap(st.permutations))
    subs = ["".join(first)] + (["".join(second)] if second else [])
    shapes = [tuple(sizes[c] for c in sub) for sub in subs]
    return ",".join(subs) + "->" + "".join(out), shapes


@given(trace_equation(), st.integers(0, 2**16))
def test_traces_match_torch(case, seed):
    """'ii->i', 'ii->', 'iij,jk->ik', ...: the gradient lands on each repeat's diagonal."""
    equation, shapes = case
    rng = np.random.default_rng(seed)
    _assert_matches_torch(equation, [rng.standard_normal(s) for s in shapes])


def test_ellipses_that_do_not_broadcast_raise_runtime_error_like_torch():
    shapes = [(2, 3, 4), (2, 3, 4)]
    with pytest.raises(RuntimeError):
        torch.einsum("i...j,ji...->...", *[torch.zeros(s) for s in shapes])
    with pytest.raises(RuntimeError, match=r"do not broadcast together: \[\[3\], \[4\]\]"):
        ref.einsum("i...j,ji...->...", *[ref.zeros(s) for s in shapes])
