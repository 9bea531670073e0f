"""The small torch-level helpers that training scripts call in passing: finfo/iinfo, thread and
determinism switches. They have no effect on a numpy engine."""
from __future__ import annotations

import numpy as np

from gradcheck.ref import dtypes as dt


class finfo:  # noqa: N801 - torch name
    """Machine limits of a float dtype, e.g. ``finfo(float32).eps``.

    >>> from gradcheck.ref import float32
    >>> finfo(float32).bits
    32
    """

    def __init__(self, type=None):  # noqa: A002 - torch's argument name
        kind = dt.as_dtype(type) if type is not None else dt.get_default_dtype()
        info = np.finfo(kind.to_real().np)  # a complex dtype's limits are its parts'

        self.bits, self.eps = info.bits, float(info.eps)
        self.max, self.min = float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.tiny)
        self.resolution = float(info.resolution)
        self.dtype = str(info.dtype)


class iinfo:  # noqa: N801 - torch name
    """Limits of an integer dtype, e.g. ``iinfo(int64).max``."""

    def __init__(self, type):  # noqa: A002
        info = np.iinfo(dt.as_dtype(type).np)
        self.bits, self.dtype = info.bits, str(info.dtype)
        self.max, self.min = int(info.max), int(info.min)


_threads = [1]


def set_num_threads(n: int) -> None:
    """Recorded only: numpy's BLAS picks its own thread count."""
    _threads[0] = int(n)


def get_num_threads() -> int:
    return _threads[0]


_deterministic = {"mode": False, "warn_only": False}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Recorded and answered back as torch does; every algorithm here is deterministic."""
    _deterministic.update(mode=bool(mode), warn_only=bool(warn_only))


def are_deterministic_algorithms_enabled() -> bool:
    return _deterministic["mode"]


def set_printoptions(**kwargs) -> None:
    """Accepted for compatibility; repr always uses torch's default options."""


inf, nan, pi, e = float("inf"), float("nan"), np.pi, np.e
newaxis = None
_matmul_precision = ["highest"]


def set_float32_matmul_precision(precision: str) -> None:
    """Recorded only: numpy's float32 products are always computed at full precision."""
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision {precision!r}: use 'highest', 'high' or "
                           "'medium'")
    _matmul_precision[0] = precision


def get_float32_matmul_precision() -> str:
    return _matmul_precision[0]


def set_default_tensor_type(t) -> None:
    """The deprecated switch: a float type becomes the default dtype (cuda types need a GPU)."""
    import warnings

    name = t if isinstance(t, str) else f"torch.{getattr(t, '__name__', t)}"
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    kinds = {"FloatTensor": dt.float32, "DoubleTensor": dt.float64, "HalfTensor": dt.float16,
             "BFloat16Tensor": dt.bfloat16}
    kind = name.rsplit(".", 1)[-1]
    if kind not in kinds:
        raise TypeError(f"only floating-point types are supported as the default type, got "
                        f"{name}")
    if ".cuda." in name:
        from gradcheck.ref.devices import cuda_is_available

        if not cuda_is_available():
            raise TypeError(f"type {name} not available. Torch not compiled with CUDA enabled.")
    dt.set_default_dtype(kinds[kind])


def typename(obj) -> str:
    """'torch.FloatTensor' for a tensor, the qualified class name otherwise."""
    from gradcheck.ref.tensors import Tensor

    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(type(obj), "__module__", "")
    name = type(obj).__qualname__
    return name if module in ("builtins", "") else f"{module}.{name}"


def _assert(condition, message) -> None:
    """``assert`` that tracers can see; here simply the check."""
    if type(condition) is not bool and hasattr(condition, "item"):
        condition = bool(condition)
    assert condition, message


def is_complex(input) -> bool:  # noqa: A002
    return False


def is_nonzero(input) -> bool:  # noqa: A002
    if input.numel() != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item() != 0)


def is_storage(obj) -> bool:
    from gradcheck.ref.storage import TypedStorage

    return isinstance(obj, TypedStorage)


def set_default_device(device) -> None:
    """Only the cpu can be the default device here (cuda tensors are made explicitly)."""
    if device is not None and str(device) != "cpu":
        raise NotImplementedError(f"torch.set_default_device({device!r}) is not available in "
                                  "gradcheck.ref: pass device= to each factory instead")


def manual_seed_all(seed: int) -> None:
    """Seeds the one generator there is (cuda tensors draw from it too)."""
    from gradcheck.ref.random import manual_seed

    manual_seed(seed)


class OutOfMemoryError(RuntimeError):
    """torch.OutOfMemoryError (raised by allocators; numpy raises MemoryError instead)."""


def clear_autocast_cache() -> None:
    """Autocast keeps no cast copies here."""


def is_autocast_cpu_enabled() -> bool:
    from gradcheck.ref.amp import is_autocast_enabled

    return is_autocast_enabled("cpu")


def get_device_module(device=None):
    """The module of a device type: ``torch.cuda`` for "cuda", ``torch.cpu`` for "cpu"."""
    import gradcheck.ref as torch

    kind = "cuda" if device is None else getattr(device, "type", str(device).split(":")[0])
    return getattr(torch, kind)
