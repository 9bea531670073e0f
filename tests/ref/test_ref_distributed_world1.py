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
                dist.Backend.default_device_backend_map,
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
