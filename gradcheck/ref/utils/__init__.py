"""`gradcheck.ref.utils`: the torch.utils subset the reference engine provides."""
from gradcheck.ref.utils import data

__all__ = ["data"]
