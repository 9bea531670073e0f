"""``torch.fx.immutable_collections``: the read-only list and dict a Node keeps its
arguments in, so a pass cannot edit them behind the graph's use lists."""
from __future__ import annotations

from typing import Any, NoReturn


def _refuse(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(f"'{type(self).__name__}' object does not support mutation. "
                    f"Use a copy (list(...) or dict(...)) and assign it back")


class immutable_list(list):  # noqa: N801 - torch's name
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))

    def __reduce__(self) -> tuple:
        return (immutable_list, (tuple(self),))


class immutable_dict(dict):  # noqa: N801 - torch's name
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self.items()))

    def __reduce__(self) -> tuple:
        return (immutable_dict, (tuple(self.items()),))
