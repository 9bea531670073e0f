"""``torch.cuda``: availability checks backed by CuPy."""
from __future__ import annotations

from gradcheck.ref.devices import cuda_device_count, cuda_is_available


def is_available() -> bool:
    """True when CuPy is installed and sees a GPU.

    >>> isinstance(is_available(), bool)
    True
    """
    return cuda_is_available()


def device_count() -> int:
    return cuda_device_count()


def manual_seed(seed: int) -> None:
    """Seeds are per generator here; cuda tensors draw from the cpu generators."""


manual_seed_all = manual_seed


def synchronize() -> None:
    if cuda_is_available():
        import cupy

        cupy.cuda.Device().synchronize()
