"""``torch.distributed.tensor`` (and its older name ``torch.distributed._tensor``): DTensor,
its placements and tensor parallelism, over the engine's world of one process."""
from __future__ import annotations

import contextlib
import importlib
import sys

from gradcheck.ref.distributed.device_mesh import DeviceMesh, init_device_mesh  # noqa: F401
from gradcheck.ref.distributed.tensor import placement_types
from gradcheck.ref.distributed.tensor.api import (  # noqa: F401
    DTensor,
    distribute_module,
    distribute_tensor,
)
from gradcheck.ref.distributed.tensor.placement_types import (  # noqa: F401
    Partial,
    Placement,
    Replicate,
    Shard,
)


@contextlib.contextmanager
def implicit_replication():
    """Let plain tensors mix with DTensors as if replicated: over one rank they already do."""
    yield


def _alias_old_name() -> None:
    """``torch.distributed._tensor`` is the older home of the same objects."""
    this = sys.modules[__name__]
    parent = importlib.import_module("gradcheck.ref.distributed")
    old = f"{parent.__name__}._tensor"
    experimental = type(this)(f"{__name__}.experimental", "DTensor's experimental helpers")
    experimental.implicit_replication = implicit_replication
    sys.modules[experimental.__name__] = this.experimental = experimental
    for name, module in {"": this, ".api": this, ".placement_types": placement_types,
                         ".device_mesh": importlib.import_module(
                             "gradcheck.ref.distributed.device_mesh"),
                         ".experimental": experimental}.items():
        sys.modules.setdefault(old + name, module)
    this.api = this
    parallel = importlib.import_module(f"{__name__}.parallel")
    this.parallel = parallel
    parent._tensor = parent.tensor = this


_alias_old_name()
