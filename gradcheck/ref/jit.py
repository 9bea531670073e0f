"""``torch.jit``: TorchScript has no meaning for a numpy engine, so scripting and tracing
return the function or module unchanged. That is what a script needs: a scripted module
computes what the eager one computes, and ``is_scripting()`` is False in eager code, as here.

Saving and loading TorchScript archives would need a compiler, so ``save``/``load`` (and any
other name this module lacks) raise NotImplementedError naming the API when called.

>>> import gradcheck.ref as torch
>>> net = torch.jit.script(torch.nn.Linear(2, 1))
>>> type(net).__name__, torch.jit.is_scripting()
('Linear', False)
>>> class Block(torch.nn.Module):
...     width: torch.jit.Final[int]
...     @torch.jit.ignore
...     def describe(self):
...         return "eager"
>>> Block().describe()
'eager'
"""
from __future__ import annotations

import contextlib
import typing
from typing import Any

from gradcheck.ref.standins import identity_decorator, module_fallback, unsupported

_WHY = "there is no TorchScript compiler; run the eager module (script and trace return it)"
__getattr__ = module_fallback("torch.jit", _WHY)

Final = typing.Final
ignore = unused = export = interface = script_method = identity_decorator
from gradcheck.ref._jit_internal import _drop, _unwrap_optional  # noqa: E402,F401
_overload = _overload_method = identity_decorator
Error = RuntimeError


class TracerWarning(Warning):
    """torch warns with this class when a traced value may not generalise."""


class ScriptWarning(Warning):
    """torch's category for TorchScript warnings."""


def _script_types():
    from gradcheck.ref.nn.module import Module

    class ScriptModule(Module):
        """Nothing is ever scripted here, so no module is an instance of this class."""

    return ScriptModule


ScriptModule = RecursiveScriptModule = TracedModule = TopLevelTracedModule = _script_types()
ScriptFunction = unsupported("torch.jit.ScriptFunction", _WHY)
save = unsupported("torch.jit.save", "there are no TorchScript archives; use torch.save "
                   "(state_dict) instead")
load = unsupported("torch.jit.load", "there are no TorchScript archives; use torch.load "
                   "(state_dict) instead")


def script(obj: Any, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None,
           example_inputs: Any = None) -> Any:
    """Return ``obj`` (a function, class or module) unchanged: it runs eagerly."""
    return obj


def trace(func: Any, example_inputs: Any = None, *args: Any, **kwargs: Any) -> Any:
    """Return ``func`` unchanged; the eager function computes what the trace would replay."""
    return func


def trace_module(mod: Any, inputs: Any = None, *args: Any, **kwargs: Any) -> Any:
    return mod


def script_if_tracing(fn: Any) -> Any:
    return fn


def is_scripting() -> bool:
    return False


def is_tracing() -> bool:
    return False


def annotate(the_type: Any, the_value: Any) -> Any:
    """A type hint for the compiler; the value itself."""
    return the_value


def Attribute(value: Any, type: Any = None) -> Any:  # noqa: N802, A002 - torch's names
    return value


def freeze(mod: Any, preserved_attrs: Any = None, optimize_numerics: bool = True) -> Any:
    return mod


def optimize_for_inference(mod: Any, other_methods: Any = None) -> Any:
    return mod


class Future:
    """What ``fork`` returns: the call has already run, ``wait()`` hands back its result."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def wait(self) -> Any:
        return self._value


def fork(func: Any, *args: Any, **kwargs: Any) -> Future:
    """Run ``func`` now (there is no interpreter thread pool) and wrap its result."""
    return Future(func(*args, **kwargs))


def wait(future: Future) -> Any:
    return future.wait()


def isinstance(obj: Any, target_type: Any) -> bool:  # noqa: A001 - torch.jit.isinstance
    """Like ``builtins.isinstance``, also for ``List[int]``-style container hints."""
    import builtins

    origin = typing.get_origin(target_type)
    if origin is None:
        return builtins.isinstance(obj, target_type)
    if not builtins.isinstance(obj, origin):
        return False
    params = typing.get_args(target_type)
    if origin in (list, set) and params:
        return all(isinstance(item, params[0]) for item in obj)
    if origin is dict and params:
        return all(isinstance(k, params[0]) and isinstance(v, params[1]) for k, v in obj.items())
    if origin is tuple and params:
        return len(obj) == len(params) and all(map(isinstance, obj, params))
    return True


def set_fusion_strategy(strategy: Any) -> list:
    return []


def enable_onednn_fusion(enabled: bool) -> None:
    """No fuser here."""


def onednn_fusion_enabled() -> bool:
    return False


@contextlib.contextmanager
def optimized_execution(should_optimize: bool):
    yield


@contextlib.contextmanager
def fuser(name: str):
    yield


strict_fusion = contextlib.nullcontext


def _annotations_module():
    """``torch.jit.annotations``: the typing names TorchScript code imports from it."""
    import sys
    import types

    module = types.ModuleType(f"{__name__}.annotations", "torch.jit.annotations")
    for name in ("Any", "Dict", "List", "Optional", "Tuple", "Union", "Callable"):
        setattr(module, name, getattr(typing, name))
    for n in (1, 2, 3):
        setattr(module, f"BroadcastingList{n}", typing.List)
    sys.modules[module.__name__] = module
    return module


annotations = _annotations_module()
