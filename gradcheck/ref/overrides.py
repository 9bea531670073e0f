"""``torch.overrides``: the ``__torch_function__`` protocol's helpers for functions written in
Python. ``has_torch_function(args)`` says whether any argument's type implements
``__torch_function__``; ``handle_torch_function`` then asks those types, subclasses before
their bases and otherwise left to right, until one returns something other than
``NotImplemented``.

The engine's own functions do not dispatch through the protocol, and a plain subclass of
``Tensor`` does not implement it here (in torch every subclass inherits a default), so for it
``has_torch_function`` is False and the function runs as for a tensor.

>>> class Logged:
...     @classmethod
...     def __torch_function__(cls, func, types, args=(), kwargs=None):
...         return f"{func.__name__} handled by {cls.__name__}"
>>> def scale(x, by):
...     if has_torch_function((x,)):
...         return handle_torch_function(scale, (x,), x, by)
...     return x * by
>>> scale(Logged(), 2), scale(3, 2)
('scale handled by Logged', 6)
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any


def _implements(kind: type) -> bool:
    from gradcheck.ref._C import _disabled_torch_function_impl

    method = getattr(kind, "__torch_function__", None)
    return method is not None and method is not _disabled_torch_function_impl


def has_torch_function(relevant_args: Iterable[Any]) -> bool:
    return any(_implements(type(arg)) for arg in relevant_args)


def has_torch_function_unary(arg: Any) -> bool:
    return _implements(type(arg))


def has_torch_function_variadic(*args: Any) -> bool:
    return has_torch_function(args)


def is_tensor_like(inp: Any) -> bool:
    from gradcheck.ref.tensors import Tensor

    return isinstance(inp, Tensor) or _implements(type(inp))


def _get_overloaded_args(relevant_args: Iterable[Any]) -> list:
    """One argument per overriding type, subclasses ahead of their bases."""
    chosen: list = []
    for arg in relevant_args:
        kind = type(arg)
        if not _implements(kind) or any(type(c) is kind for c in chosen):
            continue
        position = next((i for i, c in enumerate(chosen) if issubclass(kind, type(c))),
                        len(chosen))
        chosen.insert(position, arg)
    return chosen


def handle_torch_function(public_api: Callable, relevant_args: Iterable[Any], *args: Any,
                          **kwargs: Any) -> Any:
    """Call ``__torch_function__`` of the overriding arguments' types in torch's order."""
    overloaded = _get_overloaded_args(relevant_args)
    types = tuple(type(arg) for arg in overloaded)
    for arg in overloaded:
        result = type(arg).__torch_function__(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    name = f"{public_api.__module__}.{public_api.__name__}"
    raise TypeError(f"no implementation found for '{name}' on types that implement "
                    f"__torch_function__: {[type(arg) for arg in overloaded]}")
