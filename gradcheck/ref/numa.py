"""``torch.numa.binding``: the options ``torchrun --numa-binding`` takes to pin worker
processes to NUMA nodes (configuration data; the engine starts no workers)."""
from __future__ import annotations

import dataclasses
import enum
import types


class AffinityMode(str, enum.Enum):
    NODE = "node"
    SOCKET = "socket"
    EXCLUSIVE = "exclusive"
    CORE_COMPLEX = "core-complex"


@dataclasses.dataclass(frozen=True)
class NumaOptions:
    affinity_mode: AffinityMode
    should_fall_back_if_binding_fails: bool = False


binding = types.SimpleNamespace(AffinityMode=AffinityMode, NumaOptions=NumaOptions)
