"""``torch._jit_internal``: the typing names TorchScript code imports from here (they are
``typing``'s), ``_overload`` (records a signature-only overload and returns it) and
``boolean_dispatch`` (one function that calls ``if_true`` or ``if_false`` by a flag).

>>> pick = boolean_dispatch("flag", 1, False, lambda x, flag=True: "on",
...                         lambda x, flag=False: "off", None, "pick")
>>> pick(0), pick(0, True), pick(0, flag=True)
('off', 'on', 'on')
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Dict, List, Optional, Tuple, Union  # noqa: F401, UP035

_overloaded_fns: dict[str, list] = {}
boolean_dispatched: dict = {}


def _qualified_name(func: Callable) -> str:
    return f"{func.__module__}.{func.__qualname__}"


def _overload(func: Callable) -> Callable:
    """Record ``func`` as one overload of its name (TorchScript reads them); return it."""
    _overloaded_fns.setdefault(_qualified_name(func), []).append(func)
    return func


def _get_overloads(func: Callable) -> list | None:
    return _overloaded_fns.get(_qualified_name(func))


def boolean_dispatch(arg_name: str, arg_index: int, default: bool, if_true: Callable,
                     if_false: Callable, module_name: str | None, func_name: str | None
                     ) -> Callable:
    """A function calling ``if_true`` or ``if_false`` by the boolean argument ``arg_name``
    (keyword, else position ``arg_index``, else ``default``)."""

    def fn(*args: Any, **kwargs: Any) -> Any:
        flag = kwargs[arg_name] if arg_name in kwargs else (
            args[arg_index] if arg_index < len(args) else default)
        return if_true(*args, **kwargs) if flag else if_false(*args, **kwargs)

    docs = [f.__doc__ for f in (if_true, if_false) if f.__doc__ is not None]
    if len(docs) == 2:
        raise RuntimeError("only one function can have a docstring")
    fn.__doc__ = if_true.__doc__ = if_false.__doc__ = docs[0] if docs else None
    if module_name is not None:
        fn.__module__ = module_name
    if func_name is not None:
        fn.__name__ = func_name
    boolean_dispatched[fn] = {"if_true": if_true, "if_false": if_false, "index": arg_index,
                              "default": default, "arg_name": arg_name}
    return fn


class FunctionModifiers:
    """How TorchScript treats a function (torch's labels, recorded by the decorators)."""

    UNUSED = "unused (ignored and replaced with raising of an exception)"
    IGNORE = "ignore (leave as a call to Python, cannot be torch.jit.save'd)"
    EXPORT = "export (compile this function even if nothing calls it)"
    DEFAULT = "default (compile if called from an exported function / forward)"
    COPY_TO_SCRIPT_WRAPPER = ("if this method is not scripted, copy the python method onto the "
                              "scripted model")
    _DROP = "_drop (function is fully ignored, declaration can be unscriptable)"


def _drop(fn: Callable) -> Callable:
    """Mark ``fn`` as left out of TorchScript; it runs as Python, as everything does here."""
    fn._torchscript_modifier = FunctionModifiers._DROP
    return fn


def _unwrap_optional(x: Any) -> Any:
    """``x``, which must not be None (TorchScript's refinement of an Optional)."""
    assert x is not None, "Unwrapping null optional"  # noqa: S101 - torch raises AssertionError
    return x
