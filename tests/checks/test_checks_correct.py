"""Right gradients pass in both modes: near kinks and ties, badly scaled, and in float32."""
import warnings

import numpy as np
import pytest

from gradcheck.checks import NondifferentiableWarning, check_grad
from gradcheck.checks.planted import ROWS, torch_op

MODES = ["full", "fast"]


def relu_case():
    x = np.array([0.0, 1e-9, -1e-9, 3e-6, -4e-6, 1e-3, -0.5, 2.0])
    return (lambda x: np.maximum(x, 0.0)), x, (lambda g, x: (g * (x > 0),))


def max_ties_case():
    x = np.array([1.0, 3.0, 3.0, -2.0, 3.0])

    def vjp(g, x):
        winners = x == x.max()
        return (g * winners / winners.sum(),)

    return (lambda x: x.max()), x, vjp


def abs_case():
    x = np.array([0.0, 0.25, -0.75])
    return np.abs, x, (lambda g, x: (g * np.sign(x),))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", [relu_case, max_ties_case, abs_case])
def test_kinks_are_reported_not_failed(case, mode):
    fn, x, vjp = case()
    with pytest.warns(NondifferentiableWarning):
        result = check_grad(fn, x, vjp=vjp, mode=mode)
    assert result.passed and not result.mismatches
    if mode == "full":
        kinks = {idx for _, idx in result.nondifferentiable}
        assert kinks, result
        # every reported kink really is one: the function bends within a step of it
        assert all(abs(x[i]) < 1e-4 or x[i] == x.max() for (i,) in kinks)


def test_kinks_fail_when_asked():
    fn, x, vjp = abs_case()
    result = check_grad(fn, x, vjp=vjp, nondifferentiable="fail", raise_on_failure=False)
    assert not result.passed and ("input", (0,)) in result.nondifferentiable


def test_kinks_ignored_silently():
    fn, x, vjp = abs_case()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_grad(fn, x, vjp=vjp, nondifferentiable="ignore").passed


def test_a_wrong_gradient_next_to_a_kink_still_fails():
    x = np.array([0.0, 0.5, -0.5])
    result = check_grad(np.abs, x, vjp=lambda g, x: (g * np.sign(x) * 1.01,),
                        nondifferentiable="ignore", raise_on_failure=False)
    assert not result.passed
    assert {m.index for m in result.mismatches} == {(1,), (2,)}


@pytest.mark.parametrize("mode", MODES)
def test_values_around_1e3(mode):
    x = np.random.default_rng(3).uniform(900, 1100, 12)
    fn = lambda x: np.sin(x) * x * x
    vjp = lambda g, x: (g * (np.cos(x) * x * x + 2 * x * np.sin(x)),)
    assert check_grad(fn, x, vjp=vjp, mode=mode).passed


@pytest.mark.parametrize("mode", MODES)
def test_exp_of_15_to_20(mode):
    x = np.linspace(15, 20, 9)
    assert check_grad(np.exp, x, vjp=lambda g, x: (g * np.exp(x),), mode=mode).passed


@pytest.mark.parametrize("mode", MODES)
def test_float32_numpy_function_judged_against_float64_numerics(mode):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(30).astype(np.float32)
    w = rng.standard_normal((30, 20)).astype(np.float32)

    def fn(x):
        return np.tanh(x @ w.astype(x.dtype))

    def vjp(g, x):
        y = np.tanh(x @ w)
        return ((g * (1 - y * y)) @ w.T,)

    result = check_grad(fn, x, vjp=vjp, mode=mode)
    assert result.passed and result.eval_dtype == "float64"


@pytest.mark.parametrize("mode", MODES)
def test_torch_float32_functions_pass(mode):
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(40, generator=gen, requires_grad=True)
    w = torch.randn(40, 16, generator=gen, requires_grad=True)
    fn = lambda x, w: torch.softmax(torch.tanh(x @ w), 0) * torch.exp(x[:16])
    result = check_grad(fn, (x, w), mode=mode)
    assert result.passed and result.eval_dtype == "float64"


def test_torch_function_that_rejects_float64_falls_back_to_its_own_dtype():
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(1)
    w = torch.randn(8, 5, generator=gen)  # float32 weight captured: float64 x @ w raises
    x = torch.randn(8, generator=gen, requires_grad=True)
    result = check_grad(lambda x: torch.sin(x @ w), x)
    assert result.passed and result.eval_dtype == "float32"
    flipped = torch_op(ROWS["flipped sign"], buggy=True)
    bad = check_grad(lambda x: flipped(x @ w), x, raise_on_failure=False)
    assert not bad.passed and bad.eval_dtype == "float32"


@pytest.mark.parametrize("mode", MODES)
def test_torch_kinks_and_ties(mode):
    torch = pytest.importorskip("torch")
    x = torch.tensor([0.0, 2.0, 2.0, -1.0, 1e-8], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0.0, 2.0, 1.0, 3.0, 0.0], dtype=torch.float64, requires_grad=True)
    fn = lambda x, y: torch.relu(x) + torch.maximum(x, y) + torch.abs(y)
    with pytest.warns(NondifferentiableWarning):
        result = check_grad(fn, (x, y), mode=mode)
    assert result.passed
