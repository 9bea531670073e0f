"""Device backends for ``check_parity``: run a function forward and backward on one device.

A backend turns float64 numpy inputs into its framework's tensors on its device in a given
dtype, runs ``fn``, back-propagates a fixed random cotangent, and hands back float64 numpy
arrays. Built in: torch on ``cpu``/``cuda`` and the reference engine on ``cpu`` (numpy) and
``cuda`` (CuPy). ``register_device`` adds more; ``SimulatedDevice`` is a controllable second
device that runs on CPU, so parity logic can be tested where no GPU exists.

>>> get_backend("ref", "cpu").name
'cpu'
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from gradcheck.runtime.adapter import as_numpy

Result = tuple[np.ndarray, list[np.ndarray]]  # (flattened outputs, one gradient per input)


class DeviceUnavailable(RuntimeError):
    """The requested device cannot run here; ``reason`` says why in words."""

    def __init__(self, device: str, reason: str) -> None:
        super().__init__(f"device {device!r} is unavailable: {reason}")
        self.device = device
        self.reason = reason


class DeviceBackend:
    """One framework on one device. Subclasses implement ``_to_tensor`` and ``_backward``."""

    framework = "torch"

    def __init__(self, name: str) -> None:
        self.name = name

    def unavailable_reason(self) -> str | None:
        """``None`` when the device can run, else a sentence saying why not."""
        return None

    def flags(self) -> dict[str, Any]:
        """Numerics switches in effect (TF32, deterministic algorithms, ...)."""
        return {}

    def run(self, fn: Callable[..., Any], inputs: list[np.ndarray], dtype: str, seed: int) -> Result:
        """Forward ``fn(*inputs)`` in ``dtype``, then backward with a seeded cotangent."""
        tensors = [self._to_tensor(a, dtype, requires_grad=True) for a in inputs]
        output = fn(*tensors)
        if isinstance(output, (tuple, list)):
            raise TypeError("check_parity needs fn to return one tensor; stack several outputs")
        shape = tuple(output.shape)
        cotangent = np.random.default_rng(seed).standard_normal(shape)
        self._backward(output, self._to_tensor(cotangent, dtype, requires_grad=False))
        grads = [np.zeros(a.shape) if t.grad is None else as_numpy(t.grad).reshape(a.shape)
                 for a, t in zip(inputs, tensors)]
        return as_numpy(output).ravel(), grads

    def _to_tensor(self, array: np.ndarray, dtype: str, requires_grad: bool) -> Any:
        raise NotImplementedError

    def _backward(self, output: Any, cotangent: Any) -> None:
        output.backward(cotangent)


class TorchDevice(DeviceBackend):
    """PyTorch on ``cpu`` or ``cuda``."""

    def unavailable_reason(self) -> str | None:
        try:
            torch = importlib.import_module("torch")
        except ImportError:
            return "torch is not installed (pip install torch)"
        if self.name.startswith("cuda"):
            if torch.version.cuda is None:
                return f"torch {torch.__version__} was built without CUDA"
            if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
                return "no CUDA GPU is visible (check CUDA_VISIBLE_DEVICES and the driver)"
        return None

    def flags(self) -> dict[str, Any]:
        torch = importlib.import_module("torch")
        return {
            "torch.backends.cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "torch.backends.cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
            "torch.get_float32_matmul_precision()": torch.get_float32_matmul_precision(),
            "torch.are_deterministic_algorithms_enabled()":
                torch.are_deterministic_algorithms_enabled(),
        }

    def _to_tensor(self, array: np.ndarray, dtype: str, requires_grad: bool) -> Any:
        torch = importlib.import_module("torch")
        return torch.tensor(array, dtype=getattr(torch, dtype), device=self.name,
                            requires_grad=requires_grad)

    def run(self, fn: Callable[..., Any], inputs: list[np.ndarray], dtype: str, seed: int) -> Result:
        result = super().run(fn, inputs, dtype, seed)
        if self.name.startswith("cuda"):
            importlib.import_module("torch").cuda.synchronize()
        return result


class RefDevice(DeviceBackend):
    """The reference engine on ``cpu`` (numpy) or ``cuda`` (CuPy)."""

    framework = "ref"

    def unavailable_reason(self) -> str | None:
        if not self.name.startswith("cuda"):
            return None
        try:
            cupy = importlib.import_module("cupy")
        except ImportError:
            return "CuPy is not installed (pip install 'gradcheck[cuda]')"
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # noqa: BLE001 - CuPy's CUDARuntimeError has no stable import path
            return f"CuPy cannot reach a GPU ({type(exc).__name__}: {exc})"
        return None if count else "CuPy sees no CUDA GPU"

    def _to_tensor(self, array: np.ndarray, dtype: str, requires_grad: bool) -> Any:
        ref = importlib.import_module("gradcheck.ref")
        kwargs = {"dtype": getattr(ref, dtype), "requires_grad": requires_grad}
        if self.name != "cpu":
            kwargs["device"] = self.name
        return ref.tensor(array, **kwargs)


class SimulatedDevice(DeviceBackend):
    """A stand-in second device that runs on ``base`` and perturbs what it returns.

    ``output_error=(index, delta)`` adds ``delta`` to one flattened output element (a planted
    device-only bug); ``grad_error=(input, index, delta)`` does the same to one gradient;
    ``grad_noise`` adds fresh relative noise to every gradient on every run, like a
    nondeterministic atomic-add reduction. With none of them it is a faithful device.
    """

    def __init__(
        self,
        base: DeviceBackend | None = None,
        *,
        name: str = "sim",
        output_error: tuple[int, float] | None = None,
        grad_error: tuple[int, int, float] | None = None,
        grad_noise: float = 0.0,
    ) -> None:
        super().__init__(name)
        self.base = base or TorchDevice("cpu")
        self.framework = self.base.framework
        self.output_error = output_error
        self.grad_error = grad_error
        self.grad_noise = grad_noise
        self._noise = np.random.default_rng()

    def unavailable_reason(self) -> str | None:
        return self.base.unavailable_reason()

    def flags(self) -> dict[str, Any]:
        return self.base.flags()

    def run(self, fn: Callable[..., Any], inputs: list[np.ndarray], dtype: str, seed: int) -> Result:
        output, grads = self.base.run(fn, inputs, dtype, seed)
        output, grads = output.copy(), [g.copy() for g in grads]
        if self.output_error is not None:
            index, delta = self.output_error
            output[index] += delta
        if self.grad_error is not None:
            which, index, delta = self.grad_error
            grads[which].reshape(-1)[index] += delta
        if self.grad_noise:
            grads = [g * (1.0 + self.grad_noise * self._noise.standard_normal(g.shape))
                     for g in grads]
        return output, grads


_BACKENDS: dict[tuple[str, str], Callable[[], DeviceBackend]] = {}


def register_device(framework: str, name: str, factory: Callable[[], DeviceBackend]) -> None:
    """Make ``devices=(..., name)`` resolve to ``factory()`` for ``framework``."""
    _BACKENDS[(framework, name)] = factory


def unregister_device(framework: str, name: str) -> None:
    """Forget a device added with ``register_device``."""
    _BACKENDS.pop((framework, name), None)


def get_backend(framework: str, name: str | DeviceBackend) -> DeviceBackend:
    """The backend for ``name`` on ``framework``; a ``DeviceBackend`` passes through."""
    if isinstance(name, DeviceBackend):
        return name
    if (framework, name) in _BACKENDS:
        return _BACKENDS[(framework, name)]()
    builtin = {"torch": TorchDevice, "ref": RefDevice}.get(framework)
    if builtin is None:
        raise ValueError(f"framework must be 'torch' or 'ref', got {framework!r}")
    if name == "cpu" or name.startswith("cuda"):
        return builtin(name)
    known = sorted({n for f, n in _BACKENDS if f == framework} | {"cpu", "cuda"})
    raise ValueError(
        f"unknown device {name!r} for {framework}; known: {known} (add one with register_device)"
    )
