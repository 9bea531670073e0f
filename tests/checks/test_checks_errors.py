"""Bad input to check_grad, and exceptions from the user's code: each says what, where, and
how to fix it (issue reproductions: a non-callable, a wrong arity, wrt=[5], eps="1e-3", a
function returning no tensor, a NaN input, integer inputs, a raising forward or backward)."""
import numpy as np
import pytest

from gradcheck import GradcheckError, GradientInconclusive, GradientMismatch, check_grad

torch = pytest.importorskip("torch")


def _x():
    return torch.tensor([0.3, -0.7, 1.1], dtype=torch.float64, requires_grad=True)


@pytest.mark.parametrize("call, error, words", [
    (lambda x: check_grad(42, x), TypeError, ["fn=42 is not callable", "check_grad(torch.sin"]),
    (lambda x: check_grad(lambda a, b: a * b, x), TypeError,
     ["cannot be called with the 1 input(s)", "check_grad(fn, (a, b))"]),
    (lambda x: check_grad(torch.sin, x, wrt=[5]), ValueError,
     ["wrt=[5]", "no input 5", "from 0 to 0"]),
    (lambda x: check_grad(torch.sin, x, wrt="0"), TypeError, ["wrt='0'", "e.g. wrt=[0]"]),
    (lambda x: check_grad(torch.sin, x, eps="1e-3"), TypeError,
     ["eps='1e-3' is a str", "e.g. eps=1e-6"]),
    (lambda x: check_grad(torch.sin, x, atol=-1.0), ValueError, ["atol=-1.0", "at least 0"]),
    (lambda x: check_grad(torch.sin, x, seed="7"), TypeError, ["seed='7'", "e.g. seed=0"]),
    (lambda x: check_grad(torch.sin, x, names=["a", "b"]), ValueError, ["2 entries for 1"]),
])
def test_bad_arguments_name_the_argument_the_value_and_the_fix(call, error, words):
    with pytest.raises(error) as info:
        call(_x())
    assert all(w in str(info.value) for w in words), str(info.value)


@pytest.mark.parametrize("fn, shown", [
    (lambda a: None, "returned None"),
    (lambda a: float(a.sum().detach()), "returned a Python float"),
    (lambda a: (a * 2, None), "None as output 1"),
])
def test_a_function_returning_no_tensor_is_reported_as_such(fn, shown):
    with pytest.raises(GradcheckError) as info:
        check_grad(fn, _x())
    assert shown in str(info.value) and "drop .item(), float()" in str(info.value)
    assert not isinstance(info.value, GradientMismatch)


def test_one_nan_input_is_reported_as_a_nan_input():
    x = torch.tensor([1.0, float("nan"), 2.0], dtype=torch.float64, requires_grad=True)
    result = check_grad(torch.sin, x, raise_on_failure=False)
    text = str(result)
    assert result.verdict == "inconclusive" and not result.mismatches and not result.problems
    assert "has 1 NaN element(s), the first at [1]" in text and "pass finite inputs" in text
    assert "nan" not in text.replace("NaN", "")  # no tolerance=nan, no worst element of nan
    assert "not deterministic" not in text
    # a function that handles NaN (nansum) has nothing NaN to compare, and passes
    assert check_grad(torch.nansum, x).passed


def test_integer_inputs_get_advice_that_torch_allows():
    with pytest.raises(ValueError) as info:
        check_grad(lambda a: a * 2, torch.tensor([1, 2, 3]))
    message = str(info.value)
    assert "int64" in message and "x.double().requires_grad_()" in message
    assert "set requires_grad=True" not in message
    with pytest.raises(TypeError, match=r"wrt=\[0\] names input 0.*x.astype\(np.float64\)"):
        check_grad(lambda a: a * 2, np.array([1, 2]), wrt=[0], vjp=lambda g, a: (2 * g,))


class _NestedBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2

    @staticmethod
    def backward(ctx, grad):
        return ((grad * 2,),)  # a tuple inside the tuple


def test_a_raising_backward_names_function_phase_and_input():
    with pytest.raises(GradcheckError) as info:
        check_grad(_NestedBackward.apply, _x())
    err = info.value
    assert err.function == "_NestedBackward.apply" and err.phase == "backward"
    assert (err.input, err.shape, err.dtype) == ("input", (3,), "float64")
    assert isinstance(err.__cause__, RuntimeError)
    assert "input of shape (3,) and dtype float64" in str(err) and "flat tuple" in str(err)


def _raises_above_half(x):
    if (x > 0.5).any():
        raise ValueError("x out of range")
    return x * 2


@pytest.mark.parametrize("mode, where", [
    ("full", "of column 1 (element [1] moved by +"),
    ("fast", "of fast-mode probe direction"),
])
def test_a_forward_raising_at_a_perturbed_point_says_which(mode, where):
    x = torch.tensor([0.1, 0.5 - 1e-9, 0.2], dtype=torch.float64, requires_grad=True)
    with pytest.raises(GradcheckError) as info:
        check_grad(_raises_above_half, x, mode=mode, screen="two-sided")
    assert info.value.phase == "forward" and where in str(info.value)
    assert isinstance(info.value.__cause__, ValueError)
    assert str(info.value).startswith("_raises_above_half raised ValueError")


def test_a_forward_raising_at_the_inputs_is_wrapped():
    with pytest.raises(GradcheckError, match="at the given inputs.*boom") as info:
        check_grad(lambda a: (_ for _ in ()).throw(KeyError("boom")), _x())
    assert isinstance(info.value.__cause__, KeyError)


def test_inconclusive_is_not_a_mismatch():
    assert not issubclass(GradientInconclusive, GradientMismatch)
    assert not issubclass(GradientMismatch, GradientInconclusive)
