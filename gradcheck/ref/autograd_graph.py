"""``torch.autograd.graph`` and the engine hooks code reaches through ``Variable``:

- ``saved_tensors_hooks(pack, unpack)``: every tensor an op saves for backward inside the
  block is stored as ``pack(tensor)`` and handed to the backward rule as ``unpack(packed)``
  (``save_on_cpu`` is the pair that keeps them on the cpu, where every tensor here is);
  ``disable_saved_tensors_hooks(message)`` refuses new hooks with that message. NOTE: a
  Python number in an op (``x * 2.0``) is a 0-d tensor here and is packed like any saved
  tensor, where torch keeps it as a scalar and packs nothing; and a fused op may save other
  tensors than torch's kernel (layer norm saves its inputs here, torch its mean and rstd), so
  a hook that changes values, rather than moving or storing them, can change gradients
  differently than in torch.
- ``Variable._execution_engine.queue_callback(fn)``: ``fn`` runs once the current backward
  pass has finished; ``run_backward`` is the engine call behind ``backward`` and ``grad``.

>>> import gradcheck.ref as torch
>>> x = torch.tensor([1.0, 2.0], requires_grad=True)
>>> with torch.autograd.graph.saved_tensors_hooks(lambda t: t * 10, lambda t: t):
...     y = (x * x).sum()
>>> y.backward(); x.grad
tensor([20., 40.])
"""
from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

from gradcheck.ref import graph

_disabled: list = []  # error messages of enclosing disable_saved_tensors_hooks blocks
_warn_on_stream_mismatch = [True]


class saved_tensors_hooks:  # noqa: N801 - torch's name
    """Pack each tensor saved for backward with ``pack_hook``; unpack with ``unpack_hook``."""

    def __init__(self, pack_hook: Callable, unpack_hook: Callable) -> None:
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self) -> None:
        if _disabled:
            raise RuntimeError(_disabled[-1])
        graph.SAVED_TENSORS_HOOKS.append((self.pack_hook, self.unpack_hook))

    def __exit__(self, *exc: Any) -> None:
        graph.SAVED_TENSORS_HOOKS.pop()


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - torch's name
    """Keep saved tensors in cpu memory until backward (every tensor here already is)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        super().__init__(lambda tensor: (tensor.device, tensor.cpu()),
                         lambda packed: packed[1].to(packed[0]))


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str) -> Iterator[None]:
    """Inside the block, entering ``saved_tensors_hooks`` raises ``error_message``."""
    _disabled.append(error_message)
    try:
        yield
    finally:
        _disabled.pop()


def set_warn_on_accumulate_grad_stream_mismatch(enabled: bool) -> None:
    """torch warns when a gradient arrives on another CUDA stream; there are no streams here,
    so the switch is only recorded."""
    _warn_on_stream_mismatch[0] = bool(enabled)


class _ExecutionEngine:
    """``Variable._execution_engine``: the backward pass as torch's engine object exposes it."""

    @staticmethod
    def queue_callback(callback: Callable[[], Any]) -> None:
        graph.queue_callback(callback)

    @staticmethod
    def run_backward(tensors: tuple, grad_tensors: tuple, keep_graph: bool, create_graph: bool,
                     inputs: tuple = (), allow_unreachable: bool = False,
                     accumulate_grad: bool = True) -> tuple | None:
        from gradcheck.ref import autograd

        if accumulate_grad:
            autograd.backward(list(tensors), list(grad_tensors), keep_graph, create_graph,
                              list(inputs) or None)
            return None
        return autograd.grad(list(tensors), list(inputs), list(grad_tensors), keep_graph,
                             create_graph, allow_unused=allow_unreachable)


def install() -> None:
    """``autograd.graph``, ``autograd.variable`` and ``Variable._execution_engine``."""
    from gradcheck.ref import autograd

    this = sys.modules[__name__]
    this.Node = graph.Node
    autograd.graph = this
    sys.modules[f"{autograd.__name__}.graph"] = this
    autograd.Variable._execution_engine = _ExecutionEngine()
    variable = types.ModuleType(f"{autograd.__name__}.variable")
    variable.Variable = autograd.Variable
    autograd.variable = sys.modules[variable.__name__] = variable
