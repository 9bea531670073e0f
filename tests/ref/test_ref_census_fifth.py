"""The fifth census round's functions against torch on the same inputs: ``torch.nn.grad``,
``_amp_update_scale_``, autocast's ``_cast``, ``Module._load_from_state_dict`` (overridden as
code written for torch overrides it), the unpickling helpers and the other private names."""
from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcheck.ref as ref

torch = pytest.importorskip("torch")


@settings(max_examples=15, deadline=None)
@given(dims=st.integers(1, 3), stride=st.integers(1, 2), padding=st.integers(0, 1),
       dilation=st.integers(1, 2), groups=st.sampled_from([1, 2]), seed=st.integers(0, 999))
def test_nn_grad_matches_torch(dims, stride, padding, dilation, groups, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 2 * groups, *[7] * dims))
    w = rng.standard_normal((2 * groups, 2, *[2] * dims))
    conv = getattr(torch.nn.functional, f"conv{dims}d")
    out = conv(torch.tensor(x), torch.tensor(w), None, stride, padding, dilation, groups)
    g = rng.standard_normal(out.shape)
    args = (stride, padding, dilation, groups)
    for kind, theirs_args, mine_args in (
            ("input", (x.shape, torch.tensor(w), torch.tensor(g)),
             (x.shape, ref.tensor(w), ref.tensor(g))),
            ("weight", (torch.tensor(x), w.shape, torch.tensor(g)),
             (ref.tensor(x), w.shape, ref.tensor(g)))):
        name = f"conv{dims}d_{kind}"
        expected = getattr(torch.nn.grad, name)(*theirs_args, *args)
        got = getattr(ref.nn.grad, name)(*mine_args, *args)
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("tracker, found, interval, scale", [
    (0, 0.0, 3, 4.0), (2, 0.0, 3, 4.0), (2, 1.0, 3, 4.0), (0, 0.0, 1, 3e38)])
def test_amp_update_scale_matches_torch(tracker, found, interval, scale):
    answers = []
    for lib in (torch, ref):
        growth = lib.tensor([tracker], dtype=lib.int32)
        current = lib.tensor([scale], dtype=lib.float32)
        returned = lib._amp_update_scale_(current, growth, lib.tensor([found]), 2.0, 0.5,
                                          interval)
        answers.append((returned is current, current.tolist(), growth.tolist()))
    assert answers[0] == answers[1]


def test_autocast_cast_matches_torch():
    answers = []
    for lib in (torch, ref):
        value = {"a": [lib.ones(2), lib.ones(2, dtype=lib.float64)], "b": (lib.ones(1), "text"),
                 "c": lib.ones(2, dtype=lib.int64)}
        cast = lib.amp.autocast_mode._cast(value, "cpu", lib.float16)
        answers.append((str(cast["a"][0].dtype), str(cast["a"][1].dtype),
                        type(cast["b"]).__name__, str(cast["b"][0].dtype), cast["b"][1],
                        str(cast["c"].dtype)))
    assert answers[0] == answers[1]
    for lib in (torch, ref):
        with pytest.warns(FutureWarning, match="autocast_mode._cast\\(value, dtype\\)` is"):
            kept = lib.cuda.amp.autocast_mode._cast([lib.ones(1)], lib.float16)
        assert str(kept[0].dtype) == "torch.float32"   # a cpu tensor is not cast to cuda's


@pytest.mark.parametrize("args", [("double", "int32", "float"), ("float", "int64", "float"),
                                  ("float", "int32", "double"), ("two", "int32", "float")])
def test_amp_update_scale_checks_as_torch(args):
    messages = []
    for lib in (torch, ref):
        tensors = [lib.ones(2) if name == "two" else lib.ones(1, dtype=getattr(lib, name))
                   for name in args]
        with pytest.raises(RuntimeError) as error:
            lib._amp_update_scale_(*tensors, 2.0, 0.5, 1)
        messages.append(str(error.value))
    assert messages[0] == messages[1]


def _renaming_module(lib):
    class Renamed(lib.nn.Module):
        """Loads checkpoints that called its layer ``old`` (the override code writes)."""

        def __init__(self):
            super().__init__()
            self.layer = lib.nn.Linear(2, 2)

        def _load_from_state_dict(self, state_dict, prefix, *args):
            for key in [k for k in state_dict if k.startswith(prefix + "old.")]:
                state_dict[prefix + "layer." + key[len(prefix) + 4:]] = state_dict.pop(key)
            super()._load_from_state_dict(state_dict, prefix, *args)

    return Renamed


@pytest.mark.parametrize("case", ["renamed", "mismatch", "not tensor", "strict off", "assign",
                                  "batchnorm", "not mapping", "scalar"])
def test_load_state_dict_matches_torch(case):
    answers = []
    for lib in (torch, ref):
        net = lib.nn.Sequential(_renaming_module(lib)(), lib.nn.BatchNorm1d(2))
        with lib.no_grad():
            net[0].layer.weight.fill_(0.5)
        weights = {"0.old.weight": lib.ones(2, 2), "0.old.bias": lib.zeros(2),
                   "1.weight": lib.ones(2), "1.bias": lib.zeros(2),
                   "1.running_mean": lib.zeros(2), "1.running_var": lib.ones(2)}
        calls = {
            "renamed": lambda: net.load_state_dict(weights),
            "mismatch": lambda: net.load_state_dict({**weights, "1.bias": lib.zeros(3)}),
            "not tensor": lambda: net.load_state_dict({**weights, "1.bias": [0.0, 0.0]}),
            "strict off": lambda: net.load_state_dict({"0.old.weight": lib.ones(2, 2),
                                                       "extra": lib.ones(1)}, strict=False),
            "assign": lambda: (net.load_state_dict(weights, assign=True),
                               net[1].running_var is weights["1.running_var"]),
            "batchnorm": lambda: net.load_state_dict({**weights, "1.num_batches_tracked":
                                                      lib.tensor(5)}),
            "not mapping": lambda: net.load_state_dict([1, 2]),
            "scalar": lambda: net.load_state_dict({**weights,
                                                   "1.num_batches_tracked": lib.tensor([7])}),
        }
        try:
            result = repr(calls[case]())
        except (RuntimeError, TypeError) as error:
            result = (type(error).__name__, str(error))
        answers.append((result, net[0].layer.weight.tolist(), net[1].num_batches_tracked.item()))
    assert answers[1] == answers[0]


def test_rebuild_helpers_match_torch():
    class Tagged(ref.Tensor):
        pass

    rebuilt = ref._tensor._rebuild_from_type_v2(ref.ones, Tagged, (2,), {"tag": "kept"})
    assert type(rebuilt) is Tagged and rebuilt.tag == "kept" and rebuilt.tolist() == [1.0, 1.0]
    storage = np.arange(6.0)
    got = ref._utils._rebuild_tensor_v2(storage, 1, (2, 2), (2, 1))
    expected = torch._utils._rebuild_tensor_v2(
        torch.storage.TypedStorage(torch.arange(6.0, dtype=torch.float64).tolist(),
                                   dtype=torch.float64), 1, (2, 2), (2, 1), False, {})
    assert got.tolist() == expected.tolist()
    param = ref._utils._rebuild_parameter(ref.ones(2), False)
    assert isinstance(param, ref.nn.Parameter) and not param.requires_grad


def test_private_names_behave_as_torchs():
    x, y = ref.ones(2), torch.ones(2)
    assert (x._cdata == x._cdata, x._cdata == x.view(2)._cdata) == \
        (y._cdata == y._cdata, y._cdata == y.view(2)._cdata)
    names = {cls.__name__ for cls in ref._storage_classes}
    assert names <= {cls.__name__ for cls in torch._storage_classes}
    assert {"FloatStorage", "ByteStorage", "TypedStorage"} <= names
    assert list(ref.ByteStorage._from_buffer(b"ab")) == list(torch.ByteStorage._from_buffer(b"ab"))
    for lib in (torch, ref):
        with pytest.raises(RuntimeError, match="The runtime module of 'cpu' has already been"):
            lib._register_device_module("cpu", types.ModuleType("mine"))


@pytest.mark.parametrize("text", ["trainer0/cuda:1", "rank:3/cpu", "ps0", "cpu", "cuda:2",
                                  "rank:1", "", "a/b/c", "rank:x/cpu", "w:1:2/cpu", "/cpu"])
def test_remote_device_parses_as_torch(text):
    import torch.distributed.remote_device  # noqa: F401 - torch imports it lazily

    answers = []
    for lib in (torch, ref):
        try:
            device = lib.distributed.remote_device._remote_device(text)
            answers.append((repr(device), device.worker_name(), device.rank(),
                            str(device.device()), device == lib.distributed._remote_device(text)))
        except (ValueError, RuntimeError) as error:
            answers.append((type(error).__name__, str(error).split(". ")[0]))
    assert answers[1] == answers[0]


@pytest.mark.parametrize("method", ["named_children", "named_modules", "state_dict", "to",
                                    "named_parameters"])
def test_remote_module_refuses_module_methods_as_torch(method):
    from torch.distributed.nn.api.remote_module import _raise_not_supported

    with pytest.raises(ValueError) as expected:
        _raise_not_supported(method)
    module = object.__new__(ref.distributed.nn.RemoteModule)
    with pytest.raises(ValueError) as got:
        getattr(module, method)()
    assert str(got.value) == str(expected.value)


def test_permute_tensor_on_one_rank_matches_torch():
    import torch.distributed._functional_collectives as funcol

    if not torch.distributed.is_gloo_available():
        pytest.skip("this torch has no gloo backend")
    torch.distributed.init_process_group("gloo", store=torch.distributed.HashStore(), rank=0,
                                         world_size=1)
    ref.distributed.init_process_group("gloo", store=ref.distributed.HashStore(), rank=0,
                                       world_size=1)
    try:
        expected = funcol.wait_tensor(funcol.permute_tensor(torch.arange(4.0), [0],
                                                            torch.distributed.group.WORLD))
        mine = ref.distributed._functional_collectives
        source = ref.arange(4.0)
        got = mine.wait_tensor(mine.permute_tensor(source, [0], ref.distributed.group.WORLD))
        assert got.tolist() == expected.tolist() and got is not source
        theirs_ops, mine_ops = torch.ops._c10d_functional, ref.ops._c10d_functional
        for name, args in (("all_gather_into_tensor", (1, "0")),
                           ("reduce_scatter_tensor", ("sum", 1, "0")),
                           ("all_reduce", ("sum", "0"))):
            expected = theirs_ops.wait_tensor(getattr(theirs_ops, name)(torch.arange(4.0), *args))
            got = mine_ops.wait_tensor.default(getattr(mine_ops, name).default(ref.arange(4.0),
                                                                               *args))
            assert got.tolist() == expected.tolist()
    finally:
        torch.distributed.destroy_process_group()
        ref.distributed.destroy_process_group()


def test_fx_helpers_match_torch():
    import importlib

    for name in ("experimental._config", "experimental.symbolic_shapes", "passes.split_utils"):
        importlib.import_module(f"torch.fx.{name}")
    mine_config = importlib.import_module("gradcheck.ref.fx.experimental._config")
    assert mine_config.get_config_copy() == torch.fx.experimental._config.get_config_copy()
    shapes = importlib.import_module("gradcheck.ref.fx.experimental.symbolic_shapes")
    for lib_shapes in (shapes, torch.fx.experimental.symbolic_shapes):
        with pytest.warns(FutureWarning, match="guard_size_oblivious will be removed"):
            assert lib_shapes.guard_size_oblivious(True) is True
        with pytest.warns(FutureWarning), pytest.raises(AssertionError, match="Expected bool"):
            lib_shapes.guard_size_oblivious(1)
    split = importlib.import_module("gradcheck.ref.fx.passes.split_utils")
    for lib, lib_split in ((ref, split), (torch, torch.fx.passes.split_utils)):
        net = lib.nn.Sequential(lib.nn.ModuleList([lib.nn.Linear(2, 3)]))
        assert lib_split.getattr_recursive(net, "0.0.weight").shape == (3, 2)
        assert lib_split.getattr_recursive(net, "0.7") is None
        assert lib_split.getattr_recursive(net, "0.0.nothing") is None


def _state(lib):
    return {"model": {"w": lib.arange(3.0), "b": lib.ones(2)}, "step": 3}


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value.tolist() if hasattr(value, "tolist") else value


@pytest.mark.parametrize("keys", [None, "step", {"model"}])
def test_checkpoint_loading_by_keys_matches_torch(tmp_path, keys):
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict_loader import _load_state_dict_from_keys

    dcp.save(_state(torch), checkpoint_id=tmp_path / "theirs", no_dist=True)
    expected = _load_state_dict_from_keys(keys, checkpoint_id=tmp_path / "theirs")
    mine = ref.distributed.checkpoint
    mine.save(_state(ref), checkpoint_id=tmp_path / "mine", no_dist=True)
    got = mine.state_dict_loader._load_state_dict_from_keys(keys, checkpoint_id=tmp_path / "mine")
    assert _plain(got) == _plain(expected)


def test_checkpoint_format_conversion_round_trips(tmp_path):
    mine = ref.distributed.checkpoint
    ref.save(_state(ref), tmp_path / "plain.pt")
    mine.format_utils.torch_save_to_dcp(tmp_path / "plain.pt", tmp_path / "dcp")
    loaded: dict = {}
    mine.load(loaded, checkpoint_id=tmp_path / "dcp",
              planner=mine.format_utils._EmptyStateDictLoadPlanner())
    mine.format_utils.dcp_to_torch_save(tmp_path / "dcp", tmp_path / "back.pt")
    assert _plain(loaded) == _plain(ref.load(tmp_path / "back.pt")) == _plain(_state(ref))


def test_checkpoint_exception_prints_as_torchs():
    from torch.distributed.checkpoint.api import CheckpointException

    error = ValueError("disk full")
    expected = str(CheckpointException("failed", {0: (error, None)}))
    got = ref.distributed.checkpoint.api.CheckpointException("failed", {0: (error, None)})
    assert str(got) == expected and got.failures == {0: (error, None)}


@pytest.mark.parametrize("optimizer", ["Adam", "SGD", "AdamW", "RMSprop"])
def test_init_optim_state_matches_torch(optimizer):
    from torch.distributed.checkpoint.state_dict import _init_optim_state

    answers = []
    for lib, init in ((torch, _init_optim_state),
                      (ref, ref.distributed.checkpoint.state_dict._init_optim_state)):
        param = lib.nn.Parameter(lib.arange(3.0))
        options = {"momentum": 0.9} if optimizer in ("SGD", "RMSprop") else {}
        opt = getattr(lib.optim, optimizer)([param], lr=0.1, **options)
        init(opt)
        state = opt.state_dict()
        answers.append((_plain(state["state"]), state["param_groups"][0]["lr"], param.tolist(),
                        param.grad))
    assert answers[1] == answers[0]


def test_archive_reader_matches_torch(tmp_path):
    import io

    buffer = io.BytesIO()
    torch.save({"w": torch.arange(3.0), "step": 2}, buffer)
    data = buffer.getvalue()
    answers = []
    for lib in (torch, ref):
        reader = lib.PyTorchFileReader(io.BytesIO(data))
        with lib.serialization._open_zipfile_reader(io.BytesIO(data)) as opened:
            script = lib.serialization._is_torchscript_zip(opened)
        try:
            reader.get_record("missing")
        except RuntimeError as error:
            missing = str(error)
        answers.append((reader.get_all_records(), reader.get_record("data.pkl"),
                        reader.get_record_size("data/0"), reader.has_record("version"),
                        reader.serialization_id(), script, missing))
    assert answers[1] == answers[0]
    with pytest.raises(RuntimeError, match="not a ZIP archive"):
        ref.PyTorchFileReader(io.BytesIO(b"not a zip"))
    for lib in (torch, ref):
        old_dill = types.SimpleNamespace(__name__="dill", __version__="0.2.9")
        with pytest.raises(ValueError, match=r"supports dill >= 0.3.1, but you have dill 0.2.9"):
            lib.serialization._check_dill_version(old_dill)
        lib.serialization._check_dill_version(types.SimpleNamespace(__name__="pickle"))


def test_jit_private_helpers_match_torch():
    for lib in (torch, ref):
        assert lib.jit._unwrap_optional(3) == 3
        with pytest.raises(AssertionError, match="Unwrapping null optional"):
            lib.jit._unwrap_optional(None)
    dropped = ref.jit._drop(lambda: 1)
    assert dropped._torchscript_modifier == torch._jit_internal.FunctionModifiers._DROP


def test_vf_functions_are_the_tensor_functions():
    x = np.array([[1.0, -2.0], [3.0, 0.5]])
    for name, args in (("norm", ()), ("einsum", None), ("tanh", ())):
        if args is None:
            expected = torch._VF.einsum("ij->j", [torch.tensor(x)])
            got = ref._VF.einsum("ij->j", [ref.tensor(x)])
        else:
            expected = getattr(torch._VF, name)(torch.tensor(x), *args)
            got = getattr(ref._VF, name)(ref.tensor(x), *args)
        np.testing.assert_allclose(got.numpy(), expected.numpy())
    for lib in (torch, ref):
        with pytest.raises(AttributeError, match="has no attribute 'no_such_function'"):
            lib._VF.no_such_function  # noqa: B018


@pytest.mark.parametrize("name, options", [
    ("adamw", {"amsgrad": False, "weight_decay": 0.1}), ("adamw", {"amsgrad": True,
                                                                  "weight_decay": 0.0}),
    ("adam", {"amsgrad": True, "weight_decay": 0.05})])
def test_functional_adam_matches_torch(name, options):
    import torch.optim._functional as theirs_functional

    rng = np.random.default_rng(4)
    start, grads = rng.standard_normal((2, 3)), rng.standard_normal((3, 2, 3))
    answers = []
    for lib, functional in ((torch, theirs_functional), (ref, ref.optim._functional)):
        param = lib.tensor(start)
        state = [lib.zeros_like(param) for _ in range(3)]
        step = lib.tensor(0.0)
        for grad in grads:
            getattr(functional, name)([param], [lib.tensor(grad)], [state[0]], [state[1]],
                                      [state[2]], [step], beta1=0.9, beta2=0.99, lr=0.01,
                                      eps=1e-8, maximize=False, **options)
        answers.append((param.numpy().copy(), [s.numpy().copy() for s in state], step.item()))
    np.testing.assert_allclose(answers[1][0], answers[0][0], rtol=1e-12, atol=1e-14)
    for mine, theirs in zip(answers[1][1], answers[0][1]):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-14)
    assert answers[1][2] == answers[0][2] == 3.0


@settings(max_examples=10, deadline=None)
@given(rows=st.integers(2, 7), cols=st.integers(2, 7), rank=st.integers(1, 2),
       batch=st.sampled_from([(), (2,)]), with_m=st.booleans(), seed=st.integers(0, 999))
def test_svd_lowrank_recovers_low_rank_matrices_as_torch(rows, cols, rank, batch, with_m, seed):
    rng = np.random.default_rng(seed)
    low = rng.standard_normal((*batch, rows, rank)) @ rng.standard_normal((*batch, rank, cols))
    shift = rng.standard_normal((1, cols)) if with_m else np.zeros((1, cols))
    a = low + shift
    q = rank + 1
    tu, ts, tv = torch.svd_lowrank(torch.tensor(a), q=q,
                                   M=torch.tensor(shift) if with_m else None)
    u, s, v = ref.svd_lowrank(ref.tensor(a), q=q, M=ref.tensor(shift) if with_m else None)
    assert (u.shape, s.shape, v.shape) == (tu.shape, ts.shape, tv.shape)
    np.testing.assert_allclose(s.numpy()[..., :rank], ts.numpy()[..., :rank], atol=1e-9)
    rebuilt = u.numpy() @ (s.numpy()[..., None] * np.swapaxes(v.numpy(), -1, -2))
    np.testing.assert_allclose(rebuilt, low, atol=1e-9)


def test_lazy_module_takes_the_checkpoint_shapes_as_torchs():
    import warnings

    answers = []
    for lib in (torch, ref):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns that lazy modules are new
            layer = lib.nn.LazyLinear(3)
        keys = layer.load_state_dict({"weight": lib.ones(3, 2), "bias": lib.zeros(3)})
        answers.append((repr(keys), tuple(layer.weight.shape),
                        layer(lib.ones(1, 2)).tolist(), type(layer).__name__))
    assert answers[1] == answers[0]


@settings(max_examples=10, deadline=None)
@given(channels=st.integers(1, 7), size=st.integers(1, 5), seed=st.integers(0, 999))
def test_cross_map_lrn2d_matches_torch(channels, size, seed):
    rng = np.random.default_rng(seed)
    x, upstream = rng.standard_normal((2, 2, channels, 3, 2))
    answers = []
    for lib in (torch, ref):
        leaf = lib.tensor(x, requires_grad=True)
        layer = lib.nn.CrossMapLRN2d(size, alpha=0.3, beta=0.6, k=1.5)
        out = layer(leaf)
        try:
            out.backward(lib.tensor(upstream))
            grad = leaf.grad.numpy()
        except RuntimeError as error:
            grad = str(error)
        answers.append((out.detach().numpy(), grad, repr(layer)))
    np.testing.assert_allclose(answers[1][0], answers[0][0], rtol=1e-12, atol=1e-14)
    if isinstance(answers[0][1], str):
        assert answers[1][1] == answers[0][1]
    else:
        np.testing.assert_allclose(answers[1][1], answers[0][1], rtol=1e-12, atol=1e-14)
    assert answers[1][2] == answers[0][2]
    assert ref.nn.modules.CrossMapLRN2d is ref.nn.CrossMapLRN2d
