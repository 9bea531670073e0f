"""``torch.utils.dlpack``: tensors exchanged with other array libraries (numpy, CuPy, JAX,
torch itself) without copying, through the DLPack protocol. ``to_dlpack(t)`` gives a
capsule; ``from_dlpack`` takes a capsule or any object with ``__dlpack__``; engine tensors
have ``__dlpack__`` too, so ``torch.from_dlpack(engine_tensor)`` works the other way.

>>> import numpy as np
>>> shared = from_dlpack(np.arange(3.0))
>>> shared
tensor([0., 1., 2.], dtype=torch.float64)
"""
from __future__ import annotations

from typing import Any

import numpy as np

_CPU = 1  # DLPack's device type code for the cpu


class _Capsule:
    """A bare DLPack capsule dressed as a producer, so numpy can consume it."""

    def __init__(self, capsule: Any) -> None:
        self.capsule = capsule

    def __dlpack__(self, stream: Any = None, **kwargs: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_CPU, 0)


def from_dlpack(ext_tensor: Any) -> Any:
    """A tensor sharing memory with ``ext_tensor`` (a DLPack producer or capsule)."""
    from gradcheck.ref.tensors import _make

    producer = ext_tensor if hasattr(ext_tensor, "__dlpack__") else _Capsule(ext_tensor)
    array = np.from_dlpack(producer)
    if array.flags.writeable:
        return _make(array)
    # NOTE: numpy marks arrays from an unversioned capsule (torch's to_dlpack) read-only as it
    # cannot know; torch treats the memory as writable, so alias it writably and keep the
    # imported array (which owns the capsule) alive with the tensor.
    tensor = _make(_writable_alias(array))
    tensor._dlpack_owner = array
    return tensor


def _writable_alias(array: np.ndarray) -> np.ndarray:
    """A writable ndarray over the same memory (same shape, dtype and strides)."""
    import ctypes

    if array.size == 0:
        return np.empty(array.shape, array.dtype)
    reach = [(n - 1) * s for n, s in zip(array.shape, array.strides)]
    low = sum(r for r in reach if r < 0)
    high = sum(r for r in reach if r > 0) + array.itemsize
    start = array.__array_interface__["data"][0] + low
    buffer = (ctypes.c_char * (high - low)).from_address(start)
    return np.ndarray(array.shape, array.dtype, buffer=buffer, offset=-low,
                      strides=array.strides)


def to_dlpack(tensor: Any) -> Any:
    """A DLPack capsule over ``tensor``'s memory (consumable once)."""
    return tensor._data.__dlpack__()


def attach() -> None:
    from gradcheck.ref.tensors import Tensor

    Tensor.__dlpack__ = lambda self, stream=None, **kwargs: self._data.__dlpack__()
    Tensor.__dlpack_device__ = lambda self: (_CPU, 0)
