"""``torch.fx._compatibility.compatibility``: the decorator torch marks its fx API with; it
adds torch's note on backward compatibility to the docstring and returns the object."""
from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import Any

_NOTES = {True: "\n\n.. note::\n    Backwards-compatibility for this API is guaranteed.\n",
          False: "\n\n.. warning::\n    This API is experimental and is *NOT* "
                 "backward-compatible.\n"}


def compatibility(is_backward_compatible: bool) -> Callable[[Any], Any]:
    def mark(fn: Any) -> Any:
        fn.__doc__ = textwrap.dedent(getattr(fn, "__doc__", None) or "") + _NOTES[
            bool(is_backward_compatible)]
        return fn

    return mark
