"""Devices: "cpu" runs on numpy, "cuda" on CuPy. The array module is chosen per tensor."""
from __future__ import annotations

import numpy as np


class device:  # noqa: N801 - named like torch.device
    """A torch-style device, e.g. ``device("cpu")`` or ``device("cuda", 0)``.

    >>> device("cpu")
    device(type='cpu')
    """

    __slots__ = ("type", "index")

    def __init__(self, type: str | "device", index: int | None = None):  # noqa: A002
        if isinstance(type, device):
            type, index = type.type, type.index
        type = str(type)
        if ":" in type:
            type, _, idx = type.partition(":")
            index = int(idx)
        if type not in ("cpu", "cuda"):
            raise RuntimeError(
                f"Expected one of cpu, cuda device type at start of device string: {type}"
            )
        self.type = type
        self.index = index

    def __repr__(self) -> str:
        idx = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{idx})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))


CPU = device("cpu")


def as_device(value) -> device:
    """Normalise ``None``, a string or a device into a device (None means cpu)."""
    if value is None:
        return CPU
    if isinstance(value, device):
        return value
    if isinstance(value, int):
        return device("cuda", value)
    return device(value)


def _cupy():
    """Import CuPy and check a GPU is visible; the error says which of the two is missing."""
    try:
        import cupy
    except ImportError:
        raise RuntimeError(
            "device 'cuda' needs CuPy, which is not installed: install it with "
            "`pip install gradcheck[cuda]` (or cupy-cuda12x), or use device='cpu'."
        ) from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception:  # CuPy raises its own CUDARuntimeError when no driver is present
        count = 0
    if count == 0:
        raise RuntimeError(
            "device 'cuda' needs a visible GPU: CuPy is installed but no CUDA device was found "
            "(check the driver and CUDA_VISIBLE_DEVICES), or use device='cpu'."
        )
    return cupy


def array_module(dev: device):
    """The array library behind ``dev``: numpy for cpu, cupy for cuda.

    >>> array_module(CPU).__name__
    'numpy'
    """
    if dev.type == "cpu":
        return np
    return _cupy()


def is_cupy(value) -> bool:
    """Whether ``value`` is a CuPy array (or scalar), told without importing CuPy."""
    return type(value).__module__.startswith("cupy")


def module_of(array):
    """The array library that owns ``array`` (numpy unless it is a CuPy array)."""
    if is_cupy(array):
        import cupy

        return cupy
    return np


def as_array(value, dtype=None):
    """``value`` as an array of its own library: a CuPy array stays one (``np.asarray`` of it
    raises), anything else goes through ``np.asarray`` (a numpy scalar becomes a 0-d array)."""
    if is_cupy(value):
        return value if dtype is None else value.astype(dtype, copy=False)
    return np.asarray(value, dtype=dtype)


def device_of(array) -> device:
    if is_cupy(array):
        return device("cuda", int(array.device.id))
    return CPU


def to_device(array, dev: device):
    """Copy ``array`` to ``dev`` (no copy if it is already there)."""
    if dev.type == "cpu":
        if module_of(array) is np:
            return array
        return array.get()
    cp = _cupy()
    with cp.cuda.Device(dev.index or 0):
        return cp.asarray(array)


def cuda_is_available() -> bool:
    """True when CuPy is importable and sees at least one GPU (``torch.cuda.is_available``)."""
    try:
        _cupy()
    except RuntimeError:
        return False
    return True


def cuda_device_count() -> int:
    if not cuda_is_available():
        return 0
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())
