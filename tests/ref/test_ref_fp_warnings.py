"""inf/nan arithmetic is silent, as in torch, and leaves the user's numpy error state alone."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradcheck.ref as ref

torch = pytest.importorskip("torch")
INF, NAN = float("inf"), float("nan")
X = [INF, 0.0, -INF, 1.0, 0.0, -2.0]
Y = [0.0, 0.0, INF, 0.0, INF, NAN]

# Each case: (name, fn(m, x, y)) computing an output from two float64 tensors that need grad.
CASES = {
    "inf * 0": lambda m, x, y: x * y,
    "0 / 0": lambda m, x, y: x / y,
    "log(0)": lambda m, x, y: m.log(x),
    "sqrt of negatives": lambda m, x, y: m.sqrt(x),
    "exp overflow": lambda m, x, y: m.exp(x * 1e3),
    "inf - inf": lambda m, x, y: x - y,
    "pow": lambda m, x, y: x ** y,
    "matmul with inf": lambda m, x, y: m.matmul(x.reshape(2, 3), y.reshape(3, 2)),
    "softmax of inf": lambda m, x, y: m.softmax(x.reshape(2, 3), dim=1),
    "mean and var": lambda m, x, y: m.stack([x.mean(), x.var(), y.sum()]),
    "einsum": lambda m, x, y: m.einsum("i,i->", x, y).reshape(1),
}


def _run(m, fn):
    x = m.tensor(X, dtype=m.float64, requires_grad=True)
    y = m.tensor(Y, dtype=m.float64, requires_grad=True)
    out = fn(m, x, y)
    out.backward(m.ones_like(out))
    grads = [t.grad.numpy() if t.grad is not None else None for t in (x, y)]
    return out.detach().numpy(), grads


def _assert_same(a, b):
    if a is None or b is None:
        assert a is None and b is None
        return
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))  # equal nan/inf positions


@pytest.mark.parametrize("case", CASES)
def test_forward_and_backward_are_silent_and_match_torch(case):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out, grads = _run(ref, CASES[case])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected_out, expected_grads = _run(torch, CASES[case])
    _assert_same(out, expected_out)
    for got, want in zip(grads, expected_grads):
        _assert_same(got, want)


@pytest.mark.parametrize("op", ["mul_", "div_", "add_", "sub_"])
def test_in_place_ops_are_silent(op):
    def run(m):
        t = m.tensor([INF, 0.0, -INF, 1.0])
        getattr(t, op)(m.tensor([0.0, 0.0, INF, 0.0]))
        return t.numpy()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = run(ref)
    _assert_same(got, run(torch))


def test_optimizer_step_on_nan_grads_is_silent():
    p = ref.nn.Parameter(ref.tensor([1.0, 2.0]))
    opt = ref.optim.Adam([p], lr=0.1)
    (p * ref.tensor([INF, 0.0])).sum().backward()
    p.grad.mul_(0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
    assert np.isnan(p.detach().numpy()[0])


def test_users_numpy_error_state_is_kept_inside_and_after_engine_calls():
    old = np.seterr(all="raise")
    try:
        x = ref.tensor([0.0], requires_grad=True)
        ref.log(x).sum().backward()
        assert np.geterr() == {"divide": "raise", "over": "raise", "under": "raise",
                               "invalid": "raise"}
        with pytest.raises(FloatingPointError):
            np.log(np.zeros(1))
    finally:
        np.seterr(**old)


def test_errors_inside_an_op_still_restore_the_error_state():
    before = np.geterr()
    with pytest.raises(RuntimeError):
        ref.matmul(ref.ones(2, 3), ref.ones(2, 3))
    assert np.geterr() == before
