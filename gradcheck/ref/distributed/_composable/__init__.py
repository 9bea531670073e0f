"""``torch.distributed._composable``: FSDP2's older home (``_composable.fsdp``)."""
from gradcheck.ref.distributed._composable import fsdp  # noqa: F401
