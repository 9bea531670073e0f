"""Placeholders for the parts of torch a numpy engine cannot be (compilers, tracers, devices).

Scripts import them at the top and call them rarely, so a placeholder imports cleanly and
fails only when used, with a ``NotImplementedError`` that names the API. A placeholder is a
class, so ``isinstance(x, torch.fx.GraphModule)`` is simply False and subclassing works; it is
creating an instance (or calling it as a function) that raises.

>>> Tracer = unsupported("torch.fx.Tracer", "there is no graph tracer")
>>> isinstance(object(), Tracer)
False
>>> Tracer()
Traceback (most recent call last):
...
NotImplementedError: torch.fx.Tracer is not available in gradcheck.ref: there is no graph tracer
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any


def unsupported(qualname: str, why: str) -> type:
    """A class named after ``qualname`` whose construction raises NotImplementedError."""

    def refuse(cls, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{qualname} is not available in gradcheck.ref: {why}")

    module, _, name = qualname.rpartition(".")
    return type(name, (), {"__new__": refuse, "__module__": module, "__qualname__": name,
                           "__doc__": f"Stand-in for ``{qualname}``: {why}.",
                           "gradcheck_standin": True})


def module_fallback(prefix: str, why: str) -> Callable[[str], type]:
    """A module ``__getattr__``: any public name becomes an ``unsupported`` placeholder.

    Private and dunder names still raise AttributeError, so ``hasattr`` probes by libraries
    (``__path__``, ``_is_fx_tracing_flag``) see an ordinary module.
    """

    def __getattr__(name: str) -> type:
        if name.startswith("_"):
            raise AttributeError(f"module '{prefix}' has no attribute '{name}'")
        return unsupported(f"{prefix}.{name}", why)

    return __getattr__


def identity_decorator(fn: Any = None, *args: Any, **kwargs: Any) -> Any:
    """``@deco`` and ``@deco(...)`` both return the function unchanged."""
    if callable(fn):
        return fn
    return lambda inner: inner
