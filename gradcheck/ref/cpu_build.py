"""What a CPU build of torch answers for the device plumbing code reads directly:
``torch.cuda.random``, ``cuda.device_of``, ``cuda.memory_cached`` (the old name of
``memory_reserved``), ``cuda._initialized``, ``cuda.amp.common``, ``backends.cudnn.is_acceptable``,
``torch.mtia.is_available``, ``torch._utils._get_device_index``/``_element_size``,
and ``torch._utils_internal``.

>>> import gradcheck.ref as torch
>>> torch._utils._get_device_index("cuda:1"), torch.mtia.is_available()
(1, False)
"""
from __future__ import annotations

import sys
import types
import warnings
from typing import Any


def _get_device_index(device: Any, optional: bool = False, allow_cpu: bool = False) -> int | None:
    """The index of ``device`` (a device, its name or an int); -1 for cpu when
    ``allow_cpu``; with no index, the current accelerator's (None here) when ``optional``."""
    from gradcheck import ref

    if isinstance(device, str):
        device = ref.device(device)
    index = device if isinstance(device, int) else None
    if isinstance(device, ref.device):
        if device.type == "cpu" and not allow_cpu:
            raise ValueError(f"Expected a non cpu device, but got: {device}")
        index = -1 if device.type == "cpu" else device.index
    if index is None and not optional:
        raise ValueError(f"Expected a torch.device with a specified index or an integer, but "
                         f"got:{device}")
    return index


def _element_size(dtype: Any) -> int:
    """Bytes per element of ``dtype``."""
    return dtype.itemsize


def justknobs_check(name: str, default: bool = True) -> bool:
    """Meta's feature switches: outside Meta every knob is on."""
    return True


class device_of:  # noqa: N801 - torch's name
    """``with torch.cuda.device_of(tensor):`` selects the tensor's GPU; a cpu tensor
    selects none (index -1)."""

    def __init__(self, obj: Any) -> None:
        self.idx = obj.get_device() if getattr(obj, "is_cuda", False) else -1
        self.prev_idx = -1

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> bool:
        return False


def _mtia_stream(device: Any = None, priority: int = 0) -> Any:
    """A CPU build's ``torch.mtia.Stream`` is ``torch.Stream``: a cpu stream, or torch's
    error for a device index."""
    from gradcheck.ref.streams import Stream

    return Stream(device, priority=priority)


def _no_mtia(device: Any) -> None:
    raise RuntimeError("Cannot execute setCurrentDevice() without MTIA backend.")


def _renamed(old: str, new: str, fn: Any) -> Any:
    def call(device: Any = None) -> int:
        warnings.warn(f"`torch.cuda.{old}` has been renamed to `torch.cuda.{new}`",
                      FutureWarning, stacklevel=2)
        return fn(device)

    call.__name__ = old
    return call


def _module(name: str, **members: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(members)
    sys.modules[name] = module
    return module


def install() -> None:
    """Put each answer where torch keeps it."""
    from gradcheck import ref
    from gradcheck.ref import cuda

    prefix = "gradcheck.ref"
    cuda.random = _module(f"{prefix}.cuda.random", manual_seed=cuda.manual_seed,
                          manual_seed_all=cuda.manual_seed_all, seed=cuda.seed,
                          seed_all=cuda.seed_all, initial_seed=cuda.initial_seed,
                          get_rng_state=cuda.get_rng_state, set_rng_state=cuda.set_rng_state,
                          get_rng_state_all=cuda.get_rng_state_all,
                          set_rng_state_all=cuda.set_rng_state_all)
    cuda.memory_cached = _renamed("memory_cached", "memory_reserved", cuda.memory_reserved)
    cuda.max_memory_cached = _renamed("max_memory_cached", "max_memory_reserved",
                                      cuda.max_memory_reserved)
    cuda._initialized = False
    cuda._is_in_bad_fork = lambda: False
    cuda.device_of = device_of
    cuda.amp.common = _module(f"{prefix}.cuda.amp.common",
                              amp_definitely_not_available=lambda: not cuda.is_available())
    cuda.amp.grad_scaler = _module(f"{prefix}.cuda.amp.grad_scaler",
                                   GradScaler=cuda.amp.GradScaler)
    cuda.amp.autocast_mode = _module(f"{prefix}.cuda.amp.autocast_mode",
                                     autocast=cuda.amp.autocast, _cast=ref.amp._cast_cuda)
    ref.backends.cudnn.is_acceptable = lambda tensor: False  # cuDNN takes no cpu tensor
    ref.backends.cuda.matmul.allow_fp16_accumulation = False
    ref.mtia = _module(f"{prefix}.mtia", is_available=lambda: False,
                       device_count=lambda: 0, Stream=_mtia_stream, set_device=_no_mtia)
    ref._utils._get_device_index = _get_device_index
    ref._utils._element_size = _element_size
    ref._utils_internal = _module(f"{prefix}._utils_internal", justknobs_check=justknobs_check,
                                  TEST_MASTER_ADDR="127.0.0.1", TEST_MASTER_PORT=29500)
