"""``torch._tensor``: the module torch defines ``Tensor`` in (code imports it from here), and
``_rebuild_from_type_v2``, the function torch's pickles of Tensor subclasses call."""
from __future__ import annotations

from typing import Any

from gradcheck.ref.tensors import Tensor  # noqa: F401


def _set_obj_state(obj: Any, state: Any) -> Any:
    """Put a pickled ``__dict__`` (and ``__slots__`` values) back on ``obj``."""
    dict_state, slots_state = state if isinstance(state, tuple) else (state, None)
    for name, value in (dict_state or {}).items():
        setattr(obj, name, value)
    for name, value in (slots_state or {}).items():
        setattr(obj, name, value)
    return obj


def _rebuild_from_type_v2(func: Any, new_type: type, args: tuple, state: Any) -> Any:
    """``func(*args)`` as an instance of ``new_type`` with the pickled ``state``."""
    rebuilt = func(*args)
    if type(rebuilt) is not new_type:
        rebuilt = rebuilt.as_subclass(new_type)
    # NOTE: only a __setstate__ of the subclass's own restores the state (torch's rule)
    if getattr(rebuilt.__class__, "__setstate__", None) is not getattr(Tensor, "__setstate__",
                                                                         None):
        rebuilt.__setstate__(state)
        return rebuilt
    return _set_obj_state(rebuilt, state)
