"""What torch's CPU build answers for its CUDA-only and device-agnostic APIs, and the engine's
answer, side by side: the same value, or an error of the same type with the same message.

Each case is a function of the module (``torch`` or ``gradcheck.ref``) so one table serves
both. Importing the submodules by name checks they exist where torch keeps them.
"""
from __future__ import annotations

import importlib
import warnings

import pytest

import gradcheck.ref as ref

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(torch.cuda.is_available() or ref.cuda.is_available(),
                                reason="these are the answers of a machine without a GPU")

SUBMODULES = ["cuda.graphs", "cuda.nvtx", "cuda.profiler", "cuda.nccl", "cuda.memory",
              "cuda.streams", "cuda.comm", "nn.parallel._functions", "nn.parallel.comm",
              "cpu.amp", "cpu.amp.autocast_mode"]
for _name in SUBMODULES:  # torch binds some (cuda.comm) only once they are imported
    importlib.import_module(f"torch.{_name}")


def _x(t):
    return t.ones(2, 3)


CASES = {
    "cuda._sleep": lambda t: t.cuda._sleep(100),
    "CUDAGraph()": lambda t: t.cuda.CUDAGraph(),
    "cuda.graph": lambda t: t.cuda.graph(None),
    "graph_pool_handle": lambda t: t.cuda.graph_pool_handle(),
    "is_current_stream_capturing": lambda t: t.cuda.is_current_stream_capturing(),
    "make_graphed_callables": lambda t: t.cuda.make_graphed_callables(t.nn.Linear(2, 2),
                                                                      (_x(t),)),
    "nvtx.range_push": lambda t: t.cuda.nvtx.range_push("step"),
    "nvtx.range_pop": lambda t: t.cuda.nvtx.range_pop(),
    "nvtx.mark": lambda t: t.cuda.nvtx.mark("step"),
    "nvtx.range": lambda t: t.cuda.nvtx.range("step {}", 1).__enter__(),
    "nvtx.range_start": lambda t: t.cuda.nvtx.range_start("step"),
    "nvtx.range_end": lambda t: t.cuda.nvtx.range_end(0),
    "cuda.profiler.profile": lambda t: t.cuda.profiler.profile().__enter__(),
    "cuda.profiler.start": lambda t: t.cuda.profiler.start(),
    "cuda.profiler.stop": lambda t: t.cuda.profiler.stop(),
    "emit_nvtx": lambda t: t.autograd.profiler.emit_nvtx().__enter__(),
    "emit_nvtx off": lambda t: t.autograd.profiler.emit_nvtx(enabled=False).__enter__(),
    "cudart": lambda t: t.cuda.cudart(),
    "CudaError": lambda t: t.cuda.CudaError(2),
    "nccl.version": lambda t: t.cuda.nccl.version(),
    "nccl.unique_id": lambda t: t.cuda.nccl.unique_id(),
    "nccl.all_reduce": lambda t: t.cuda.nccl.all_reduce([_x(t)]),
    "nccl.broadcast": lambda t: t.cuda.nccl.broadcast([_x(t)]),
    "nccl.SUM": lambda t: t.cuda.nccl.SUM,
    "memory._record_memory_history": lambda t: t.cuda.memory._record_memory_history(),
    "memory._dump_snapshot": lambda t: t.cuda.memory._dump_snapshot("never_written.pickle"),
    "cuda.streams.Stream": lambda t: t.cuda.streams.Stream(),
    "cuda.streams.Event": lambda t: t.cuda.streams.Event(),
    "cuda.BFloat16Tensor": lambda t: t.cuda.BFloat16Tensor(2),
    "isinstance cuda.BFloat16Tensor": lambda t: isinstance(_x(t), t.cuda.BFloat16Tensor),
    "Broadcast": lambda t: t.nn.parallel._functions.Broadcast.apply([0, 1], _x(t)),
    "Scatter": lambda t: t.nn.parallel._functions.Scatter.apply([0, 1], None, 0, _x(t)),
    "Gather": lambda t: t.nn.parallel._functions.Gather.apply(0, 0, _x(t), _x(t)),
    "ReduceAddCoalesced": lambda t: t.nn.parallel._functions.ReduceAddCoalesced.apply(
        0, 2, _x(t), _x(t)),
    "_get_stream": lambda t: t.nn.parallel._functions._get_stream(t.device("cuda", 0)),
    "comm.broadcast": lambda t: t.cuda.comm.broadcast(_x(t), [0]),
    "comm.broadcast both": lambda t: t.cuda.comm.broadcast(_x(t), [0], out=[_x(t)]),
    "comm.broadcast_coalesced": lambda t: t.cuda.comm.broadcast_coalesced([_x(t)], [0]),
    "comm.scatter": lambda t: t.cuda.comm.scatter(_x(t), [0, 1]),
    "comm.scatter out": lambda t: t.cuda.comm.scatter(_x(t), [0], out=[_x(t)]),
    "comm.gather": lambda t: t.cuda.comm.gather([_x(t)], 0, "cpu"),
    "comm.reduce_add": lambda t: t.cuda.comm.reduce_add([_x(t)], 0),
    "Stream()": lambda t: t.Stream(),
    "Stream query": lambda t: t.Stream("cpu").query(),
    "Stream eq": lambda t: t.Stream() == t.Stream(),
    "Stream fields": lambda t: (t.Stream().device, t.Stream().device_index,
                                t.Stream().stream_id, t.Stream().device_type),
    "Stream(0)": lambda t: t.Stream(0),
    "Stream(cuda)": lambda t: t.Stream("cuda"),
    "Stream record_event": lambda t: t.Stream().record_event(),
    "Stream wait_stream": lambda t: t.Stream().wait_stream(t.Stream()),
    "Stream synchronize": lambda t: t.Stream().synchronize(),
    "Event()": lambda t: t.Event(),
    "Event(timing)": lambda t: t.Event(enable_timing=True),
    "Event(cuda)": lambda t: t.Event("cuda"),
    "Event record": lambda t: t.Event().record(),
    "Event query": lambda t: (t.Event().query(), t.Event().synchronize(), t.Event().wait()),
    "Event elapsed untimed": lambda t: t.Event().elapsed_time(t.Event()),
    "Event elapsed timed": lambda t: t.Event(enable_timing=True).elapsed_time(
        t.Event(enable_timing=True)),
    "Event ipc": lambda t: t.Event().ipc_handle(),
    "cpu.Event": lambda t: (t.cpu.Event().query(), t.cpu.Event().record()),
    "cpu.Stream": lambda t: t.cpu.Stream().wait_stream(t.cpu.current_stream()),
    "cpu queries": lambda t: (t.cpu.device_count(), t.cpu.current_device(),
                              t.cpu.is_available(), t.cpu.is_initialized()),
    "cpu.stream": lambda t: t.cpu.stream(t.cpu.Stream()).__enter__(),
    "mtia.Stream": lambda t: t.mtia.Stream(),
    "mtia.Stream(0)": lambda t: t.mtia.Stream(0),
    "mtia.set_device": lambda t: t.mtia.set_device(0),
    "accelerator.set_device_index": lambda t: t.accelerator.set_device_index(0),
    "accelerator.device_index": lambda t: t.accelerator.device_index(0).__enter__(),
    "accelerator.device_index(None)": lambda t: t.accelerator.device_index(None).__enter__(),
    "mps.is_macos_or_newer": lambda t: t.backends.mps.is_macos_or_newer(14, 0),
    "_profiler_enabled": lambda t: t.autograd._profiler_enabled(),
    "EventList": lambda t: (len(t.autograd.profiler.EventList()),
                            t.autograd.profiler.EventList().table()),
}


def _answer(fn, module):
    """('value', repr) or (error type, message); reprs name the module as torch does."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = fn(module)
        except Exception as error:  # noqa: BLE001 - the error is the answer compared
            return type(error).__name__, str(error)
    return "value", repr(value).replace("gradcheck.ref", "torch")


@pytest.mark.parametrize("name", SUBMODULES)
def test_submodule_imports_where_torch_has_it(name):
    assert importlib.import_module(f"gradcheck.ref.{name}") is not None
    assert importlib.import_module(f"torch.{name}") is not None


@pytest.mark.parametrize("case", sorted(CASES))
def test_answer_matches_torch_cpu_build(case):
    expected = _answer(CASES[case], torch)
    assert _answer(CASES[case], ref) == expected


def test_cpu_autocast_is_the_deprecated_cpu_autocast():
    with pytest.warns(FutureWarning, match=r"torch.cpu.amp.autocast\(args...\)` is deprecated"):
        mine = ref.cpu.amp.autocast()
    with pytest.warns(FutureWarning, match=r"torch.cpu.amp.autocast\(args...\)` is deprecated"):
        theirs = torch.cpu.amp.autocast()
    assert (mine.device, str(mine.fast_dtype)) == (theirs.device, str(theirs.fast_dtype))
    assert isinstance(mine, ref.amp.autocast)


def test_nccl_is_available_warns_and_says_no():
    for module in (ref, torch):
        with pytest.warns(UserWarning, match="not compiled with NCCL support"):
            assert module.cuda.nccl.is_available([module.ones(1)]) is False


def test_subclassing_the_cuda_only_classes_works():
    class Graph(ref.cuda.CUDAGraph):
        pass

    with pytest.raises(RuntimeError, match="dummy base class CUDAGraph"):
        Graph()
    assert issubclass(ref.nn.parallel._functions.Broadcast, ref.autograd.Function)
