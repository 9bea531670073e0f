"""``torch.distributed.distributed_c10d``: the process-group internals code imports directly,
answered for the one group of one process (``_pg_map`` holds it while it exists)."""
from __future__ import annotations

import warnings
from typing import Any

from gradcheck.ref.distributed import (  # noqa: F401
    Backend,
    GroupMember,
    ProcessGroup,
    _get_default_group,
    _require_group,
    _state,
    all_gather,
    all_gather_object,
    destroy_process_group,
    get_global_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    init_process_group,
    is_initialized,
)
from gradcheck.ref.distributed.store import PrefixStore  # noqa: F401

_pg_map: dict = _state.setdefault("pg_map", {})


def _get_global_rank(group: Any, rank: int) -> int:
    warnings.warn("`torch.distributed.distributed_c10d._get_global_rank` is deprecated, please "
                  "use `torch.distributed.distributed_c10d.get_global_rank` instead",
                  FutureWarning, stacklevel=2)
    return get_global_rank(group, rank)


def _get_pg_default_device(group: Any = None) -> Any:
    """The device object collectives of the group use: cpu, the only one here."""
    from gradcheck import ref

    warnings.warn("`_get_pg_default_device` will be deprecated, it only stays for "
                  "backward-compatibility reason. If you need to find a device for object "
                  "collectives, please use `_get_object_coll_device`. If you need to query the "
                  "device types supported by group, please use `_device_capability(group)`. ",
                  UserWarning, stacklevel=2)
    _require_group()
    return ref.device("cpu")


def _rank_not_in_group(group: Any) -> bool:
    """Whether this process is outside ``group`` (only the non-member marker says so)."""
    return group is not None and group == GroupMember.NON_GROUP_MEMBER


def is_xccl_available() -> bool:
    return False
