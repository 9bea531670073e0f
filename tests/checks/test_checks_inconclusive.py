"""The third verdict: what finite differences cannot resolve is inconclusive, never passed.

The reproduction: a custom Function that rounds through float32 inside (``torch.Tensor(...)``
on a float64 input) used to pass with a gradient 1% off. Now a wrong gradient fails or is
inconclusive, a right one is inconclusive or passes, and kinks within the step are kinks in
both modes.
"""
import numpy as np
import pytest

from gradcheck import GradientInconclusive, check_grad
from gradcheck.checks.result import GradcheckResult

torch = pytest.importorskip("torch")


def _rounds_through_float32(scale):
    class SinTimesX(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            y = torch.Tensor(a.detach().numpy())  # float32, as torch.Tensor(...) makes it
            return (torch.sin(y) * y).double()

        @staticmethod
        def backward(ctx, grad):
            (a,) = ctx.saved_tensors
            return grad * (torch.cos(a) * a + torch.sin(a)) * scale

    return SinTimesX.apply


def _inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    scale = 10.0 ** (seed % 3 - 1)
    return (torch.randn(5, generator=gen, dtype=torch.float64) * scale).requires_grad_()


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("seed", range(3))
def test_a_function_rounding_inside_never_passes_a_wrong_gradient(mode, seed):
    right = check_grad(_rounds_through_float32(1.0), _inputs(seed), mode=mode, seed=seed,
                       raise_on_failure=False)
    assert right.verdict in ("passed", "inconclusive")
    for scale in (1.01, 1.001):
        wrong = check_grad(_rounds_through_float32(scale), _inputs(seed), mode=mode, seed=seed,
                           raise_on_failure=False)
        assert wrong.verdict in ("failed", "inconclusive") and not wrong.passed
    assert check_grad(_rounds_through_float32(1.01), _inputs(seed), mode=mode, seed=seed,
                      raise_on_failure=False).verdict == "failed"


def test_inconclusive_says_which_input_why_and_what_to_do():
    result = check_grad(_rounds_through_float32(1.0), _inputs(1), raise_on_failure=False)
    assert result.verdict == "inconclusive" and result.passed is False and not bool(result)
    (reason,) = result.inconclusive
    assert reason.startswith("input: the finite differences cannot resolve")
    assert all(w in reason for w in ("float32", "float64 throughout", "eps=1e-3", "atol="))
    assert str(result).startswith("gradient check INCONCLUSIVE")


def test_inconclusive_raises_its_own_error_unless_allowed():
    fn = _rounds_through_float32(1.0)
    with pytest.raises(GradientInconclusive, match="allow_inconclusive=True"):
        check_grad(fn, _inputs(1))
    assert check_grad(fn, _inputs(1), allow_inconclusive=True).verdict == "inconclusive"


def test_a_larger_step_resolves_what_the_default_cannot():
    # the observation: with eps=1e-3 the same check is right
    assert check_grad(_rounds_through_float32(1.01), _inputs(1), eps=1e-3,
                      raise_on_failure=False).verdict == "failed"


def test_outputs_that_never_move_are_a_failure_not_an_excuse():
    # the backward gives a gradient for an input the function ignores: no step moves it
    class Ignores(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return torch.sin(a)

        @staticmethod
        def backward(ctx, grad):
            return grad * torch.cos(torch.sin(grad) * 0 + 1), torch.ones(3, dtype=grad.dtype)

    a, b = _inputs(0)[:3].detach().requires_grad_(), torch.ones(3, dtype=torch.float64,
                                                                  requires_grad=True)
    result = check_grad(Ignores.apply, (a, b), raise_on_failure=False)
    assert result.verdict == "failed" and ("output", "input 1") in result.mismatch_counts


@pytest.mark.parametrize("mode", ["full", "fast"])
def test_a_kink_within_the_step_is_not_a_mismatch(mode):
    # relu at 2e-7 from its kink: the default step (6e-6) straddles it, smaller ones do not
    x = torch.tensor([2e-7, -3e-7, 1.0, -0.5], dtype=torch.float64, requires_grad=True)
    assert check_grad(torch.relu, x, mode=mode).verdict == "passed"
    at_kink = torch.tensor([0.0, 1.0], dtype=torch.float64, requires_grad=True)
    with pytest.warns(UserWarning, match="non-differentiable"):
        result = check_grad(torch.relu, at_kink, mode="full")
    assert result.passed and result.nondifferentiable == [("input", (0,))]


@pytest.mark.parametrize("verdict", ["passed", "failed", "inconclusive"])
@pytest.mark.parametrize("order", [1.0, 2.0])
def test_the_taylor_line_never_contradicts_the_verdict(verdict, order):
    line = [s for s in str(GradcheckResult(verdict=verdict, taylor_order=order)).splitlines()
            if "Taylor" in s][0]
    if verdict != "failed":
        assert "is wrong" not in line and "as the mismatches" not in line
    if verdict == "failed":
        assert "is right" not in line
    if verdict == "passed" and order < 1.5:
        assert "the entries decide" in line


def test_a_noisy_numpy_function_is_inconclusive_in_both_modes():
    def coarse(x):
        return np.sin(x).astype(np.float32).astype(np.float64)

    for mode in ("full", "fast"):
        result = check_grad(coarse, np.array([0.3, 1.1, -0.4]), mode=mode,
                            vjp=lambda g, x: (g * np.cos(x),), raise_on_failure=False)
        assert result.verdict == "inconclusive", str(result)
