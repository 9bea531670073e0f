"""``torch.distributed.utils``: the helper DDP and FSDP call to start every rank from rank
``src``'s parameters and buffers; with one rank they are already that rank's."""
from __future__ import annotations

from typing import Any


def _sync_module_states(module: Any, process_group: Any, broadcast_bucket_size: int, src: int,
                        params_and_buffers_to_ignore: Any, broadcast_buffers: bool = True) -> None:
    """Broadcast ``module``'s state from ``src``: nothing moves over one rank."""
    from gradcheck.ref.distributed import _require_group

    _require_group()
