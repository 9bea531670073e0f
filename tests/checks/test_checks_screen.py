"""The forward-difference screen of full mode gives the two-sided path's verdicts, with about
half the evaluations on dense Jacobians; kinks it cannot see alone are still reported."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradcheck.checks import check_grad
from gradcheck.checks.planted import ROWS, numpy_case

NONLINEAR = {
    "identity": (lambda z: z, lambda z: np.ones_like(z)),
    "tanh": (np.tanh, lambda z: 1 - np.tanh(z) ** 2),
    "sin": (np.sin, np.cos),
    "softplus": (lambda z: np.logaddexp(0, z), lambda z: 1 / (1 + np.exp(-z))),
}


def dense_case(seed: int, n: int, m: int, act: str, scale: float, planted: bool):
    """f(x) = B @ act(A @ (x / scale)), a dense Jacobian; with ``planted``, the VJP is wrong
    in one entry (o, j) by 1e-4 of the block's size (the tolerance floor is about 1e-7)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, n)) / np.sqrt(n)
    b = rng.standard_normal((m, m))
    x = scale * rng.standard_normal(n)
    f, df = NONLINEAR[act]

    def fn(x):
        return f((x / scale) @ a.T) @ b.T

    def jac(x):
        return (b * df(a @ (x / scale))) @ a / scale

    o, j = rng.integers(m), rng.integers(n)
    j0 = jac(x)
    size = np.abs(j0).max() + np.abs(fn(x)).max() / max(1.0, abs(x[j]))
    delta = 1e-4 * size if planted else 0.0

    def vjp(g, x):
        grad = g @ jac(x)
        grad[..., j] += delta * g[..., o]
        return (grad,)

    return fn, x, vjp, (o, j)


def both(fn, inputs, **options):
    screened = check_grad(fn, inputs, raise_on_failure=False, taylor=False, **options)
    plain = check_grad(fn, inputs, raise_on_failure=False, taylor=False, screen="two-sided",
                       **options)
    return screened, plain


@given(seed=st.integers(0, 2**31), n=st.integers(8, 96), m=st.integers(1, 6),
       act=st.sampled_from(sorted(NONLINEAR)), scale=st.sampled_from([1.0, 1e3]),
       planted=st.booleans())
def test_screened_verdicts_match_two_sided_on_dense_maps(seed, n, m, act, scale, planted):
    fn, x, vjp, (o, j) = dense_case(seed, n, m, act, scale, planted)
    screened, plain = both(fn, x, vjp=vjp)
    assert screened.passed == plain.passed == (not planted)
    assert screened.mismatch_counts == plain.mismatch_counts
    if planted:  # the planted entry is named, with the exact path's numbers
        hits = [mm for mm in screened.mismatches if mm.index == (j,) and mm.out_index == (o,)]
        assert hits and hits[0].estimate < hits[0].abs_error


@pytest.mark.parametrize("buggy", [True, False])
@pytest.mark.parametrize("name", list(ROWS))
def test_planted_rows_same_verdict_both_screens(name, buggy):
    fn, inputs, vjp = numpy_case(ROWS[name], buggy=buggy)
    screened, plain = both(fn, inputs, vjp=vjp)
    assert screened.passed == plain.passed == (not buggy)
    assert screened.mismatch_counts == plain.mismatch_counts


def test_screen_halves_the_points_of_a_dense_map():
    fn, x, vjp, _ = dense_case(0, 512, 4, "tanh", 1.0, planted=False)
    screened, plain = both(fn, x, vjp=vjp)
    assert screened.passed and plain.passed
    assert plain.evaluations["forward_points"] >= 2 * 512
    assert screened.evaluations["forward_points"] < 1.2 * 512


def test_kink_at_the_probed_side_is_still_reported():
    torch = pytest.importorskip("torch")
    # clamp's backward at its bound is the right-hand slope, 1: the forward quotient agrees,
    # and only the random two-sided direction probe sees the kink.
    w = torch.randn(5, 40, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    x = torch.randn(40, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    x[7] = 0.0
    x.requires_grad_()
    screened, plain = both(lambda x: w @ torch.clamp(x, min=0.0), (x,), nondifferentiable="ignore")
    assert ("input", (7,)) in screened.nondifferentiable
    assert screened.nondifferentiable == plain.nondifferentiable
    assert screened.passed and plain.passed
