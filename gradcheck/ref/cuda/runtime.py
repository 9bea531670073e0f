"""``torch.cuda``'s device, stream, event, memory and RNG queries. With CuPy and a GPU they
act on that GPU; without one they answer as a CPU build of torch does: memory counters are 0,
RNG state lists are empty, and what needs a device raises torch's AssertionError "Torch not
compiled with CUDA enabled" at the call.

>>> import gradcheck.ref as torch
>>> torch.cuda.max_memory_reserved(), torch.cuda.get_rng_state_all()
(0, [])
"""
from __future__ import annotations

import contextlib
from typing import Any

from gradcheck.ref.devices import cuda_is_available

NOT_COMPILED = "Torch not compiled with CUDA enabled"


def _cupy():
    if not cuda_is_available():
        raise AssertionError(NOT_COMPILED)
    import cupy

    return cupy


def _index(device: Any) -> int:
    if device is None:
        return _cupy().cuda.Device().id
    if isinstance(device, int):
        return device
    return getattr(device, "index", None) or int(str(device).partition(":")[2] or 0)


def set_device(device: Any) -> None:
    _cupy().cuda.Device(_index(device)).use()


def get_device_capability(device: Any = None) -> tuple[int, int]:
    capability = _cupy().cuda.Device(_index(device)).compute_capability
    return int(capability[:-1]), int(capability[-1])


def get_device_properties(device: Any = None) -> Any:
    cupy = _cupy()
    props = cupy.cuda.runtime.getDeviceProperties(_index(device))
    from types import SimpleNamespace

    return SimpleNamespace(name=props["name"].decode(), total_memory=props["totalGlobalMem"],
                           major=props["major"], minor=props["minor"],
                           multi_processor_count=props["multiProcessorCount"])


def mem_get_info(device: Any = None) -> tuple[int, int]:
    return tuple(_cupy().cuda.runtime.memGetInfo())


def ipc_collect() -> None:
    _cupy()


def initial_seed() -> int:
    _cupy()
    from gradcheck.ref.random import initial_seed as cpu_seed

    return cpu_seed()


def get_rng_state(device: Any = "cuda") -> Any:
    _cupy()
    from gradcheck.ref.random import get_rng_state as cpu_state

    return cpu_state()


def set_rng_state(new_state: Any, device: Any = "cuda") -> None:
    """Without a GPU torch accepts and ignores the state (its call is queued lazily)."""
    if cuda_is_available():
        from gradcheck.ref.random import set_rng_state as cpu_set

        cpu_set(new_state)


def get_rng_state_all() -> list:
    return [get_rng_state()] if cuda_is_available() else []


def set_rng_state_all(new_states: list) -> None:
    for state in new_states:
        set_rng_state(state)


def seed() -> None:
    """Nothing to seed without a GPU."""


seed_all = seed
default_generators: tuple = ()


def is_initialized() -> bool:
    return False


def init() -> None:
    _cupy()


def memory_stats(device: Any = None) -> dict:
    return {}


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    if not cuda_is_available():
        raise KeyError("allocated_bytes.all.current")
    return "gradcheck.ref: CuPy manages GPU memory; no allocator statistics are kept"


def max_memory_reserved(device: Any = None) -> int:
    return 0


def reset_peak_memory_stats(device: Any = None) -> None:
    _cupy()


reset_max_memory_allocated = reset_max_memory_cached = reset_accumulated_memory_stats = \
    reset_peak_memory_stats


class Stream:
    """A CUDA stream (CuPy's); constructing one needs a GPU, as in torch."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Stream:
        if not cuda_is_available():
            raise RuntimeError("torch.cuda.Stream requires CUDA support")
        return super().__new__(cls)

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self._stream = _cupy().cuda.Stream()

    def synchronize(self) -> None:
        self._stream.synchronize()

    def wait_stream(self, stream: Stream) -> None:
        self._stream.wait_event(stream._stream.record())

    def query(self) -> bool:
        return self._stream.done


class Event:
    """A CUDA event; constructing one needs a GPU, as in torch."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Event:
        if not cuda_is_available():
            raise RuntimeError("Tried to instantiate dummy base class Event")
        return super().__new__(cls)

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False) -> None:
        self._event = _cupy().cuda.Event(block=blocking, disable_timing=not enable_timing)

    def record(self, stream: Stream | None = None) -> None:
        self._event.record(None if stream is None else stream._stream)

    def synchronize(self) -> None:
        self._event.synchronize()

    def elapsed_time(self, end_event: Event) -> float:
        return float(_cupy().cuda.get_elapsed_time(self._event, end_event._event))

    def query(self) -> bool:
        return self._event.done


def current_stream(device: Any = None) -> Any:
    _cupy()
    return None


default_stream = current_stream


def set_stream(stream: Any) -> None:
    _cupy()


class StreamContext(contextlib.AbstractContextManager):
    """``with torch.cuda.stream(s):``; a None stream is a no-op, as in torch."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def __exit__(self, *exc: Any) -> None:
        return None


def stream(stream: Any) -> StreamContext:
    return StreamContext(stream)


class device(contextlib.AbstractContextManager):  # noqa: N801 - torch's name
    """``with torch.cuda.device(i):`` selects GPU i inside the block (when there is one)."""

    def __init__(self, device: Any) -> None:
        self.idx = _index(device) if device is not None and device != -1 else -1

    def __enter__(self) -> device:
        if self.idx >= 0 and cuda_is_available():
            self._previous = _cupy().cuda.Device().id
            set_device(self.idx)
        return self

    def __exit__(self, *exc: Any) -> None:
        if getattr(self, "_previous", None) is not None:
            set_device(self._previous)


class OutOfMemoryError(RuntimeError):
    """torch.cuda.OutOfMemoryError (torch.OutOfMemoryError)."""
