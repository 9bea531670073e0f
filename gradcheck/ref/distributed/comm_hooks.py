"""``torch.distributed.algorithms.ddp_comm_hooks``: what DistributedDataParallel does with a
bucket of gradients once they are ready. A hook gets ``(state, bucket)`` and returns a
future of the reduced, flattened gradients, which DDP writes back into ``.grad``. Over one
rank the reduction leaves values as they are, but compression does not: ``fp16_compress_hook``
rounds the gradients to float16 and back, ``bf16_compress_hook`` to bfloat16 (rounded to
nearest even here, as torch casts; the engine has no bfloat16 storage).

Hooks run after the backward pass (a final callback), on one bucket holding every parameter
that has a gradient, in reverse order of registration as torch fills its first bucket. As on
a CPU build of torch, DDP refuses the bfloat16 hooks (they need CUDA with NCCL, or XPU).
"""
from __future__ import annotations

import enum
import functools
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from gradcheck.ref.futures import Future


class GradBucket:
    """A flattened run of gradients and the parameters they belong to."""

    def __init__(self, index: int, buffer: Any, parameters: list, is_last: bool) -> None:
        self._index, self._buffer, self._parameters = index, buffer, parameters
        self._is_last = is_last

    def index(self) -> int:
        return self._index

    def buffer(self) -> Any:
        return self._buffer

    def set_buffer(self, buffer: Any) -> None:
        self._buffer = buffer

    def is_last(self) -> bool:
        return self._is_last

    def parameters(self) -> list:
        return list(self._parameters)

    def gradients(self) -> list:
        """Each parameter's gradient as a slice of the buffer."""
        out, offset = [], 0
        for p in self._parameters:
            out.append(self._buffer[offset:offset + p.numel()].reshape(p.shape))
            offset += p.numel()
        return out


def _world(process_group: Any) -> Any:
    from gradcheck.ref import distributed

    return process_group if process_group is not None else distributed.group.WORLD


def _allreduce_fut(process_group: Any, tensor: Any) -> Future:
    """Average ``tensor`` over the group, in place; a future of it."""
    from gradcheck.ref import distributed

    group = _world(process_group)
    tensor.div_(group.size())
    work = distributed.all_reduce(tensor, group=group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def allreduce_hook(process_group: Any, bucket: GradBucket) -> Future:
    return _allreduce_fut(process_group, bucket.buffer())


def noop_hook(_: Any, bucket: GradBucket) -> Future:
    future = Future()
    future.set_result(bucket.buffer())
    return future


def _round_to_bfloat16(array: np.ndarray) -> np.ndarray:
    """Values of ``array`` rounded to bfloat16 (nearest, ties to even), kept in its dtype."""
    wide = array.astype(np.float32)
    bits = wide.view(np.uint32)
    rounding = ((bits >> 16) & 1) + np.uint32(0x7FFF)
    rounded = np.where(np.isnan(wide), bits, (bits + rounding) & np.uint32(0xFFFF0000))
    return rounded.astype(np.uint32).view(np.float32).astype(array.dtype)


def _compress(buffer: Any, dtype_name: str) -> Any:
    from gradcheck import ref

    if dtype_name == "float16":
        return buffer.to(ref.float16)
    return ref.tensor(_round_to_bfloat16(buffer.detach().numpy()))


def _compress_hook(dtype_name: str, process_group: Any, bucket: GradBucket) -> Future:
    buffer = bucket.buffer()
    compressed = _compress(buffer, dtype_name).div_(_world(process_group).size())

    def decompress(fut: Future) -> Any:
        buffer.copy_(fut.value())
        return buffer

    from gradcheck.ref import distributed

    work = distributed.all_reduce(compressed, group=_world(process_group), async_op=True)
    return work.get_future().then(lambda fut: decompress(_first(fut)))


def _first(fut: Future) -> Future:
    done = Future()
    done.set_result(fut.value()[0])
    return done


fp16_compress_hook = functools.partial(_compress_hook, "float16")
bf16_compress_hook = functools.partial(_compress_hook, "bfloat16")
fp16_compress_hook.__name__ = "fp16_compress_hook"  # type: ignore[attr-defined]
bf16_compress_hook.__name__ = "bf16_compress_hook"  # type: ignore[attr-defined]


def _compress_wrapper(dtype_name: str, hook: Callable) -> Callable:
    def wrapped(hook_state: Any, bucket: GradBucket) -> Future:
        original = bucket.buffer()
        bucket.set_buffer(_compress(original, dtype_name))
        fut = hook(hook_state, bucket)

        def decompress(done: Future) -> Any:
            original.copy_(done.value())
            return original

        return fut.then(decompress)

    wrapped.__name__ = f"{'fp16' if dtype_name == 'float16' else 'bf16'}_compress_wrapper_hook"
    return wrapped


def fp16_compress_wrapper(hook: Callable) -> Callable:
    """Run ``hook`` on the bucket cast to float16, then cast the result back."""
    return _compress_wrapper("float16", hook)


def bf16_compress_wrapper(hook: Callable) -> Callable:
    """Run ``hook`` on the bucket rounded to bfloat16, then back."""
    return _compress_wrapper("bfloat16", hook)


class PostLocalSGDState:
    """Global allreduce for ``start_localSGD_iter`` steps, then within ``subgroup``."""

    __slots__ = ("process_group", "subgroup", "start_localSGD_iter",
                 "post_local_gradient_allreduce", "iter")

    def __init__(self, process_group: Any, subgroup: Any, start_localSGD_iter: int,
                 post_local_gradient_allreduce: bool = True) -> None:
        self.process_group, self.subgroup = process_group, subgroup
        self.start_localSGD_iter = start_localSGD_iter
        self.post_local_gradient_allreduce = post_local_gradient_allreduce
        self.iter = 0

    def maybe_increase_iter(self, bucket: GradBucket) -> None:
        if bucket.is_last():
            self.iter += 1


def post_localSGD_hook(state: PostLocalSGDState, bucket: GradBucket) -> Future:  # noqa: N802
    from gradcheck.ref import distributed

    buffer = bucket.buffer()
    if state.iter < state.start_localSGD_iter:
        state.maybe_increase_iter(bucket)
        return _allreduce_fut(state.process_group, buffer)
    if not state.post_local_gradient_allreduce:
        future = Future()
        future.set_result(buffer)
        return future
    if state.subgroup is None:
        state.subgroup, _ = distributed.new_subgroups()
    return _allreduce_fut(state.subgroup, buffer)


def _ddp_comm_hook_wrapper(comm_hook: Callable, model: Any, state: Any) -> None:
    model.register_comm_hook(state, comm_hook)


class DDPCommHookType(enum.Enum):
    """The built-in hooks by name (the ones this module has)."""

    ALLREDUCE = functools.partial(_ddp_comm_hook_wrapper, comm_hook=allreduce_hook)
    FP16_COMPRESS = functools.partial(_ddp_comm_hook_wrapper, comm_hook=fp16_compress_hook)
    BF16_COMPRESS = functools.partial(_ddp_comm_hook_wrapper, comm_hook=bf16_compress_hook)
    NOOP = functools.partial(_ddp_comm_hook_wrapper, comm_hook=noop_hook)


def register_ddp_comm_hook(comm_hook_type: DDPCommHookType, model: Any,
                           state: Any = None) -> None:
    comm_hook_type.value(model=model, state=state)


def _install() -> types.ModuleType:
    """``ddp_comm_hooks``, ``.default_hooks`` (alias ``.default``) and ``.post_localSGD_hook``
    as importable modules."""
    prefix = "gradcheck.ref.distributed.algorithms.ddp_comm_hooks"
    package = types.ModuleType(prefix)
    default = types.ModuleType(f"{prefix}.default_hooks")
    default.__dict__.update(
        allreduce_hook=allreduce_hook, fp16_compress_hook=fp16_compress_hook,
        bf16_compress_hook=bf16_compress_hook, fp16_compress_wrapper=fp16_compress_wrapper,
        bf16_compress_wrapper=bf16_compress_wrapper, noop_hook=noop_hook,
        _allreduce_fut=_allreduce_fut)
    local_sgd = types.ModuleType(f"{prefix}.post_localSGD_hook")
    local_sgd.__dict__.update(PostLocalSGDState=PostLocalSGDState,
                              post_localSGD_hook=post_localSGD_hook)
    package.__dict__.update(default_hooks=default, default=default,
                            post_localSGD_hook=local_sgd, DDPCommHookType=DDPCommHookType,
                            register_ddp_comm_hook=register_ddp_comm_hook)
    for module in (package, default, local_sgd):
        sys.modules[module.__name__] = module
    sys.modules[f"{prefix}.default"] = default
    return package


ddp_comm_hooks = _install()
