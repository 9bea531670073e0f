"""``torch.distributed.rpc`` with one worker: every call goes to this process, so
``rpc_sync(to, fn, args)`` runs ``fn`` here, ``rpc_async`` returns a completed
``torch.futures.Future`` and ``remote`` an ``RRef`` this worker owns. As over a real
transport, arguments and results are copies (a callee that changes a tensor in place does not
change the caller's), an exception raised by the callee is raised again in the caller with
torch's "On WorkerInfo(...)" preamble, and inside a ``distributed.autograd.context`` the
copies stay on the graph so ``distributed.autograd.backward`` reaches the caller's tensors.

A world size above 1 is refused with NotImplementedError at ``init_rpc``.
"""
from __future__ import annotations

import copy
import enum
import functools
import itertools
import os
import pickle
import sys
import traceback
import types
from collections.abc import Callable
from typing import Any

from gradcheck.ref.futures import Future

NOT_INITIALIZED = "RPC has not been initialized. Call torch.distributed.rpc.init_rpc first."
_state: dict = {"me": None}
_rref_ids = itertools.count(1)


class BackendType(enum.Enum):
    TENSORPIPE = "TENSORPIPE"


class WorkerInfo:
    """A worker's name and rank."""

    def __init__(self, name: str, id: int) -> None:  # noqa: A002 - torch's name
        self.name, self.id = name, id

    def __repr__(self) -> str:
        return f"WorkerInfo(id={self.id}, name={self.name})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WorkerInfo) and (self.name, self.id) == (other.name, other.id)

    def __hash__(self) -> int:
        return hash((self.name, self.id))


class TensorPipeRpcBackendOptions:
    """The transport's settings; with one worker only their values are kept."""

    def __init__(self, *, num_worker_threads: int = 16, rpc_timeout: float = 60.0,
                 init_method: str = "env://", device_maps: dict | None = None,
                 devices: list | None = None, _transports: Any = None,
                 _channels: Any = None) -> None:
        self.num_worker_threads, self.rpc_timeout = num_worker_threads, rpc_timeout
        self.init_method, self.device_maps = init_method, dict(device_maps or {})
        self.devices = list(devices or [])

    def set_device_map(self, to: str, device_map: dict) -> None:
        self.device_maps.setdefault(to, {}).update(device_map)


def init_rpc(name: str, backend: Any = None, rank: int = -1, world_size: int | None = None,
             rpc_backend_options: Any = None) -> None:
    """Start this worker; the job must be this one worker (rank 0 of 1)."""
    if _state["me"] is not None:
        raise RuntimeError("RPC is already initialized")
    world_size = int(os.environ.get("WORLD_SIZE", "1")) if world_size is None else world_size
    rank = int(os.environ.get("RANK", "0")) if rank == -1 else rank
    if world_size != 1 or rank != 0:
        raise NotImplementedError(
            f"torch.distributed.rpc.init_rpc(rank={rank}, world_size={world_size}) is not "
            "available in gradcheck.ref: the engine runs one process; use world_size=1, rank=0")
    _state["me"] = WorkerInfo(name, 0)


def shutdown(graceful: bool = True, timeout: float = 0) -> None:
    _require()
    _state["me"] = None


def _require() -> WorkerInfo:
    if _state["me"] is None:
        raise RuntimeError(NOT_INITIALIZED)
    return _state["me"]


def get_worker_info(worker_name: str | None = None) -> WorkerInfo:
    me = _require()
    return me if worker_name is None else _destination(worker_name)


def _destination(to: Any) -> WorkerInfo:
    me = _require()
    if isinstance(to, WorkerInfo):
        to = to.name
    if to in (me.name, me.id):
        return me
    kind = "name" if isinstance(to, str) else "id"
    raise RuntimeError(f"name:{me.name},rank:{me.id} could not find destination {kind} {to}")


def _transfer(value: Any) -> Any:
    """What arrives at the other end of the wire: a copy. Tensors keep ``requires_grad``;
    inside a distributed autograd context they stay connected to the sender's graph."""
    from gradcheck.ref.distributed import autograd as dist_autograd
    from gradcheck.ref.tensors import Tensor

    if isinstance(value, Tensor):
        if dist_autograd._current() is not None and value.requires_grad:
            return value.clone()
        return value.detach().clone().requires_grad_(value.requires_grad)
    if isinstance(value, (list, tuple)):
        copied = [_transfer(item) for item in value]
        return type(value)(copied) if not hasattr(value, "_fields") else type(value)(*copied)
    if isinstance(value, dict):
        return type(value)((key, _transfer(item)) for key, item in value.items())
    return copy.deepcopy(value)


def _run(func: Callable, args: Any, kwargs: Any) -> Any:
    """Call ``func`` as the callee would; an async function's future is waited for."""
    try:
        result = func(*(args or ()), **(kwargs or {}))
        if getattr(func, "_wrapped_async_rpc_function", None) is not None:
            result = result.wait()
        return result
    except Exception as error:  # noqa: BLE001 - re-raised with the callee's preamble
        raise _remote_error(error) from None


def _remote_error(error: Exception) -> Exception:
    message = f"On {_state['me']}:\n{error!r}\n{traceback.format_exc()}"
    try:
        return type(error)(message)
    except Exception:  # noqa: BLE001 - an exception type that takes other arguments
        return RuntimeError(message)


def _sendable(func: Callable) -> Callable:
    """The function goes over the wire by pickle (by reference), as in torch: a lambda or a
    local function fails here as it does there. The library's own functions travel as
    builtins (torch sends its operators by name)."""
    if not getattr(func, "__module__", "").startswith("gradcheck.ref"):
        pickle.dumps(func)
    return func


def rpc_sync(to: Any, func: Callable, args: tuple | None = None, kwargs: dict | None = None,
             timeout: float = -1.0) -> Any:
    """Run ``func(*args, **kwargs)`` on worker ``to`` and return its result."""
    _destination(to)
    _sendable(func)
    return _transfer(_run(func, _transfer(args), _transfer(kwargs)))


def rpc_async(to: Any, func: Callable, args: tuple | None = None,
              kwargs: dict | None = None, timeout: float = -1.0) -> Future:
    """``rpc_sync`` whose result (or exception) arrives in a Future."""
    _destination(to)
    _sendable(func)
    future = Future()
    try:
        future.set_result(_transfer(_run(func, _transfer(args), _transfer(kwargs))))
    except Exception as error:  # noqa: BLE001 - delivered through the future
        future.set_exception(error)
    return future


def remote(to: Any, func: Callable, args: tuple | None = None, kwargs: dict | None = None,
           timeout: float = -1.0) -> RRef:
    """Run ``func`` on worker ``to`` and keep the result there, behind an RRef."""
    _destination(to)
    _sendable(func)
    return RRef(_run(func, _transfer(args), _transfer(kwargs)))


class RRef:
    """A reference to a value owned by a worker (always this one)."""

    def __init__(self, value: Any, type_hint: Any = None) -> None:
        self._owner = _require()
        self._value, self._id = value, next(_rref_ids)

    def to_here(self, timeout: float = -1.0) -> Any:
        return _transfer(self._value)

    def local_value(self) -> Any:
        return self._value

    def owner(self) -> WorkerInfo:
        return self._owner

    def owner_name(self) -> str:
        return self._owner.name

    def is_owner(self) -> bool:
        return True

    def confirmed_by_owner(self) -> bool:
        return True

    def rpc_sync(self, timeout: float = -1.0) -> Any:
        return _Proxy(self, rpc_sync)

    def rpc_async(self, timeout: float = -1.0) -> Any:
        return _Proxy(self, rpc_async)

    def remote(self, timeout: float = -1.0) -> Any:
        return _Proxy(self, remote)

    def __repr__(self) -> str:
        return f"OwnerRRef(GloballyUniqueId(created_on={self._owner.id}, local_id={self._id}))"


class _Proxy:
    """``rref.rpc_sync().method(*args)``: call a method of the referenced object through
    ``how`` (rpc_sync, rpc_async or remote)."""

    def __init__(self, rref: RRef, how: Callable) -> None:
        self._rref, self._how = rref, how

    def __getattr__(self, name: str) -> Callable:
        def call(*args: Any, **kwargs: Any) -> Any:
            method = getattr(type(self._rref.local_value()), name)
            return self._how(self._rref.owner(), functools.partial(method,
                                                                   self._rref.local_value()),
                             args, kwargs)

        return call


def async_execution(fn: Callable) -> Callable:
    """Mark ``fn`` as returning a Future: the caller gets the future's value."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    wrapper._wrapped_async_rpc_function = fn
    return wrapper


def is_available() -> bool:
    return True


def _install_submodules() -> None:
    """``rpc.functions`` and ``rpc.api``, importable under torch's paths."""
    this = sys.modules[__name__]
    for name, members in (("functions", {"async_execution": async_execution}),
                          ("api", {"RRef": RRef, "WorkerInfo": WorkerInfo,
                                   "rpc_sync": rpc_sync, "rpc_async": rpc_async,
                                   "remote": remote, "shutdown": shutdown,
                                   "get_worker_info": get_worker_info})):
        module = types.ModuleType(f"{__name__}.{name}")
        module.__dict__.update(members)
        sys.modules[module.__name__] = module
        setattr(this, name, module)


_install_submodules()
