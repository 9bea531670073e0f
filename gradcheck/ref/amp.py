"""``torch.amp``: ``autocast`` and ``GradScaler`` with torch's semantics on a machine without a
GPU.

``autocast("cuda")`` and a ``GradScaler`` for cuda disable themselves with torch's warnings, so
a mixed-precision script runs in full precision, exactly as torch runs it on a CPU-only
machine. ``autocast("cpu")`` is accepted and computes in the inputs' dtypes (torch would use
bfloat16 for some ops; numpy has no bfloat16). ``GradScaler("cpu")`` really scales: the loss
is multiplied by the scale, ``unscale_`` divides the gradients and looks for inf/nan, ``step``
skips the optimizer step when it found one, and ``update`` backs off or grows the scale.

>>> import gradcheck.ref as torch
>>> scaler = GradScaler("cpu", init_scale=4.0)
>>> scaler.scale(torch.tensor(1.5)).item(), scaler.get_scale()
(6.0, 4.0)
"""
from __future__ import annotations

import functools
import warnings
from typing import Any

from gradcheck.ref import dtypes as dt
from gradcheck.ref.devices import cuda_is_available

_NO_CUDA_AUTOCAST = "CUDA is not available or torch_xla is imported. Disabling autocast."
_NO_CUDA_SCALER = "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling."
_state = {"enabled": False}


def is_autocast_enabled(device_type: str | None = None) -> bool:
    return _state["enabled"]


class autocast:  # noqa: N801 - torch name
    """Mixed-precision region; a no-op here (see the module docstring), usable as a decorator."""

    def __init__(self, device_type: str = "cuda", dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if enabled and device_type == "cuda" and not cuda_is_available():
            warnings.warn(_NO_CUDA_AUTOCAST, UserWarning, stacklevel=2)
            enabled = False
        self.device, self.fast_dtype, self._enabled = device_type, dtype, enabled

    def __enter__(self) -> autocast:
        self._previous = _state["enabled"]
        _state["enabled"] = self._enabled
        return self

    def __exit__(self, *exc: Any) -> None:
        _state["enabled"] = self._previous

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return wrapper


class GradScaler:
    """Loss scaling with torch's update rule (enabled on "cpu"; disabled for cuda without a
    GPU, with torch's warning)."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        if enabled and device == "cuda" and not cuda_is_available():
            warnings.warn(_NO_CUDA_SCALER, UserWarning, stacklevel=2)
            enabled = False
        self._device, self._enabled = device, enabled
        self._scale, self._growth_factor = float(init_scale), growth_factor
        self._backoff_factor, self._growth_interval = backoff_factor, growth_interval
        self._growth_tracker = 0
        self._found_inf: dict[int, bool] = {}  # per optimizer: unscaled, and found inf/nan?

    def is_enabled(self) -> bool:
        return self._enabled

    def get_scale(self) -> float:
        return self._scale if self._enabled else 1.0

    def _scale_tensor(self):
        from gradcheck.ref import creation

        return creation.tensor(self._scale, dtype=dt.float32)

    def scale(self, outputs: Any) -> Any:
        """``outputs * scale`` (tensors, or lists/tuples of them)."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        return outputs * self._scale_tensor()

    def unscale_(self, optimizer: Any) -> None:
        """Divide the gradients of ``optimizer``'s parameters by the scale, in place."""
        if not self._enabled:
            return
        if id(optimizer) in self._found_inf:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        from gradcheck.ref import grad_mode

        inverse = (1.0 / self._scale_tensor().double()).float()
        found = False
        with grad_mode.no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if param.grad is None:
                        continue
                    found = found or not bool(param.grad.isfinite().all().item())
                    param.grad.mul_(inverse)
        self._found_inf[id(optimizer)] = found

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale if needed, then ``optimizer.step()`` unless an inf/nan gradient was found."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if id(optimizer) not in self._found_inf:
            self.unscale_(optimizer)
        return None if self._found_inf[id(optimizer)] else optimizer.step(*args, **kwargs)

    def update(self, new_scale: float | None = None) -> None:
        """Back off after an overflow; grow after ``growth_interval`` clean steps."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale.item() if hasattr(new_scale, "item") else new_scale)
        elif any(self._found_inf.values()):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale *= self._growth_factor
                self._growth_tracker = 0
        self._found_inf = {}

    def state_dict(self) -> dict:
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state: dict) -> None:
        if not self._enabled:
            return
        self._scale = float(state["scale"])
        self._growth_factor, self._backoff_factor = state["growth_factor"], state["backoff_factor"]
        self._growth_interval = state["growth_interval"]
        self._growth_tracker = state["_growth_tracker"]


def get_autocast_dtype(device_type: str) -> Any:
    """The dtype autocast would use: float16 on cuda, bfloat16 on cpu (torch's defaults)."""
    return dt.float16 if device_type == "cuda" else dt.bfloat16


def get_autocast_gpu_dtype() -> Any:
    return get_autocast_dtype("cuda")


def get_autocast_cpu_dtype() -> Any:
    return get_autocast_dtype("cpu")


def is_autocast_cache_enabled() -> bool:
    return True


def custom_fwd(fwd=None, *, device_type: str = "cuda", cast_inputs: Any = None):
    """Decorate an ``autograd.Function.forward``: inside an autocast region, floating inputs
    are cast to ``cast_inputs`` and autocast is switched off for the body, as in torch."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def forward(*args: Any, **kwargs: Any) -> Any:
        if cast_inputs is None or not is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        cast = [_cast_floating(a, cast_inputs) for a in args]
        with autocast(device_type, enabled=False):
            return fwd(*cast, **{k: _cast_floating(v, cast_inputs) for k, v in kwargs.items()})

    return forward


def custom_bwd(bwd=None, *, device_type: str = "cuda"):
    """Decorate a ``backward``: it runs with the autocast state of its forward (here: the
    same full-precision computation), so the function itself is unchanged."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    return bwd


def _cast_floating(value: Any, dtype: Any) -> Any:
    if hasattr(value, "is_floating_point") and value.is_floating_point():
        return value.to(dtype)
    return value


# torch's module layout: torch.amp.grad_scaler.GradScaler, torch.amp.autocast_mode.autocast
grad_scaler = __import__("types").SimpleNamespace(GradScaler=GradScaler)
autocast_mode = __import__("types").SimpleNamespace(
    autocast=autocast, is_autocast_available=lambda device_type: device_type in ("cpu", "cuda"))


def _amp_foreach_non_finite_check_and_unscale_(grads: list, found_inf: Any,
                                                inv_scale: Any) -> None:
    """Multiply each gradient by ``inv_scale`` in place; set ``found_inf`` to 1 if any
    gradient holds an inf or NaN (torch's fused kernel behind ``GradScaler.unscale_``)."""
    import numpy as np

    factor = inv_scale._data
    for grad in grads:
        if not np.isfinite(grad._data).all():
            found_inf._data[...] = 1.0
            found_inf._vc[0] += 1
        with np.errstate(all="ignore"):
            grad._data *= factor.astype(grad._data.dtype)
        grad._vc[0] += 1


def _amp_update_scale_(current_scale: Any, growth_tracker: Any, found_inf: Any,
                       growth_factor: float, backoff_factor: float,
                       growth_interval: int) -> Any:
    """torch's fused scale update behind ``GradScaler.update``, in place on the one-element
    tensors: back off after an overflow, grow after ``growth_interval`` clean steps (unless
    growing would overflow the scale's dtype). Returns ``current_scale``."""
    import numpy as np

    for name, tensor, kind in (("current_scale", current_scale, "float"),
                               ("growth_tracker", growth_tracker, "int"),
                               ("found_inf", found_inf, "float")):
        wanted = dt.int32 if kind == "int" else dt.float32
        if tensor.dtype is not wanted:
            raise RuntimeError(f"{name} must be a{'n' if kind == 'int' else ''} {kind} tensor.")
    for name, tensor in (("current_scale", current_scale), ("growth_tracker", growth_tracker),
                         ("found_inf", found_inf)):
        if tensor.numel() != 1:
            raise RuntimeError(f"{name} must be a 1-element tensor.")
    scale = current_scale._data
    if float(found_inf._data.reshape(-1)[0]) != 0:
        scale *= np.asarray(backoff_factor, dtype=scale.dtype)
        growth_tracker._data[...] = 0
    else:
        successful = int(growth_tracker._data.reshape(-1)[0]) + 1
        if successful == growth_interval:
            grown = scale * np.asarray(growth_factor, dtype=scale.dtype)
            if np.isfinite(grown).all():
                scale[...] = grown
            successful = 0
        growth_tracker._data[...] = successful
    current_scale._vc[0] += 1
    growth_tracker._vc[0] += 1
    return current_scale


def _cast_cuda(value: Any, dtype: Any) -> Any:
    """``torch.cuda.amp.autocast_mode._cast``: the deprecated spelling of ``_cast`` on cuda."""
    warnings.warn("`torch.cuda.amp.autocast_mode._cast(value, dtype)` is deprecated. Please use "
                  "`torch.amp.autocast_mode._cast(value, 'cuda', dtype)` instead.",
                  FutureWarning, stacklevel=2)
    return _cast(value, "cuda", dtype)


def _cast(value: Any, device_type: str, dtype: Any) -> Any:
    """``value`` with its floating-point tensors on ``device_type`` cast to ``dtype``, through
    lists, tuples, dicts and other iterables (torch's autocast helper for custom_fwd)."""
    import collections.abc

    import numpy as np

    from gradcheck.ref.tensors import Tensor

    if isinstance(value, Tensor):
        is_eligible = (value.is_floating_point() and value.device.type == device_type
                       and value.dtype is not dt.float64)
        return value.to(dtype) if is_eligible else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype)
                for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        iterable = (_cast(v, device_type, dtype) for v in value)
        return type(value)(iterable) if isinstance(value, (list, tuple)) else iterable
    return value


autocast_mode._cast = _cast
