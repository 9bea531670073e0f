"""``torch.utils.checkpoint``: activation checkpointing trades memory for a second forward
pass in backward. Recomputing gives the same values (torch restores the RNG state so dropout
draws the same masks), so calling the function directly computes exactly what torch
computes, with the activations kept instead of recomputed.

>>> import gradcheck.ref as torch
>>> x = torch.ones(2, requires_grad=True)
>>> checkpoint(lambda t: (t * 3).sum(), x, use_reentrant=False).item()
6.0
"""
from __future__ import annotations

import warnings
from typing import Any


def checkpoint(function: Any, *args: Any, use_reentrant: bool | None = None,
               context_fn: Any = None, determinism_check: str = "default",
               debug: bool = False, preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    return function(*args, **kwargs)


def checkpoint_sequential(functions: Any, segments: int, input: Any,  # noqa: A002
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """Run a Sequential (or list of modules) on ``input``, as torch's segments would."""
    modules = list(functions.children()) if hasattr(functions, "children") else list(functions)
    for module in modules:
        input = module(input)  # noqa: A001
    return input


def detach_variable(inputs: tuple) -> tuple:
    """Each tensor of the tuple detached, keeping its ``requires_grad``; others unchanged."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    from gradcheck.ref.tensors import Tensor

    out = []
    for value in inputs:
        if isinstance(value, Tensor):
            detached = value.detach()
            detached.requires_grad = value.requires_grad
            value = detached
        out.append(value)
    return tuple(out)


def check_backward_validity(inputs: Any) -> None:
    """torch's warning when no input of a checkpointed function requires grad."""
    from gradcheck.ref.tensors import Tensor

    if not any(v.requires_grad for v in inputs if isinstance(v, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


def get_device_states(*args: Any) -> tuple[list, list]:
    """The accelerator devices of the tensors in ``args`` and their random states, which
    checkpointing restores for the recomputation: none on the cpu."""
    from gradcheck import ref

    devices = sorted({a.get_device() for a in args if isinstance(a, ref.Tensor) and a.is_cuda})
    return devices, [ref.cuda.get_rng_state(d) for d in devices]


def set_device_states(devices: list, states: list, *, device_type: Any = None) -> None:
    """Restore the random states ``get_device_states`` returned."""
    from gradcheck import ref

    for device, state in zip(devices, states):
        ref.cuda.set_rng_state(state, device)
