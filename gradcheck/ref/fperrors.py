"""Floating-point error state: the engine's kernels run with numpy's fp warnings off.

torch computes ``inf * 0`` or ``log(0)`` silently; numpy warns ("invalid value encountered in
multiply"). The engine silences those warnings around its own numeric kernels only: the
user's global numpy error state (``np.seterr``) is never changed.

``token = ignore()`` silences fp warnings in the current context; ``restore(token)`` undoes it.

>>> import numpy as np
>>> token = ignore(); value = np.float64(0.0) / 0.0; restore(token)
>>> bool(np.isnan(value))
True

NOTE: ``with np.errstate(all="ignore")`` costs ~1.5 us, more than a whole tiny op. On numpy 2
the error state lives in a context variable, so setting and resetting that variable directly
(~0.1 us, C calls only: no Python frame) does the same job; older numpy falls back to
``np.errstate``.
"""
from __future__ import annotations

import functools

import numpy as np

try:  # numpy >= 2.0
    from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj

    ignore = functools.partial(_extobj_contextvar.set, _make_extobj(all="ignore"))
    restore = _extobj_contextvar.reset
except (ImportError, AttributeError, TypeError):  # pragma: no cover - numpy 1.x

    def ignore():
        """Silence fp warnings in this context; returns the token that ``restore`` takes."""
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def restore(token) -> None:
        """Undo the matching ``ignore()``."""
        token.__exit__(None, None, None)
