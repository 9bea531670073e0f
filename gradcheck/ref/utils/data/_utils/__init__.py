"""``torch.utils.data._utils``: where older code imports ``default_collate`` from."""
from gradcheck.ref.utils.data._utils import collate  # noqa: F401

# seconds between a worker's checks that its parent is alive (torch's constant)
MP_STATUS_CHECK_INTERVAL = 5.0
