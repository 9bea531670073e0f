"""`RemovableHandle`: what every hook registration returns (torch.utils.hooks' counterpart)."""
from __future__ import annotations

import itertools


class RemovableHandle:
    """Unregisters one hook from the dict it was stored in; usable as a context manager.

    Example:
        >>> hooks = {}
        >>> handle = RemovableHandle(hooks); hooks[handle.id] = print
        >>> handle.remove(); hooks
        {}
    """

    _ids = itertools.count()

    def __init__(self, hooks: dict) -> None:
        self._hooks = hooks
        self.id = next(RemovableHandle._ids)

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()
