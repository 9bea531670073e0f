"""Every planted gradient bug is caught, in both modes, with numpy VJPs, torch Functions and
gradcheck.ref (engine) Functions; the same rows with their right backward pass."""
import pytest

from gradcheck.checks import GradientMismatch, check_grad
from gradcheck.checks.planted import ROWS, framework_case, numpy_case, torch_case

MODES = ["full", "fast"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(ROWS))
def test_numpy_planted_bug_is_caught(name, mode):
    fn, inputs, vjp = numpy_case(ROWS[name], buggy=True)
    with pytest.raises(GradientMismatch) as info:
        check_grad(fn, inputs, vjp=vjp, mode=mode)
    assert info.value.result.mismatches, info.value.result


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(ROWS))
def test_numpy_right_backward_passes(name, mode):
    fn, inputs, vjp = numpy_case(ROWS[name], buggy=False)
    result = check_grad(fn, inputs, vjp=vjp, mode=mode)
    assert result.passed and not result.nondifferentiable


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(ROWS))
def test_torch_function_planted_bug_is_caught(name, mode):
    pytest.importorskip("torch")
    fn, inputs = torch_case(ROWS[name], buggy=True)
    result = check_grad(fn, inputs, mode=mode, raise_on_failure=False)
    assert not result.passed and result.mismatches


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(ROWS))
def test_torch_function_right_backward_passes(name, mode):
    pytest.importorskip("torch")
    fn, inputs = torch_case(ROWS[name], buggy=False)
    assert check_grad(fn, inputs, mode=mode).passed


def _engine():
    ref = pytest.importorskip("gradcheck.ref")
    if not hasattr(ref, "autograd") or not hasattr(ref, "tensor"):
        pytest.skip("the reference engine has no autograd.Function yet")
    return ref


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(ROWS))
def test_engine_function_planted_bug_is_caught(name, mode):
    fn, inputs = framework_case(_engine(), ROWS[name], buggy=True)
    result = check_grad(fn, inputs, mode=mode, raise_on_failure=False)
    assert not result.passed and result.mismatches and result.framework == "gradcheck.ref"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(ROWS))
def test_engine_function_right_backward_passes(name, mode):
    fn, inputs = framework_case(_engine(), ROWS[name], buggy=False)
    assert check_grad(fn, inputs, mode=mode).passed


def test_second_input_is_the_one_named():
    fn, inputs, vjp = numpy_case(ROWS["the second input's gradient wrong"], buggy=True)
    result = check_grad(fn, inputs, vjp=vjp, raise_on_failure=False)
    assert {m.input for m in result.mismatches} == {"input 1"}


def test_one_wrong_element_of_1000_is_located_exactly():
    fn, inputs, vjp = numpy_case(ROWS["one wrong element of 1000"], buggy=True)
    for mode in MODES:
        result = check_grad(fn, inputs, vjp=vjp, mode=mode, raise_on_failure=False)
        assert result.mismatch_counts == {("output", "input"): 1}
        assert result.worst().index == (417,) and result.worst().out_index == (417,)


def test_wrong_for_negatives_flags_exactly_the_negative_elements():
    fn, inputs, vjp = numpy_case(ROWS["wrong only for negative inputs"], buggy=True)
    result = check_grad(fn, inputs, vjp=vjp, raise_on_failure=False)
    negatives = int((inputs[0] < 0).sum())
    assert 0 < negatives < inputs[0].size
    assert result.mismatch_counts[("output", "input")] == negatives
    assert all(inputs[0][m.index] < 0 for m in result.mismatches)
