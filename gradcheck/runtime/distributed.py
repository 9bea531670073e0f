"""The little the guard needs from ``torch.distributed``: this process's rank, and its job's store.

Nothing here imports torch: a process that has not imported ``torch.distributed`` is not part of
a distributed job.

>>> rank() is None
True
"""
from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np


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


def job() -> tuple[Any, int, int] | None:
    """The store of the default process group (under a gradcheck prefix), this rank, world size.

    None outside a distributed job of more than one process. The prefix holds torchrun's restart
    count: its store outlives the workers of an elastic restart, so keys must not collide.
    """
    dist = _initialized()
    if dist is None or dist.get_world_size() < 2:
        return None
    store = sys.modules["torch.distributed.distributed_c10d"]._get_default_store()
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    prefixed = dist.PrefixStore(f"gradcheck/{restart}", store)
    return prefixed, dist.get_rank(), dist.get_world_size()


def averages_gradients(model: Any) -> bool:
    """``model`` is a ``DistributedDataParallel`` in a job of more than one process."""
    parallel = sys.modules.get("torch.nn.parallel")
    return rank() is not None and parallel is not None and isinstance(
        model, parallel.DistributedDataParallel
    )


def mean_over_ranks(arrays: list[np.ndarray]) -> list[np.ndarray]:
    """The element-wise mean of each array over all ranks (a collective: every rank calls it)."""
    import torch  # only reached inside a torch.distributed job

    flat = torch.from_numpy(np.concatenate([a.ravel() for a in arrays]).astype(np.float64))
    sys.modules["torch.distributed"].all_reduce(flat)
    flat /= sys.modules["torch.distributed"].get_world_size()
    sizes = np.cumsum([a.size for a in arrays])[:-1]
    return [part.reshape(a.shape) for part, a in zip(np.split(flat.numpy(), sizes), arrays)]
