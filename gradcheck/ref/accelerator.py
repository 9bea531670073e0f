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


NO_ACCELERATOR = "Cannot access accelerator device when none is available."


def set_device_index(device, /) -> None:
    """Select the accelerator ``device``; without one torch refuses, as here."""
    if not cuda_is_available():
        raise RuntimeError(NO_ACCELERATOR)
    from gradcheck.ref import cuda

    cuda.set_device(device)


def set_device_idx(device, /) -> None:
    import warnings

    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    set_device_index(device)


class device_index:  # noqa: N801 - torch's name
    """``with torch.accelerator.device_index(i):`` selects accelerator ``i`` for the block;
    ``None`` selects nothing."""

    def __init__(self, device, /) -> None:
        self.idx, self.prev_idx = device, -1

    def __enter__(self) -> None:
        if self.idx is not None:
            self.prev_idx = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc) -> None:
        if self.idx is not None:
            set_device_index(self.prev_idx)
