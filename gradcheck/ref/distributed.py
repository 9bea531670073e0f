"""``torch.distributed``: importable, and ``is_available()`` is False, so scripts that guard
their distributed code with it (or with ``is_initialized()``) take the single-process path.

>>> import gradcheck.ref as torch
>>> torch.distributed.is_available(), torch.distributed.is_initialized()
(False, False)
"""
from __future__ import annotations


def is_available() -> bool:
    return False


def is_initialized() -> bool:
    return False


def get_rank(group=None) -> int:
    return 0


def get_world_size(group=None) -> int:
    return 1


def init_process_group(*args, **kwargs) -> None:
    raise RuntimeError("torch.distributed is not available in gradcheck.ref; run the script "
                       "in a single process (world size 1)")


def barrier(*args, **kwargs) -> None:
    """A single process has nobody to wait for."""
