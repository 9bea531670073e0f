"""``torch.distributed._composable.fsdp``: the same ``fully_shard`` as
``torch.distributed.fsdp``."""
from gradcheck.ref.distributed.fully_shard import (  # noqa: F401
    CPUOffloadPolicy,
    FSDPModule,
    MixedPrecisionPolicy,
    OffloadPolicy,
    fully_shard,
    register_fsdp_forward_method,
)
