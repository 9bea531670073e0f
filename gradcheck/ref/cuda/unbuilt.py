"""The parts of ``torch.cuda`` a CPU build of torch has as Python but not as kernels: CUDA
graphs, NVTX ranges, the CUDA profiler, NCCL, memory history, ``_sleep`` and ``cudart``.

They import and can be named, subclassed and passed around, as on a CPU build; each call
that would need the GPU raises what torch 2.13's CPU build raises there (type and message),
because the engine runs no CUDA kernels. ``torch.cuda.graphs``, ``torch.cuda.nvtx``,
``torch.cuda.profiler``, ``torch.cuda.nccl`` and ``torch.cuda.memory`` are modules, as in torch.

>>> import gradcheck.ref as torch
>>> torch.cuda.nvtx.range_push("forward")
Traceback (most recent call last):
...
RuntimeError: NVTX functions not installed. Are you sure you have a CUDA build?
"""
from __future__ import annotations

import contextlib
import sys
import types
import warnings
from typing import Any

from gradcheck.ref.cuda.runtime import NOT_COMPILED, Stream


def _no_kernel(name: str) -> AttributeError:
    """What torch's Python raises where it calls a ``torch._C`` entry a CPU build lacks."""
    return AttributeError(f"module 'torch._C' has no attribute '{name}'")


def _dummy(name: str) -> RuntimeError:
    return RuntimeError(f"Tried to instantiate dummy base class {name}")


# ----------------------------------------------------------------------------- graphs
def is_current_stream_capturing() -> bool:
    raise _dummy("_cuda_isCurrentStreamCapturing")


def graph_pool_handle() -> Any:
    raise _dummy("_graph_pool_handle")


class CUDAGraph:
    """A captured CUDA graph; there is no CUDA to capture on."""

    def __new__(cls, *args: Any, **kwargs: Any) -> CUDAGraph:
        raise _dummy("CUDAGraph")


class graph:  # noqa: N801 - torch's name
    """``with torch.cuda.graph(g):`` captures on a side stream, which needs CUDA."""

    default_capture_stream: Any = None

    def __init__(self, cuda_graph: CUDAGraph, pool: Any = None, stream: Any = None,
                 capture_error_mode: str = "global") -> None:
        if self.__class__.default_capture_stream is None:
            self.__class__.default_capture_stream = Stream()


def make_graphed_callables(callables: Any, sample_args: Any, num_warmup_iters: int = 3,
                           allow_unused_input: bool = False, pool: Any = None) -> Any:
    CUDAGraph()


# ----------------------------------------------------------------------------- nvtx
_NO_NVTX = "NVTX functions not installed. Are you sure you have a CUDA build?"


def range_push(msg: str) -> int:
    raise RuntimeError(_NO_NVTX)


def range_pop() -> int:
    raise RuntimeError(_NO_NVTX)


def mark(msg: str) -> None:
    raise RuntimeError(_NO_NVTX)


def range_start(msg: str) -> int:
    raise AttributeError("'_NVTXStub' object has no attribute 'rangeStartA'")


def range_end(range_id: int) -> None:
    raise AttributeError("'_NVTXStub' object has no attribute 'rangeEnd'")


@contextlib.contextmanager
def nvtx_range(msg: str, *args: Any, **kwargs: Any):
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()


# ----------------------------------------------------------------------------- profiler
def profiler_start() -> None:
    raise AssertionError(NOT_COMPILED)


def profiler_stop() -> None:
    raise AssertionError(NOT_COMPILED)


@contextlib.contextmanager
def profiler_profile():
    profiler_start()
    try:
        yield
    finally:
        profiler_stop()


# ----------------------------------------------------------------------------- nccl
def nccl_is_available(tensors: Any) -> bool:
    warnings.warn("PyTorch is not compiled with NCCL support", stacklevel=2)
    return False


def _nccl_call(name: str):
    def call(*args: Any, **kwargs: Any) -> Any:
        raise _no_kernel(f"_nccl_{name}")

    call.__name__ = name
    return call


# ----------------------------------------------------------------------------- the rest
def _sleep(cycles: int) -> None:
    """Spin the GPU for ``cycles`` clock cycles (a test helper of torch's)."""
    raise _no_kernel("_cuda_sleep")


def cudart() -> Any:
    raise AssertionError(NOT_COMPILED)


class CudaError(RuntimeError):
    """A CUDA runtime error code; its text comes from cudart, which a CPU build lacks."""

    def __init__(self, code: int) -> None:
        raise AttributeError("'NoneType' object has no attribute 'cudaGetErrorString'")


def _record_memory_history(enabled: Any = "all", *args: Any, **kwargs: Any) -> None:
    raise _no_kernel("_cuda_record_memory_history")


def _snapshot(device: Any = None, augment_with_fx_traces: bool = False) -> dict:
    raise _no_kernel("_cuda_memorySnapshot")


def _dump_snapshot(filename: str = "dump_snapshot.pickle", augment_with_fx_traces: bool = False
                   ) -> None:
    _snapshot(augment_with_fx_traces=augment_with_fx_traces)


def list_gpu_processes(device: Any = None) -> str:
    try:
        import pynvml  # noqa: F401
    except ModuleNotFoundError:
        return "pynvml module not found, please install nvidia-ml-py"
    raise NotImplementedError("torch.cuda.list_gpu_processes is not available in gradcheck.ref: "
                              "the engine does not query NVML")


class _CudaOnlyType(type):
    """A legacy CUDA tensor type with no cpu counterpart here: nothing is an instance."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return False

    def __repr__(cls) -> str:
        return f"<class 'torch.cuda.{cls.__name__}'>"


def _refuse_type(cls: type, *args: Any, **kwargs: Any) -> Any:
    raise TypeError(f"type torch.cuda.{cls.__name__} not available. Torch not compiled with "
                    f"CUDA enabled.")


BFloat16Tensor = _CudaOnlyType("BFloat16Tensor", (), {"__new__": _refuse_type})


def _submodule(cuda: types.ModuleType, name: str, **members: Any) -> types.ModuleType:
    module = types.ModuleType(f"{cuda.__name__}.{name}", f"torch.cuda.{name}")
    module.__dict__.update(members)
    sys.modules[module.__name__] = module
    setattr(cuda, name, module)
    return module


def install(cuda: types.ModuleType) -> None:
    """Put each piece where torch.cuda keeps it."""
    graphs = {"CUDAGraph": CUDAGraph, "graph": graph, "graph_pool_handle": graph_pool_handle,
              "is_current_stream_capturing": is_current_stream_capturing,
              "make_graphed_callables": make_graphed_callables}
    _submodule(cuda, "graphs", **graphs)
    cuda.__dict__.update(graphs)
    _submodule(cuda, "nvtx", range_push=range_push, range_pop=range_pop, mark=mark,
               range_start=range_start, range_end=range_end, range=nvtx_range)
    _submodule(cuda, "profiler", start=profiler_start, stop=profiler_stop,
               profile=profiler_profile)
    names = ("unique_id", "init_rank", "all_reduce", "reduce", "broadcast", "all_gather",
             "reduce_scatter", "version")
    _submodule(cuda, "nccl", is_available=nccl_is_available, SUM=0,
               **{name: _nccl_call(name) for name in names})
    memory = {name: getattr(cuda, name) for name in (
        "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
        "memory_stats", "memory_summary", "empty_cache", "reset_peak_memory_stats",
        "reset_max_memory_allocated", "mem_get_info", "list_gpu_processes")
        if hasattr(cuda, name)}
    _submodule(cuda, "memory", _record_memory_history=_record_memory_history,
               _snapshot=_snapshot, _dump_snapshot=_dump_snapshot,
               list_gpu_processes=list_gpu_processes, **memory)
    _submodule(cuda, "streams", Stream=cuda.Stream, Event=cuda.Event)
    cuda._sleep, cuda.cudart, cuda.CudaError = _sleep, cudart, CudaError
    cuda.list_gpu_processes, cuda.BFloat16Tensor = list_gpu_processes, BFloat16Tensor
