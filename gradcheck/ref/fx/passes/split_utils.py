"""``torch.fx.passes.split_utils``: ``getattr_recursive`` follows a dotted name through
attributes (and a ModuleList's numbered children), None where the path ends.

>>> import gradcheck.ref as torch
>>> net = torch.nn.Sequential(torch.nn.ModuleList([torch.nn.Linear(2, 3)]))
>>> getattr_recursive(net, "0.0.weight").shape, getattr_recursive(net, "0.5")
(torch.Size([3, 2]), None)
"""
from __future__ import annotations

from typing import Any


def getattr_recursive(obj: Any, name: str) -> Any:
    from gradcheck.ref.nn import ModuleList

    for part in name.split("."):
        if isinstance(obj, ModuleList):
            if part not in getattr(obj, "_modules", {}):
                return None
            obj = obj._modules[part]
        elif hasattr(obj, part):
            obj = getattr(obj, part)
        else:
            return None
    return obj
