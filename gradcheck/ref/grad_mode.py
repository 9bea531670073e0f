"""The global grad-mode switch: no_grad, enable_grad, set_grad_enabled (contexts and decorators)."""
from __future__ import annotations

import functools

# A one-element list so that every module reads the same switch without a global statement.
_enabled = [True]
_inference = [False]  # inside inference_mode(): new tensors are inference tensors


def is_grad_enabled() -> bool:
    """True when new operations record a graph.

    >>> is_grad_enabled()
    True
    """
    return _enabled[0]


class _GradMode:
    """Base for the grad-mode context managers; each one is also a decorator."""

    _target = True

    def __enter__(self):
        self._prev = _enabled[0]
        _enabled[0] = self._target
        return self

    def __exit__(self, *exc):
        _enabled[0] = self._prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self._fresh():  # a new object per call: calls may nest or recurse
                return fn(*args, **kwargs)

        return wrapper

    def _fresh(self) -> _GradMode:
        return self.__class__()


class no_grad(_GradMode):  # noqa: N801 - torch name
    """Run without recording a graph, e.g. ``with no_grad(): w -= lr * w.grad``.

    >>> from gradcheck.ref import tensor
    >>> x = tensor([1.0], requires_grad=True)
    >>> with no_grad():
    ...     (x * 2).requires_grad
    False
    """

    _target = False


class enable_grad(_GradMode):  # noqa: N801 - torch name
    """Record a graph again inside a ``no_grad`` block.

    >>> with no_grad():
    ...     with enable_grad():
    ...         is_grad_enabled()
    True
    """

    _target = True


class set_grad_enabled(_GradMode):  # noqa: N801 - torch name
    """Switch grad mode on or off; works as a call, a context manager or a decorator.

    >>> with set_grad_enabled(False):
    ...     is_grad_enabled()
    False
    """

    def __init__(self, mode: bool):
        self._target = bool(mode)
        self._prev = _enabled[0]
        _enabled[0] = self._target  # torch applies the mode at construction time

    def __enter__(self):
        return self

    def __call__(self, fn):
        _enabled[0] = self._prev
        target = self._target

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(target):
                return fn(*args, **kwargs)

        return wrapper


class inference_mode(_GradMode):  # noqa: N801 - torch name
    """``no_grad`` whose new tensors are inference tensors (``is_inference()``): outside the
    mode they cannot be edited in place, require grad, or be saved for backward, with torch's
    errors. As in torch, ``inference_mode(False)`` turns grad mode on, and a bare
    ``@inference_mode`` works.

    >>> with inference_mode():
    ...     is_grad_enabled()
    False
    >>> with no_grad(), inference_mode(False):
    ...     is_grad_enabled()
    True
    """

    def __new__(cls, mode=True):
        if callable(mode):  # used as a bare decorator
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True):
        self._target = not mode

    def __enter__(self):
        self._prev_inference = _inference[0]
        _inference[0] = not self._target
        return super().__enter__()

    def __exit__(self, *exc):
        _inference[0] = self._prev_inference
        return super().__exit__(*exc)

    def _fresh(self) -> inference_mode:
        return inference_mode(not self._target)


class set_multithreading_enabled:  # noqa: N801 - torch name
    """torch's switch for running backward on several threads; the engine's backward is one
    thread either way, so gradients do not depend on it. A context manager or decorator.

    >>> with set_multithreading_enabled(False):
    ...     is_grad_enabled()
    True
    """

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> bool:
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return wrapper
