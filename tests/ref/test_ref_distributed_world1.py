"""torch.distributed over one process, against real torch running a one-process gloo group:
stores, the c10d helpers, functional collectives (values and gradients) and device meshes."""
from __future__ import annotations

import datetime
import importlib
import json
import warnings

import numpy as np
import pytest

import gradcheck.ref as ref


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    dist = torch.distributed
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("this torch has no gloo backend")
    for name in ("_functional_collectives", "device_mesh", "constants", "utils",
                 "elastic.multiprocessing.errors"):
        importlib.import_module(f"torch.distributed.{name}")
    return torch


@pytest.fixture
def groups(torch):
    """Both libraries inside a default group of one rank, torch's on gloo."""
    torch.distributed.init_process_group("gloo", store=torch.distributed.HashStore(), rank=0,
                                         world_size=1)
    ref.distributed.init_process_group("gloo", store=ref.distributed.HashStore(), rank=0,
                                       world_size=1)
    yield
    torch.distributed.destroy_process_group()
    ref.distributed.destroy_process_group()


def _store_answers(dist, store):
    answers = [store.num_keys()]
    store.set("a", "1")
    store.set("b", b"\x00x")
    answers += [store.get("a"), store.get("b"), store.add("n", 2), store.add("n", -5),
                store.get("n"), store.compare_set("a", "1", "2"), store.compare_set("a", "z", "3"),
                store.compare_set("new", "", "x"), store.compare_set("other", "q", "x"),
                store.check(["new"]), store.check(["other"]), store.check(["a", "zz"])]
    store.append("l", "ab")
    store.append("l", "cd")
    store.multi_set(["x", "y"], ["1", "2"])
    answers += [store.multi_get(["l", "y"]), store.num_keys(), store.timeout]
    prefixed = dist.PrefixStore("pre", store)
    prefixed.set("k", "v")
    answers += [store.get("pre/k"), prefixed.get("k"), prefixed.check(["k"]),
                prefixed.add("c", 4), store.get("pre/c"), prefixed.num_keys()]
    store.set_timeout(datetime.timedelta(milliseconds=50))
    with pytest.raises(RuntimeError) as caught:
        store.get("missing")
    answers.append((type(caught.value).__name__, str(caught.value)))
    return answers


@pytest.mark.parametrize("kind", ["HashStore", "TCPStore", "FileStore"])
def test_stores_answer_like_torch(torch, tmp_path, kind):
    made = []
    for lib in (ref, torch):
        dist = lib.distributed
        store = {"HashStore": lambda: dist.HashStore(),
                 "TCPStore": lambda: dist.TCPStore("127.0.0.1", 0, 1, True),
                 "FileStore": lambda: dist.FileStore(str(tmp_path / lib.__name__), 1)}[kind]()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            made.append(_store_answers(dist, store))
        if kind != "FileStore":
            assert store.delete_key("a") and not store.check(["a"])
    assert made[0] == made[1]


def test_a_tcp_client_joins_its_master_and_waits_for_keys(torch):
    dist = ref.distributed
    master = dist.TCPStore("127.0.0.1", 0, 1, True)
    client = dist.TCPStore("127.0.0.1", master.port, 1, False)
    client.set("from-client", "1")
    assert master.get("from-client") == b"1"
    with pytest.raises(dist.DistStoreError, match="wait timeout after 20ms, keys: /never"):
        client.wait(["never"], datetime.timedelta(milliseconds=20))
    with pytest.raises(dist.DistNetworkError, match="failed to connect"):
        dist.TCPStore("127.0.0.1", 1, 1, False)


def _c10d_answers(lib):
    dist = lib.distributed
    c10d = dist.distributed_c10d
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        answers = [dist.GroupMember.NON_GROUP_MEMBER, c10d._get_global_rank(dist.group.WORLD, 0),
                   str(c10d._get_pg_default_device()), len(c10d._pg_map),
                   dist.group.WORLD in c10d._pg_map]
    answers += [dist.ReduceOp.RedOpType.AVG == dist.ReduceOp.AVG,
                # other code may register backends (torch's fake one adds "hpu")
                {k: v for k, v in dist.Backend.default_device_backend_map.items()
                 if k in ("cpu", "cuda", "xpu", "mps")},
                dist.get_default_backend_for_device("cpu"), c10d.is_xccl_available(),
                c10d._rank_not_in_group(None), c10d._rank_not_in_group(dist.group.WORLD),
                c10d._rank_not_in_group(dist.GroupMember.NON_GROUP_MEMBER),
                c10d.get_process_group_ranks(dist.group.WORLD),
                dist.constants.default_pg_timeout]
    out = [None]
    dist.scatter_object_list(out, [{"a": 1}], src=0)
    mine, groups = dist.new_subgroups_by_enumeration([[0]])
    answers += [out, mine.size(), [g.size() for g in groups]]
    tensors = [lib.ones(2), lib.zeros(1)]
    dist._broadcast_coalesced(dist.group.WORLD, tensors, 1000, 0)
    model = lib.nn.Linear(2, 1)
    before = [p.detach().clone() for p in model.parameters()]
    dist.utils._sync_module_states(model, dist.group.WORLD, 1000, 0, set())
    answers += [[t.tolist() for t in tensors],
                all(lib.equal(a, b) for a, b in zip(before, model.parameters()))]
    gathered = [None]
    c10d.all_gather_object(gathered, "obj")
    answers.append(gathered)
    with pytest.raises(ValueError, match="Default backend not registered for device"):
        dist.get_default_backend_for_device("meta")
    return answers


def test_c10d_helpers_answer_like_torch(torch, groups):
    assert _c10d_answers(ref) == _c10d_answers(torch)


def test_c10d_helpers_need_a_group_like_torch(torch):
    for lib in (ref, torch):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            lib.distributed.scatter_object_list([None], [1])


def _collective_answers(lib):
    funcol = lib.distributed._functional_collectives
    world = lib.distributed.group.WORLD
    x = lib.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = [funcol.all_reduce(x, "sum", world), funcol.all_gather_tensor(x, 1, world),
                funcol.reduce_scatter_tensor(x, "sum", 0, world),
                funcol.all_to_all_single(x, None, None, world)]
    kinds = [type(o).__name__ for o in outs] + [type(outs[0] * 2).__name__,
                                                type(funcol.wait_tensor(outs[0])).__name__]
    sum(((o * o) * (i + 1)).sum() for i, o in enumerate(outs)).backward()
    return kinds, [o.detach().tolist() for o in outs], x.grad.tolist(), \
        funcol._resolve_group_name(world)


def test_functional_collectives_match_torch(torch, groups):
    assert _collective_answers(ref) == _collective_answers(torch)


def _mesh_answers(lib):
    init_device_mesh = lib.distributed.device_mesh.init_device_mesh
    line = init_device_mesh("cpu", (1,), mesh_dim_names=("dp",))
    grid = init_device_mesh("cpu", (1, 1), mesh_dim_names=("dp", "tp"))
    answers = [repr(line), line.size(), line.get_rank(), line.get_local_rank(), line.ndim,
               line.shape, line.mesh_dim_names, tuple(line.get_coordinate()), repr(line["dp"]),
               line.get_group() is lib.distributed.group.WORLD, line.device_type,
               line.mesh.tolist(), str(line.mesh.dtype), repr(grid), grid.size(1),
               grid.shape, tuple(grid.get_coordinate()), repr(grid["tp"]),
               repr(grid["dp", "tp"]), grid.get_local_rank("tp"),
               len(grid.get_all_groups()),
               repr(lib.distributed.device_mesh.DeviceMesh("cpu", [0]))]
    for call in (grid.get_group, grid.get_local_rank):
        with pytest.raises(RuntimeError, match="mesh_dim` needs to be specified"):
            call()
    with pytest.raises(RuntimeError, match="bigger than default world size 1, but found 2"):
        init_device_mesh("cpu", (2,))
    return answers


def test_device_meshes_match_torch(torch, groups):
    assert _mesh_answers(ref) == _mesh_answers(torch)


def test_init_device_mesh_starts_the_default_group():
    mesh = ref.distributed.device_mesh.init_device_mesh("cpu", (1,))
    try:
        assert ref.distributed.is_initialized() and mesh.get_group().size() == 1
    finally:
        ref.distributed.destroy_process_group()


def test_record_writes_the_error_file_and_reraises(torch, tmp_path, monkeypatch):
    for lib in (ref, torch):
        errors = importlib.import_module(
            f"{lib.__name__}.distributed.elastic.multiprocessing.errors")
        path = tmp_path / f"{lib.__name__}.json"
        monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(path))

        @errors.record
        def main(x):
            if x:
                raise KeyError("boom")
            return "done"

        assert main(0) == "done"
        with pytest.raises(KeyError, match="boom"):
            main(1)
        written = json.loads(path.read_text())
        assert "boom" in written["message"]["message"]
        assert "py_callstack" in written["message"]["extraInfo"]
        assert issubclass(errors.ChildFailedError, Exception)


def _free_port():
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Counter:
    def __init__(self, start):
        self.value = start

    def add(self, amount):
        self.value += amount
        return self.value


def mutate(tensor, items):
    tensor.add_(1)
    items.append(5)
    return tensor, items


def fail(message):
    raise ValueError(message)


def _make_async(lib):
    """A module-level async rpc function for ``lib`` (rpc pickles functions by name)."""
    name = f"later_{lib.__name__.replace('.', '_')}"

    def later(x):
        future = lib.futures.Future()
        future.set_result(x * 10)
        return future

    later.__name__ = later.__qualname__ = name
    globals()[name] = lib.distributed.rpc.functions.async_execution(later)
    return globals()[name]


@pytest.fixture
def rpc_workers(torch):
    """Both libraries as worker0 of a one-worker rpc job (torch's over TensorPipe)."""
    rpc = importlib.import_module("torch.distributed.rpc")
    options = rpc.TensorPipeRpcBackendOptions(init_method=f"tcp://127.0.0.1:{_free_port()}",
                                              num_worker_threads=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rpc.init_rpc("worker0", rank=0, world_size=1, rpc_backend_options=options)
    ref.distributed.rpc.init_rpc("worker0", rank=0, world_size=1)
    yield
    rpc.shutdown()
    ref.distributed.rpc.shutdown()


def _rpc_answers(lib):
    rpc = lib.distributed.rpc
    me = rpc.get_worker_info()
    tensor, items = lib.zeros(2), [1]
    returned = rpc.rpc_sync("worker0", mutate, args=(tensor, items))
    x = lib.ones(2, requires_grad=True)
    answers = [repr(me), me.id, rpc.get_worker_info("worker0").name, tensor.tolist(), items,
               returned[0].tolist(), returned[1], returned[0] is tensor,
               rpc.rpc_sync(0, lib.add, args=(lib.ones(2), 3)).tolist(),
               rpc.rpc_sync(me, lib.mul, args=(x, 3)).requires_grad,
               rpc.rpc_async("worker0", lib.mul, args=(lib.ones(2), 2)).wait().tolist(),
               rpc.rpc_sync("worker0", _make_async(lib), args=(lib.ones(1),)).tolist()]
    counter = rpc.remote("worker0", Counter, args=(1,))
    answers += [counter.rpc_sync().add(2), counter.rpc_async().add(3).wait(),
                counter.remote().add(1).to_here(), counter.local_value().value,
                counter.owner() == me, counter.owner_name(), counter.is_owner(),
                counter.confirmed_by_owner(), rpc.RRef(lib.zeros(1)).to_here().tolist()]
    with pytest.raises(ValueError, match=r"On WorkerInfo\(id=0, name=worker0\):\nValueError"):
        rpc.rpc_sync("worker0", fail, args=("bad",))
    with pytest.raises(ValueError, match="bad"):
        rpc.rpc_async("worker0", fail, args=("bad",)).wait()
    for target, kind in (("worker1", "name worker1"), (3, "id 3")):
        with pytest.raises(RuntimeError, match=f"could not find destination {kind}"):
            rpc.rpc_sync(target, lib.add, args=(1, 2))
    with pytest.raises(AttributeError, match="Can't pickle local object"):
        rpc.rpc_sync("worker0", lambda: None)
    return answers


def test_rpc_with_one_worker_matches_torch(torch, rpc_workers):
    assert _rpc_answers(ref) == _rpc_answers(torch)


def _dist_autograd_answers(lib):
    rpc, dist_autograd = lib.distributed.rpc, lib.distributed.autograd
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.tensor([3.0, -1.0], requires_grad=True)
    with dist_autograd.context() as first:
        loss = (rpc.rpc_sync("worker0", lib.mul, args=(x, w)) * x).sum()
        dist_autograd.backward(first, [loss], retain_graph=True)
        dist_autograd.backward(first, [loss])
        grads = dist_autograd.get_gradients(first)
        with pytest.raises(RuntimeError, match="Already have an autograd context id"):
            dist_autograd.context().__enter__()
    with dist_autograd.context() as second:
        pass
    with pytest.raises(RuntimeError, match=f"Could not find autograd context with id: {first}"):
        dist_autograd.get_gradients(first)
    return [grads[x].tolist(), grads[w].tolist(), x.grad, w.grad, second - first]


def test_distributed_autograd_matches_torch(torch, rpc_workers):
    assert _dist_autograd_answers(ref) == _dist_autograd_answers(torch)


def test_remote_module_runs_on_the_one_worker(torch, rpc_workers):
    found = []
    for lib in (ref, torch):
        lib.manual_seed(0)
        layer = lib.distributed.nn.RemoteModule("worker0/cpu", lib.nn.Linear, args=(3, 2))
        x = lib.ones(1, 3, dtype=lib.float32)
        local = layer.get_module_rref().local_value()
        found.append([layer.forward(x).tolist() == local(x).tolist(),
                      layer.forward_async(x).wait().tolist() == local(x).tolist(),
                      len(layer.remote_parameters()), type(local).__name__])
    assert found[0] == found[1] == [True, True, 2, "Linear"]


def test_rpc_refuses_more_workers_and_needs_init(torch):
    rpc = ref.distributed.rpc
    with pytest.raises(NotImplementedError, match="use world_size=1, rank=0"):
        rpc.init_rpc("worker0", rank=0, world_size=2)
    rpc.init_rpc("worker0", rank=0, world_size=1)
    try:
        with pytest.raises(RuntimeError, match="RPC is already initialized"):
            rpc.init_rpc("worker0", rank=0, world_size=1)
    finally:
        rpc.shutdown()
    for lib in (ref, torch):
        with pytest.raises(RuntimeError, match="RPC has not been initialized"):
            lib.distributed.rpc.rpc_sync("worker0", lib.add, args=(1, 2))


def test_futures_match_torch(torch):
    found = []
    for lib in (ref, torch):
        first = lib.futures.Future()
        chained = first.then(lambda f: f.value() + 1)
        seen = []
        first.add_done_callback(lambda f: seen.append(f.value()))
        answers = [first.done()]
        first.set_result(1)
        answers += [chained.wait(), first.done(), seen, lib.futures.wait_all([first, chained])]
        failed = lib.futures.Future()
        failed.set_exception(ValueError("x"))
        with pytest.raises(ValueError, match="x"):
            failed.wait()
        with pytest.raises(ValueError, match="x"):
            lib.futures.wait_all([first, failed])
        with pytest.raises(RuntimeError, match="can only be marked completed once"):
            first.set_result(2)
        broken = first.then(lambda f: fail("in callback"))
        with pytest.raises(RuntimeError, match="when running the callback: ValueError: in "
                                               "callback"):
            broken.wait()
        found.append(answers)
    assert found[0] == found[1]


def _policy_answers(lib):
    wrap = importlib.import_module(f"{lib.__name__}.distributed.fsdp.wrap")
    nn = lib.nn
    layer, attention, modules = nn.Linear(3, 3), nn.MultiheadAttention(4, 2), nn.ModuleList()
    answers = []
    for module in (layer, attention, modules):
        for recurse in (True, False):
            answers += [
                wrap.always_wrap_policy(module, recurse, 10),
                wrap.lambda_auto_wrap_policy(module, recurse, 10,
                                             lambda m: isinstance(m, nn.Linear)),
                wrap.transformer_auto_wrap_policy(module, recurse, 10, {nn.Linear}),
                wrap.size_based_auto_wrap_policy(module, recurse, 10, min_num_params=5),
                wrap.size_based_auto_wrap_policy(module, recurse, 3, min_num_params=5),
                wrap._or_policy(module, recurse, 10, [
                    wrap.always_wrap_policy,
                    lambda module, recurse, nonwrapped_numel: False]),
                wrap.ModuleWrapPolicy({nn.ModuleList})(module, recurse, 10)]
    return answers


def _rekey_answers(lib):
    fsdp = lib.distributed.fsdp
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.ReLU(), lib.nn.Linear(2, 1))
    optimizer = lib.optim.Adam(model.parameters(), lr=0.1)
    model(lib.ones(1, 2)).sum().backward()
    optimizer.step()
    state = optimizer.state_dict()
    FSDP = fsdp.FullyShardedDataParallel
    by_name = FSDP.rekey_optim_state_dict(state, fsdp.OptimStateKeyType.PARAM_NAME, model)
    by_id = FSDP.rekey_optim_state_dict(by_name, fsdp.OptimStateKeyType.PARAM_ID, model)
    return [sorted(by_name["state"]), by_name["param_groups"][0]["params"],
            sorted(by_id["state"]), by_id["param_groups"][0]["params"],
            sorted(by_name["state"]["0.weight"])]


def test_fsdp_policies_and_configs_match_torch(torch, groups):
    importlib.import_module("torch.distributed.fsdp.wrap")
    assert _policy_answers(ref) == _policy_answers(torch)
    assert _rekey_answers(ref) == _rekey_answers(torch)
    for lib in (ref, torch):
        fsdp = lib.distributed.fsdp
        assert [repr(fsdp.CPUOffloadPolicy()), repr(fsdp.LocalStateDictConfig()),
                [k.name for k in fsdp.OptimStateKeyType],
                fsdp.api.StateDictType.SHARDED_STATE_DICT.name,
                isinstance(fsdp.CPUOffloadPolicy(), fsdp.OffloadPolicy)] == [
            "CPUOffloadPolicy(pin_memory=True)", "LocalStateDictConfig(offload_to_cpu=False)",
            ["PARAM_NAME", "PARAM_ID"], "SHARDED_STATE_DICT", True]


def test_fsdp_modules_and_forward_methods(groups):
    fsdp = ref.distributed.fsdp
    inner = fsdp.FullyShardedDataParallel(ref.nn.Linear(2, 2))
    outer = fsdp.FullyShardedDataParallel(ref.nn.Sequential(inner, ref.nn.ReLU()))
    assert fsdp.FullyShardedDataParallel.fsdp_modules(outer) == [outer, inner]
    assert fsdp.FullyShardedDataParallel.fsdp_modules(outer, root_only=True) == [outer]
    fsdp.register_fsdp_forward_method(inner.module, "forward")
    with pytest.raises(ValueError, match="does not have a method generate"):
        fsdp.register_fsdp_forward_method(inner.module, "generate")


def _start_weights(lib):
    return lib.tensor([[0.5, -1.0], [2.0, 0.25]], dtype=lib.float64)


def _zero_answers(lib):
    from_optim = importlib.import_module(f"{lib.__name__}.distributed.optim")
    weights = lib.nn.Parameter(_start_weights(lib))
    zero = from_optim.ZeroRedundancyOptimizer([weights], lib.optim.Adam, lr=0.1)
    for _ in range(3):
        zero.zero_grad()
        (weights ** 3).sum().backward()
        zero.step()
    with pytest.raises(RuntimeError, match="has not been consolidated on this rank"):
        zero.state_dict()
    zero.consolidate_state_dict()
    state = zero.state_dict()
    zero.load_state_dict(state)
    return [weights.tolist(), sorted(state), state["param_groups"][0]["params"],
            sorted(state["state"][0]), state["state"][0]["exp_avg"].tolist(), zero.defaults,
            len(zero.param_groups), type(zero.optim).__name__]


def _post_local_answers(lib):
    algorithms = importlib.import_module(
        f"{lib.__name__}.distributed.algorithms.model_averaging.averagers")
    from_optim = importlib.import_module(f"{lib.__name__}.distributed.optim")
    weights = lib.nn.Parameter(_start_weights(lib))
    averager = algorithms.PeriodicModelAverager(period=2, warmup_steps=1)
    optimizer = from_optim.PostLocalSGDOptimizer(lib.optim.SGD([weights], lr=0.1), averager)
    for _ in range(3):
        optimizer.zero_grad()
        (weights ** 2).sum().backward()
        optimizer.step()
    state = optimizer.state_dict()
    return [weights.tolist(), averager.step, state["step"], sorted(state)]


def _in_backward_answers(lib):
    from_optim = importlib.import_module(f"{lib.__name__}.distributed.optim")
    weights = lib.nn.Parameter(_start_weights(lib))
    from_optim._apply_optimizer_in_backward(lib.optim.SGD, [weights], {"lr": 0.5})
    for _ in range(2):
        (weights ** 2).sum().backward()
    return [weights.tolist(), weights.grad, len(weights._in_backward_optimizers),
            weights._optimizer_kwargs]


def test_distributed_optimizers_match_torch(torch, groups):
    importlib.import_module("torch.distributed.algorithms.model_averaging.averagers")
    for answers in (_zero_answers, _post_local_answers, _in_backward_answers):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mine, theirs = answers(ref), answers(torch)
        assert mine == theirs, answers.__name__


def _distributed_optimizer_answers(lib):
    rpc, dist_autograd = lib.distributed.rpc, lib.distributed.autograd
    from_optim = importlib.import_module(f"{lib.__name__}.distributed.optim")
    weights = lib.nn.Parameter(_start_weights(lib))
    optimizer = from_optim.DistributedOptimizer(lib.optim.SGD, [rpc.RRef(weights)], lr=0.1,
                                                momentum=0.5)
    for _ in range(2):
        with dist_autograd.context() as context_id:
            loss = rpc.rpc_sync("worker0", lib.mul, args=(weights, weights)).sum()
            dist_autograd.backward(context_id, [loss])
            optimizer.step(context_id)
    return [weights.tolist(), weights.grad]


def test_distributed_optimizer_matches_torch(torch, rpc_workers):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch scripts its optimizers
        assert _distributed_optimizer_answers(ref) == _distributed_optimizer_answers(torch)


def _times_three(state, bucket):
    """A user hook: scales the bucket and counts its calls in ``state``."""
    state.append(len(bucket.parameters()))
    future = bucket.buffer().mul_(3)
    return _completed(state.__class__, future)


def _completed(_, tensor):
    import gradcheck.ref as engine
    import torch as real

    lib = engine if isinstance(tensor, engine.Tensor) else real
    future = lib.futures.Future()
    future.set_result(tensor)
    return future


def _comm_hook_answers(lib, hook_name):
    hooks = importlib.import_module(
        f"{lib.__name__}.distributed.algorithms.ddp_comm_hooks.default_hooks")
    local_sgd = importlib.import_module(
        f"{lib.__name__}.distributed.algorithms.ddp_comm_hooks.post_localSGD_hook")
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2))
    with lib.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(lib.tensor(np.sin(np.arange(p.numel()) * 1.37 + i).reshape(p.shape)))
    ddp = lib.nn.parallel.DistributedDataParallel(model)
    state, calls = None, []
    if hook_name == "local_sgd":
        state = local_sgd.PostLocalSGDState(process_group=None,
                                            subgroup=lib.distributed.new_group([0]),
                                            start_localSGD_iter=1)
        hook = local_sgd.post_localSGD_hook
    elif hook_name == "user":
        state, hook = calls, _times_three
    elif hook_name == "builtin_fp16":
        comm = importlib.import_module(f"{lib.__name__}.distributed.algorithms.ddp_comm_hooks")
        comm.register_ddp_comm_hook(comm.DDPCommHookType.FP16_COMPRESS, ddp)
        hook = None
    else:
        hook = {"fp16": hooks.fp16_compress_hook, "allreduce": hooks.allreduce_hook,
                "fp16_wrapper": hooks.fp16_compress_wrapper(hooks.allreduce_hook)}[hook_name]
    if hook is not None:
        ddp.register_comm_hook(state, hook)
    x = lib.tensor(np.linspace(-1, 1, 15).reshape(5, 3), dtype=lib.float32)
    grads = []
    for step in range(2):
        if step == 1:
            with ddp.no_sync():
                (ddp(x) ** 2).sum().backward()
        (ddp(x) * 1.2345678).sum().backward()
        grads.append([p.grad.detach().numpy().copy() for p in model.parameters()])
    extra = [state.iter] if hook_name == "local_sgd" else list(calls)
    with pytest.raises(RuntimeError, match="can only be called once"):
        ddp.register_comm_hook(None, hooks.allreduce_hook)
    return grads, extra


@pytest.mark.parametrize("hook_name", ["fp16", "allreduce", "fp16_wrapper", "local_sgd", "user",
                                       "builtin_fp16"])
def test_ddp_comm_hooks_match_torch(torch, groups, hook_name):
    (mine, mine_extra), (theirs, theirs_extra) = (_comm_hook_answers(ref, hook_name),
                                                  _comm_hook_answers(torch, hook_name))
    for step_mine, step_theirs in zip(mine, theirs, strict=True):
        for a, b in zip(step_mine, step_theirs, strict=True):
            # float32 products may differ in the last bit; rounding to float16 must agree
            if "fp16" in hook_name:
                np.testing.assert_array_equal(a, b)
            np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-7)
    assert mine_extra == theirs_extra


def test_bf16_hooks_round_like_torch_and_ddp_refuses_them_on_cpu(torch, groups):
    from gradcheck.ref.distributed.comm_hooks import _round_to_bfloat16

    values = np.concatenate([np.random.default_rng(0).normal(size=200).astype(np.float32),
                             np.array([0.0, -0.0, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 3.4e38,
                                       1e-40, np.inf, -np.inf], dtype=np.float32)])
    expected = torch.tensor(values).to(torch.bfloat16).float().numpy()
    np.testing.assert_array_equal(_round_to_bfloat16(values), expected)
    for lib in (ref, torch):
        if lib is torch and torch.cuda.is_available():
            continue  # the refusals below are a CPU build's; this torch reaches a GPU
        hooks = importlib.import_module(
            f"{lib.__name__}.distributed.algorithms.ddp_comm_hooks.default_hooks")
        for hook in (hooks.bf16_compress_hook, hooks.bf16_compress_wrapper(hooks.allreduce_hook)):
            ddp = lib.nn.parallel.DistributedDataParallel(lib.nn.Linear(2, 1))
            with pytest.raises(TypeError, match="BF16 all reduce communication hook required"):
                ddp.register_comm_hook(None, hook)
        with pytest.raises(ValueError, match="Default group size only takes effect when CUDA"):
            lib.distributed.new_subgroups()
