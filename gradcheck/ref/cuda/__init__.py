"""``torch.cuda``: availability checks backed by CuPy."""
from __future__ import annotations

from gradcheck.ref.devices import cuda_device_count, cuda_is_available


def is_available() -> bool:
    """True when CuPy is installed and sees a GPU.

    >>> isinstance(is_available(), bool)
    True
    """
    return cuda_is_available()


def device_count() -> int:
    return cuda_device_count()


def manual_seed(seed: int) -> None:
    """Seeds are per generator here; cuda tensors draw from the cpu generators."""


manual_seed_all = manual_seed


def synchronize() -> None:
    if cuda_is_available():
        import cupy

        cupy.cuda.Device().synchronize()


from gradcheck.ref.legacy import (  # noqa: E402,F401  (torch.cuda.FloatTensor and friends)
    BoolTensor,
    ByteTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
)


def current_device() -> int:
    return 0


def get_device_name(device=None) -> str:
    raise RuntimeError("Found no NVIDIA driver on your system.") if not cuda_is_available() \
        else "cuda"


def empty_cache() -> None:
    """Nothing is cached."""


def is_bf16_supported() -> bool:
    return False


def memory_allocated(device=None) -> int:
    return 0


max_memory_allocated = memory_reserved = memory_allocated

from gradcheck.ref.cuda import amp  # noqa: E402,F401

from gradcheck.ref.cuda.runtime import (  # noqa: E402,F401
    Event,
    OutOfMemoryError,
    Stream,
    StreamContext,
    current_stream,
    default_generators,
    default_stream,
    device,
    get_device_capability,
    get_device_properties,
    get_rng_state,
    get_rng_state_all,
    init,
    initial_seed,
    ipc_collect,
    is_initialized,
    max_memory_reserved,
    mem_get_info,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_max_memory_cached,
    reset_peak_memory_stats,
    seed,
    seed_all,
    set_device,
    set_rng_state,
    set_rng_state_all,
    set_stream,
    stream,
)


_queued_calls: list = []


def _lazy_call(callable, **kwargs) -> None:  # noqa: A002 - torch's argument name
    """Run ``callable`` once CUDA is initialised; until then (a CPU build: always) queue it."""
    if is_initialized():
        callable()
    else:
        _queued_calls.append(callable)


from gradcheck.ref.cuda import unbuilt  # noqa: E402

unbuilt.install(__import__("sys").modules[__name__])
