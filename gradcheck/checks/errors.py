"""GradcheckError: an exception raised by the user's code, with where the check was.

A raw exception from deep inside a check says nothing about which call of the user's function
failed. The checker therefore wraps every call of the function and of its backward: an
exception comes out as a ``GradcheckError`` chained to the original (``raise ... from``), and
its message names the function, the phase (the forward at the given inputs, the backward, a
fast-mode probe, a column of the numerical Jacobian, the Taylor test) and the input concerned
with its shape and dtype.

>>> err = GradcheckError("boom", function="f", phase="forward at the given inputs")
>>> err.function, err.phase
('f', 'forward at the given inputs')
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any


class GradcheckError(RuntimeError):
    """The user's function (or its backward) raised, or returned something unusable.

    ``function``, ``phase``, ``input``, ``shape`` and ``dtype`` say where; the original
    exception, if any, is ``__cause__``.
    """

    def __init__(self, message: str, *, function: str, phase: str, input: str | None = None,
                 shape: tuple[int, ...] | None = None, dtype: str | None = None):
        super().__init__(message)
        self.function = function
        self.phase = phase
        self.input = input
        self.shape = shape
        self.dtype = dtype


def function_name(fn: Any) -> str:
    """A readable name for the function under test: ``Cube.apply``, ``<lambda>``, ``sin``.

    >>> import math
    >>> function_name(math.sin)
    'sin'
    """
    owner = getattr(fn, "__self__", None)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if isinstance(owner, type) and name:
        return f"{owner.__qualname__}.{getattr(fn, '__name__', name)}"
    if name:
        return name
    return type(fn).__qualname__


def user_error(exc: BaseException, fn: Callable, phase: str, where: str,
               input: str | None = None, shape: tuple[int, ...] | None = None,
               dtype: str | None = None) -> GradcheckError:
    """The GradcheckError for ``exc`` raised by ``fn`` during ``phase``; ``where`` describes
    the input(s) involved in words."""
    name = function_name(fn)
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else "(no message)"
    message = (f"{name} raised {type(exc).__name__} during the {phase}, {where}: {first}"
               f"{_hint(exc, phase)}")
    return GradcheckError(message, function=name, phase=phase, input=input, shape=shape,
                          dtype=dtype)


def _hint(exc: BaseException, phase: str) -> str:
    """A fix for the mistakes that are common enough to recognise from the message."""
    text = str(exc)
    if "backward" in phase and ("got tuple" in text or "expected Variable" in text):
        return ("\n  fix: backward must return one tensor (or None) per input of forward, as a "
                "flat tuple; a tuple inside the tuple is not allowed")
    if "backward" in phase and "returned an incorrect number of gradients" in text:
        return "\n  fix: backward must return exactly one gradient (or None) per forward input"
    return ""
