"""The little the guard needs from ``torch.distributed``: this process's rank, and one report.

Nothing here imports torch: a process that has not imported ``torch.distributed`` is not part of
a distributed job.

>>> rank() is None
True
"""
from __future__ import annotations

import sys
from typing import Any

from gradcheck.runtime.findings import Tally


def _initialized() -> Any:
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return dist


def rank() -> int | None:
    """This process's rank in a job of more than one process, else None."""
    dist = _initialized()
    if dist is None or dist.get_world_size() < 2:
        return None
    return dist.get_rank()


def gather_tally(tally: Tally, collective: bool = True) -> Tally | None:
    """Every rank's findings, merged on rank 0; None on the other ranks.

    ``collective=False`` keeps each rank's own tally: after a rank raised, the others may never
    reach the gather, so waiting for them would hang.
    """
    dist = _initialized()
    if dist is None or dist.get_world_size() < 2 or not collective:
        return tally
    gathered: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, tally)
    if dist.get_rank() != 0:
        return None
    merged = Tally()
    for each in gathered:
        merged.merge(each)
    return merged
