"""The APIs real training scripts use at the top and around the loop, against torch: legacy
tensor types, the imports (cudnn, parallel, distributed, accelerator, amp), GradScaler's
update rule, dict and parameter containers, and the losses and functions added for them."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcheck.ref as ref
from gradcheck.ref.alias import as_torch


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def test_script_preamble_imports_resolve_to_the_engine():
    with as_torch() as engine:
        import torch
        import torch.backends.cudnn as cudnn
        import torch.cuda.amp  # noqa: F401
        import torch.distributed as dist
        import torch.nn.parallel  # noqa: F401

        cudnn.benchmark = True
        assert torch is engine and dist.is_available() and not dist.is_initialized()
        assert torch.accelerator.current_accelerator() is None or torch.cuda.is_available()
        assert isinstance(torch.nn.DataParallel(torch.nn.Linear(2, 1)).module, torch.nn.Linear)


@pytest.mark.parametrize("name", ["FloatTensor", "DoubleTensor", "LongTensor", "IntTensor",
                                  "ByteTensor", "BoolTensor"])
def test_legacy_types_match_torch(name, torch):
    for build in (lambda lib: getattr(lib, name)([1, 0, 2]),
                  lambda lib: getattr(lib, name)(2, 3).zero_()):
        ours, theirs = build(ref), build(torch)
        assert str(ours.dtype) == str(theirs.dtype)
        assert ours.tolist() == theirs.tolist()
        assert isinstance(ours, getattr(ref, name))
        assert not isinstance(ours, ref.HalfTensor)
    assert ref.ones(2).type(ref.DoubleTensor).dtype == ref.float64
    assert ref.ones(2).type("torch.LongTensor").dtype == ref.int64


@pytest.mark.parametrize("values", [[1, 2, 3], [0.5, -1.0]])
def test_legacy_variable_keeps_dtype_and_shares_data_like_torch(values, torch):
    import warnings

    for lib, variable in ((ref, ref.autograd.Variable), (torch, torch.autograd.Variable)):
        data = lib.tensor(values)
        plain = variable(data)
        assert str(plain.dtype) == str(data.dtype) and not plain.requires_grad
        assert plain is not data and isinstance(data, variable)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            variable(data, volatile=True)
        messages = [str(w.message) for w in caught]
        if lib is ref:
            ours = messages
        else:
            assert ours == messages
        plain.mul_(2)
        assert data.tolist() == [2 * v for v in values]
    leaf = ref.autograd.Variable(ref.ones(2), requires_grad=True)
    assert leaf.requires_grad and leaf.is_leaf


def test_embedding_from_pretrained_and_channel_dropout_match_torch(torch):
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    for lib in (ref, torch):
        frozen = lib.nn.Embedding.from_pretrained(lib.tensor(table))
        trained = lib.nn.Embedding.from_pretrained(lib.tensor(table), freeze=False)
        assert not frozen.weight.requires_grad and trained.weight.requires_grad
        assert frozen(lib.tensor([[3, 0]])).tolist() == table[[[3, 0]]].tolist()
        layer = lib.nn.Dropout2d(0.5)
        out = layer(lib.ones(8, 6, 3, 3)).numpy()
        per_channel = out.reshape(8, 6, -1)
        assert set(np.unique(out)) <= {0.0, 2.0}
        assert (per_channel == per_channel[..., :1]).all()  # one draw per channel
        assert layer.eval()(lib.ones(2, 2, 2)).sum().item() == 8.0


@pytest.mark.parametrize("cast", ["byte", "char", "short"])
def test_integer_cast_methods_match_torch(cast, torch):
    values = [1.7, -2.2, 3.0, 0.0]
    ours = getattr(ref.tensor(values), cast)()
    theirs = getattr(torch.tensor(values), cast)()
    assert str(ours.dtype) == str(theirs.dtype) and ours.tolist() == theirs.tolist()


def test_grad_scaler_follows_torchs_update_rule(torch):
    scales = []
    for lib in (torch, ref):
        w = lib.nn.Parameter(lib.tensor([1.0, 2.0]))
        opt = lib.optim.SGD([w], lr=0.1)
        scaler = lib.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
        history = []
        for bad in (False, False, True, False):
            opt.zero_grad()
            loss = (w * w).sum() * (float("inf") if bad else 1.0)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            history.append((scaler.get_scale(), w.detach().tolist()))
        scales.append((history, scaler.state_dict()))
    assert scales[0] == scales[1]


def test_containers_register_like_torch(torch):
    names = []
    for lib in (torch, ref):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.heads = lib.nn.ModuleDict({"a": lib.nn.Linear(2, 2), "b": lib.nn.Linear(2, 1)})
                self.scales = lib.nn.ParameterList([lib.nn.Parameter(lib.ones(2)), lib.zeros(1)])
                self.extra = lib.nn.ParameterDict({"k": lib.nn.Parameter(lib.ones(3))})

        net = Net()
        names.append([(n, tuple(p.shape)) for n, p in net.named_parameters()])
        assert len(net.scales) == 2 and "a" in net.heads
    assert names[0] == names[1]


def _losses(lib, x, y, probs, labels):
    F = lib.nn.functional
    return [F.smooth_l1_loss(x, y, beta=0.5), F.huber_loss(x, y, delta=0.7),
            F.cross_entropy(x, probs), F.cross_entropy(x, labels, label_smoothing=0.2),
            F.cross_entropy(x, probs, label_smoothing=0.1),
            F.kl_div(x.log_softmax(1), probs, reduction="batchmean"),
            F.binary_cross_entropy(x.sigmoid(), y.sigmoid(), reduction="sum"),
            F.scaled_dot_product_attention(x.unsqueeze(0), y.unsqueeze(0), x.unsqueeze(0),
                                           is_causal=True).sum(),
            lib.scatter_reduce(x, 1, labels.unsqueeze(1).expand(-1, 2), y[:, :2], "amax").sum(),
            lib.scatter_reduce(x, 1, labels.unsqueeze(1).expand(-1, 2), y[:, :2] * x[:, 1:],
                               "mean", include_self=False).sum(),
            F.one_hot(labels, 3).sum() * x.sum()]


@settings(max_examples=15, deadline=None)
@given(n=st.integers(2, 4), seed=st.integers(0, 10_000))
def test_losses_and_functions_match_torch(n, seed, torch):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    probs = rng.dirichlet(np.ones(3), size=n)
    labels = rng.integers(0, 3, size=n)
    results = []
    for lib in (torch, ref):
        xt = lib.tensor(x, requires_grad=True)
        values = _losses(lib, xt, lib.tensor(y), lib.tensor(probs), lib.tensor(labels))
        grads = [lib.autograd.grad(v, xt, allow_unused=True)[0] for v in values]
        results.append(([v.item() for v in values],
                        [None if g is None else g.numpy() for g in grads]))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-10, atol=1e-12)
    for ours, theirs in zip(results[1][1], results[0][1]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)


def test_meshgrid_and_shapes_match_torch(torch):
    for indexing in ("ij", "xy"):
        a = [g.tolist() for g in ref.meshgrid(ref.arange(3), ref.arange(2), indexing=indexing)]
        b = [g.tolist() for g in torch.meshgrid(torch.arange(3), torch.arange(2),
                                                indexing=indexing)]
        assert a == b
