"""``torch.utils.data._utils.collate``: ``default_collate`` and ``default_convert``."""
from __future__ import annotations

from typing import Any

import numpy as np

from gradcheck.ref.utils.data.collate import default_collate  # noqa: F401


def default_convert(data: Any) -> Any:
    """numpy arrays and scalars become tensors, containers are converted item by item, the
    rest is left as it is (torch's rule for ``batch_size=None``)."""
    from gradcheck import ref as torch

    if isinstance(data, np.ndarray) and data.dtype.kind not in "OSUV":
        return torch.as_tensor(data)
    if isinstance(data, np.generic) and data.dtype.kind not in "OSUV":
        return torch.as_tensor(data)
    if isinstance(data, dict):
        return type(data)({k: default_convert(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(default_convert(v) for v in data)
    return data
