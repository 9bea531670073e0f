"""``nn.parallel`` / ``nn.DataParallel`` stand-ins: with one numpy device there is nothing to
split, so the wrapper runs its module directly (and exposes it as ``.module``, as torch does).

Example:
    >>> import gradcheck.ref as torch
    >>> net = DataParallel(torch.nn.Linear(2, 1))
    >>> net(torch.ones(3, 2)).shape, type(net.module).__name__
    (torch.Size([3, 1]), 'Linear')
"""
from __future__ import annotations

from typing import Any

from gradcheck.ref.nn.module import Module


class DataParallel(Module):
    """Runs ``module`` on the only device; ``device_ids`` and friends are accepted and unused."""

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None,
                 dim: int = 0, **kwargs: Any) -> None:
        super().__init__()
        self.module = module

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)


DistributedDataParallel = DataParallel
