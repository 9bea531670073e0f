"""The sixth census round against torch on the same inputs: ``torch.ops.aten`` overloads
(values, dtypes, gradients, names and schemas)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import gradcheck.ref as ref

torch = pytest.importorskip("torch")


def _aten_outputs(mod, x):
    a = mod.ops.aten
    t = mod.tensor(x, requires_grad=True)
    outs = [a.view.default(t, [6, 4]), a.view.dtype(t.detach(), mod.int64), a.clone.default(t),
            a.detach.default(t), a.alias(t), a._to_copy.default(t, dtype=mod.float32),
            a.copy.default(mod.zeros(3, 4, dtype=mod.float32), t[0].detach()),
            a.select.int(t, 1, -1), a.slice.Tensor(t, 2, 1, 9223372036854775807, 2),
            a.isin.Tensor_Tensor(mod.arange(5), mod.tensor([1, 3])),
            a.isin.Tensor_Tensor_out(mod.arange(5), mod.tensor([1, 3]), invert=True,
                                     out=mod.zeros(0, dtype=mod.bool))]
    running = [mod.zeros(3, dtype=mod.float64), mod.ones(3, dtype=mod.float64)]
    w = mod.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    normed = a.native_batch_norm.default(t, w, None, *running, True, 0.1, 1e-5)
    eval_mode = a.native_batch_norm.default(t, w, None, *running, False, 0.1, 1e-5)
    g = mod.tensor(np.ones((2, 3, 4)) * np.arange(4))
    backward = a.native_batch_norm_backward.default(g, t.detach(), w.detach(), *running,
                                                    normed[1], normed[2], True, 1e-5,
                                                    [True, True, False])
    outs += [*normed, *eval_mode, *running, *backward[:2]]
    loss = sum((o * o).sum() for o in outs if o.requires_grad)
    return outs, mod.autograd.grad(loss, [t, w]), backward[2]


def test_aten_overloads_match_torch():
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    (theirs, their_grads, their_none), (mine, my_grads, my_none) = (
        _aten_outputs(torch, x), _aten_outputs(ref, x))
    assert their_none is None and my_none is None
    for expected, got in zip(theirs + list(their_grads), mine + list(my_grads)):
        assert str(got.dtype) == str(expected.dtype) and tuple(got.shape) == tuple(expected.shape)
        np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(),
                                   rtol=1e-9, atol=1e-12)


def test_aten_views_share_storage_and_copy_writes_in_place():
    for mod in (torch, ref):
        x = mod.zeros(2, 3)
        mod.ops.aten.select.int(x, 0, 1).fill_(2.0)
        mod.ops.aten.alias.default(x)[0, 0] = 5.0
        mod.ops.aten.copy_.default(mod.ops.aten.slice.Tensor(x, 1, 2), mod.tensor([7.0]))
        assert x.tolist() == [[5.0, 0.0, 7.0], [2.0, 2.0, 7.0]]


def test_aten_foreach_maximum_in_place():
    results = []
    for mod in (torch, ref):
        ls = [mod.tensor([1.0, 5.0]), mod.tensor([3.0])]
        mod.ops.aten._foreach_maximum_.Scalar(ls, 2.0)
        mod.ops.aten._foreach_maximum_.List(ls, [mod.tensor([0.0, 9.0]), mod.tensor([7.0])])
        mod.ops.aten._foreach_maximum_.ScalarList(ls, [4.0, 1.0])
        results.append([t.tolist() for t in ls])
    assert results[0] == results[1]


@pytest.mark.parametrize("op", ["view", "select", "slice", "isin", "native_batch_norm",
                                "_foreach_maximum_", "copy_", "_to_copy", "detach", "alias"])
def test_aten_names_and_schemas_match_torch(op):
    theirs, mine = getattr(torch.ops.aten, op), getattr(ref.ops.aten, op)
    assert (str(mine), repr(mine)) == (str(theirs), repr(theirs))
    assert set(mine.overloads()) <= set(theirs.overloads())
    for name in mine.overloads():
        expected, got = getattr(theirs, name), getattr(mine, name)
        assert (str(got), repr(got), got.name(), got.__name__) == (
            str(expected), repr(expected), expected.name(), expected.__name__)
        assert got._schema == str(expected._schema)
        assert str(got.overloadpacket) == str(expected.overloadpacket)


def test_aten_unknown_names_raise_as_torch():
    for mod in (torch, ref):
        with pytest.raises(AttributeError, match="has no overload name 'nonesuch'"):
            mod.ops.aten.view.nonesuch
    with pytest.raises(AttributeError, match="has no attribute"):
        ref.ops.aten.no_such_operator
    assert repr(ref.ops.aten) == repr(torch.ops.aten)


def _plan_records(mod):
    import importlib

    importlib.import_module(f"{mod.__name__}.distributed.checkpoint")
    m, p = mod.distributed.checkpoint.metadata, mod.distributed.checkpoint.planner
    t = mod.ones(2, 3, requires_grad=True)
    props = m.TensorProperties.create_from_tensor(t)
    chunk = m.ChunkStorageMetadata(offsets=mod.Size([0, 0]), sizes=mod.Size([2, 3]))
    index = m.MetadataIndex("layer.weight", [0, 1], index=3)
    data = p.TensorWriteData(chunk=chunk, properties=props, size=mod.Size([2, 3]))
    item = p.WriteItem(index=index, type=p.WriteItemType.SHARD, tensor_data=data)
    storage = m.TensorStorageMetadata(props, mod.Size([2, 3]), [chunk])
    half = m.TensorProperties(mod.float16)
    return (repr(index), index == m.MetadataIndex("layer.weight", (0, 1)),
            hash(index) == hash(m.MetadataIndex("layer.weight", (0, 1))),
            item.tensor_storage_size(), p.WriteItem(index, p.WriteItemType.TENSOR)
            .tensor_storage_size(), repr(p.WriteItemType.SHARD),
            [repr(kind) for kind in p.WriteItemType], repr(chunk), str(props.dtype),
            props.requires_grad, props.pin_memory, str(half.dtype), half.requires_grad,
            str(storage.size), storage.chunks == [chunk])


def test_checkpoint_plan_records_match_torch():
    assert _plan_records(ref) == _plan_records(torch)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ref.distributed.checkpoint.metadata.MetadataIndex("w").fqn = "v"


def _script_types(mod):
    i, f, s = mod.IntType.get(), mod.FloatType.get(), mod.StringType.get()
    lists = [mod.ListType(i), mod.ListType.ofInts(), mod.ListType.ofFloats(),
             mod.ListType.ofBools(), mod.ListType.ofStrings(), mod.ListType.ofTensors(),
             mod.ListType.ofComplexDoubles()]
    d, t = mod.DictType(s, f), mod.TupleType([i, f])
    o, empty = mod.OptionalType(i), mod.TupleType([])
    every = [i, f, s, mod.AnyType.get(), mod.ComplexType.get(), *lists, d, t, o, empty,
             mod.OptionalType.ofTensor(), mod.OptionalType(mod.ListType.ofInts())]
    described = [(str(x), repr(x), x.kind(), x.annotation_str, x.str(),
                  [str(c) for c in x.containedTypes()], isinstance(x, mod.Type)) for x in every]
    pairs = [(a, b) for a in every for b in every]
    return (described, [a.isSubtypeOf(b) for a, b in pairs], [a == b for a, b in pairs],
            i is mod.IntType.get(), str(d.getKeyType()), str(d.getValueType()),
            [str(e) for e in t.elements()], str(o.getElementType()),
            str(t.isSubtypeOf(mod.TupleType([o, f]))))


def test_script_types_match_torch():
    assert _script_types(ref) == _script_types(torch)


def test_script_types_refuse_as_torch():
    for mod in (torch, ref):
        with pytest.raises(TypeError, match="IntType: No constructor defined!"):
            mod.IntType()
        with pytest.raises(TypeError, match="incompatible constructor arguments"):
            mod.ListType(3)
        with pytest.raises(TypeError, match="unhashable"):
            hash(mod.ListType.ofInts())


def test_tag_matches_torch():
    assert [(name, int(tag)) for name, tag in ref.Tag.__members__.items()] == [
        (name, int(tag)) for name, tag in torch.Tag.__members__.items()]
    for mod in (torch, ref):
        tag = mod.Tag.inplace_view
        assert (str(tag), repr(tag), tag.name, tag.value) == (
            "Tag.inplace_view", "<Tag.inplace_view: 7>", "inplace_view", 7)


def _gloo():
    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip("this torch has no gloo backend")
    import importlib

    importlib.import_module("torch.distributed._shard.sharded_tensor")
    importlib.import_module("torch.distributed._shard.sharding_spec")


def _sharded(mod):
    d = mod.distributed
    d.init_process_group("gloo", store=d.HashStore(), rank=0, world_size=1)
    try:
        st, ss = d._shard.sharded_tensor, d._shard.sharding_spec
        out = []
        spec = ss.ChunkShardingSpec(dim=0, placements=["rank:0/cpu"])
        e = st.empty(spec, 5, 3)
        out += [repr(spec), str(e.size()), str(e.dtype), repr(e.metadata()), len(e.local_shards())]
        f = st.full(ss.ChunkShardingSpec(1, ["rank:0/cpu"] * 3), (2, 5), 2.5, dtype=mod.float64, requires_grad=True)
        out += [repr(f.metadata()), [s.tensor.tolist() for s in f.local_shards()], f.requires_grad, [s.tensor.requires_grad for s in f.local_shards()]]
        t = mod.arange(6.).view(2, 3)
        sh = st.Shard.from_tensor_and_offsets(t, [0, 0], 0)
        out.append(repr(sh))
        s2 = st.ShardedTensor._init_from_local_shards([sh], 2, 3)
        out += [str(s2.size()), repr(s2.metadata()), repr(s2.sharding_spec()), s2.size(1), s2.dim()]
        o = mod.zeros(2, 3); s2.gather(0, o); out.append(o.tolist())
        spec2 = ss.EnumerableShardingSpec([st.ShardMetadata([0, 0], [1, 3], "rank:0/cpu"), st.ShardMetadata([1, 0], [1, 3], "rank:0/cpu")])
        parts = [st.Shard(t[:1].clone(), spec2.shards[0]), st.Shard(t[1:].clone() * 2, spec2.shards[1])]
        s3 = st.ShardedTensor._init_from_local_shards(parts, [2, 3])
        o = mod.zeros(2, 3); s3.gather(0, o); out += [o.tolist(), repr(s3.sharding_spec())]
        md = st.ShardedTensorMetadata(spec2.shards, mod.Size([2, 3]), st.TensorProperties(mod.float32))
        s4 = st.ShardedTensorBase._init_from_local_shards_and_global_metadata(parts, md)
        out += [repr(md), repr(s4.metadata()), len(s4.local_shards())]
        out += [repr(d._shard.metadata.ShardMetadata([1], [2])), repr(ss.ShardMetadata([0], [2], "rank:0/cpu").placement)]
        errors = []
        for call in (lambda: s3.local_tensor(), lambda: st.ShardMetadata([0], [2, 3]), lambda: st.ShardMetadata([-1], [2]),
                     lambda: ss.EnumerableShardingSpec([st.ShardMetadata([0], [2], "rank:0/cpu"), st.ShardMetadata([1], [2], "rank:0/cpu")]),
                     lambda: ss.EnumerableShardingSpec([st.ShardMetadata([0], [1], "rank:0/cpu")]).build_metadata(mod.Size([2]), st.TensorProperties(mod.float32)),
                     lambda: st.Shard(mod.ones(2), st.ShardMetadata([0], [3], "rank:0/cpu")),
                     lambda: s2.gather(0, mod.zeros(3)), lambda: ss.ChunkShardingSpec("x", ["rank:0/cpu"]),
                     lambda: ss.ChunkShardingSpec(2, ["rank:0/cpu"]).build_metadata(mod.Size([2]), st.TensorProperties(mod.float32))):
            try:
                call(); errors.append(None)
            except Exception as error:
                errors.append((type(error).__name__, str(error)))
        out.append(errors)
        return out
    finally:
        d.destroy_process_group()


@pytest.mark.filterwarnings("ignore")
def test_sharded_tensor_matches_torch_on_one_rank():
    _gloo()
    assert _sharded(ref) == _sharded(torch)


def test_sharding_spec_shard_and_refusals():
    d = ref.distributed
    d.init_process_group("gloo", store=d.HashStore(), rank=0, world_size=1)
    try:
        x = ref.arange(10.0).view(2, 5)
        spec = d._shard.sharding_spec.ChunkShardingSpec(1, ["rank:0/cpu"] * 2)
        sharded = spec.shard(x)
        whole = ref.zeros(2, 5)
        sharded.gather(0, whole)
        assert whole.tolist() == x.tolist()
        assert [s.tensor.shape[1] for s in sharded.local_shards()] == [3, 2]
        with pytest.raises(ValueError, match="names rank 1.*place every shard on rank 0"):
            d._shard.sharded_tensor.empty(
                d._shard.sharding_spec.ChunkShardingSpec(0, ["rank:0/cpu", "rank:1/cpu"]), 4)
    finally:
        d.destroy_process_group()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        d._shard.sharded_tensor.empty(spec, 4)
    assert d._sharding_spec.ChunkShardingSpec is spec.__class__


def _reduced(mod):
    import importlib

    importlib.import_module(f"{mod.__name__}.multiprocessing")
    if mod is torch:
        importlib.import_module("torch.multiprocessing.reductions")
    reductions = mod.multiprocessing.reductions
    leaf = mod.arange(6.0).requires_grad_()
    rebuilt_leaf = (lambda fn, args: fn(*args))(*reductions.reduce_tensor(leaf))
    strided = mod.arange(10.0)[2:8:2]
    fn, args = reductions.reduce_tensor(strided)
    view = fn(*args)
    view.mul_(10)
    storage = mod.arange(4, dtype=mod.int32).storage()
    fn, args = reductions.reduce_typed_storage(storage)
    typed = fn(*args)
    fn, args = reductions.reduce_typed_storage_child(storage)
    child = (fn.__name__, isinstance(args[1], type), args[0].nbytes())
    bytes_of = mod.tensor([1, 258], dtype=mod.int16).untyped_storage()
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        reductions.reduce_tensor(leaf * 2)
    return (rebuilt_leaf.tolist(), rebuilt_leaf.requires_grad, rebuilt_leaf.is_leaf,
            strided.tolist(), view.tolist(), view.stride(), bytes_of.tolist(),
            typed.tolist(), str(typed.dtype), child)


@pytest.mark.filterwarnings("ignore")
def test_multiprocessing_reductions_match_torch():
    assert _reduced(ref) == _reduced(torch)


def test_reduce_storage_rebuilds_the_same_bytes():
    # torch's rebuild takes a file descriptor, so only the engine's round trip is run here
    storage = ref.tensor([1, 258], dtype=ref.int16).untyped_storage()
    fn, args = ref.multiprocessing.reductions.reduce_storage(storage)
    rebuilt = fn(*args)
    assert rebuilt.tolist() == storage.tolist() == torch.tensor(
        [1, 258], dtype=torch.int16).untyped_storage().tolist()
    assert rebuilt.data_ptr() == storage.data_ptr()


@pytest.mark.parametrize("hparams, metrics, discrete", [
    ({"lr": 0.1, "layers": 3, "opt": "adam", "bn": True, "skip": None}, {"acc": 0, "loss": 1},
     {"opt": ["adam", "sgd"], "layers": [2, 3]}),
    ({"scale": "tensor"}, {}, None),
])
def test_tensorboard_hparams_match_torch(hparams, metrics, discrete):
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import summary

    def with_tensor(mod):
        return {k: mod.tensor([2.5]) if v == "tensor" else v for k, v in hparams.items()}

    theirs = summary.hparams(with_tensor(torch), metrics, discrete)
    mine = ref.utils.tensorboard.summary.hparams(with_tensor(ref), metrics, discrete)
    assert [s.SerializeToString() for s in mine] == [s.SerializeToString() for s in theirs]


def test_tensorboard_hparams_refuse_as_torch():
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import summary

    for args in (([1], {}), ({"a": 1}, {}, {"a": ["x"]}), ({"a": [1]}, {})):
        with pytest.raises(Exception) as expected:
            summary.hparams(*args)
        with pytest.raises(type(expected.value), match=str(expected.value)[:40].replace(
                "[", r"\[").replace("]", r"\]")):
            ref.utils.tensorboard.summary.hparams(*args)


_LOGGERS = sorted({"torch", "torch.autograd", "torch.fx"} | {
    q for names in ref.logging_config.COMPONENTS.values() for q in names})


@pytest.mark.parametrize("settings", [
    {"dynamo": 10}, {"all": 20, "aot": 40}, {"dynamo": 20, "export": 10, "graph_code": True},
    {"dtensor": 50, "fsdp": 0, "c10d": 30, "ddp": 10, "distributed": 20}, {},
])
def test_set_logs_levels_match_torch(settings):
    import logging

    import torch._logging

    def levels(set_logs):
        set_logs(**settings)
        try:
            return {q: logging.getLogger(q).level for q in _LOGGERS}
        finally:
            set_logs()

    assert levels(ref._logging.set_logs) == levels(torch._logging.set_logs)


def test_set_logs_refuses_as_torch():
    import torch._logging

    for settings in ({"nonsense": 1}, {"dynamo": "x"}):
        with pytest.raises(Exception) as expected:
            torch._logging.set_logs(**settings)
        with pytest.raises(type(expected.value)) as got:
            ref._logging.set_logs(**settings)
        assert str(got.value) == str(expected.value)
    torch._logging.set_logs()
    ref._logging.set_logs()


def test_fx_tree_flatten_spec_matches_torch():
    import collections

    import torch.fx._pytree
    import torch.utils._pytree

    point = collections.namedtuple("Point", "x y")
    template = {"a": 1, "b": [2, 3], "c": (4,), "p": point(5, 6)}
    given = {"b": [20, 30, 40], "a": 10, "c": (50, 60), "z": 0, "p": point(70, 80)}
    results = []
    for mod in (torch, ref):
        _, spec = mod.utils._pytree.tree_flatten(template)
        results.append(mod.fx._pytree.tree_flatten_spec(given, spec))
        with pytest.raises(TypeError, match="not subscriptable"):
            mod.fx._pytree.tree_flatten_spec({**given, "b": object()}, spec)
    assert results[0] == results[1] == [10, 20, 30, 50, 70, 80]


def test_fx_register_pytree_flatten_spec():
    class Pair:
        def __init__(self, first, second):
            self.first, self.second = first, second

    ref.utils._pytree.register_pytree_node(
        Pair, lambda p: ([p.first, p.second], None), lambda values, _: Pair(*values))
    _, spec = ref.utils._pytree.tree_flatten(Pair(1, [2]))
    with pytest.raises(RuntimeError, match="does not have a flatten_fn_spec"):
        ref.fx._pytree.tree_flatten_spec(Pair(3, [4]), spec)
    ref.fx._pytree.register_pytree_flatten_spec(Pair, lambda p, s: [p.first, p.second])
    try:
        assert ref.fx._pytree.tree_flatten_spec(Pair(3, [4, 5]), spec) == [3, 4]
    finally:
        del ref.fx._pytree.SUPPORTED_NODES[Pair]
        del ref.utils._pytree.SUPPORTED_NODES[Pair]
    assert ref.fx._pytree.TreeSpec is ref.utils._pytree.TreeSpec
