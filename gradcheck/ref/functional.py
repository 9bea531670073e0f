"""``torch.functional``: the module torch's tensor-assembling functions live in (``einsum``,
``split``, ``norm``, ``meshgrid``, ...); the same functions as ``torch.*``."""
from __future__ import annotations

_NAMES = ("atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes",
          "broadcast_tensors", "cartesian_prod", "cdist", "einsum", "meshgrid", "norm", "split",
          "tensordot", "unique", "unique_consecutive", "unravel_index")


def install() -> None:
    import sys

    from gradcheck import ref

    this = sys.modules[__name__]
    for name in _NAMES:
        if hasattr(ref, name):
            setattr(this, name, getattr(ref, name))
