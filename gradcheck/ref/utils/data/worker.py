"""``get_worker_info``: None in the main process, which is where the engine's DataLoader
always loads (so a dataset's per-worker sharding code takes its single-process branch).

>>> get_worker_info() is None
True
"""
from __future__ import annotations


def get_worker_info() -> None:
    return None
