"""Column compression and batching must not change what full mode finds.

The batched path (compressed colours, vmap/broadcast batches) and the plain path (one point
per call, one column per element: ``batch=False``) are run on the same functions and must
agree on the verdict, the mismatching entries, the kinks and the numeric Jacobian.
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradcheck.checks import check_grad
from gradcheck.checks.adapters import adapter_for
from gradcheck.checks.compress import column_colors
from gradcheck.checks.full import Screen, analytic_rows, numeric_columns
from gradcheck.checks.target import Target


def _tanh_vjp(g, x):
    return (g / np.cosh(x) ** 2,)


def _rowwise_vjp(g, x):  # f(x) = x * sum of its row; right backward
    return (g * x.sum(-1, keepdims=True) + (g * x).sum(-1, keepdims=True),)


def _rowwise_missing_term(g, x):  # forgets that every output of a row depends on the row sum
    return (g * x.sum(-1, keepdims=True),)


def _one_entry_off(g, x):
    scale = np.ones_like(x)
    scale[..., 3] = 1.01
    return (g * scale / np.cosh(x) ** 2,)


CASES = {
    "elementwise tanh": (np.tanh, _tanh_vjp, True),
    "row-wise x * rowsum": (lambda x: x * x.sum(-1, keepdims=True), _rowwise_vjp, True),
    "row-wise, backward misses a dependency": (
        lambda x: x * x.sum(-1, keepdims=True), _rowwise_missing_term, False),
    "elementwise, one entry 1% off": (np.tanh, _one_entry_off, False),
}


def _numeric_jacobian(fn, x, vjp, batch):
    target = Target(adapter_for((x,), fn=fn, wrt=None, vjp=vjp), None, batch)
    jac = analytic_rows(target)
    screen = Screen(0, jac[0], [0])
    return numeric_columns(target, 0, "central", None, screen), target.counts


@pytest.mark.parametrize("name", sorted(CASES))
def test_batched_and_plain_paths_agree(name):
    fn, vjp, right = CASES[name]
    x = np.random.default_rng(3).standard_normal((6, 8))
    results = [check_grad(fn, x, vjp=vjp, raise_on_failure=False, taylor=False, batch=b)
               for b in (True, False)]
    assert [r.passed for r in results] == [right, right]
    found = [[(m.index, m.out_index) for m in r.mismatches] for r in results]
    assert found[0] == found[1]
    for a, b in zip(results[0].mismatches, results[1].mismatches):
        assert a.numeric == pytest.approx(b.numeric, rel=1e-8)
        assert a.tolerance == pytest.approx(b.tolerance, rel=1e-3)
    assert results[0].mismatch_counts == results[1].mismatch_counts
    (fast_cols, fast_counts), (plain_cols, plain_counts) = (
        _numeric_jacobian(fn, x, vjp, b) for b in (True, False))
    np.testing.assert_allclose(fast_cols.numeric[0], plain_cols.numeric[0], rtol=1e-8, atol=1e-12)
    assert not fast_cols.kink[0].any() and not plain_cols.kink[0].any()
    if right:  # a wrong backward sends suspects back to the per-element check
        assert fast_counts["forward_points"] < plain_counts["forward_points"] / 2


def test_the_missing_dependency_is_reported_at_the_right_entries():
    fn, vjp, _ = CASES["row-wise, backward misses a dependency"]
    x = np.random.default_rng(4).standard_normal((3, 4))
    result = check_grad(fn, x, vjp=vjp, raise_on_failure=False, taylor=False)
    # the missing term x_o is an off-diagonal entry of each row block: all 12*4 - 0 pairs in a row
    assert result.mismatch_counts[("output", "input")] == 3 * 4 * 4
    worst = result.worst()
    assert worst.index[0] == worst.out_index[0]  # only entries within one row depend


def test_kinks_are_found_through_the_compressed_screen():
    x = np.array([0.5, 0.0, -0.3, 1.2, 0.0, -2.0])
    relu_vjp = lambda g, x: (g * (x > 0),)
    results = [check_grad(lambda x: np.maximum(x, 0), x, vjp=relu_vjp, taylor=False,
                          nondifferentiable="ignore", batch=b) for b in (True, False)]
    assert results[0].nondifferentiable == results[1].nondifferentiable == [
        ("input", (1,)), ("input", (4,))]
    assert results[0].passed and results[1].passed


def test_torch_elementwise_uses_few_points_and_agrees():
    torch = pytest.importorskip("torch")
    x = torch.randn(200, dtype=torch.float64, generator=torch.Generator().manual_seed(0),
                    requires_grad=True)
    fn = lambda x: x * torch.tanh(torch.nn.functional.softplus(x))
    fast, plain = (check_grad(fn, x, taylor=False, batch=b) for b in (True, False))
    assert fast.passed and plain.passed
    assert fast.evaluations["forward_points"] < 40 < plain.evaluations["forward_points"]
    assert fast.max_abs_error == pytest.approx(plain.max_abs_error, rel=0.5, abs=1e-9)


@given(st.integers(1, 5), st.integers(2, 12), st.integers(0, 2**31 - 1))
def test_colours_never_share_an_output(rows, cols, seed):
    rng = np.random.default_rng(seed)
    pattern = rng.random((rows * cols, rows * 3)) < rng.uniform(0.02, 0.5)
    colors = column_colors([pattern.astype(float)])
    if colors is None:
        return
    for o in range(pattern.shape[1]):
        touching = colors[pattern[:, o]]
        assert len(set(touching.tolist())) == len(touching)
    assert colors.max() + 1 < pattern.shape[0]


def _two_outputs(x, y):
    return x * 2.0, np.sin(x[:3]) * y


def _two_outputs_vjp(gs, x, y):
    g0, g1 = gs
    gx = 2.0 * g0
    gx[:3] += g1 * np.cos(x[:3]) * y
    return gx, g1 * np.sin(x[:3])


def _two_outputs_forgets_y(gs, x, y):
    gx, _ = _two_outputs_vjp(gs, x, y)
    return gx, np.zeros_like(y)  # the second input's grad goes missing


def _two_outputs_forgets_x(gs, x, y):
    # output 1 has no analytic dependency on x at all: no colour owns its elements
    return 2.0 * gs[0], gs[1] * np.sin(x[:3])


@pytest.mark.parametrize("vjp, right", [(_two_outputs_vjp, True), (_two_outputs_forgets_y, False),
                                        (_two_outputs_forgets_x, False)])
def test_two_inputs_two_outputs_with_unowned_colours(vjp, right):
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal(40), rng.standard_normal(3)
    results = [check_grad(_two_outputs, (x, y), vjp=vjp, raise_on_failure=False, taylor=False,
                          batch=b) for b in (True, False)]
    assert [r.passed for r in results] == [right, right]
    assert results[0].mismatch_counts == results[1].mismatch_counts
    assert [(m.input, m.index, m.output, m.out_index) for m in results[0].mismatches] == [
        (m.input, m.index, m.output, m.out_index) for m in results[1].mismatches]
    if right:  # a wrong backward sends whole colours back to the per-element check
        assert results[0].evaluations["forward_points"] < results[1].evaluations["forward_points"]


def test_colours_evaluated_in_chunks_give_the_same_columns(monkeypatch):
    from gradcheck.checks import full

    fn, vjp, _ = CASES["row-wise x * rowsum"]
    x = np.random.default_rng(6).standard_normal((6, 8))
    whole, _ = _numeric_jacobian(fn, x, vjp, True)
    monkeypatch.setattr(full, "BATCH_ELEMENTS", 100)  # one colour per batch
    pieces, counts = _numeric_jacobian(fn, x, vjp, True)
    np.testing.assert_allclose(whole.numeric[0], pieces.numeric[0], rtol=1e-12, atol=0)
    assert counts["forward"] > 8


def test_an_index_shifted_backward_cannot_hide_in_a_colour():
    # the backward credits each output to its neighbour; with equal steps in one colour the
    # compressed quotient of the true element was credited to the claimed one, and agreed
    x = np.linspace(-0.9, 0.9, 12)
    wrong = check_grad(lambda x: 3 * x, x, vjp=lambda g, x: (np.roll(3 * g, 1),),
                       raise_on_failure=False)
    assert wrong.verdict == "failed" and wrong.mismatch_counts[("output", "input")] == 24
