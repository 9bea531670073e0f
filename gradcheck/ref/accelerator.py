"""``torch.accelerator``: the device-agnostic queries of torch >= 2.6. The engine's only
accelerator would be a CuPy GPU (``torch.cuda``), so these answer from there.

>>> import gradcheck.ref as torch
>>> device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else "cpu"
>>> str(device) in ("cpu", "cuda")
True
"""
from __future__ import annotations

from gradcheck.ref.devices import cuda_device_count, cuda_is_available, device


def is_available() -> bool:
    return cuda_is_available()


def current_accelerator(check_available: bool = False):
    """``device('cuda')`` when a GPU is usable, else None."""
    return device("cuda") if cuda_is_available() else None


def device_count() -> int:
    return cuda_device_count()


def current_device_index() -> int:
    return 0


current_device_idx = current_device_index


def synchronize(device=None) -> None:
    """Nothing runs asynchronously on the cpu."""
