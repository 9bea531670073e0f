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


def add_hook(hooks: dict, hook: object) -> RemovableHandle:
    """Store `hook` in `hooks` under a fresh id; the handle removes it again.

    Example:
        >>> hooks = {}
        >>> handle = add_hook(hooks, print); list(hooks.values())
        [<built-in function print>]
        >>> handle.remove(); hooks
        {}
    """
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle
