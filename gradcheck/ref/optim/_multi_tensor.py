"""``torch.optim._multi_tensor``: each optimizer with ``foreach=True`` as its default. The
engine's updates are the same for every implementation flag, so only the default changes."""
from __future__ import annotations

import functools

from gradcheck.ref import optim


def partialclass(cls: type, *args, **kwargs) -> type:
    """A subclass of ``cls`` whose ``__init__`` has some arguments bound (torch's helper)."""

    class NewCls(cls):
        __init__ = functools.partialmethod(cls.__init__, *args, **kwargs)

    return NewCls


Adam = partialclass(optim.Adam, foreach=True)
AdamW = partialclass(optim.AdamW, foreach=True)
NAdam = partialclass(optim.NAdam, foreach=True)
SGD = partialclass(optim.SGD, foreach=True)
RAdam = partialclass(optim.RAdam, foreach=True)
RMSprop = partialclass(optim.RMSprop, foreach=True)
Rprop = partialclass(optim.Rprop, foreach=True)
ASGD = partialclass(optim.ASGD, foreach=True)
Adamax = partialclass(optim.Adamax, foreach=True)
Adadelta = partialclass(optim.Adadelta, foreach=True)
Adagrad = partialclass(optim.Adagrad, foreach=True)
