"""One row per torch op: hypothesis draws shapes and values, torch autograd is the right
backward (it must pass in both modes) and the same backward scaled by 1.001 must fail
wherever the Jacobian is not zero."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradcheck import strategies as gst
from gradcheck.checks import check_grad

torch = pytest.importorskip("torch")

# name -> (fn, number of inputs, value bounds, kinks to keep away from)
OPS = {
    "tanh": (torch.tanh, 1, (-3, 3), ()),
    "sigmoid": (torch.sigmoid, 1, (-5, 5), ()),
    "exp": (torch.exp, 1, (-3, 3), ()),
    "log": (torch.log, 1, (0.1, 5), ()),
    "sqrt": (torch.sqrt, 1, (0.1, 5), ()),
    # a softmax over one element is constant: every backward of it is right, so draw >= 2
    "softmax": (lambda x: torch.softmax(x, -1), 1, (-3, 3), ()),
    "logsumexp": (lambda x: torch.logsumexp(x, -1), 1, (-3, 3), ()),
    "relu": (torch.relu, 1, (-3, 3), (0.0,)),
    "abs": (torch.abs, 1, (-3, 3), (0.0,)),
    "mul": (torch.mul, 2, (-3, 3), ()),
    "div": (torch.div, 2, (0.5, 3), ()),
    "pow": (torch.pow, 2, (0.5, 2), ()),
    "atan2": (torch.atan2, 2, (0.5, 3), ()),
}


class _ScaledBackward(torch.autograd.Function):
    """Identity forward whose backward is 0.1% too large: a bug for every upstream op."""

    @staticmethod
    def forward(ctx, y):
        return y.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad * 1.001


def _inputs(name):
    _, arity, (low, high), kinks = OPS[name]
    min_side = 2 if name == "softmax" else 1
    shapes = gst.broadcastable_shapes(arity, min_dims=1, max_dims=2, min_side=min_side,
                                      max_side=4)
    return shapes.flatmap(lambda found: st.tuples(*[
        gst.tensors(shape, min_value=low, max_value=high, avoid=kinks, margin=1e-3)
        for shape in found
    ]))


@pytest.mark.parametrize("name", list(OPS))
@settings(max_examples=4)
@given(data=st.data())
def test_right_backward_passes_and_a_scaled_one_fails(name, data):
    fn = OPS[name][0]
    inputs = data.draw(_inputs(name))
    mode = data.draw(st.sampled_from(["full", "fast"]))
    result = check_grad(fn, inputs, mode=mode, nondifferentiable="fail")
    assert result.passed
    bad = check_grad(lambda *xs: _ScaledBackward.apply(fn(*xs)), inputs, mode=mode,
                     raise_on_failure=False)
    jacobians = torch.autograd.functional.jacobian(fn, inputs)
    if any(bool(j.abs().max() > 0) for j in jacobians):  # relu(x < 0) has nothing to get wrong
        assert not bad.passed and bad.mismatches
    else:
        assert bad.passed
