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
        info = np.finfo((dt.as_dtype(type) if type is not None else dt.get_default_dtype()).np)
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


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Everything here is deterministic already."""


def are_deterministic_algorithms_enabled() -> bool:
    return True


def set_printoptions(**kwargs) -> None:
    """Accepted for compatibility; repr always uses torch's default options."""
