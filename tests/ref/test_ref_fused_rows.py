"""The fused rows (``gradcheck/ref/fused.py``) and the rules that run on arrays, against torch
in float64: values, first derivatives of every input, and second derivatives
(``create_graph=True``, where the rule rebuilds the composite and differentiates it).

Each case is ``fn(lib, *tensors)``; the same random arrays go to both libraries.
"""
from __future__ import annotations

import numpy as np
import pytest

import gradcheck.ref as ref


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    previous, mine = torch.get_default_dtype(), ref.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    ref.set_default_dtype(ref.float64)
    yield torch
    torch.set_default_dtype(previous)
    ref.set_default_dtype(mine)


def _run(lib, fn, arrays, double: bool, seed: int = 9):
    inputs = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]
    out = fn(lib, *inputs)
    weight = lib.tensor(np.random.default_rng(seed).normal(size=tuple(out.shape)),
                        dtype=lib.float64)
    if double:
        grads = lib.autograd.grad((out * weight).sum(), inputs, create_graph=True,
                                  allow_unused=True)
        terms = [(g ** 2).sum() for g in grads if g is not None and g.requires_grad]
        if terms:  # piecewise-linear ops (leaky_relu) have no second derivative graph
            sum(terms).backward()
    else:
        out.backward(weight)
    found = [out.detach().numpy()]
    found += [t.grad.numpy() if t.grad is not None else np.zeros(t.shape) for t in inputs]
    return found, out.grad_fn.name()


def _agree(torch, fn, shapes, double=False, name=None, tol=1e-10):
    rng = np.random.default_rng(0)
    arrays = [rng.normal(size=s) for s in shapes]
    mine, my_name = _run(ref, fn, arrays, double)
    theirs, _ = _run(torch, fn, arrays, double)
    for a, b in zip(mine, theirs):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    if name is not None:
        assert my_name == name


def F(lib):
    return lib.nn.functional


CONVOLUTIONS = {
    "conv2d stride, padding, bias": (lambda lib, x, w, b: F(lib).conv2d(x, w, b, stride=2, padding=1),
                                     [(2, 3, 9, 9), (4, 3, 4, 4), (4,)]),
    "conv2d dilation, groups": (lambda lib, x, w: F(lib).conv2d(x, w, padding=2, dilation=2,
                                                            groups=2),
                                [(2, 4, 7, 7), (6, 2, 3, 3)]),
    "conv_transpose2d output_padding": (
        lambda lib, x, w, b: F(lib).conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
        [(2, 3, 5, 5), (3, 4, 4, 4), (4,)]),
    "conv_transpose2d groups, dilation": (
        lambda lib, x, w: F(lib).conv_transpose2d(x, w, stride=2, padding=1, groups=3, dilation=2),
        [(2, 6, 4, 4), (6, 2, 3, 3)]),
    "conv1d": (lambda lib, x, w: F(lib).conv1d(x, w, padding=1), [(2, 3, 9), (5, 3, 3)]),
    "conv3d": (lambda lib, x, w: F(lib).conv3d(x, w, stride=(1, 2, 1)), [(1, 2, 4, 5, 4),
                                                                     (3, 2, 2, 2, 2)]),
}


@pytest.mark.parametrize("double", [False, True], ids=["first", "second"])
@pytest.mark.parametrize("case", list(CONVOLUTIONS))
def test_convolutions_are_one_node_with_torchs_derivatives(torch, case, double):
    fn, shapes = CONVOLUTIONS[case]
    _agree(torch, fn, shapes, double, None if double else "ConvolutionBackward0")


def _layer_norm(lib, x, w, b):
    return F(lib).layer_norm(x, (5,), w, b)


def _sdpa_bool_mask(lib, q, k, v):
    mask = lib.tensor(np.random.default_rng(5).random((4, 6)) > 0.3)
    return F(lib).scaled_dot_product_attention(q, k, v, attn_mask=mask)


NORMS_AND_ATTENTION = {
    "layer_norm": (_layer_norm, [(3, 4, 5), (5,), (5,)], "NativeLayerNormBackward0"),
    "sdpa": (lambda lib, q, k, v: F(lib).scaled_dot_product_attention(q, k, v),
             [(2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7)], "ScaledDotProductAttentionBackward0"),
    "sdpa causal, scale": (lambda lib, q, k, v: F(lib).scaled_dot_product_attention(
        q, k, v, is_causal=True, scale=0.3), [(2, 3, 4, 5), (2, 3, 4, 5), (2, 3, 4, 7)], None),
    "sdpa bool mask, broadcast batch": (_sdpa_bool_mask, [(2, 3, 4, 5), (1, 3, 6, 5),
                                                          (2, 1, 6, 7)], None),
    "leaky_relu": (lambda lib, x: F(lib).leaky_relu(x * 1.0, 0.2), [(3, 4)], "LeakyReluBackward0"),
    "leaky_relu in place": (lambda lib, x: F(lib).leaky_relu(x * 1.0, 0.2, inplace=True),
                            [(3, 4)], "LeakyReluBackward1"),
}


@pytest.mark.parametrize("double", [False, True], ids=["first", "second"])
@pytest.mark.parametrize("case", list(NORMS_AND_ATTENTION))
def test_norms_and_attention_match_torch(torch, case, double):
    fn, shapes, name = NORMS_AND_ATTENTION[case]
    _agree(torch, fn, shapes, double, None if double else name)


def _module_from_torch(torch, lib, make):
    torch.manual_seed(0)
    theirs = make(torch)
    if lib is torch:
        return theirs
    mine = make(lib)
    mine.load_state_dict({k: lib.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})
    return mine


@pytest.mark.parametrize("double", [False, True], ids=["first", "second"])
@pytest.mark.parametrize("options", [{}, {"num_layers": 2, "bidirectional": True},
                                     {"bias": False}], ids=["plain", "2 layers, both ways",
                                                            "no bias"])
@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_recurrent_layers_fused_over_time_match_torch(torch, kind, options, double):
    def run(lib):
        layer = _module_from_torch(torch, lib, lambda m: getattr(m.nn, kind)(3, 5, **options))
        rng = np.random.default_rng(2)
        states = 2 if options.get("bidirectional") else 1
        states *= options.get("num_layers", 1)
        x = lib.tensor(rng.normal(size=(6, 2, 3)), requires_grad=True)
        h0 = lib.tensor(rng.normal(size=(states, 2, 5)), requires_grad=True)
        c0 = lib.tensor(rng.normal(size=(states, 2, 5)), requires_grad=True)
        if kind == "LSTM":
            out, (h, c) = layer(x, (h0, c0))
            leaves = [x, h0, c0]
        else:
            out, h = layer(x, h0)
            c, leaves = h, [x, h0]
        loss = (out * lib.tensor(rng.normal(size=tuple(out.shape)))).sum() + (h ** 2).sum() + (
            c ** 3).sum()
        leaves += list(layer.parameters())
        if double:
            grads = lib.autograd.grad(loss, leaves, create_graph=True)
            sum((g ** 2).sum() for g in grads).backward()
        else:
            loss.backward()
        return [out.detach().numpy()] + [t.grad.numpy() for t in leaves]

    for a, b in zip(run(ref), run(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("double", [False, True], ids=["first", "second"])
@pytest.mark.parametrize("inplace", [False, True])
def test_batch_norm_with_affine_matches_torch(torch, inplace, double):
    def run(lib):
        def make(m):
            bn = m.nn.BatchNorm2d(3)
            with m.no_grad():
                bn.weight.uniform_()
                bn.bias.uniform_()
            return bn

        bn = _module_from_torch(torch, lib, make)
        x = lib.tensor(np.random.default_rng(0).normal(size=(2, 3, 4, 4)), requires_grad=True)
        y = lib.nn.functional.leaky_relu(bn(x * 1.0), 0.2, inplace=inplace)
        g = lib.tensor(np.random.default_rng(1).normal(size=(2, 3, 4, 4)))
        leaves = [x, bn.weight, bn.bias]
        if double:
            grads = lib.autograd.grad((y * g).sum(), leaves, create_graph=True)
            sum((q ** 2).sum() for q in grads if q.requires_grad).backward()
        else:
            y.backward(g)
        return [y.detach().numpy(), bn.running_mean.numpy(), bn.running_var.numpy()] + [
            t.grad.numpy() if t.grad is not None else np.zeros(tuple(t.shape)) for t in leaves]

    for a, b in zip(run(ref), run(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("double", [False, True], ids=["first", "second"])
@pytest.mark.parametrize("shape", [(6, 5), (3, 5, 4), (5,)], ids=["2-d", "spatial", "1-d"])
@pytest.mark.parametrize("kind", ["cross_entropy", "cross_entropy smoothed", "nll_loss"])
def test_class_index_losses_are_one_node_matching_torch(torch, kind, shape, double):
    rng = np.random.default_rng(0)
    classes = shape[1] if len(shape) > 1 else shape[0]
    target = rng.integers(0, classes, size=(shape[0],) + shape[2:] if len(shape) > 1 else ())
    if target.size > 1:
        target.flat[1] = -100
    weight = rng.uniform(0.5, 2, size=classes)
    for reduction in ("mean", "sum", "none"):
        for weighted in (False, True):
            def fn(lib, x):
                w = lib.tensor(weight) if weighted else None
                t = lib.tensor(target)
                if kind == "nll_loss":
                    return F(lib).nll_loss(lib.log_softmax(x, 1 if x.dim() > 1 else 0), t, w,
                                           reduction=reduction)
                smoothing = 0.2 if kind.endswith("smoothed") else 0.0
                return F(lib).cross_entropy(x, t, w, reduction=reduction,
                                            label_smoothing=smoothing)

            _agree(torch, fn, [shape], double)


def test_class_index_losses_keep_torchs_errors(torch):
    for lib in (ref, torch):
        with pytest.raises(IndexError, match="Target 7 is out of bounds"):
            F(lib).cross_entropy(lib.zeros(2, 3), lib.tensor([0, 7]))
        with pytest.raises(RuntimeError, match="expected target dtype to be Long"):
            F(lib).nll_loss(lib.zeros(2, 3), lib.tensor([0.0, 1.0]))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_clip_grad_norm_on_arrays_is_torchs_to_the_bit(torch, dtype):
    for max_norm in (0.25, 100.0):
        found = []
        for lib in (ref, torch):
            params = [lib.nn.Parameter(lib.zeros(s, dtype=getattr(lib, dtype)))
                      for s in [(3, 4), (5,), (2, 2, 2), (0,)]]
            for i, p in enumerate(params):
                p.grad = lib.tensor(np.random.default_rng(i).normal(size=tuple(p.shape)),
                                    dtype=getattr(lib, dtype))
            total = lib.nn.utils.clip_grad_norm_(params, max_norm)
            found.append([total.numpy()] + [p.grad.numpy() for p in params])
        for a, b in zip(*found):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)


def test_pow_by_small_scalars_is_torchs_to_the_bit(torch):
    x = np.random.default_rng(0).normal(size=50) * 3
    x[:3] = [0.0, -0.0, np.inf]
    for exponent in (2, 3, 0.5, -0.5, -1, -2, 3.0):
        mine = (ref.tensor(x, dtype=ref.float64) ** exponent).numpy()
        theirs = (torch.tensor(x, dtype=torch.float64) ** exponent).numpy()
        np.testing.assert_array_equal(mine, theirs)


def test_array_rules_match_the_graph_rules(torch):
    """tanh, sigmoid, relu, exp, softmax, log_softmax, mul, cat, stack, linear and matmul on
    the arrays (no create_graph) against torch."""

    def fn(lib, a, b, w):
        h = lib.cat([a.tanh(), b.sigmoid()], 1).relu() * a.exp().sum()
        h = lib.stack([h, h.softmax(-1), h.log_softmax(-1)], 0)
        return F(lib).linear(h, w) @ w + (a.mT @ b).sum()

    _agree(torch, fn, [(4, 3), (4, 3), (5, 6)])


def test_cross_entropy_lets_the_logits_be_edited_after_it_as_torch(torch):
    """torch's kernel keeps log_softmax's output, not the logits: an in-place edit of the
    logits after the loss is not an error; a second backward through the freed graph is."""
    for lib in (ref, torch):
        x = lib.zeros(2, 3, requires_grad=True)
        logits = x * 2
        loss = F(lib).cross_entropy(logits, lib.tensor([0, 2]))
        logits.add_(1.0)
        loss.backward()
        np.testing.assert_allclose(x.grad.numpy(), [[-2 / 3, 1 / 3, 1 / 3],
                                                    [1 / 3, 1 / 3, -2 / 3]])
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            loss.backward()


def test_fused_rows_check_in_place_edits_of_what_torch_saves(torch):
    """A conv's or a batch norm's bias may be edited before backward (torch does not save
    it); its input and weight may not."""
    for lib in (ref, torch):
        conv = lib.nn.Conv2d(1, 2, 3)
        norm = lib.nn.BatchNorm2d(2)
        out = norm(conv(lib.ones(1, 1, 4, 4))).sum()
        with lib.no_grad():
            conv.bias.add_(1.0)
            norm.bias.add_(1.0)
        out.backward()
        out = conv(lib.ones(1, 1, 4, 4)).sum()
        with lib.no_grad():
            conv.weight.add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.backward()
