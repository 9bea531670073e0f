"""Layers and losses: forward values and backward gradients against torch, in float64.

One row per case: how to build the module from a framework (`lib` is torch or the engine) and
how to draw its inputs. Float inputs require grad; integer inputs are indices or class targets.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st


def normal(*shape, scale=1.0):
    return lambda rng: rng.normal(size=shape, scale=scale)


def uniform(*shape, low=0.05, high=0.95):
    return lambda rng: rng.uniform(low, high, size=shape)


def ints(high, *shape, low=0):
    return lambda rng: rng.integers(low, high, size=shape)


def fixed(values, dtype=np.float64):
    return lambda rng: np.array(values, dtype=dtype)


# (id, build(lib) -> module, [input drawers])
CASES = [
    ("Linear", lambda nn: nn.Linear(4, 3), [normal(5, 4)]),
    ("Linear-nobias", lambda nn: nn.Linear(4, 3, bias=False), [normal(5, 4)]),
    ("Linear-3d", lambda nn: nn.Linear(4, 2), [normal(2, 3, 4)]),
    ("ReLU", lambda nn: nn.ReLU(), [normal(5, 4)]),
    ("LeakyReLU", lambda nn: nn.LeakyReLU(0.2), [fixed([[-1.0, 0.0, 2.0], [0.5, -0.3, 0.0]])]),
    ("Flatten", lambda nn: nn.Flatten(), [normal(2, 3, 4)]),
    ("Tanh", lambda nn: nn.Tanh(), [normal(5, 4, scale=3.0)]),
    ("Sigmoid", lambda nn: nn.Sigmoid(), [normal(5, 4, scale=3.0)]),
    ("Softmax", lambda nn: nn.Softmax(dim=1), [normal(5, 4, scale=3.0)]),
    ("Softmax-dim0", lambda nn: nn.Softmax(dim=0), [normal(5, 4)]),
    ("LogSoftmax", lambda nn: nn.LogSoftmax(dim=1), [normal(5, 4, scale=3.0)]),
    ("LogSoftmax-huge", lambda nn: nn.LogSoftmax(dim=-1),
     [fixed([[1000.0, -1000.0, 999.0], [-500.0, -501.0, -502.0]])]),
    ("LayerNorm", lambda nn: nn.LayerNorm(4), [normal(5, 4)]),
    ("LayerNorm-2d", lambda nn: nn.LayerNorm((3, 4)), [normal(2, 3, 4)]),
    ("LayerNorm-noaffine", lambda nn: nn.LayerNorm(4, elementwise_affine=False, eps=1e-3),
     [normal(5, 4)]),
    ("Embedding", lambda nn: nn.Embedding(10, 3), [ints(10, 2, 4)]),
    ("Embedding-padding", lambda nn: nn.Embedding(6, 3, padding_idx=0), [ints(6, 3, 5)]),
    ("Identity", lambda nn: nn.Identity(), [normal(3)]),
    ("Dropout-eval", lambda nn: nn.Dropout(0.5).eval(), [normal(5, 4)]),
    ("Dropout-p0", lambda nn: nn.Dropout(0.0), [normal(5, 4)]),
    ("Sequential-MLP", lambda nn: nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2),
                                                nn.Sigmoid()), [normal(3, 4)]),
    ("MSELoss", lambda nn: nn.MSELoss(), [normal(5, 3), normal(5, 3)]),
    ("MSELoss-sum", lambda nn: nn.MSELoss(reduction="sum"), [normal(5, 3), normal(5, 3)]),
    ("MSELoss-none", lambda nn: nn.MSELoss(reduction="none"), [normal(5, 3), normal(5, 3)]),
    ("L1Loss", lambda nn: nn.L1Loss(), [normal(5, 3), normal(5, 3)]),
    ("L1Loss-none", lambda nn: nn.L1Loss(reduction="none"), [normal(5, 3), normal(5, 3)]),
    ("CrossEntropy", lambda nn: nn.CrossEntropyLoss(), [normal(6, 4, scale=2.0), ints(4, 6)]),
    ("CrossEntropy-sum", lambda nn: nn.CrossEntropyLoss(reduction="sum"),
     [normal(6, 4), ints(4, 6)]),
    ("CrossEntropy-none", lambda nn: nn.CrossEntropyLoss(reduction="none"),
     [normal(6, 4), ints(4, 6)]),
    ("CrossEntropy-ignore", lambda nn: nn.CrossEntropyLoss(ignore_index=1),
     [normal(8, 3), fixed([0, 1, 2, 1, 0, 2, 1, 1], np.int64)]),
    ("CrossEntropy-3d", lambda nn: nn.CrossEntropyLoss(), [normal(2, 4, 3), ints(4, 2, 3)]),
    ("CrossEntropy-huge", lambda nn: nn.CrossEntropyLoss(),
     [fixed([[800.0, -800.0], [0.0, 900.0]]), ints(2, 2)]),
    ("NLLLoss", lambda nn: nn.NLLLoss(), [normal(6, 4), ints(4, 6)]),
    ("NLLLoss-none", lambda nn: nn.NLLLoss(reduction="none"), [normal(6, 4), ints(4, 6)]),
    ("BCELoss", lambda nn: nn.BCELoss(), [uniform(4, 3), uniform(4, 3, low=0.0, high=1.0)]),
    ("BCELoss-sum", lambda nn: nn.BCELoss(reduction="sum"), [uniform(7), uniform(7)]),
    ("BCEWithLogits", lambda nn: nn.BCEWithLogitsLoss(),
     [normal(4, 3, scale=3.0), uniform(4, 3, low=0.0, high=1.0)]),
    ("BCEWithLogits-extreme", lambda nn: nn.BCEWithLogitsLoss(reduction="none"),
     [fixed([0.0, 60.0, -60.0, 0.0, 1e-8]), fixed([1.0, 0.0, 1.0, 0.3, 0.5])]),
]


def _as_input(lib, array):
    if array.dtype.kind in "iu":
        return lib.tensor(array.astype(np.int64))
    return lib.tensor(array.astype(np.float64), requires_grad=True)


def _run(lib, module, arrays, cotangent_seed=1):
    inputs = [_as_input(lib, a) for a in arrays]
    out = module(*inputs)
    cotangent = np.random.default_rng(cotangent_seed).normal(size=tuple(out.shape))
    (out * lib.tensor(cotangent)).sum().backward()
    grads = [t.grad for t in inputs if t.requires_grad]
    param_grads = [p.grad for p in module.parameters()]
    return out, grads, param_grads


@pytest.mark.parametrize("name, build, drawers", CASES, ids=[c[0] for c in CASES])
def test_forward_and_backward_match_torch(name, build, drawers, ref, torch, helpers):
    rng = np.random.default_rng(0)
    arrays = [np.asarray(draw(rng)) for draw in drawers]
    torch.manual_seed(0)
    t_module = build(torch.nn).double()
    r_module = build(ref.nn).double()
    helpers.copy_parameters(t_module, r_module, ref)

    t_out, t_grads, t_pgrads = _run(torch, t_module, arrays)
    r_out, r_grads, r_pgrads = _run(ref, r_module, arrays)
    assert r_out.dtype == ref.float64
    helpers.assert_close(r_out, t_out, rtol=1e-10, atol=1e-12, what=f"{name} forward")
    for i, (r, t) in enumerate(zip(r_grads, t_grads)):
        helpers.assert_close(r, t, rtol=1e-9, atol=1e-12, what=f"{name} grad of input {i}")
    names = [n for n, _ in t_module.named_parameters()]
    for pname, r, t in zip(names, r_pgrads, t_pgrads):
        helpers.assert_close(r, t, rtol=1e-9, atol=1e-12, what=f"{name} grad of {pname}")
    assert np.all(np.isfinite(helpers.to_numpy(r_out)))


@pytest.mark.parametrize("fn, args", [
    ("linear", lambda r: [normal(3, 4)(r), normal(2, 4)(r), normal(2)(r)]),
    ("softmax", lambda r: [normal(3, 4)(r), 1]),
    ("log_softmax", lambda r: [normal(3, 4)(r), 0]),
    ("layer_norm", lambda r: [normal(3, 4)(r), (4,)]),
    ("mse_loss", lambda r: [normal(3, 4)(r), normal(3, 4)(r)]),
    ("cross_entropy", lambda r: [normal(5, 3)(r), ints(3, 5)(r)]),
    ("binary_cross_entropy_with_logits", lambda r: [normal(5)(r), uniform(5)(r)]),
])
def test_functional_api_matches_torch(fn, args, ref, torch, helpers):
    values = args(np.random.default_rng(3))

    def run(lib):
        inputs = [_as_input(lib, v) if isinstance(v, np.ndarray) else v for v in values]
        out = getattr(lib.nn.functional, fn)(*inputs)
        out.sum().backward()
        return out, inputs[0].grad

    (r_out, r_grad), (t_out, t_grad) = run(ref), run(torch)
    helpers.assert_close(r_out, t_out, rtol=1e-10, what=fn)
    helpers.assert_close(r_grad, t_grad, rtol=1e-9, atol=1e-12, what=f"{fn} grad")


@given(n=st.integers(1, 6), c=st.integers(2, 5), scale=st.sampled_from([1.0, 30.0, 300.0]),
       seed=st.integers(0, 2**16), reduction=st.sampled_from(["mean", "sum", "none"]))
def test_cross_entropy_property(n, c, scale, seed, reduction, ref, torch, helpers):
    rng = np.random.default_rng(seed)
    logits, target = rng.normal(size=(n, c)) * scale, rng.integers(0, c, size=n)

    def run(lib):
        x = _as_input(lib, logits)
        loss = lib.nn.functional.cross_entropy(x, lib.tensor(target), reduction=reduction)
        loss.sum().backward()
        return loss, x.grad

    (r_loss, r_grad), (t_loss, t_grad) = run(ref), run(torch)
    helpers.assert_close(r_loss, t_loss, rtol=1e-10, atol=1e-10, what="cross_entropy")
    helpers.assert_close(r_grad, t_grad, rtol=1e-9, atol=1e-12, what="cross_entropy grad")


@given(n=st.integers(1, 8), scale=st.sampled_from([1.0, 20.0, 200.0]), seed=st.integers(0, 2**16),
       pos_weight=st.sampled_from([None, 0.5, 3.0]))
def test_bce_with_logits_property(n, scale, seed, pos_weight, ref, torch, helpers):
    rng = np.random.default_rng(seed)
    logits, target = rng.normal(size=n) * scale, rng.uniform(size=n)

    def run(lib):
        x = _as_input(lib, logits)
        pw = None if pos_weight is None else lib.tensor([pos_weight], dtype=lib.float64)
        loss = lib.nn.functional.binary_cross_entropy_with_logits(
            x, lib.tensor(target), pos_weight=pw, reduction="sum")
        loss.backward()
        return loss, x.grad

    (r_loss, r_grad), (t_loss, t_grad) = run(ref), run(torch)
    helpers.assert_close(r_loss, t_loss, rtol=1e-9, atol=1e-9, what="bce_with_logits")
    helpers.assert_close(r_grad, t_grad, rtol=1e-9, atol=1e-12, what="bce_with_logits grad")


def test_dropout_training_zeroes_and_rescales(ref):
    ref.manual_seed(0)
    x = ref.ones(4000, dtype=ref.float64, requires_grad=True)
    out = ref.nn.Dropout(p=0.25)(x)
    values = out.detach().numpy()
    assert set(np.unique(values)) <= {0.0, 1.0 / 0.75}
    assert abs((values == 0).mean() - 0.25) < 0.03
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), values)  # the same mask scales the gradient


def test_bce_rejects_probabilities_outside_unit_interval(ref):
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        ref.nn.functional.binary_cross_entropy(ref.tensor([1.5]), ref.tensor([1.0]))


def test_mse_broadcast_warns_like_torch(ref, torch):
    for lib in (torch, ref):
        with pytest.warns(UserWarning):
            lib.nn.functional.mse_loss(lib.zeros(3, 1), lib.zeros(3))


def test_cross_entropy_rejects_float_class_targets_with_torchs_text(ref, torch):
    messages = []
    for lib in (torch, ref):
        with pytest.raises(RuntimeError) as info:
            lib.nn.functional.cross_entropy(lib.zeros(2, 3), lib.tensor([0.0, 1.0]))
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_embedding_padding_row_gets_no_gradient(ref):
    emb = ref.nn.Embedding(5, 2, padding_idx=2)
    assert emb.weight[2].tolist() == [0.0, 0.0]
    emb(ref.tensor([2, 2, 1])).sum().backward()
    assert emb.weight.grad[2].tolist() == [0.0, 0.0]
    assert emb.weight.grad[1].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("inplace_fn", [
    lambda F, h: F.leaky_relu(h, 0.1, inplace=True),
    lambda F, h: F.relu(h, inplace=True),
])
def test_inplace_activations_stay_differentiable(inplace_fn, ref, torch, helpers):
    values = np.array([[-1.5, 0.5], [2.0, -0.25]])

    def run(lib):
        x = lib.tensor(values, requires_grad=True)
        h = x * 2.0  # a non-leaf, so the in-place edit is legal
        out = inplace_fn(lib.nn.functional, h)
        assert out is h
        (out * lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64)).sum().backward()
        return out, x.grad

    (r_out, r_grad), (t_out, t_grad) = run(ref), run(torch)
    helpers.assert_close(r_out, t_out, rtol=1e-12)
    helpers.assert_close(r_grad, t_grad, rtol=1e-12)


def test_inplace_dropout_scales_the_gradient_by_its_mask(ref):
    ref.manual_seed(1)
    x = ref.ones(1000, dtype=ref.float64, requires_grad=True)
    h = x * 1.0
    out = ref.nn.functional.dropout(h, p=0.5, training=True, inplace=True)
    assert out is h
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), out.detach().numpy())
    assert set(np.unique(x.grad.numpy())) == {0.0, 2.0}
