"""``nn.parallel`` / ``nn.DataParallel`` stand-ins: with one numpy device there is nothing to
split, so the wrapper runs its module directly (and exposes it as ``.module``, as torch does).
``DistributedDataParallel`` needs an initialized process group, as in torch; with the one
process the engine runs, averaging gradients over ranks leaves them as they are.

Example:
    >>> import gradcheck.ref as torch
    >>> net = DataParallel(torch.nn.Linear(2, 1))
    >>> net(torch.ones(3, 2)).shape, type(net.module).__name__
    (torch.Size([3, 1]), 'Linear')
"""
from __future__ import annotations

import contextlib
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


class DistributedDataParallel(Module):
    """Runs ``module`` as the only rank; ``no_sync()`` is accepted (there is nothing to sync)."""

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None,
                 dim: int = 0, **kwargs: Any) -> None:
        from gradcheck.ref import distributed

        if not distributed.is_initialized():
            raise ValueError(distributed.NOT_INITIALIZED)
        super().__init__()
        self.module = module

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        yield
