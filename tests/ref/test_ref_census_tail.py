"""What the second round of the API census added, against torch: window functions, foreach
ops, pruning, pytrees, datapipes, checkpoint helpers, name-only dtypes, benchmark timers and
the smaller names (values and gradients in float64 where there is arithmetic)."""
from __future__ import annotations

import importlib
import io
import warnings

import numpy as np
import pytest

import gradcheck.ref as ref


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    for submodule in ("nn.utils.prune", "utils._pytree", "utils.benchmark"):
        importlib.import_module(f"torch.{submodule}")  # torch does not import these itself
    return torch


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window",
                                  "bartlett_window", "kaiser_window"])
def test_windows_match_torch(torch, name):
    for length in (0, 1, 2, 5, 8):
        for periodic in (True, False):
            mine = getattr(ref, name)(length, periodic, dtype=ref.float64)
            theirs = getattr(torch, name)(length, periodic, dtype=torch.float64)
            np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-15)
    assert ref.hann_window(4).dtype == ref.float32
    with pytest.raises(RuntimeError, match="floating point"):
        ref.hann_window(4, dtype=ref.int64)


def test_foreach_ops_match_torch(torch):
    arrays = [np.random.default_rng(i).uniform(0.5, 2, size=s) for i, s in
              enumerate([(2, 3), (4,)])]
    for lib in (ref, torch):
        lib_out = []
        xs = [lib.tensor(a) for a in arrays]
        lib_out += lib._foreach_mul(xs, 3.0) + lib._foreach_add(xs, xs, alpha=2)
        lib_out += lib._foreach_div(xs, [2.0, 4.0]) + lib._foreach_sqrt(xs)
        lib_out += lib._foreach_addcdiv(xs, xs, xs, value=0.5) + lib._foreach_neg(xs)
        ys = [x.clone() for x in xs]
        lib._foreach_maximum_(ys, 1.0)
        lib._foreach_lerp_(ys, xs, 0.25)
        lib._foreach_addcmul_(ys, xs, xs, value=2.0)
        lib_out += ys
        if lib is ref:
            mine = [t.numpy() for t in lib_out]
        else:
            theirs = [t.numpy() for t in lib_out]
    for a, b in zip(mine, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-15)


def test_frobenius_norm_addr_split_with_sizes_match_torch(torch):
    rng = np.random.default_rng(0)
    a, v1, v2 = rng.normal(size=(2, 3)), rng.normal(size=2), rng.normal(size=3)
    found = []
    for lib in (ref, torch):
        ta, t1, t2 = (lib.tensor(x, requires_grad=True) for x in (a, v1, v2))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch: frobenius_norm is deprecated
            norm = lib.frobenius_norm(ta, (0, 1))
        out = ta.addr(t1, t2, beta=2, alpha=0.5)
        (norm + out.sum()).backward()
        parts = [p.shape for p in lib.arange(6).split_with_sizes([2, 4])]
        found.append(([norm.item()] + [t.grad.numpy() for t in (ta, t1, t2)]
                      + [out.detach().numpy()], parts))
    for x, y in zip(found[0][0], found[1][0]):
        np.testing.assert_allclose(x, y, rtol=1e-12)
    assert found[0][1] == found[1][1]


def test_removed_and_checking_functions_raise_like_torch(torch):
    for lib in (ref, torch):
        with pytest.raises(RuntimeError, match="deprecated since version 1.9 and is now "
                                               "removed"):
            lib.ones(2, 2).solve(lib.ones(2, 2))
        with pytest.raises(RuntimeError, match="Expected cond to be True"):
            lib._check(False)
        with pytest.raises(RuntimeError, match="too small"):
            lib._check(False, lambda: "too small")
        lib._check(True)


def test_name_only_dtypes_answer_like_torch_and_refuse_tensors(torch):
    for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "qint8",
                 "quint8", "qint32", "quint4x2", "quint2x4", "uint1", "uint2", "uint3", "uint4",
                 "uint5", "uint6", "uint7"):
        mine, theirs = getattr(ref, name), getattr(torch, name)
        assert (repr(mine), mine.is_floating_point, mine.itemsize) == (
            repr(theirs), theirs.is_floating_point, theirs.itemsize)
        with pytest.raises(NotImplementedError, match=f"torch.{name} tensors are not available"):
            ref.zeros(2, dtype=mine)


def test_pruning_matches_torch(torch):
    cases = {
        "l1": [lambda P, m: P.l1_unstructured(m[0], "weight", amount=0.3)],
        "l1 twice": [lambda P, m: P.l1_unstructured(m[0], "weight", amount=0.3),
                     lambda P, m: P.l1_unstructured(m[0], "weight", amount=4)],
        "ln": [lambda P, m: P.ln_structured(m[0], "weight", amount=2, n=2, dim=0)],
        "ln then l1": [lambda P, m: P.ln_structured(m[0], "weight", amount=0.4, n=1, dim=1),
                       lambda P, m: P.l1_unstructured(m[0], "weight", amount=3)],
        "global": [lambda P, m: P.global_unstructured([(m[0], "weight"), (m[2], "weight")],
                                                      pruning_method=P.L1Unstructured,
                                                      amount=10)],
        "remove": [lambda P, m: P.l1_unstructured(m[2], "bias", amount=1),
                   lambda P, m: P.remove(m[2], "bias")],
        "custom": [lambda P, m: P.custom_from_mask(m[0], "bias",
                                                   mask=(m[0].bias > 0).to(m[0].bias.dtype))],
    }

    def run(lib, steps):
        torch.manual_seed(0)
        theirs = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(),
                                     torch.nn.Linear(5, 3)).double()
        model = theirs
        if lib is ref:
            model = ref.nn.Sequential(ref.nn.Linear(6, 5), ref.nn.ReLU(),
                                      ref.nn.Linear(5, 3)).double()
            model.load_state_dict({k: ref.tensor(v.detach().numpy())
                                   for k, v in theirs.state_dict().items()})
        for step in steps:
            step(lib.nn.utils.prune, model)
        y = model(lib.tensor(np.random.default_rng(0).normal(size=(4, 6))))
        y.sum().backward()
        arrays = [y.detach().numpy()] + [p.grad.numpy() for p in model.parameters()]
        arrays += [b.numpy() for b in model.buffers()]
        names = (sorted(n for n, _ in model.named_parameters()),
                 sorted(n for n, _ in model.named_buffers()))
        return arrays, names, lib.nn.utils.prune.is_pruned(model)

    for name, steps in cases.items():
        mine, theirs = run(ref, steps), run(torch, steps)
        assert mine[1:] == theirs[1:], name
        for a, b in zip(mine[0], theirs[0]):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15, err_msg=name)
    with pytest.raises(ValueError, match="should either be a float in the range"):
        ref.nn.utils.prune.l1_unstructured(ref.nn.Linear(2, 2), "weight", amount=1.5)


def test_random_pruning_prunes_the_asked_count(torch):
    layer = ref.nn.Linear(4, 6)
    ref.nn.utils.prune.random_unstructured(layer, "weight", amount=0.5)
    assert int((layer.weight_mask == 0).sum()) == 12
    ref.nn.utils.prune.random_structured(layer, "bias", amount=2, dim=0)
    assert int((layer.bias_mask == 0).sum()) == 2


def test_registered_pytree_nodes_round_trip_like_torch(torch):
    class Point:
        def __init__(self, x, y):
            self.x, self.y = x, y

    tree = {"a": Point(1, [2, 3]), "b": (4,)}
    results = []
    for pytree in (ref.utils._pytree, torch.utils._pytree):
        pytree.register_pytree_node(Point, lambda p: ([p.x, p.y], None),
                                    lambda children, context: Point(*children))
        leaves, spec = pytree.tree_flatten(tree)
        rebuilt = pytree.tree_unflatten([v * 10 for v in leaves], spec)
        results.append((leaves, rebuilt["a"].x, rebuilt["a"].y, rebuilt["b"]))
        with pytest.raises(ValueError, match="already registered"):
            pytree.register_pytree_node(Point, lambda p: ([], None), lambda c, ctx: None)
    assert results[0] == results[1]


def test_datapipes_and_chain_dataset_match_torch(torch):
    outputs = []
    for lib in (ref, torch):
        data = lib.utils.data
        pipe = data.datapipes.iter.IterableWrapper(range(7)).map(lambda x: x * 2)
        outputs.append(list(pipe.filter(lambda x: x % 4 == 0).batch(2)))

        @data.functional_datapipe("plus_one_" + lib.__name__.replace(".", "_"))
        class PlusOne(data.IterDataPipe):
            def __init__(self, source):
                self.source = source

            def __iter__(self):
                return (x + 1 for x in self.source)

        added = getattr(pipe, "plus_one_" + lib.__name__.replace(".", "_"))()
        outputs.append(list(added))

        class Count(data.IterableDataset):
            def __init__(self, n):
                self.n = n

            def __iter__(self):
                return iter(range(self.n))

            def __len__(self):
                return self.n

        chained = data.ChainDataset([Count(2), Count(3)])
        outputs.append((list(chained), len(chained)))
    assert outputs[:3] == outputs[3:]


def test_checkpoint_helpers_match_torch(torch):
    for lib in (ref, torch):
        x = lib.ones(2, requires_grad=True)
        detached = lib.utils.checkpoint.detach_variable((x, 3))
        assert detached[0].requires_grad and detached[0].grad_fn is None and detached[1] == 3
        with pytest.raises(RuntimeError, match="Only tuple of tensors is supported"):
            lib.utils.checkpoint.detach_variable([x])
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
            lib.utils.checkpoint.check_backward_validity((lib.ones(1),))


def test_base_classes_answer_isinstance_like_torch(torch):
    for lib in (ref, torch):
        pooling = lib.nn.modules.pooling
        assert isinstance(lib.nn.MaxPool2d(2), pooling._MaxPoolNd)
        assert isinstance(lib.nn.AvgPool1d(2), pooling._AvgPoolNd)
        assert isinstance(lib.nn.AdaptiveAvgPool2d(2), pooling._AdaptiveAvgPoolNd)
        assert isinstance(lib.nn.AdaptiveMaxPool2d(2), pooling._AdaptiveMaxPoolNd)
        assert not isinstance(lib.nn.MaxPool2d(2), pooling._AvgPoolNd)
        assert not isinstance(lib.nn.ConvTranspose2d(1, 1, 2),
                              lib.nn.modules.conv._ConvTransposeMixin)


def test_small_helpers(torch, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    assert ref.hub._get_torch_home() == torch.hub._get_torch_home() == str(tmp_path)
    buffer = io.BytesIO()
    torch.save(torch.ones(1), buffer)
    buffer.seek(2)
    assert ref.serialization._is_zipfile(io.BytesIO(buffer.getvalue()))
    assert buffer.tell() == 2
    ref.serialization.add_safe_globals([Exception])
    with ref.serialization.safe_globals([KeyError]):
        assert KeyError in ref.serialization.get_safe_globals()
    assert KeyError not in ref.serialization.get_safe_globals()
    draws = ref.binomial(ref.full((1000,), 10.0), ref.full((1000,), 0.3))
    assert draws.dtype == ref.float32 and 0 <= draws.min() and draws.max() <= 10
    assert abs(draws.mean().item() - 3.0) < 0.3
    calls = []
    ref.cuda._lazy_call(lambda: calls.append(1))  # no CUDA here: queued, as on a CPU build
    assert calls == []
    assert ref.optim.adamw.AdamW is ref.optim.AdamW
    assert ref.utils.model_zoo.tqdm is not None


def test_benchmark_timer_measures(torch):
    timer = ref.utils.benchmark.Timer("x * 2", globals={"x": ref.ones(3)}, label="double")
    measured = timer.timeit(20)
    assert measured.number_per_run == 20 and measured.mean > 0 and measured.title == "double"
    blocks = timer.blocked_autorange(min_run_time=0.02)
    assert blocks.median > 0 and len(blocks.times) >= 1
    assert "double" in str(ref.utils.benchmark.Compare([measured]))
    with pytest.raises(NotImplementedError, match="C\\+\\+"):
        ref.utils.benchmark.Timer("x", language="c++")


def test_internal_test_case_compares_tensors(torch):
    case = ref.testing._internal.common_utils.TestCase()
    case.assertEqual(ref.ones(2), ref.ones(2))
    case.assertEqual([ref.ones(2), 3], [ref.ones(2), 3])
    with pytest.raises(AssertionError):
        case.assertEqual(ref.ones(2), ref.zeros(2))
    case.assertNotEqual(ref.ones(2), ref.zeros(2))


def test_c_extension_entry_points_answer_like_a_cpu_build(torch):
    for lib in (ref, torch):
        c = lib._C
        first = c._jit_set_profiling_executor(False)
        assert (first, c._jit_set_profiling_executor(first)) == (True, False)
        assert c._nn._parse_to(lib.float64) == (None, lib.float64, False, None)
        assert c._nn._parse_to("cpu", lib.float32, non_blocking=True) == (
            lib.device("cpu"), lib.float32, True, None)
        assert c._nn._parse_to(lib.ones(1, dtype=lib.float16)) == (
            lib.device("cpu"), lib.float16, False, None)
        assert (c._is_tracing(), c._get_tracing_state(), c._get_privateuse1_backend_name()) == (
            False, None, "privateuseone")
        assert c._jit_can_fuse_on_cpu() is False and c._set_worker_signal_handlers() is None


def test_tensor_plumbing_helpers_match_torch(torch, tmp_path):
    for lib in (ref, torch):
        chunks = lib._utils._take_tensors([lib.ones(4), lib.ones(4), lib.ones(10),
                                           lib.ones(2, dtype=lib.float64)], 40)
        assert [[tuple(t.shape) for t in chunk] for chunk in chunks] == [
            [(4,), (4,)], [(10,)], [(2,)]]
        found = lib.nn.parallel.distributed._find_tensors({"a": [lib.ones(1), 3],
                                                          "b": (lib.zeros(2),)})
        assert [tuple(t.shape) for t in found] == [(1,), (2,)]
        grad, found_inf = lib.tensor([1.0, float("inf")]), lib.zeros(1)
        lib._amp_foreach_non_finite_check_and_unscale_([grad], found_inf, lib.tensor(0.5))
        assert grad.tolist() == [0.5, float("inf")] and found_inf.tolist() == [1.0]
        first, second = lib.nn.Parameter(lib.ones(2)), lib.zeros(3)
        second.tag = "second"
        lib.utils.swap_tensors(first, second)
        assert (type(first).__name__, first.tolist(), first.tag) == ("Tensor", [0.0] * 3,
                                                                      "second")
        assert (type(second).__name__, second.tolist(), second.requires_grad) == (
            "Parameter", [1.0, 1.0], True)
        path = tmp_path / "blob"
        with lib.serialization._open_file_like(str(path), "wb") as handle:
            handle.write(b"x")
        assert handle.closed and path.read_bytes() == b"x"


CTC_CASES = {
    "mean": dict(shape=(6, 2, 4), targets=[[1, 2, 2], [3, 1, 0]], inputs=[6, 5],
                 sizes=[3, 2], reduction="mean"),
    "sum, another blank": dict(shape=(6, 2, 4), targets=[[1, 2, 2], [3, 1, 0]],
                               inputs=[6, 5], sizes=[3, 2], reduction="sum", blank=3),
    "none, empty target": dict(shape=(6, 3, 5), targets=[[1, 1, 2], [3, 4, 4], [2, 0, 0]],
                               inputs=[6, 4, 3], sizes=[3, 3, 0], reduction="none"),
    "impossible, zero_infinity": dict(shape=(3, 2, 4), targets=[[1, 1, 1], [2, 3, 0]],
                                      inputs=[3, 3], sizes=[3, 2], reduction="none",
                                      zero_infinity=True),
    "impossible": dict(shape=(3, 2, 4), targets=[[1, 1, 1], [2, 3, 0]], inputs=[3, 3],
                       sizes=[3, 2], reduction="none"),
    "concatenated targets": dict(shape=(7, 2, 4), targets=[1, 2, 3, 3, 1], inputs=[7, 6],
                                 sizes=[3, 2], reduction="mean"),
}


@pytest.mark.parametrize("case", list(CTC_CASES))
def test_ctc_loss_matches_torch(torch, case):
    spec = dict(CTC_CASES[case])
    logits = np.random.default_rng(0).normal(size=spec.pop("shape"))
    found = []
    for lib in (ref, torch):
        x = lib.tensor(logits, requires_grad=True)
        loss = lib.nn.CTCLoss(blank=spec.get("blank", 0), reduction=spec["reduction"],
                              zero_infinity=spec.get("zero_infinity", False))(
            x.log_softmax(2), lib.tensor(spec["targets"]), lib.tensor(spec["inputs"]),
            lib.tensor(spec["sizes"]))
        weight = lib.tensor(np.random.default_rng(1).normal(size=tuple(loss.shape)))
        (loss * weight).sum().backward()
        found.append([loss.detach().numpy(), x.grad.numpy()])
    for a, b in zip(*found):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, equal_nan=True)


def test_ctc_loss_errors_like_torch(torch):
    for lib in (ref, torch):
        log_probs = lib.zeros(5, 2, 4, requires_grad=True)
        with pytest.raises(RuntimeError, match="Expected tensor to have size at least 6"):
            lib.nn.functional.ctc_loss(log_probs, lib.tensor([[1, 2], [3, 3]]), [5, 4], [2, 6])
        loss = lib.nn.functional.ctc_loss(log_probs.log_softmax(2), lib.tensor([[1, 2], [3, 3]]),
                                          [5, 4], [2, 2])
        (grad,) = lib.autograd.grad(loss, log_probs, create_graph=True)
        with pytest.raises(RuntimeError, match="_ctc_loss_backward is not implemented"):
            grad.sum().backward()


def test_parametrizations_match_torch(torch):
    importlib.import_module("torch.nn.utils.parametrize")

    def run(lib):
        class Symmetric(lib.nn.Module):
            def forward(self, x):
                return x.triu() + x.triu(1).mT

            def right_inverse(self, a):
                return a.triu()

        class Scale(lib.nn.Module):
            def forward(self, x):
                return x * 2

            def right_inverse(self, a):
                return a / 2

        class Shift(lib.nn.Module):
            def forward(self, x):
                return x + 1

        torch.manual_seed(0)
        theirs = torch.nn.Linear(3, 3).double()
        layer = theirs if lib is torch else lib.nn.Linear(3, 3).double()
        if lib is ref:
            layer.load_state_dict({k: ref.tensor(v.detach().numpy())
                                   for k, v in theirs.state_dict().items()})
        P = lib.nn.utils.parametrize
        P.register_parametrization(layer, "weight", Symmetric())
        P.register_parametrization(layer, "weight", Scale())
        names = (type(layer).__name__, sorted(layer.state_dict()), P.is_parametrized(layer),
                 P.is_parametrized(layer, "bias"), len(layer.parametrizations.weight))
        x = lib.tensor(np.random.default_rng(0).normal(size=(4, 3)))
        with P.cached():
            same = layer.weight is layer.weight
        layer(x).sum().backward()
        grads = [layer.parametrizations.weight.original.grad.numpy(), layer.bias.grad.numpy()]
        layer.weight = lib.eye(3, dtype=lib.float64)  # through the right inverses
        assigned = layer.weight.detach().numpy().copy()
        P.register_parametrization(layer, "bias", Shift())
        with pytest.raises(RuntimeError, match="Shift does not implement right_inverse"):
            layer.bias = lib.zeros(3, dtype=lib.float64)
        P.remove_parametrizations(layer, "bias", leave_parametrized=False)
        P.remove_parametrizations(layer, "weight", leave_parametrized=True)
        after = (type(layer).__name__, sorted(layer.state_dict()), type(layer.weight).__name__)
        return names, same, grads, assigned, after, layer.weight.detach().numpy()

    mine, theirs = run(ref), run(torch)
    assert mine[0] == theirs[0] and mine[1] == theirs[1] and mine[4] == theirs[4]
    for a, b in zip(mine[2] + [mine[3], mine[5]], theirs[2] + [theirs[3], theirs[5]]):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        ref.nn.utils.parametrize.remove_parametrizations(ref.nn.Linear(2, 2), "weight")
