"""The few things the run-time checks need from a framework, for torch and ``gradcheck.ref``.

Both frameworks share torch's surface (``named_parameters``, ``register_hook``, optimizer step
hooks, ``state_dict``), so the adapter is duck-typed: nothing here imports torch, and an object
from either framework goes through the same functions.

>>> import numpy as np
>>> as_numpy(np.ones(2)).dtype
dtype('float64')
"""
from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np


def as_numpy(tensor: Any) -> np.ndarray:
    """A float64 numpy copy of a torch tensor, an engine tensor, or an array."""
    if isinstance(tensor, np.ndarray):
        return tensor.astype(np.float64)
    value = tensor.detach() if hasattr(tensor, "detach") else tensor
    if hasattr(value, "cpu"):
        value = value.cpu()
    if hasattr(value, "float") and "torch" in type(value).__module__:
        value = value.double()  # NOTE: numpy has no bfloat16; go through float64 first
    if hasattr(value, "numpy"):
        value = value.numpy()
    elif hasattr(value, "data"):
        value = value.data
    if hasattr(value, "get"):  # a CuPy array lives on the GPU
        value = value.get()
    return np.array(value, dtype=np.float64)


def is_all_zero(tensor: Any) -> bool:
    """True when every element of ``tensor`` is zero (cheap for torch: no copy)."""
    if hasattr(tensor, "any") and "torch" in type(tensor).__module__:
        return not bool(tensor.any())
    return not np.any(as_numpy(tensor))


def fingerprint(tensor: Any) -> tuple:
    """A cheap summary of a tensor's values that an update changes: at most 16 of its elements.

    torch also gives its version counter, which any in-place write under ``no_grad`` moves
    (writes through ``.data`` do not, hence the values).
    """
    if "torch" in type(tensor).__module__:
        flat = tensor.detach().reshape(-1)
        return tensor._version, tuple(flat[:: max(1, flat.numel() // 16)][:16].tolist())
    values = as_numpy(tensor).ravel()
    return None, tuple(values[:: max(1, values.size // 16)][:16].tolist())


def named_parameters(model: Any) -> list[tuple[str, Any]]:
    """The model's trainable parameters with their dotted names, in registration order."""
    if not hasattr(model, "named_parameters"):
        raise TypeError(
            f"model must be an nn.Module (torch or gradcheck.ref), got {type(model).__name__}; "
            "pass the module whose parameters the optimizer updates"
        )
    return [(name, p) for name, p in model.named_parameters() if getattr(p, "requires_grad", True)]


def optimizer_parameters(optimizer: Any) -> list[Any]:
    """Every parameter the optimizer updates, in param_group order, without duplicates."""
    if not hasattr(optimizer, "param_groups"):
        raise TypeError(
            f"optimizer must be a torch.optim or gradcheck.ref.optim optimizer, got "
            f"{type(optimizer).__name__}"
        )
    seen: dict[int, Any] = {}
    for group in optimizer.param_groups:
        for p in group["params"]:
            seen.setdefault(id(p), p)
    return list(seen.values())


def add_step_hooks(optimizer: Any, pre: Callable, post: Callable) -> list[Any]:
    """Register torch-style ``(optimizer, args, kwargs)`` step hooks; return their handles."""
    for method in ("register_step_pre_hook", "register_step_post_hook"):
        if not hasattr(optimizer, method):
            raise TypeError(
                f"{type(optimizer).__name__} has no {method}(); the run-time checks need "
                "torch>=2.0 optimizers or gradcheck.ref optimizers"
            )
    return [optimizer.register_step_pre_hook(pre), optimizer.register_step_post_hook(post)]


def remove_handles(handles: list[Any]) -> None:
    """Remove hook handles, ignoring ones that are already gone."""
    for handle in handles:
        handle.remove()
    handles.clear()


class Snapshot:
    """The parameters, gradients and optimizer state of one model/optimizer pair.

    ``restore()`` puts them back in place (same parameter objects), so an optimizer that holds
    references to the parameters keeps working.
    """

    def __init__(self, model: Any, optimizer: Any) -> None:
        self.model = model
        self.optimizer = optimizer
        # the model's frozen parameters too (the step may touch their .grad); each one once
        every = [p for _, p in model.named_parameters()] + optimizer_parameters(optimizer)
        self.params = list({id(p): p for p in every}.values())
        self.values = [as_numpy(p) for p in self.params]
        self.grads = [None if p.grad is None else _clone(p.grad) for p in self.params]
        self.optimizer_state = copy.deepcopy(optimizer.state_dict())

    def restore(self) -> None:
        for p, value, grad in zip(self.params, self.values, self.grads):
            write_values(p, value)
            p.grad = grad
        self.optimizer.load_state_dict(copy.deepcopy(self.optimizer_state))


def write_values(param: Any, value: np.ndarray) -> None:
    """Overwrite a parameter's values in place, without recording the write in autograd."""
    if "torch" in type(param).__module__:
        import torch  # lazily: only reached with a torch parameter

        with torch.no_grad():
            param.copy_(torch.as_tensor(value, dtype=param.dtype, device=param.device))
        return
    from gradcheck import ref  # every other parameter is the engine's

    param.data = ref.tensor(value, dtype=param.dtype, device=param.device)


def _clone(tensor: Any) -> Any:
    return tensor.detach().clone() if hasattr(tensor, "clone") else copy.deepcopy(tensor)
