"""``torch.distributed`` as on a CPU build run as one process: ``is_available()`` is True,
nothing is initialized until ``init_process_group``, which accepts a world size of 1. With one
process every collective leaves its tensors as they are (the sum, mean, min or max over one
rank is the rank's own value), so a DDP script runs and computes what one worker computes.

A world size above 1 raises NotImplementedError; querying the group before initializing it
raises torch's ValueError.

>>> import gradcheck.ref as torch
>>> dist = torch.distributed
>>> dist.is_available(), dist.is_initialized()
(True, False)
>>> dist.init_process_group("gloo", world_size=1, rank=0, init_method="tcp://127.0.0.1:1")
>>> t = torch.ones(2); dist.all_reduce(t); dist.get_world_size(), t
(1, tensor([1., 1.]))
>>> dist.destroy_process_group()
"""
from __future__ import annotations

import sys

import enum
import os
from typing import Any

from gradcheck.ref.standins import module_fallback

__getattr__ = module_fallback("torch.distributed", "the engine runs one process (world size 1)")

NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                   "init_process_group.")
_state: dict = {"backend": None}


class ReduceOp(enum.Enum):
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"
    PREMUL_SUM = "premul_sum"


ReduceOp.RedOpType = ReduceOp  # torch's members are RedOpType values; here one enum is both


class Backend(str):
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"
    UCC = "ucc"
    default_device_backend_map = {"cpu": "gloo", "cuda": "nccl", "xpu": "xccl", "mps": "gloo"}


def get_default_backend_for_device(device: Any) -> str:
    """The backend torch picks for a device type ("gloo" for cpu)."""
    kind = getattr(device, "type", None) or str(device).split(":")[0]
    backend = Backend.default_device_backend_map.get(kind)
    if backend is None:
        raise ValueError(f"Default backend not registered for device : {device}")
    return backend


class ProcessGroup:
    """The one group there is: this process, rank 0 of 1."""

    def __init__(self, ranks: Any = (0,)) -> None:
        self.ranks = list(ranks)

    def rank(self) -> int:
        return 0

    def size(self) -> int:
        return 1


class group:  # noqa: N801 - torch's name
    WORLD = ProcessGroup()
    NON_GROUP_MEMBER = -100  # what a rank outside a group gets instead of the group


GroupMember = group


class Work:
    """What an ``async_op=True`` collective returns; the work is already done."""

    def __init__(self, result: list | None = None) -> None:
        self._result = result if result is not None else []

    def wait(self, timeout: Any = None) -> bool:
        return True

    def get_future(self) -> Any:
        """A completed future holding the collective's tensors, as a list (torch's value)."""
        from gradcheck.ref.futures import Future

        future = Future()
        future.set_result(self._result)
        return future

    def is_completed(self) -> bool:
        return True


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return _state["backend"] is not None


def is_gloo_available() -> bool:
    return True


def is_nccl_available() -> bool:
    return False


def is_mpi_available() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: Any = None, world_size: int = -1, rank: int = -1,
                       store: Any = None, group_name: str = "", pg_options: Any = None,
                       device_id: Any = None) -> None:
    """Join a job of one process; more than one is refused with NotImplementedError."""
    if is_initialized():
        raise ValueError("trying to initialize the default process group twice!")
    if world_size == -1:
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if rank == -1:
        rank = int(os.environ.get("RANK", "0"))
    if world_size != 1 or rank != 0:
        raise NotImplementedError(
            f"torch.distributed.init_process_group(world_size={world_size}, rank={rank}) is not "
            "available in gradcheck.ref: the engine runs one process; use world_size=1, rank=0")
    _state["backend"] = str(backend or "gloo").split(":")[-1]
    _state.setdefault("pg_map", {})[GroupMember.WORLD] = (_state["backend"], store)


def destroy_process_group(group: Any = None) -> None:
    _state["backend"] = None
    _state.setdefault("pg_map", {}).clear()


def _require_group() -> None:
    if not is_initialized():
        raise ValueError(NOT_INITIALIZED)


def get_rank(group: Any = None) -> int:
    _require_group()
    return 0


def get_world_size(group: Any = None) -> int:
    _require_group()
    return 1


def get_backend(group: Any = None) -> str:
    _require_group()
    return _state["backend"]


def new_group(ranks: Any = None, *args: Any, **kwargs: Any) -> ProcessGroup:
    _require_group()
    return ProcessGroup(ranks or (0,))


def _done(async_op: bool, result: list | None = None) -> Work | None:
    _require_group()
    return Work(result) if async_op else None


# Collectives over one rank: every reduction of one value is that value, and a gather
# of one tensor is the tensor itself.
def all_reduce(tensor: Any, op: Any = ReduceOp.SUM, group: Any = None,
               async_op: bool = False) -> Work | None:
    return _done(async_op, [tensor])


def reduce(tensor: Any, dst: int = 0, op: Any = ReduceOp.SUM, group: Any = None,
           async_op: bool = False) -> Work | None:
    return _done(async_op)


def broadcast(tensor: Any, src: int = 0, group: Any = None, async_op: bool = False) -> Work | None:
    return _done(async_op, [tensor])


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None) -> Work | None:
    return _done(async_op)


def all_gather(tensor_list: list, tensor: Any, group: Any = None,
               async_op: bool = False) -> Work | None:
    tensor_list[0].copy_(tensor)
    return _done(async_op)


def all_gather_into_tensor(output_tensor: Any, input_tensor: Any, group: Any = None,
                           async_op: bool = False) -> Work | None:
    output_tensor.copy_(input_tensor.reshape(output_tensor.shape))
    return _done(async_op)


def gather(tensor: Any, gather_list: list | None = None, dst: int = 0, group: Any = None,
           async_op: bool = False) -> Work | None:
    if gather_list:
        gather_list[0].copy_(tensor)
    return _done(async_op)


def scatter(tensor: Any, scatter_list: list | None = None, src: int = 0, group: Any = None,
            async_op: bool = False) -> Work | None:
    if scatter_list:
        tensor.copy_(scatter_list[0])
    return _done(async_op)


def reduce_scatter(output: Any, input_list: list, op: Any = ReduceOp.SUM, group: Any = None,
                   async_op: bool = False) -> Work | None:
    output.copy_(input_list[0])
    return _done(async_op)


def all_gather_object(object_list: list, obj: Any, group: Any = None) -> None:
    _require_group()
    object_list[0] = obj


def broadcast_object_list(object_list: list, src: int = 0, group: Any = None,
                          device: Any = None) -> None:
    _require_group()


def gather_object(obj: Any, object_gather_list: list | None = None, dst: int = 0,
                  group: Any = None) -> None:
    _require_group()
    if object_gather_list is not None:
        object_gather_list[0] = obj


reduce_op = ReduceOp  # the deprecated name


def scatter_object_list(scatter_object_output_list: list, scatter_object_input_list: Any = None,
                        src: int = 0, group: Any = None, group_src: Any = None) -> None:
    _require_group()
    scatter_object_output_list[0] = scatter_object_input_list[0]


def new_subgroups(group_size: int | None = None, group: Any = None, timeout: Any = None,
                  backend: Any = None, pg_options: Any = None, group_desc: Any = None) -> tuple:
    """(this rank's subgroup, every subgroup): one subgroup holding the one rank."""
    _require_group()
    if group_size is None:  # torch's default is one group per CUDA node
        raise ValueError("Default group size only takes effect when CUDA is available.If your "
                         "subgroup using a backend that does not depend on CUDA,please pass in "
                         "'group_size' correctly.")
    if group_size != 1:
        raise ValueError("The world size must be divisible by 'group_size'")
    subgroup = new_group([0])
    return subgroup, [subgroup]


def new_subgroups_by_enumeration(ranks_per_subgroup_list: list, timeout: Any = None,
                                 backend: Any = None, pg_options: Any = None,
                                 group_desc: Any = None) -> tuple:
    """(this rank's subgroup, every subgroup); each rank may be in one subgroup only."""
    _require_group()
    seen = [rank for ranks in ranks_per_subgroup_list for rank in ranks]
    if len(seen) != len(set(seen)):
        raise ValueError(f"Rank {next(r for r in seen if seen.count(r) > 1)} has appeared in "
                         "both subgroup")
    subgroups = [new_group(ranks) for ranks in ranks_per_subgroup_list]
    mine = next((g for g, ranks in zip(subgroups, ranks_per_subgroup_list) if 0 in ranks), None)
    return mine, subgroups


def _broadcast_coalesced(process_group: Any, tensors: list, buffer_size: int,
                         src: int = 0) -> None:
    """Broadcast from ``src`` to every rank: with one rank the tensors already hold it."""
    _require_group()


def get_global_rank(group: Any, group_rank: int) -> int:
    _require_group()
    return group_rank


def get_group_rank(group: Any, global_rank: int) -> int:
    _require_group()
    return global_rank


def get_process_group_ranks(group: Any) -> list:
    _require_group()
    return [0]


def monitored_barrier(group: Any = None, timeout: Any = None,
                      wait_all_ranks: bool = False) -> None:
    _require_group()


def all_to_all_single(output: Any, input: Any, output_split_sizes: Any = None,  # noqa: A002
                      input_split_sizes: Any = None, group: Any = None,
                      async_op: bool = False) -> Work | None:
    output.copy_(input)
    return _done(async_op)


def all_to_all(output_tensor_list: list, input_tensor_list: list, group: Any = None,
               async_op: bool = False) -> Work | None:
    output_tensor_list[0].copy_(input_tensor_list[0])
    return _done(async_op)


def reduce_scatter_tensor(output: Any, input: Any, op: Any = ReduceOp.SUM,  # noqa: A002
                          group: Any = None, async_op: bool = False) -> Work | None:
    output.copy_(input.reshape(output.shape))
    return _done(async_op)


_reduce_scatter_base = reduce_scatter_tensor
_all_gather_base = all_gather_into_tensor


def _point_to_point(name: str):
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"torch.distributed.{name} is not available in gradcheck.ref: "
                                  "with one process there is no other rank to talk to")

    return refuse


send, recv, isend, irecv, batch_isend_irecv = (_point_to_point(n) for n in (
    "send", "recv", "isend", "irecv", "batch_isend_irecv"))


class P2POp:
    def __init__(self, op: Any, tensor: Any, peer: int, group: Any = None, tag: int = 0):
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag


def _get_default_group() -> ProcessGroup:
    _require_group()
    return group.WORLD


def _submodules() -> None:
    # NOTE: not `from gradcheck.ref.distributed import fsdp`: the module __getattr__ above
    # would answer that with a placeholder before the submodule is ever imported.
    import importlib

    for name in ("algorithms", "checkpoint", "constants", "distributed_c10d", "elastic", "fsdp",
                 "nn", "store", "utils", "_functional_collectives", "device_mesh", "rpc",
                 "autograd", "optim", "tensor", "_composable", "remote_device"):
        globals()[name] = importlib.import_module(f"{__name__}.{name}")
    globals()["_remote_device"] = globals()["remote_device"]._remote_device
    importlib.import_module(f"{__name__}.shard").install(sys.modules[__name__])


_submodules()
from gradcheck.ref.distributed.store import (  # noqa: E402,F401
    DistBackendError,
    DistError,
    DistNetworkError,
    DistStoreError,
    FileStore,
    HashStore,
    PrefixStore,
    Store,
    TCPStore,
)
from gradcheck.ref.distributed.device_mesh import DeviceMesh  # noqa: E402,F401
