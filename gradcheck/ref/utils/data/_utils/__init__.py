"""``torch.utils.data._utils``: where older code imports ``default_collate`` from."""
from gradcheck.ref.utils.data._utils import collate  # noqa: F401
