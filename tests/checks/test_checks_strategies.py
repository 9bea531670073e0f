"""gradcheck.strategies: shapes, bounded values away from kinks, framework tensors, and the
one-line property helpers (including shrinking to a minimal failing input)."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradcheck import strategies as gst
from gradcheck.checks import GradientMismatch


@given(gst.shapes(min_dims=1, max_dims=3, min_side=2, max_side=4))
def test_shapes_respect_their_bounds(shape):
    assert 1 <= len(shape) <= 3 and all(2 <= side <= 4 for side in shape)


@given(gst.broadcastable_shapes(3, max_dims=3))
def test_broadcastable_shapes_broadcast(shapes):
    assert len(shapes) == 3
    np.broadcast_shapes(*shapes)


@given(gst.arrays(gst.shapes(), min_value=-2.0, max_value=2.0, avoid=[0.0, 1.0], margin=0.05))
def test_arrays_stay_bounded_and_away_from_kinks(a):
    assert a.dtype == np.float64 and np.all(np.isfinite(a))
    assert np.all((a >= -2.0) & (a <= 2.0))
    assert np.all(np.abs(a) >= 0.05) and np.all(np.abs(a - 1.0) >= 0.05)


@given(gst.arrays(st.just((4,)), dtype=st.sampled_from(["float32", "float64"])))
def test_arguments_may_be_strategies(a):
    assert a.shape == (4,) and a.dtype in (np.float32, np.float64)


@pytest.mark.parametrize("call, named", [
    (lambda: gst.arrays((2,), min_value=3.0, max_value=1.0), "min_value=3.0"),
    (lambda: gst.arrays((2,), margin=-1.0), "margin=-1.0"),
    (lambda: gst.shapes(min_dims=4, max_dims=2), "min_dims=4"),
    (lambda: gst.tensors((2,), framework="mxnet"), "framework='mxnet'"),
    (lambda: gst.broadcastable_shapes(0), "num_shapes=0"),
    (lambda: gst.arrays((2,), min_value=-1.0, max_value=1.0, avoid=[0.0], margin=2.0),
     "avoid=(0.0,)"),
])
def test_bad_options_name_the_argument_and_value(call, named):
    with pytest.raises(ValueError, match=named.replace("(", r"\(").replace(")", r"\)")):
        call()


def test_bad_dtype_is_named_eagerly_and_when_drawn():
    with pytest.raises(ValueError, match="dtype='int8'"):
        gst.arrays((2,), dtype="int8")

    @given(gst.arrays((2,), dtype=st.just("int8")))
    def draw(a):
        pass

    with pytest.raises(ValueError, match="dtype='int8'"):
        draw()


def test_one_line_per_op_with_numpy():
    gst.assert_gradients(np.tanh, gst.arrays(gst.shapes(max_dims=2)),
                         vjp=lambda g, x: (g / np.cosh(x) ** 2,))


def test_one_line_per_op_with_torch_and_kinks_avoided():
    torch = pytest.importorskip("torch")
    relu_input = gst.tensors(gst.shapes(max_dims=2), avoid=[0.0], margin=1e-3)
    gst.assert_gradients(torch.relu, relu_input, mode="full", nondifferentiable="fail")
    pair = gst.broadcastable_shapes(2, max_dims=2)
    gst.assert_gradients(torch.mul, gst.tensors(pair.map(lambda s: s[0])),
                         gst.tensors((1,)))


@gst.given_grad_check(np.exp, gst.arrays(gst.shapes(max_dims=1), min_value=15, max_value=20),
                      vjp=lambda g, x: (g * np.exp(x),), mode="full")
def test_decorator_form(result):
    assert result.passed and result.mode == "full"


def test_a_failure_shrinks_to_a_minimal_input():
    seen = []

    def vjp(g, x):  # wrong only where x > 1
        seen.append(x.copy())
        return (g * np.where(x > 1, 3 * x, 2 * x),)

    with pytest.raises(GradientMismatch):
        gst.assert_gradients(np.square, gst.arrays(gst.shapes(max_dims=2, max_side=6)),
                             vjp=vjp, mode="full")
    minimal = seen[-1]
    assert minimal.size == 1 and minimal.ravel()[0] > 1
