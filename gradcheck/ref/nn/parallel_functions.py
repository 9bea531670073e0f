"""``torch.nn.parallel._functions`` and ``torch.nn.parallel.comm`` (also ``torch.cuda.comm``):
the autograd Functions and copy primitives ``DataParallel`` builds on to spread a batch over
GPUs and reduce the gradients back.

They are torch's Functions, with torch's checks in torch's order: ``Broadcast`` and ``Gather``
refuse cpu tensors, ``reduce_add`` wants every input on a GPU, and where torch hands the work
to its multi-GPU copy kernels (``torch._C._scatter``, ``_broadcast_coalesced``, ``_gather``)
the engine, which has none, raises what a CPU build of torch raises there.

>>> import gradcheck.ref as torch
>>> from gradcheck.ref.nn.parallel_functions import Gather
>>> Gather.apply(0, 0, torch.ones(2), torch.ones(2))
Traceback (most recent call last):
...
AssertionError: Gather function not implemented for CPU tensors
"""
from __future__ import annotations

import sys
import types
import warnings
from typing import Any

from gradcheck.ref.autograd import Function
from gradcheck.ref.cpu_build import _get_device_index


def _no_kernel(name: str) -> AttributeError:
    return AttributeError(f"module 'torch._C' has no attribute '{name}'")


# ----------------------------------------------------------------------------- comm
def broadcast(tensor: Any, devices: Any = None, *, out: Any = None) -> tuple:
    if not ((devices is None) ^ (out is None)):
        raise RuntimeError(f"Exactly one of 'devices' and 'out' must be specified, but got "
                           f"devices={devices} and out={out}")
    if devices is not None:
        [_get_device_index(d) for d in devices]
        raise _no_kernel("_broadcast")
    raise _no_kernel("_broadcast_out")


def broadcast_coalesced(tensors: Any, devices: Any, buffer_size: int = 10485760) -> tuple:
    [_get_device_index(d) for d in devices]
    raise _no_kernel("_broadcast_coalesced")


def reduce_add(inputs: Any, destination: Any = None) -> Any:
    """The sum of ``inputs`` (one per GPU) on ``destination``; cpu inputs are refused."""
    destination = _get_device_index(destination, optional=True)
    input_size, root_index = inputs[0].size(), None
    for i, inp in enumerate(inputs):
        if inp.device.type == "cpu":
            raise AssertionError(f"reduce_add expects all inputs to be on GPUs, but input {i} "
                                 f"is on CPU")
        if inp.get_device() == destination:
            root_index = i
        if inp.size() != input_size:
            got = "x".join(str(x) for x in inp.size())
            expected = "x".join(str(x) for x in input_size)
            raise ValueError(f"input {i} has invalid size: got {got}, but expected {expected}")
    if root_index is None:
        raise RuntimeError("reduce_add expects destination to be on the same GPU with one of "
                           "the tensors")
    if len(inputs) == 1:
        return inputs[0]
    result = inputs[root_index].clone()
    for i, other in enumerate(inputs):
        if i != root_index:
            result.add_(other.to(result.device))
    return result


def reduce_add_coalesced(inputs: Any, destination: Any = None,
                         buffer_size: int = 10485760) -> tuple:
    """One ``reduce_add`` per position of the per-GPU lists in ``inputs``."""
    return tuple(reduce_add(list(group), destination) for group in zip(*inputs, strict=True))


def scatter(tensor: Any, devices: Any = None, chunk_sizes: Any = None, dim: int = 0,
            streams: Any = None, *, out: Any = None) -> tuple:
    if out is None:
        [_get_device_index(d) for d in devices]
        raise _no_kernel("_scatter")
    if devices is not None:
        raise RuntimeError(f"'devices' must not be specified when 'out' is specified, but got "
                           f"devices={devices}")
    if chunk_sizes is not None:
        raise RuntimeError(f"'chunk_sizes' must not be specified when 'out' is specified, but "
                           f"got chunk_sizes={chunk_sizes}")
    raise _no_kernel("_scatter_out")


def gather(tensors: Any, dim: int = 0, destination: Any = None, *, out: Any = None) -> Any:
    if out is None:
        if destination == -1:
            warnings.warn("Using -1 to represent CPU tensor is deprecated. Please use a device "
                          'object or string instead, e.g., "cpu".', FutureWarning, stacklevel=2)
        _get_device_index(destination, allow_cpu=True, optional=True)
        raise _no_kernel("_gather")
    if destination is not None:
        raise RuntimeError(f"'destination' must not be specified when 'out' is specified, but "
                           f"got destination={destination}")
    raise _no_kernel("_gather_out")


# ----------------------------------------------------------------------------- Functions
def _refuse_cpu(name: str, inputs: tuple) -> None:
    if not all(i.device.type != "cpu" for i in inputs):
        raise AssertionError(f"{name} function not implemented for CPU tensors")


class Broadcast(Function):
    """Copies of ``inputs`` on each of ``target_gpus``; backward sums them back."""

    @staticmethod
    def forward(ctx: Any, target_gpus: Any, *inputs: Any) -> tuple:
        _refuse_cpu("Broadcast", inputs)
        ctx.target_gpus = [_get_device_index(x, True) for x in target_gpus]
        if not inputs:
            return ()
        ctx.num_inputs, ctx.input_device = len(inputs), inputs[0].get_device()
        outputs = broadcast_coalesced(inputs, ctx.target_gpus)
        return tuple(t for device_outputs in outputs for t in device_outputs)

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> tuple:
        return (None, *ReduceAddCoalesced.apply(ctx.input_device, ctx.num_inputs,
                                                *grad_outputs))


class ReduceAddCoalesced(Function):
    """Sums ``grads`` (``num_inputs`` per GPU) onto ``destination``; backward broadcasts."""

    @staticmethod
    def forward(ctx: Any, destination: Any, num_inputs: int, *grads: Any) -> tuple:
        ctx.target_gpus = [grads[i].get_device() for i in range(0, len(grads), num_inputs)]
        per_gpu = [grads[i:i + num_inputs] for i in range(0, len(grads), num_inputs)]
        return reduce_add_coalesced(per_gpu, destination)

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> tuple:
        return (None, None, *Broadcast.apply(ctx.target_gpus, *grad_outputs))


class Gather(Function):
    """Concatenates ``inputs`` (one per GPU) along ``dim`` on ``target_device``."""

    @staticmethod
    def forward(ctx: Any, target_device: Any, dim: int, *inputs: Any) -> Any:
        _refuse_cpu("Gather", inputs)
        ctx.target_device = ("cpu" if target_device == "cpu"
                             else _get_device_index(target_device, True))
        ctx.dim, ctx.input_gpus = dim, tuple(i.get_device() for i in inputs)
        ctx.input_sizes = tuple(i.size(dim) for i in inputs)
        return gather(inputs, ctx.dim, ctx.target_device)

    @staticmethod
    def backward(ctx: Any, grad_output: Any) -> tuple:
        return (None, None, *Scatter.apply(ctx.input_gpus, ctx.input_sizes, ctx.dim,
                                           grad_output))


class Scatter(Function):
    """Chunks of ``input`` along ``dim``, one per GPU of ``target_gpus``."""

    @staticmethod
    def forward(ctx: Any, target_gpus: Any, chunk_sizes: Any, dim: int, input: Any) -> tuple:  # noqa: A002
        target_gpus = [_get_device_index(x, True) for x in target_gpus]
        ctx.dim = dim
        ctx.input_device = input.get_device() if input.device.type != "cpu" else -1
        return scatter(input, target_gpus, chunk_sizes, ctx.dim, None)

    @staticmethod
    def backward(ctx: Any, *grad_output: Any) -> tuple:
        return None, None, None, Gather.apply(ctx.input_device, ctx.dim, *grad_output)


_streams: list | None = None


def _get_stream(device: Any) -> Any:
    """The background copy stream of ``device``: none without an accelerator."""
    from gradcheck.ref import accelerator

    if device.type == "cpu" or not accelerator.is_available():
        return None
    raise NotImplementedError("torch.nn.parallel._functions._get_stream is not available in "
                              "gradcheck.ref: the engine has no copy streams")


def install(parallel: types.ModuleType, cuda: types.ModuleType) -> None:
    """``nn.parallel._functions``, ``nn.parallel.comm`` and ``cuda.comm``."""
    comm = types.ModuleType(f"{parallel.__name__}.comm", "torch.nn.parallel.comm")
    for fn in (broadcast, broadcast_coalesced, reduce_add, reduce_add_coalesced, scatter, gather):
        setattr(comm, fn.__name__, fn)
    functions = types.ModuleType(f"{parallel.__name__}._functions",
                                 "torch.nn.parallel._functions")
    functions.__dict__.update(Broadcast=Broadcast, ReduceAddCoalesced=ReduceAddCoalesced,
                              Gather=Gather, Scatter=Scatter, _get_stream=_get_stream,
                              _get_device_index=_get_device_index, comm=comm, Function=Function)
    parallel.comm, parallel._functions, cuda.comm = comm, functions, comm
    sys.modules[comm.__name__] = sys.modules[f"{cuda.__name__}.comm"] = comm
    sys.modules[functions.__name__] = functions
