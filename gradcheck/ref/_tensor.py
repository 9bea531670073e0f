"""``torch._tensor``: the module torch defines ``Tensor`` in (code imports it from here)."""
from gradcheck.ref.tensors import Tensor  # noqa: F401
