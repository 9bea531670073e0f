"""Convolution, pooling, padding, interpolation and normalisation layers against torch.

Each property draws the geometry with hypothesis (strides, padding, dilation, groups, sizes),
builds the layer on both libraries with ``compare_with_torch`` (torch's initial weights copied
into the engine), and requires the outputs, the loss and every parameter gradient to agree in
float64; an input gradient is checked by making the input a parameter of a wrapper module.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import gradcheck.ref as ref

EXAMPLES = settings(max_examples=8, deadline=None)


def _with_input_grad(make_layer, shape):
    """build(lib): a module holding the input as a Parameter, so its gradient is compared."""
    def build(lib):
        class Wrapped(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.x = lib.nn.Parameter(lib.randn(*shape))
                self.layer = make_layer(lib)

            def forward(self, scale):
                return self.layer(self.x * scale)

        return Wrapped()

    return build


def _check(make_layer, shape, *, train=True, steps=1, optimizer=None, atol=1e-11):
    pytest.importorskip("torch")
    report = ref.compare_with_torch(_with_input_grad(make_layer, shape), [np.array(1.5)],
                                    train=train, steps=steps, optimizer=optimizer,
                                    rtol=1e-9, atol=atol)
    report.assert_ok()


@st.composite
def conv_geometry(draw, spatial=2):
    groups = draw(st.sampled_from([1, 2]))
    c_in, c_out = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(spatial))
    stride = tuple(draw(st.integers(1, 2)) for _ in range(spatial))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(spatial))
    padding = tuple(draw(st.integers(0, 2)) for _ in range(spatial))
    size = tuple(draw(st.integers(d * (k - 1) + 1, 7)) for k, d in zip(kernel, dilation))
    return dict(c_in=c_in, c_out=c_out, kernel=kernel, stride=stride, dilation=dilation,
                padding=padding, groups=groups, size=size, bias=draw(st.booleans()))


@pytest.mark.parametrize("spatial", [1, 2, 3])
@EXAMPLES
@given(data=st.data())
def test_conv_matches_torch(spatial, data):
    g = data.draw(conv_geometry(spatial))
    _check(lambda lib: getattr(lib.nn, f"Conv{spatial}d")(
        g["c_in"], g["c_out"], g["kernel"], g["stride"], g["padding"], g["dilation"],
        g["groups"], g["bias"]), (2, g["c_in"]) + g["size"])


@pytest.mark.parametrize("spatial", [1, 2, 3])
@EXAMPLES
@given(data=st.data())
def test_conv_transpose_matches_torch(spatial, data):
    g, extra = data.draw(conv_geometry(spatial)), data.draw(st.integers(0, 1))
    output_padding = tuple(min(extra, max(s, d) - 1) for s, d in zip(g["stride"],
                                                                     g["dilation"]))
    # a positive output size needs 2 * padding <= dilation * (kernel - 1)
    padding = tuple(min(p, d * (k - 1) // 2) for p, d, k in zip(g["padding"], g["dilation"],
                                                                g["kernel"]))
    _check(lambda lib: getattr(lib.nn, f"ConvTranspose{spatial}d")(
        g["c_in"], g["c_out"], g["kernel"], g["stride"], padding, output_padding, g["groups"],
        g["bias"], g["dilation"]), (2, g["c_in"]) + g["size"])


def test_conv_errors_match_torch():
    """A kernel larger than the padded input, and a padding tuple of the wrong length."""
    torch = pytest.importorskip("torch")
    for lib in (torch, ref):
        conv2d = lib.nn.functional.conv2d
        with pytest.raises(RuntimeError, match="Kernel size can't be greater"):
            conv2d(lib.zeros(1, 1, 6, 7), lib.zeros(6, 1, 3, 3), dilation=3)
        with pytest.raises(RuntimeError, match="padding to be a single integer value or a list "
                                               "of 2 values"):
            conv2d(lib.zeros(2, 16, 2, 2), lib.zeros(32, 16, 3, 3), padding=(1, 1, 1))


@st.composite
def pool_geometry(draw, spatial=2):
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(spatial))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(spatial))
    padding = tuple(draw(st.integers(0, k // 2)) for k in kernel)
    size = tuple(draw(st.integers(k, 7 if spatial < 3 else 5)) for k in kernel)
    return dict(kernel=kernel, stride=stride, padding=padding, size=size,
                ceil_mode=draw(st.booleans()))


@pytest.mark.parametrize("spatial", [1, 2, 3])
@EXAMPLES
@given(data=st.data())
def test_max_pool_matches_torch(spatial, data):
    g, dilation = data.draw(pool_geometry(spatial)), data.draw(st.integers(1, 2))
    # torch wants every window to start inside the input or its left padding
    assume(all((k - 1) * dilation + 1 <= s + 2 * p for k, s, p in zip(g["kernel"], g["size"],
                                                                      g["padding"])))
    _check(lambda lib: getattr(lib.nn, f"MaxPool{spatial}d")(
        g["kernel"], g["stride"], g["padding"], dilation, ceil_mode=g["ceil_mode"]),
        (2, 3) + g["size"])


@pytest.mark.parametrize("spatial", [1, 2, 3])
@EXAMPLES
@given(data=st.data())
def test_avg_pool_matches_torch(spatial, data):
    g, count_include_pad = data.draw(pool_geometry(spatial)), data.draw(st.booleans())
    _check(lambda lib: getattr(lib.nn, f"AvgPool{spatial}d")(
        g["kernel"], g["stride"], g["padding"], g["ceil_mode"], count_include_pad),
        (2, 3) + g["size"])


@pytest.mark.parametrize("spatial", [1, 2, 3])
@EXAMPLES
@given(data=st.data())
def test_max_pool_indices_and_unpool_match_torch(spatial, data):
    """return_indices gives torch's flat plane indices; max_unpool writes each value back
    there (the gradient of the round trip flows through both)."""
    g = data.draw(pool_geometry(spatial))
    kw = {"kernel_size": g["kernel"], "stride": g["stride"], "padding": g["padding"]}

    def unpool(lib, x):
        f = lib.nn.functional
        values, indices = getattr(f, f"max_pool{spatial}d")(x, return_indices=True, **kw)
        return indices, getattr(f, f"max_unpool{spatial}d")(values, indices, output_size=x.shape,
                                                            **kw)

    _check(lambda lib: _Lambda(lib, lambda x: unpool(lib, x)[1]), (2, 3) + g["size"])
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((2, 3) + g["size"])
    ours, theirs = unpool(ref, ref.tensor(x))[0], unpool(torch, torch.tensor(x))[0]
    assert ours.dtype == ref.int64
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_pool_padding_of_the_wrong_length_is_a_runtime_error_like_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, ref):
        with pytest.raises(RuntimeError, match="padding must either be a single int"):
            lib.nn.functional.avg_pool2d(lib.zeros(1, 1, 4, 4), 2, padding=(1, 1, 1))


@EXAMPLES
@given(st.integers(1, 8), st.integers(1, 8), st.integers(1, 5), st.integers(1, 5))
def test_adaptive_pools_match_torch(h, w, oh, ow):
    _check(lambda lib: lib.nn.AdaptiveAvgPool2d((oh, ow)), (2, 2, h, w))
    _check(lambda lib: lib.nn.AdaptiveMaxPool2d((min(oh, h), min(ow, w))), (2, 2, h, w))


@EXAMPLES
@given(st.integers(1, 5), st.integers(1, 5), st.sampled_from(["nearest", "bilinear"]),
       st.one_of(st.none(), st.booleans()), st.sampled_from([None, 2, 1.5, (2, 3)]),
       st.integers(1, 9), st.integers(1, 9))
def test_interpolate_matches_torch(h, w, mode, align, scale, oh, ow):
    align = None if mode == "nearest" else align
    kwargs = dict(scale_factor=scale) if scale is not None else dict(size=(oh, ow))
    _check(lambda lib: _Lambda(lib, lambda x: lib.nn.functional.interpolate(
        x, mode=mode, align_corners=align, **kwargs)), (1, 2, h, w))


@EXAMPLES
@given(st.lists(st.integers(-2, 3), min_size=2, max_size=4).filter(lambda p: len(p) % 2 == 0),
       st.sampled_from(["constant", "reflect", "replicate", "circular"]))
def test_pad_matches_torch(widths, mode):
    """Negative widths crop, in every mode (circular crops before wrapping)."""
    if mode != "constant":  # torch pads the last two dims of a 4-D input in these modes
        widths = (widths + widths)[:4]
    if mode == "circular":  # torch refuses to wrap more than once around the cropped dim
        kept = [n - max(-b, 0) - max(-a, 0) for n, b, a in zip((5, 4), widths[::2], widths[1::2])]
        assume(all(max(b, a) <= k for k, b, a in zip(kept, widths[::2], widths[1::2])))
    _check(lambda lib: _Lambda(lib, lambda x: lib.nn.functional.pad(x, tuple(widths), mode)),
           (2, 3, 4, 5))


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_running_stats_match_torch(train, momentum):
    opt = (lambda lib, params: lib.optim.SGD(params, lr=0.01))
    # NOTE: a bias feeding a batch norm has an exactly-zero gradient, so both sides hold only
    # rounding noise there (~1e-12 after a few steps): hence the absolute tolerance.
    _check(lambda lib: lib.nn.Sequential(lib.nn.BatchNorm2d(3, momentum=momentum),
                                         lib.nn.Conv2d(3, 2, 1), lib.nn.BatchNorm2d(2)),
           (4, 3, 5, 5), train=train, steps=3, optimizer=opt, atol=1e-9)
    _check(lambda lib: lib.nn.BatchNorm1d(3, affine=False), (4, 3), train=train)
    _check(lambda lib: lib.nn.BatchNorm1d(3), (4, 3, 6), train=train, steps=2, optimizer=opt,
           atol=1e-9)


def test_batch_norm_buffers_match_torch(torch):
    x = np.random.default_rng(0).normal(size=(6, 3, 4))
    buffers = []
    for lib in (torch, ref):
        bn = lib.nn.BatchNorm1d(3, momentum=None).double()
        for _ in range(3):
            bn(lib.tensor(x))
        buffers.append([bn.running_mean.numpy(), bn.running_var.numpy(),
                        int(bn.num_batches_tracked)])
    np.testing.assert_allclose(buffers[1][0], buffers[0][0], rtol=1e-12)
    np.testing.assert_allclose(buffers[1][1], buffers[0][1], rtol=1e-12)
    assert buffers[1][2] == buffers[0][2] == 3


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_group_norm_matches_torch(groups):
    _check(lambda lib: lib.nn.GroupNorm(groups, 4), (3, 4, 5))


def test_batch_norm_double_backward_matches_torch(torch):
    grads = []
    for lib in (torch, ref):
        x = lib.tensor(np.random.default_rng(1).normal(size=(4, 3, 2)), requires_grad=True)
        out = lib.nn.functional.batch_norm(x, None, None, training=True)
        (g,) = lib.autograd.grad((out ** 3).sum(), x, create_graph=True)
        grads.append(lib.autograd.grad((g * g).sum(), x)[0].numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-8, atol=1e-10)


class _Lambda:
    """A module around a function (built per library, so it can hold no parameters)."""

    def __new__(cls, lib, fn):
        class Fn(lib.nn.Module):
            def forward(self, x):
                return fn(x)

        return Fn()
