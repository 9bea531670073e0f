"""Module, Parameter, init and clipping: registration, traversal, checkpoints, against torch."""
from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest


def _net(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU())
            self.heads = lib.nn.ModuleList([lib.nn.Linear(4, 2), lib.nn.Linear(4, 1)])
            self.norm = lib.nn.LayerNorm(4)
            self.scale = lib.nn.Parameter(lib.ones(1))
            self.register_buffer("steps", lib.zeros(1))
            self.register_buffer("scratch", lib.zeros(2), persistent=False)
            self.drop = lib.nn.Dropout(0.1)

        def forward(self, x):
            h = self.norm(self.encoder(x)) * self.scale
            return self.heads[0](h), self.heads[1](h)

    return Net()


def test_traversal_names_match_torch(ref, torch):
    r, t = _net(ref), _net(torch)
    assert [n for n, _ in r.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in r.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in r.named_children()] == [n for n, _ in t.named_children()]
    assert [n for n, _ in r.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert list(r.state_dict()) == list(t.state_dict())
    assert [tuple(p.shape) for p in r.parameters()] == [tuple(p.shape) for p in t.parameters()]
    assert len(list(r.modules())) == len(list(t.modules()))


def test_shared_parameter_is_listed_once(ref):
    layer = ref.nn.Linear(2, 2)
    net = ref.nn.Sequential(layer, ref.nn.Tanh(), layer)
    assert len(list(net.parameters())) == 2
    assert [n for n, _ in net.named_parameters()] == ["0.weight", "0.bias"]


def test_train_eval_propagate(ref):
    net = _net(ref)
    assert net.training and net.drop.training
    net.eval()
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())


def test_state_dict_round_trip_and_strictness(ref):
    a, b = _net(ref), _net(ref)
    a.steps.fill_(3.0)
    result = b.load_state_dict(a.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    for (name, pa), (_, pb) in zip(a.state_dict().items(), b.state_dict().items()):
        np.testing.assert_array_equal(pa.numpy(), pb.numpy(), err_msg=name)
    assert b.steps.item() == 3.0
    sd = a.state_dict()
    assert not sd["scale"].requires_grad, "state_dict tensors are detached by default"
    sd.pop("scale")
    sd["extra"] = ref.zeros(1)
    with pytest.raises(RuntimeError, match=r"Missing key\(s\).*scale"):
        b.load_state_dict(sd)
    result = b.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["scale"] and result.unexpected_keys == ["extra"]
    bad = a.state_dict()
    bad["norm.weight"] = ref.zeros(5)
    with pytest.raises(RuntimeError, match="size mismatch for norm.weight"):
        b.load_state_dict(bad)


def test_load_state_dict_keeps_parameter_identity(ref):
    net = ref.nn.Linear(2, 1)
    weight = net.weight
    opt = ref.optim.SGD(net.parameters(), lr=0.1)
    net.load_state_dict({"weight": ref.ones(1, 2), "bias": ref.zeros(1)})
    assert net.weight is weight and opt.param_groups[0]["params"][0] is weight
    assert net.weight.tolist() == [[1.0, 1.0]]
    assert net.weight.requires_grad


def test_parameter_repr_and_type(ref, torch):
    p = ref.nn.Parameter(ref.tensor([1.0, 2.0]))
    assert repr(p) == repr(torch.nn.Parameter(torch.tensor([1.0, 2.0])))
    assert isinstance(p, ref.Tensor) and p.requires_grad and p.is_leaf
    frozen = ref.nn.Parameter(ref.zeros(1), requires_grad=False)
    assert not frozen.requires_grad


def test_module_repr_matches_torch(ref, torch):
    def build(lib):
        return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Dropout(0.2),
                                 lib.nn.Sequential(lib.nn.Linear(4, 1, bias=False),
                                                   lib.nn.Sigmoid()))

    assert repr(build(ref)) == repr(build(torch))


def test_assignment_registers_and_unregisters(ref):
    net = ref.nn.Module()
    net.w = ref.nn.Parameter(ref.ones(1))
    net.sub = ref.nn.Linear(1, 1)
    net.plain = ref.ones(1)  # a plain tensor attribute is not a parameter
    assert [n for n, _ in net.named_parameters()] == ["w", "sub.weight", "sub.bias"]
    net.w = None
    assert [n for n, _ in net.named_parameters()] == ["sub.weight", "sub.bias"]
    del net.sub
    assert list(net.parameters()) == []
    with pytest.raises(TypeError, match="parameter 'w'"):
        net.w = ref.ones(1)


def test_parameter_before_init_is_a_clear_error(ref):
    class Broken(ref.nn.Module):
        def __init__(self):
            self.w = ref.nn.Parameter(ref.ones(1))

    with pytest.raises(AttributeError, match=r"super\(\)\.__init__\(\)"):
        Broken()


def test_to_double_keeps_parameters_and_optimizer_valid(ref):
    net = ref.nn.Linear(2, 1)
    weight = net.weight
    opt = ref.optim.SGD(net.parameters(), lr=0.1)
    net.to(ref.float64)
    assert net.weight is weight and weight.dtype == ref.float64
    net(ref.ones(1, 2, dtype=ref.float64)).sum().backward()
    before = weight.detach().clone()
    opt.step()
    np.testing.assert_allclose((before - weight).numpy(force=True), [[0.1, 0.1]])


def test_requires_grad_apply_and_zero_grad(ref):
    net = ref.nn.Sequential(ref.nn.Linear(2, 2), ref.nn.Linear(2, 1))
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    net.requires_grad_(True)
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "Linear", "Sequential"]
    net(ref.ones(1, 2)).sum().backward()
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_deepcopy_and_pickle_give_independent_parameters(ref):
    net = ref.nn.Linear(2, 1)
    clone = copy.deepcopy(net)
    assert isinstance(clone.weight, ref.nn.Parameter)
    with ref.no_grad():
        clone.weight.fill_(5.0)
    assert net.weight.abs().max().item() < 5.0
    restored = pickle.loads(pickle.dumps(net.weight))
    assert isinstance(restored, ref.nn.Parameter) and restored.requires_grad
    np.testing.assert_array_equal(restored.detach().numpy(), net.weight.detach().numpy())


def test_default_linear_init_bounds(ref):
    ref.manual_seed(0)
    layer = ref.nn.Linear(50, 400)
    bound = 1 / math.sqrt(50)
    w, b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.95 * bound, "weights should fill the whole U(-b, b) range"
    expected_std = bound / math.sqrt(3)  # the std of U(-b, b)
    assert abs(w.std() / expected_std - 1) < 0.05


@pytest.mark.parametrize("name, kwargs", [
    ("xavier_uniform_", {}), ("xavier_normal_", {"gain": 2.0}),
    ("kaiming_uniform_", {"nonlinearity": "relu"}), ("kaiming_normal_", {"mode": "fan_out"}),
    ("uniform_", {"a": -2.0, "b": 3.0}), ("normal_", {"mean": 1.0, "std": 0.5}),
])
def test_init_statistics_match_torch(name, kwargs, ref, torch):
    ref.manual_seed(0)
    torch.manual_seed(0)
    r = getattr(ref.nn.init, name)(ref.empty(200, 300, dtype=ref.float64), **kwargs).numpy()
    t = getattr(torch.nn.init, name)(torch.empty(200, 300, dtype=torch.float64), **kwargs).numpy()
    assert abs(r.mean() - t.mean()) < 0.02 * max(t.std(), abs(t.mean()))
    assert abs(r.std() / t.std() - 1) < 0.02
    if "uniform" in name:  # both fill the same interval almost to its ends
        spread = t.max() - t.min()
        assert abs(r.min() - t.min()) < 1e-3 * spread and abs(r.max() - t.max()) < 1e-3 * spread


def test_constant_inits(ref):
    w = ref.nn.Parameter(ref.empty(2, 2))
    assert ref.nn.init.zeros_(w).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert ref.nn.init.ones_(w).tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert ref.nn.init.constant_(w, 0.5).tolist() == [[0.5, 0.5], [0.5, 0.5]]
    assert ref.nn.init.calculate_gain("tanh") == pytest.approx(5 / 3)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        ref.nn.init.xavier_uniform_(ref.empty(3))


@pytest.mark.parametrize("max_norm, norm_type", [(1.0, 2.0), (100.0, 2.0), (0.5, 1.0),
                                                 (0.3, float("inf")), (0.7, 3.0)])
def test_clip_grad_norm_matches_torch(max_norm, norm_type, ref, torch, helpers):
    grads = [np.random.default_rng(i).normal(size=s) for i, s in enumerate([(3, 2), (2,), (4,)])]

    def run(lib):
        params = [lib.nn.Parameter(lib.zeros(g.shape, dtype=lib.float64)) for g in grads]
        for p, g in zip(params, grads):
            p.grad = lib.tensor(g)
        params.append(lib.nn.Parameter(lib.zeros(2, dtype=lib.float64)))  # grad None: ignored
        total = lib.nn.utils.clip_grad_norm_(params, max_norm, norm_type=norm_type)
        return total, [p.grad for p in params[:-1]]

    (r_total, r_grads), (t_total, t_grads) = run(ref), run(torch)
    helpers.assert_close(r_total, t_total, rtol=1e-12)
    for r, t in zip(r_grads, t_grads):
        helpers.assert_close(r, t, rtol=1e-12)


# The engine's numpy kernels warn on inf * 0 where torch is silent; the values are what matter.
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_clip_grad_norm_nonfinite(ref, torch):
    for lib in (ref, torch):
        p = lib.nn.Parameter(lib.zeros(2))
        p.grad = lib.tensor([float("inf"), 1.0])
        assert math.isinf(lib.nn.utils.clip_grad_norm_([p], 1.0).item())
        p.grad = lib.tensor([float("nan"), 1.0])
        with pytest.raises(RuntimeError, match="non-finite"):
            lib.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)


def test_clip_grad_value(ref):
    p = ref.nn.Parameter(ref.zeros(3))
    p.grad = ref.tensor([-3.0, 0.5, 2.0])
    ref.nn.utils.clip_grad_value_([p], 1.0)
    assert p.grad.tolist() == [-1.0, 0.5, 1.0]


def test_forward_hooks_follow_torch_protocol(ref, torch):
    def run(lib):
        layer = lib.nn.Linear(2, 2)
        seen = []
        pre = layer.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
        post = layer.register_forward_hook(
            lambda m, args, out: seen.append((m is layer, len(args), tuple(out.shape))))
        with lib.no_grad():
            layer.weight.copy_(lib.eye(2))
            layer.bias.zero_()
        doubled = layer(lib.ones(1, 2)).tolist()
        pre.remove()
        post.remove()
        plain = layer(lib.ones(1, 2)).tolist()
        return doubled, plain, seen

    assert run(ref) == run(torch)
    assert run(ref)[0] == [[2.0, 2.0]]


def test_named_parameters_remove_duplicate_false(ref, torch):
    def names(lib):
        layer = lib.nn.Linear(2, 2)
        net = lib.nn.Sequential(layer, layer)
        return [n for n, _ in net.named_parameters(remove_duplicate=False)]

    assert names(ref) == names(torch)
