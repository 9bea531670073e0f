"""The third census round against torch: one row per function (values, and the gradient of
every floating input in float64), then the names that answer questions rather than compute."""
from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest

import gradcheck.ref as ref

RNG = np.random.default_rng(7)
A34 = RNG.normal(size=(3, 4))
V5 = np.array([-2.0, -0.0, 0.0, 0.3, 1.5])
SPD_FACTOR = np.tril(RNG.normal(size=(3, 3))) + 3 * np.eye(3)

# name -> (function of the library and its input tensors, input arrays (floats get grads))
CASES = {
    "copysign": (lambda lib, a, b: lib.copysign(a, b), [V5, np.array([1.0, -1.0, -0.0, 0.0,
                                                                       -3.0])]),
    "copysign_scalar": (lambda lib, a: a.copysign(-2.0), [V5]),
    "sinc": (lambda lib, a: lib.sinc(a), [np.array([0.0, 0.25, -1.5, 2.0, 1e-9])]),
    "special_sinc": (lambda lib, a: lib.special.sinc(a), [np.array([0.0, 0.7])]),
    "ndtri": (lambda lib, a: lib.special.ndtri(a), [np.array([0.01, 0.3, 0.5, 0.93])]),
    "hardshrink": (lambda lib, a: a.hardshrink(0.4) + lib.nn.functional.hardshrink(a),
                   [np.array([-1.0, -0.45, 0.2, 0.5, 2.0])]),
    "isposinf_isneginf": (lambda lib, a: (lib.isposinf(a), a.isneginf()),
                          [np.array([np.inf, -np.inf, np.nan, 1.0])]),
    "gcd_lcm": (lambda lib, a, b: (lib.gcd(a, b), a.lcm(b)),
                [np.array([0, 4, -6, 9]), np.array([0, 6, 9, -12])]),
    "select_scatter": (lambda lib, a, s: lib.select_scatter(a, s, 1, -1),
                       [A34, RNG.normal(size=3)]),
    "slice_scatter": (lambda lib, a, s: a.slice_scatter(s, dim=1, start=1, end=4, step=2),
                      [A34, RNG.normal(size=(3, 2))]),
    "diagonal_scatter": (lambda lib, a, s: lib.diagonal_scatter(a, s, -1),
                         [A34, RNG.normal(size=2)]),
    "diagonal_scatter_dims": (lambda lib, a, s: lib.diagonal_scatter(a, s, 1, 2, 0),
                              [RNG.normal(size=(3, 2, 4)), RNG.normal(size=(2, 2))]),
    "expand_copy": (lambda lib, a: lib.expand_copy(a, (2, 3, 4)), [A34]),
    "as_strided": (lambda lib, a: lib.as_strided(a, (2, 2), (1, 2), 1), [A34]),
    "index_put": (lambda lib, a, v: lib.index_put(a, (lib.tensor([0, 2, 0]),), v,
                                                   accumulate=True),
                  [A34, RNG.normal(size=(3, 4))]),
    "argwhere": (lambda lib, a: lib.argwhere(a > 0), [A34]),
    "combinations": (lambda lib, a: (lib.combinations(a), lib.combinations(
        a, 3, with_replacement=True)), [np.array([1.0, 2.0, 3.5])]),
    "cholesky_inverse": (lambda lib, a: (lib.cholesky_inverse(a),
                                         a.mT.cholesky_inverse(upper=True)), [SPD_FACTOR]),
    "trapezoid": (lambda lib, y: (lib.trapezoid(y), lib.trapezoid(y, dx=0.5, dim=0),
                                  lib.trapz(y, dim=0)), [A34]),
    "trapezoid_x": (lambda lib, y, x: (lib.trapezoid(y, x), lib.trapz(y, x)),
                    [A34, np.array([0.0, 0.5, 1.7, 2.0])]),
    "cumulative_trapezoid": (lambda lib, y, x: (lib.cumulative_trapezoid(y, x),
                                                lib.cumulative_trapezoid(y, dx=2.0, dim=0)),
                             [A34, np.array([0.0, 0.5, 1.7, 2.0])]),
    "gradient": (lambda lib, a: lib.gradient(a) + lib.gradient(a, spacing=[2.0], dim=1,
                                                               edge_order=2),
                 [RNG.normal(size=(4, 5))]),
    "gradient_coordinates": (lambda lib, a, x: lib.gradient(a, spacing=(x,), dim=1) +
                             lib.gradient(a, spacing=(x,), dim=-1, edge_order=2),
                             [RNG.normal(size=(2, 4)), np.array([0.0, 0.4, 1.5, 1.8])]),
    "addcmul": (lambda lib, a, b, c: lib.addcmul(a, b, c, value=0.5),
                [A34, A34 + 1, RNG.normal(size=4)]),
    "clamp_relu_inplace": (lambda lib, a: (lib.clamp_(a.clone(), -0.5, 0.5),
                                           lib.relu_(a * 2)), [A34]),
    "kl_div": (lambda lib, a, b: (lib.kl_div(a, b, 0), lib.kl_div(a, b, 1),
                                  lib.kl_div(a, b.log(), 2, log_target=True)),
               [np.log([[0.2, 0.8], [0.5, 0.5]]), np.array([[0.1, 0.9], [0.3, 0.7]])]),
    "dropout_eval": (lambda lib, a: lib.dropout(a, 0.5, False), [A34]),
    "linalg_diagonal": (lambda lib, a: lib.linalg.diagonal(a, offset=1),
                        [RNG.normal(size=(2, 3, 4))]),
    "cumsum_": (lambda lib, a: a.clone().cumsum_(1), [A34]),
    "logical_xor_corrcoef": (lambda lib, a: (a.logical_xor(a > 0.5), a.corrcoef()), [A34]),
    "unravel_index": (lambda lib, i: lib.unravel_index(i, (3, 4)),
                      [np.array([[0, 5], [11, -1]])]),
    "scalar_tensor": (lambda lib: (lib.scalar_tensor(3), lib.scalar_tensor(2, dtype=lib.int64),
                                   lib.scalar_tensor(True)), []),
}


def _run(lib, case):
    fn, arrays = CASES[case]
    inputs = [lib.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(lib, *inputs)
    outs = list(out) if isinstance(out, tuple) else [out]
    floats = [o for o in outs if o.dtype.is_floating_point and o.requires_grad]
    if floats:
        weights = [lib.tensor(np.cos(np.arange(o.numel()) + 1.0).reshape(o.shape))
                   for o in floats]
        sum((o * w).sum() for o, w in zip(floats, weights)).backward()
    grads = [t.grad.numpy() if t.grad is not None else None for t in inputs]
    return [o.detach().numpy() for o in outs], [str(o.dtype) for o in outs], grads


@pytest.mark.parametrize("case", list(CASES))
def test_census_functions_match_torch(real_torch, case):
    mine, theirs = _run(ref, case), _run(real_torch, case)
    for a, b in zip(mine[0], theirs[0], strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert mine[1] == theirs[1]
    for a, b in zip(mine[2], theirs[2], strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_census_function_errors_match_torch(real_torch):
    for lib in (ref, real_torch):
        with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
            lib.gcd(lib.ones(2), lib.ones(2))
        with pytest.raises(RuntimeError, match="Expect a 1D vector"):
            lib.combinations(lib.ones(2, 2))
        with pytest.raises(RuntimeError, match="expected src to have a size equal"):
            lib.select_scatter(lib.zeros(2, 3), lib.ones(2), 0, 0)
        with pytest.raises(RuntimeError, match="only supports edge_order=1 and edge_order=2"):
            lib.gradient(lib.ones(4), edge_order=3)
        with pytest.raises(AssertionError, match="not compiled with XPU"):
            lib.ones(2).xpu()
        with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
            assert tuple(lib.tensor([1, 2]).resize_as(lib.ones(2, 1)).shape) == (2, 1)


def test_mode_queries_follow_the_setters(real_torch):
    for lib in (ref, real_torch):
        assert not lib.is_inference_mode_enabled()
        with lib.inference_mode():
            assert lib.is_inference_mode_enabled()
        assert not lib.are_deterministic_algorithms_enabled()
        lib.use_deterministic_algorithms(True, warn_only=True)
        try:
            assert lib.are_deterministic_algorithms_enabled()
            assert lib.is_deterministic_algorithms_warn_only_enabled()
        finally:
            lib.use_deterministic_algorithms(False)
        assert not lib.is_deterministic_algorithms_warn_only_enabled()


def _train(lib, make_optimizer, steps=6):
    weights = lib.nn.Parameter(lib.tensor([[1.5, -0.2, 0.0], [0.3, -2.0, 0.7]],
                                          dtype=lib.float64))
    optimizer = make_optimizer(lib, weights)
    target = lib.tensor([[0.1, 0.2, 0.3], [-0.1, 0.5, 0.2]], dtype=lib.float64)
    for _ in range(steps):
        optimizer.zero_grad()
        ((weights - target) ** 3).abs().sum().backward()
        optimizer.step()
    return weights.detach().numpy(), {k: (v.numpy() if hasattr(v, "numpy") else v)
                                      for k, v in optimizer.state_dict()["state"][0].items()}


@pytest.mark.parametrize("make", [
    lambda lib, w: lib.optim.Rprop([w], lr=0.05),
    lambda lib, w: lib.optim.Rprop([w], lr=0.2, etas=(0.3, 1.5), step_sizes=(0.01, 0.25),
                                   maximize=True),
    lambda lib, w: lib.optim._multi_tensor.Adam([w], lr=0.1),
    lambda lib, w: lib.optim._multi_tensor.SGD([w], lr=0.01, momentum=0.9),
], ids=["rprop", "rprop_options", "multi_tensor_adam", "multi_tensor_sgd"])
def test_census_optimizers_match_torch(real_torch, make):
    importlib.import_module("torch.optim._multi_tensor")
    (mine, mine_state), (theirs, theirs_state) = _train(ref, make), _train(real_torch, make)
    np.testing.assert_allclose(mine, theirs, rtol=1e-12)
    assert mine_state.keys() == theirs_state.keys()
    for key in mine_state:
        np.testing.assert_allclose(mine_state[key], theirs_state[key], rtol=1e-12)
    assert make(ref, ref.nn.Parameter(ref.ones(1))).defaults.get("foreach") == make(
        real_torch, real_torch.nn.Parameter(real_torch.ones(1))).defaults.get("foreach")


def test_optimizer_internals_answer_like_torch(real_torch):
    for lib in (ref, real_torch):
        # torch.optim deletes its `optimizer` attribute; the module is only importable
        internals = importlib.import_module(f"{lib.__name__}.optim.optimizer")
        assert internals._default_to_fused_or_foreach([lib.ones(2)], False, False) == (
            False, False)
        assert internals._get_capturable_supported_devices(supports_xla=False) == [
            "cuda", "xpu", "hpu", "privateuseone"]
        first = [lib.ones(2), lib.ones(2, dtype=lib.float64), lib.zeros(3)]
        groups = lib.optim.Optimizer._group_tensors_by_device_and_dtype(
            [first, [t * 2 for t in first]], with_indices=True)
        summary = {(str(device), str(dtype)): ([[t.tolist() for t in lst] for lst in lists],
                                               indices)
                   for (device, dtype), (lists, indices) in groups.items()}
        if lib is ref:
            mine = summary
        else:
            assert mine == summary

        class Probe(lib.optim.SGD):
            @internals._use_grad_for_differentiable
            def step(self, closure=None):
                return lib.is_grad_enabled()

        assert Probe([lib.nn.Parameter(lib.ones(1))], lr=0.1).step() is False
        assert lib.is_grad_enabled()
        averaged = lib.optim.swa_utils.get_swa_avg_fn()(lib.tensor([1.0]), lib.tensor([4.0]),
                                                        lib.tensor(2))
        assert averaged.tolist() == [2.0]


def test_nn_private_helpers_match_torch(real_torch):
    import torch.nn._reduction  # noqa: F401

    for lib in (ref, real_torch):
        nn = lib.nn
        answers = [nn._reduction.get_enum("none"), nn._reduction.legacy_get_enum(
            False, True, emit_warning=False), nn.modules.module._addindent("a\nb\n\nc", 2),
            nn.modules.utils._list_with_default([None, 3], [1, 2, 5, 7]),
            nn.modules.utils._list_with_default(4, [1, 2]),
            nn.init._calculate_correct_fan(lib.ones(3, 4, 2), "FAN_OUT"),
            nn.modules.transformer._get_activation_fn("gelu").__name__,
            nn.NLLLoss2d.__mro__[1].__name__]
        if lib is ref:
            mine = answers
        else:
            assert mine == answers
        with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
            nn._reduction.get_enum("bad")
        with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
            nn.modules.transformer._get_activation_fn("tanh")
        with pytest.raises(ValueError, match="Mode fan not supported"):
            nn.init._calculate_correct_fan(lib.ones(2, 2), "fan")
        with pytest.warns(UserWarning, match="upsample_nearest` is deprecated"):
            out = nn.functional.upsample_nearest(lib.arange(4.0).reshape(1, 1, 2, 2),
                                                 scale_factor=2)
        assert out.flatten().tolist()[:4] == [0.0, 0.0, 1.0, 1.0]
        with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
            assert nn.NLLLoss2d(ignore_index=2).ignore_index == 2
        norm = nn.LayerNorm(3)
        with lib.no_grad():
            norm.weight.mul_(3)
            norm.bias.add_(1)
        norm.reset_parameters()
        assert norm.weight.tolist() == [1.0] * 3 and norm.bias.tolist() == [0.0] * 3


def test_data_loading_internals_match_torch(real_torch):
    import itertools
    import pickle

    for name in ("utils.data.dataloader", "utils.data._utils", "utils._import_utils",
                 "utils.data.datapipes.utils.common"):
        importlib.import_module(f"torch.{name}")
    found = []
    for lib in (ref, real_torch):
        data = lib.utils.data
        loader = data.DataLoader(data.TensorDataset(lib.arange(5)), batch_size=2)
        batches = iter(loader)
        first = next(batches)
        answers = [data.ConcatDataset.cumsum([[1, 2], [3], []]),
                   data.dataloader._DatasetKind.Map, data.dataloader._DatasetKind.Iterable,
                   data._utils.MP_STATUS_CHECK_INTERVAL,
                   list(itertools.islice(data.dataloader._InfiniteConstantSampler(), 3)),
                   isinstance(batches, data.dataloader._BaseDataLoaderIter), len(batches),
                   first[0].tolist(), [b[0].tolist() for b in batches],
                   data.dataloader.os.sep, lib.utils._import_utils.dill_available(),
                   data.datapipes.utils.common.DILL_AVAILABLE]
        pipe = data.datapipes.iter.IterableWrapper([1, 2])
        data.IterDataPipe.getstate_hook = lambda state: {"hooked": True}
        try:
            answers.append(pickle.loads(pickle.dumps(pipe)).__dict__)
        finally:
            data.IterDataPipe.getstate_hook = None
        found.append(answers)
    assert found[0] == found[1]


def test_cpu_build_answers_match_torch(real_torch):
    if real_torch.cuda.is_available():
        pytest.skip("the engine answers as torch's CPU build; this torch reaches a GPU")
    for name in ("cuda.random", "cuda.amp.common", "cuda.amp.grad_scaler",
                 "cuda.amp.autocast_mode", "_utils_internal", "_utils"):
        importlib.import_module(f"torch.{name}")
    found = []
    for lib in (ref, real_torch):
        utils, cuda = lib._utils, lib.cuda
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            answers = [cuda.random.manual_seed(3), cuda.memory_cached(),
                       cuda.max_memory_cached(), cuda._initialized, cuda._is_in_bad_fork(),
                       cuda.device_of(lib.ones(1)).idx,
                       cuda.amp.common.amp_definitely_not_available(),
                       cuda.amp.grad_scaler.GradScaler is cuda.amp.GradScaler,
                       cuda.amp.autocast_mode.autocast is cuda.amp.autocast,
                       lib.backends.cudnn.is_acceptable(lib.ones(1)),
                       lib.backends.cuda.matmul.allow_fp16_accumulation,
                       lib.mtia.is_available(), utils._element_size(lib.float16),
                       utils._element_size(lib.int64), utils._get_device_index("cuda:1"),
                       utils._get_device_index("cpu", allow_cpu=True),
                       utils._get_device_index(3), utils._get_device_index(None, True),
                       lib._utils_internal.justknobs_check("anything"),
                       lib._utils_internal.TEST_MASTER_ADDR,
                       lib.profiler.ProfilerActivity.HPU.name,
                       {a.name: int(a.value) for a in (lib.profiler.ProfilerActivity.CPU,
                                                       lib.profiler.ProfilerActivity.XPU,
                                                       lib.profiler.ProfilerActivity.CUDA)}]
        answers.append(sorted(str(w.message)[:40] for w in caught))
        for device, match in (("cpu", "Expected a non cpu device, but got: cpu"),
                              ("cuda", "Expected a torch.device with a specified index")):
            with pytest.raises(ValueError, match=match):
                utils._get_device_index(device)
        found.append(answers)
    assert found[0] == found[1]


def _distribution_answers(lib):
    dist = lib.distributions
    loc = lib.tensor([0.3, -1.0], dtype=lib.float64, requires_grad=True)
    scale = lib.tensor([1.5, 0.4], dtype=lib.float64, requires_grad=True)
    probs = lib.tensor([0.2, 0.7], dtype=lib.float64, requires_grad=True)
    value = lib.tensor([0.1, -0.6], dtype=lib.float64)
    cauchy, gumbel = dist.Cauchy(loc, scale), importlib.import_module(
        f"{lib.__name__}.distributions.gumbel").Gumbel(loc, scale)
    geometric = dist.Geometric(probs=probs)
    relaxed = importlib.import_module(
        f"{lib.__name__}.distributions.relaxed_bernoulli").RelaxedBernoulli(
        lib.tensor(0.5, dtype=lib.float64), probs=probs)
    squashed = dist.TransformedDistribution(dist.Normal(loc, scale), [
        dist.TanhTransform(), dist.transforms.AffineTransform(1.0, 2.0)])
    counts = lib.tensor([0.0, 3.0], dtype=lib.float64)
    outs = [cauchy.log_prob(value), cauchy.cdf(value), cauchy.icdf(lib.sigmoid(value)),
            cauchy.entropy(), gumbel.log_prob(value), gumbel.mean, gumbel.variance,
            gumbel.entropy(), geometric.log_prob(counts), geometric.mean, geometric.variance,
            geometric.entropy(), relaxed.log_prob(lib.tensor([0.3, 0.9], dtype=lib.float64)),
            squashed.log_prob(lib.tensor([0.5, 2.2], dtype=lib.float64)),
            dist.transforms.SigmoidTransform().inv(lib.tensor([0.25], dtype=lib.float64))]
    sum((o * (i + 1)).sum() for i, o in enumerate(outs)).backward()
    shapes = [tuple(d.sample((3,)).shape) for d in (cauchy, gumbel, geometric, relaxed,
                                                     squashed)]
    return ([o.detach().numpy() for o in outs] + [t.grad.numpy() for t in (loc, scale, probs)],
            shapes, [str(cauchy.mean.tolist()), str(cauchy.variance.tolist()),
                     dist.laplace.Laplace is dist.Laplace, dist.gamma.Gamma is dist.Gamma])


def test_more_distributions_match_torch(real_torch):
    for name in ("gumbel", "relaxed_bernoulli", "laplace", "gamma"):
        importlib.import_module(f"torch.distributions.{name}")
    mine, theirs = _distribution_answers(ref), _distribution_answers(real_torch)
    for a, b in zip(mine[0], theirs[0], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert mine[1:] == theirs[1:]


def _saved_hook_answers(lib):
    x = lib.tensor([1.0, -2.0], dtype=lib.float64, requires_grad=True)
    y = lib.tensor([3.0, 0.5], dtype=lib.float64, requires_grad=True)
    log = []

    def pack(t):
        log.append(("pack", tuple(t.shape)))
        return t.detach() * 2

    def unpack(t):
        log.append(("unpack", tuple(t.shape)))
        return t

    with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
        product = (x * y).sum()
        grown = x.exp().sum()
    product.backward()
    after_product = [x.grad.tolist(), y.grad.tolist(), sorted(log)]
    grown.backward()
    with lib.autograd.graph.save_on_cpu():
        plain = (x * y).sum()
    plain.backward()
    return after_product + [x.grad.tolist(), y.grad.tolist()]


def _callback_answers(lib):
    engine = lib.autograd.Variable._execution_engine
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    log = []

    def hook(grad):
        engine.queue_callback(lambda: log.append(("callback", x.grad.tolist())))
        log.append("hook")
        return grad

    y = x * 2
    y.register_hook(hook)
    y.sum().backward()
    grads = engine.run_backward(((x * 3).sum(),), (lib.tensor(1.0),), False, False, (x,),
                                allow_unreachable=True, accumulate_grad=False)
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during "
                                           "backward pass"):
        engine.queue_callback(print)
    return log + [[g.tolist() for g in grads], x.grad.tolist()]


def test_autograd_graph_hooks_and_callbacks_match_torch(real_torch):
    assert _saved_hook_answers(ref) == _saved_hook_answers(real_torch)
    assert _callback_answers(ref) == _callback_answers(real_torch)
    for lib in (ref, real_torch):
        graph = lib.autograd.graph
        with graph.disable_saved_tensors_hooks("no hooks in here"):
            with pytest.raises(RuntimeError, match="no hooks in here"):
                with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass
        assert graph.set_warn_on_accumulate_grad_stream_mismatch(False) is None
        with lib.autograd.grad_mode.set_multithreading_enabled(False):
            assert lib.is_grad_enabled()
        assert lib.autograd.variable.Variable is lib.autograd.Variable


class _Duck:
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return ("duck", func.__name__, [t.__name__ for t in types], len(args))


class _Declines(_Duck):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return NotImplemented


def _scaled(x, by):
    return "plain"


def test_torch_function_helpers_match_torch(real_torch):
    importlib.import_module("torch.overrides")
    found = []
    for lib in (ref, real_torch):
        over = lib.overrides
        answers = [over.has_torch_function((lib.ones(1),)),
                   over.has_torch_function((_Duck(), 1)), over.has_torch_function((1, "a")),
                   over.has_torch_function_unary(_Duck()),
                   over.has_torch_function_variadic(1, _Declines()),
                   over.handle_torch_function(_scaled, (_Duck(),), _Duck(), 2),
                   over.handle_torch_function(_scaled, (_Declines(), _Duck()), _Declines(),
                                              _Duck()),
                   over.is_tensor_like(lib.ones(1)), over.is_tensor_like(_Duck()),
                   over.is_tensor_like(1),
                   lib.nn.functional.has_torch_function is over.has_torch_function,
                   lib.nn.functional.handle_torch_function is over.handle_torch_function]
        with pytest.raises(TypeError, match="no implementation found for '.*_scaled' on types "
                                            "that implement __torch_function__"):
            over.handle_torch_function(_scaled, (_Declines(),), _Declines())
        found.append(answers)
    assert found[0] == found[1]


def test_namespace_odds_match_torch(real_torch):
    importlib.import_module("torch.torch_version")
    found = []
    for lib in (ref, real_torch):
        version = lib.torch_version.TorchVersion
        module = lib.nn.Module()
        module.steps = lib.nn.Buffer(lib.zeros(1))
        module.scratch = lib.nn.Buffer(lib.ones(2), persistent=False)
        lib.manual_seed(3)
        before = lib.rand(2).tolist()
        lib.manual_seed(3)
        skipped = lib.nn.utils.skip_init(lib.nn.Linear, 4, 2)
        after = lib.rand(2).tolist()
        layer = lib.nn.Linear(2, 1)
        found.append([
            version("2.13.0+cpu") >= "2.9", version("2.13.0") > (2, 12, 1),
            version("2.1.0rc1") < "2.1.0", version("1.10.0a") > "1.2.1",
            version("2.0.0") == "2.0", version("parrot") < "zebra",
            lib.torch is lib, lib.functional.einsum is lib.einsum,
            lib.functional.split is lib.split, lib.Storage is lib.FloatStorage,
            isinstance(2.5, lib.types.Number), isinstance("2", lib.types.Number),
            list(module.state_dict()), sorted(dict(module.named_buffers())),
            isinstance(module.steps, lib.nn.Buffer), isinstance(lib.ones(1), lib.nn.Buffer),
            before == after, tuple(skipped.weight.shape),
            layer._call_impl(lib.ones(1, 2)).tolist() == layer(lib.ones(1, 2)).tolist(),
        ])
        with pytest.raises(RuntimeError, match="Expected a Module"):
            lib.nn.utils.skip_init(int)
    assert found[0] == found[1]


class _OptedOut:
    pass


def _c_entry_answers(lib):
    size = lib.Size
    x = lib.ones(2, requires_grad=True)
    seen = []

    def hook(grad):
        seen.append((lib._C._current_graph_task_id(),
                     lib._C._current_autograd_node().name()))
        return grad

    for factor in (2.0, 3.0):
        y = x * factor
        y.register_hook(hook)
        y.sum().backward()
    _OptedOut.__torch_function__ = lib._C._disabled_torch_function_impl
    answers = [tuple(lib._C._infer_size(size([2, 1]), size([3]))),
               lib._C._current_graph_task_id(), lib._C._current_autograd_node(),
               [name for _, name in seen], seen[1][0] - seen[0][0],
               lib._C._debug_set_autodiff_subgraph_inlining(False),
               lib._C._set_math_sdp_allow_fp16_bf16_reduction(True),
               lib.overrides.has_torch_function((_OptedOut(),)),
               lib._C._disabled_torch_function_impl(max, (), (1, 5))]
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match the size of "
                                           r"tensor b \(4\) at non-singleton dimension 1"):
        lib._C._infer_size(size([2, 3]), size([4]))
    return answers


def test_c_entry_points_match_torch(real_torch):
    importlib.import_module("torch.overrides")
    assert _c_entry_answers(ref) == _c_entry_answers(real_torch)


def _internal_answers(lib):
    jit_internal = importlib.import_module(f"{lib.__name__}._jit_internal")
    prims = importlib.import_module(f"{lib.__name__}._prims_common")
    module = importlib.import_module(f"{lib.__name__}.nn.modules.module")
    pick = jit_internal.boolean_dispatch("flag", 1, False, lambda x, flag=True: "on",
                                         lambda x, flag=False: "off", None, "pick")

    def overloaded(x: int) -> int:
        ...

    log = []
    layer = lib.nn.Linear(2, 1)
    layer.register_forward_pre_hook(lambda m, a: log.append("pre"))
    layer.register_forward_hook(lambda m, a, o: log.append("post"))
    handles = [module.register_module_forward_pre_hook(lambda m, a: log.append("global pre")),
               module.register_module_forward_hook(lambda m, a, o: log.append("global post")),
               module.register_module_forward_hook(lambda m, a, k, o: o * 0 + 5,
                                                   with_kwargs=True)]
    try:
        replaced = layer(lib.ones(1, 2)).tolist()
        hooks = [len(module._global_forward_pre_hooks), len(module._global_forward_hooks)]
    finally:
        for handle in handles:
            handle.remove()
    x = lib.tensor([[0.2, -1.0, 0.5]], dtype=lib.float64, requires_grad=True)
    y = lib.softmax(x, 1)
    g = lib.tensor([[1.0, 2.0, -0.5]], dtype=lib.float64)
    return [jit_internal.Optional[int], jit_internal.List[int], jit_internal.Tuple[int, str],
            jit_internal._overload(overloaded) is overloaded, pick(0), pick(0, True),
            pick(0, flag=True), prims.is_integer_dtype(lib.uint8),
            prims.is_integer_dtype(lib.bool), prims.infer_size((2, -1), 6), log, replaced,
            hooks, len(module._global_forward_hooks), lib._tensor.Tensor is lib.Tensor,
            lib._softmax_backward_data(g, y.detach(), 1, lib.float64).tolist(),
            lib.autograd.grad((y * g).sum(), x)[0].tolist()]


def test_private_helpers_match_torch(real_torch):
    for name in ("_jit_internal", "_prims_common", "_tensor"):
        importlib.import_module(f"torch.{name}")
    mine, theirs = _internal_answers(ref), _internal_answers(real_torch)
    np.testing.assert_allclose(mine.pop(), theirs.pop(), rtol=1e-12)
    np.testing.assert_allclose(mine.pop(), theirs.pop(), rtol=1e-12)
    assert mine == theirs
    for lib in (ref, real_torch):
        prims = importlib.import_module(f"{lib.__name__}._prims_common")
        for shape, numel, match in (((4, -1), 6, r"shape '\[4, -1\]' is invalid for input of "
                                                 "size 6"),
                                    ((0, -1), 0, "cannot reshape tensor of 0 elements"),
                                    ((-1, -1), 4, "only one dimension can be inferred")):
            with pytest.raises(RuntimeError, match=match):
                prims.infer_size(shape, numel)


def _more_answers(lib):
    x = lib.tensor([0.3, 1.2], dtype=lib.float64)
    y = lib.tensor([2.0, -1.0], dtype=lib.float64)

    def f(a, b):
        return a.sin() * b + (a * a).sum(), a * 3

    value, pushed = lib.func.jvp(f, (x, y), (lib.ones(2, dtype=lib.float64),
                                             lib.tensor([0.5, 0.0], dtype=lib.float64)))
    grad, val = lib.func.grad_and_value(lambda a: (a ** 3).sum())(x)
    plain = lib.func.grad(lambda a, b: (a * b).sum(), argnums=1)(x, y)
    with_aux, aux = lib.func.grad(lambda a: ((a.exp()).sum(), a * 2), has_aux=True)(x)
    sequence = lib.tensor(np.arange(30.0).reshape(5, 2, 3) / 10, requires_grad=True)
    kernel = lib.tensor(np.cos(np.arange(36.0)).reshape(3, 3, 4), requires_grad=True)
    bias = lib.tensor([0.1, 0.2, 0.3, 0.4], requires_grad=True)
    tbc = lib.conv_tbc(sequence, kernel, bias, 1)
    scores = lib.tensor([[0.1, 0.2, 0.4, 0.8], [0.5, -0.3, 0.0, 1.0]], requires_grad=True)
    labels = lib.tensor([[3, 0, -1, 1], [1, 2, 1, -1]])
    margin = lib.nn.MultiLabelMarginLoss()(scores, labels) + lib.nn.functional.\
        multilabel_margin_loss(scores[0], labels[0], reduction="sum")
    (tbc.sum() + margin).backward()
    arrays = [v.numpy() for v in value] + [p.numpy() for p in pushed] + [
        grad.numpy(), val.numpy(), plain.numpy(), with_aux.numpy(), aux.detach().numpy(),
        tbc.detach().numpy(), margin.detach().numpy()] + [
        t.grad.numpy() for t in (sequence, kernel, bias, scores)]
    devices = lib.utils.checkpoint.get_device_states(lib.ones(1), 3)
    lib.utils.checkpoint.set_device_states([], [])
    storage = lib.ones(2).untyped_storage()
    restored = lib.serialization.default_restore_location(storage, "cpu") is storage
    return arrays, [devices, restored, lib.sym_int(-3.7), lib.sym_int(5)]


def test_more_tail_functions_match_torch(real_torch):
    importlib.import_module("torch.utils.checkpoint")
    (mine, mine_rest), (theirs, theirs_rest) = _more_answers(ref), _more_answers(real_torch)
    for a, b in zip(mine, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)
    assert mine_rest == theirs_rest
    for lib in (ref, real_torch):
        for name in ("eig", "symeig"):
            with pytest.raises(RuntimeError, match="deprecated since version 1.9 and is now "
                                                   "removed"):
                getattr(lib, name)(lib.eye(2))
        if lib is real_torch and lib.cuda.is_available():
            continue  # a CPU build refuses to restore on cuda; this torch reaches a GPU
        with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA"):
            lib.serialization.default_restore_location(lib.ones(1).untyped_storage(), "cuda:0")


def test_datapipe_graph_matches_torch(real_torch):
    importlib.import_module("torch.utils.data.graph")
    importlib.import_module("torch.utils.data.datapipes.iter")
    found = []
    for lib in (ref, real_torch):
        source = lib.utils.data.datapipes.iter.IterableWrapper(range(5))
        pipe = source.map(abs).filter(bool)
        graph = lib.utils.data.graph.traverse_dps(pipe)

        def shape(g):
            return [(key == id(dp), shape(children)) for key, (dp, children) in g.items()]

        found.append(shape(graph))
    assert found[0] == found[1] == [(True, [(True, [(True, [])])])]


def _fails(rank, value):
    raise ValueError(f"bad {value}")


def test_spawn_reports_a_failed_worker_like_torch():
    with pytest.raises(ref.multiprocessing.ProcessRaisedException) as caught:
        ref.multiprocessing.spawn(_fails, args=(3,), nprocs=1)
    error = caught.value
    assert str(error).startswith("\n\n-- Process 0 terminated with the following error:\n"
                                 "Traceback (most recent call last):\n")
    assert str(error).endswith("ValueError: bad 3\n")
    assert error.error_index == 0 and error.error_pid > 0
    assert isinstance(error, ref.multiprocessing.ProcessException)


def test_dlpack_shares_memory_with_torch_and_numpy(real_torch):
    theirs = real_torch.arange(4.0)
    mine = ref.utils.dlpack.from_dlpack(real_torch.utils.dlpack.to_dlpack(theirs))
    theirs[0] = 7.0
    assert mine.tolist() == [7.0, 1.0, 2.0, 3.0]
    back = real_torch.from_dlpack(mine)
    mine.add_(1)
    assert back.tolist() == [8.0, 2.0, 3.0, 4.0]
    array = np.arange(3.0)
    shared = ref.from_dlpack(array)
    array[1] = -1.0
    assert shared.tolist() == [0.0, -1.0, 2.0]
    assert ref.utils.dlpack.to_dlpack(shared) is not None
    strided = real_torch.arange(12.0).reshape(3, 4)[:, ::2].t()
    alias = ref.utils.dlpack.from_dlpack(real_torch.utils.dlpack.to_dlpack(strided))
    strided.mul_(2)
    assert alias.tolist() == strided.tolist() and tuple(alias.shape) == (2, 3)


def test_scheme_and_option_names_match_torch(real_torch):
    importlib.import_module("torch.numa.binding")
    found = []
    for lib in (ref, real_torch):
        binding = lib.numa.binding
        found.append([repr(lib.per_channel_symmetric), repr(lib.per_tensor_affine),
                      lib.version.xpu, [m.value for m in binding.AffinityMode],
                      repr(binding.NumaOptions(affinity_mode=binding.AffinityMode.SOCKET)),
                      lib.distributed._rank_not_in_group(None)])
    assert found[0] == found[1]


def _lazy_answers(lib):
    lazy = importlib.import_module(f"{lib.__name__}.nn.modules.lazy")
    uninitialized = importlib.import_module(f"{lib.__name__}.nn.parameter").UninitializedParameter
    layer = lib.nn.LazyLinear(3)
    optimizer = lib.optim.SGD(layer.parameters(), lr=0.1)
    before = [isinstance(layer, lazy.LazyModuleMixin), isinstance(layer.weight, uninitialized),
              layer.has_uninitialized_params(), len(layer._forward_pre_hooks)]
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        layer.weight.shape
    x = lib.tensor(np.arange(8.0).reshape(2, 4), dtype=lib.float32)
    layer(x)
    with lib.no_grad():
        layer.weight.copy_(lib.tensor(np.cos(np.arange(12.0)).reshape(3, 4)))
        layer.bias.copy_(lib.tensor([0.1, 0.2, 0.3]))
    layer(x).sum().backward()
    optimizer.step()
    return before + [type(layer).__name__, isinstance(layer.weight, uninitialized),
                     type(layer.weight).__name__, tuple(layer.weight.shape), layer.in_features,
                     len(layer._forward_pre_hooks), sorted(layer.state_dict()),
                     optimizer.param_groups[0]["params"][0] is layer.weight,
                     np.round(layer.weight.detach().numpy(), 5).tolist()]


def test_lazy_modules_match_torch(real_torch):
    importlib.import_module("torch.nn.modules.lazy")
    assert _lazy_answers(ref) == _lazy_answers(real_torch)


def _small_hooks_answers(lib):
    importlib.import_module(f"{lib.__name__}.profiler.profiler")
    model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.BatchNorm1d(2))
    lib.nn.parallel.DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(
        model, ["0.bias", "1.running_mean"])
    ignored = sorted(name for name, t in [*model.named_parameters(), *model.named_buffers()]
                     if getattr(t, "_ddp_ignored", False))
    rng = np.random.default_rng(3)
    q, k, v = (lib.tensor(rng.normal(size=(2, 3, 4)), requires_grad=True) for _ in range(3))
    w = lib.tensor(rng.normal(size=(12, 4)), requires_grad=True)
    b = lib.tensor(rng.normal(size=12), requires_grad=True)
    projected = lib.nn.functional._in_projection_packed(q, k, v, w, b)
    sum((p * (i + 1)).sum() for i, p in enumerate(projected)).backward()
    return ([p.detach().numpy() for p in projected] + [t.grad.numpy() for t in (q, k, v, w, b)],
            [lib.profiler.profiler._default_schedule_fn(7).name, ignored,
             model._ddp_params_and_buffers_to_ignore])


def test_small_internals_match_torch(real_torch):
    (mine, mine_rest), (theirs, theirs_rest) = (_small_hooks_answers(ref),
                                                _small_hooks_answers(real_torch))
    for a, b in zip(mine, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert mine_rest == theirs_rest
