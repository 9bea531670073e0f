"""torch's rules for what gradcheck compares, each against torch.autograd.gradcheck on the
same inputs: empty tensors, outputs autograd does not differentiate, undefined grads of the
other outputs, -inf inputs, views of a larger storage, ZeroTensor grads, sparse inputs and
Jacobians too large for full mode."""
from __future__ import annotations

import pytest

from gradcheck.checks import check_grad

torch = pytest.importorskip("torch")
MODES = ["full", "fast"]


def _tensor(*shape, seed=0, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=gen, dtype=dtype).requires_grad_(True)


def _both(fn, inputs, mode):
    ours = check_grad(fn, inputs, mode=mode, raise_on_failure=False)
    theirs = torch.autograd.gradcheck(fn, inputs, fast_mode=mode == "fast",
                                      raise_exception=False)
    return ours, theirs


@pytest.mark.parametrize("mode", MODES)
def test_empty_inputs_and_outputs_pass_as_in_torch(mode):
    cases = [
        (torch.mm, (_tensor(0, 3), _tensor(3, 2))),
        (torch.mm, (_tensor(2, 0), _tensor(0, 3))),  # output has elements, inputs none
        (torch.exp, (_tensor(0),)),
        (lambda a, b: (a.sum(), torch.mm(a, b)), (_tensor(2, 3), _tensor(3, 0))),
    ]
    for fn, inputs in cases:
        ours, theirs = _both(fn, inputs, mode)
        assert theirs and ours.passed, str(ours)


@pytest.mark.parametrize("mode", MODES)
def test_outputs_autograd_does_not_differentiate_are_skipped(mode):
    x, w, b = _tensor(3, 4), _tensor(4, seed=1), _tensor(4, seed=2)
    fn = lambda x, w, b: torch.native_layer_norm(x, (4,), w, b, 1e-5)  # noqa: E731
    ours, theirs = _both(fn, (x, w, b), mode)
    assert theirs and ours.passed, str(ours)


@pytest.mark.parametrize("mode", MODES)
def test_other_outputs_get_no_grad_as_in_torch(mode):
    # native_group_norm's backward ignores mean and rstd when their grads are undefined, so
    # torch's gradcheck (one output at a time) fails it; feeding zeros would take another path
    x, w, b = _tensor(2, 4, 3), _tensor(4, seed=1), _tensor(4, seed=2)
    fn = lambda x, w, b: torch.native_group_norm(x, w, b, 2, 4, 3, 2, 1e-5)  # noqa: E731
    ours, theirs = _both(fn, (x, w, b), mode)
    assert not theirs and not ours.passed


@pytest.mark.parametrize("mode", MODES)
def test_minus_inf_inputs_give_finite_tolerances(mode):
    x = _tensor(3, 4).detach()
    x[0, 1] = x[2, :] = float("-inf")
    x.requires_grad_(True)
    fn = lambda x: torch.ops.aten._safe_softmax(x, -1)  # noqa: E731
    ours, theirs = _both(fn, (x,), mode)
    assert theirs and ours.passed, str(ours)


@pytest.mark.parametrize("mode", MODES)
def test_a_view_input_keeps_its_storage(mode):
    base = _tensor(20).detach()
    view = base.as_strided((2, 4), (4, 1), 3).detach().requires_grad_(True)  # offset 3
    assert view.storage_offset() == 3
    fn = lambda v: torch.as_strided(v, (2, 2), (1, 2), 5) * 2  # noqa: E731 - reads the storage
    ours, theirs = _both(fn, (view,), mode)
    assert theirs and ours.passed, str(ours)
    # a backward that drops the dependency is caught: the numeric side sees the storage
    dropped = lambda v: fn(v).detach() + 0 * v.sum()  # noqa: E731
    assert not check_grad(dropped, (view,), mode=mode, raise_on_failure=False).passed


@pytest.mark.parametrize("mode", MODES)
def test_zero_tensor_grads_are_zeros(mode):
    ours, theirs = _both(torch.sgn, (_tensor(5),), mode)
    assert theirs and ours.passed, str(ours)


def test_a_sparse_input_gets_a_type_error_that_names_it():
    x = _tensor(3, 3).detach().to_sparse_csr().requires_grad_(True)
    with pytest.raises(TypeError, match=r"input 0 is a sparse_csr tensor.*to_dense\(\)"):
        check_grad(lambda x: x.to_dense().sum(), (x,))


def test_a_jacobian_too_large_for_full_mode_points_to_fast_mode():
    x = _tensor(6000)
    w = torch.randn(6000, 6000, dtype=torch.float64)
    with pytest.raises(ValueError, match="mode='fast'"):
        check_grad(lambda x: w @ x, (x,))
    assert check_grad(lambda x: w @ x, (x,), mode="fast").passed


def test_the_taylor_line_says_what_it_means():
    from gradcheck.checks.planted import ROWS, numpy_case

    fn, inputs, vjp = numpy_case(ROWS["flipped sign"], buggy=True)
    wrong = check_grad(fn, inputs, vjp=vjp, raise_on_failure=False)
    assert "first order, as the mismatches above say: the gradient is wrong along it" in str(
        wrong)
    fn, inputs, vjp = numpy_case(ROWS["one wrong element of 1000"], buggy=True)
    hidden = check_grad(fn, inputs, vjp=vjp, raise_on_failure=False)
    assert not hidden.passed
    if hidden.taylor_order is not None:  # the bug is below one direction's resolution
        assert hidden.taylor_order > 1.5 and "too few or too small to show" in str(hidden)
