"""``torch.fx._symbolic_trace``: the Tracer, ``symbolic_trace`` and ``wrap``.

Tracing runs the module's ``forward`` once with Proxy inputs. torch intercepts calls on
proxies through ``__torch_function__``; the engine's functions do not dispatch, so while a
trace runs the tracer swaps each public function of the engine's namespaces (``torch``,
``torch.nn.functional``, ``torch.special``, ``torch.linalg``), the names a traced
``forward`` imported from them, and the functions given to ``wrap``, for versions that
record a ``call_function`` node when a Proxy is among their arguments. Everything is put
back when the trace ends, even on an error.

What a leaf is follows torch's default Tracer: a module from ``torch.nn`` (here the engine's
``nn``), except ``Sequential``, is recorded as one ``call_module``; any other module is
traced through. Parameters read in a traced ``forward`` become ``get_attr`` nodes.
"""
from __future__ import annotations

import functools
import importlib
import inspect
import math
import operator
from collections.abc import Callable
from typing import Any

from gradcheck.ref.fx.functional_calls import torch_layout
from gradcheck.ref.fx.graph import Graph, magic_methods, reflectable_magic_methods
from gradcheck.ref.fx.node import NAMESPACES, map_aggregate
from gradcheck.ref.fx.proxy import Proxy, TracerBase

_is_fx_tracing_flag = False
_wrapped_globals: list[tuple[dict, str]] = []
# functions torch does not trace through __torch_function__ (they answer about the object)
_NOT_TRACED = frozenset({"is_tensor", "is_storage", "typename", "compile", "vmap",
                         "compare_with_torch", "save", "load", "manual_seed"})


def is_fx_tracing() -> bool:
    """Whether a symbolic trace is running now."""
    return _is_fx_tracing_flag


def wrap(fn_or_name: Any) -> Any:
    """Keep a module-level function out of traces: calls with a Proxy argument become one
    ``call_function`` node. Call at the top level of the module defining the function."""
    frame = inspect.currentframe().f_back
    if frame.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    name = fn_or_name if isinstance(fn_or_name, str) else fn_or_name.__name__
    _wrapped_globals.append((frame.f_globals, name))
    return fn_or_name


def _has_proxy(args: tuple, kwargs: dict) -> Proxy | None:
    found: list[Proxy] = []
    map_aggregate((args, kwargs), lambda x: found.append(x) if isinstance(x, Proxy) else None)
    return found[0] if found else None


def _recording(fn: Callable, functional: bool = False) -> Callable:
    """``fn``, recorded as a call_function node whenever a Proxy is among its arguments
    (a ``torch.nn.functional`` call with the argument layout torch records)."""

    @functools.wraps(fn)
    def recorded(*args: Any, **kwargs: Any) -> Any:
        proxy = _has_proxy(args, kwargs)
        if proxy is None:
            return fn(*args, **kwargs)
        if functional:
            args, kwargs = torch_layout(fn, args, kwargs)
        return proxy.tracer.create_proxy("call_function", fn, args, kwargs)

    recorded._fx_original = fn
    return recorded


@functools.lru_cache(maxsize=1)
def _traceable_functions() -> tuple:
    """(namespace module, name, function) for every public engine function."""
    found = []
    for module_name, _ in NAMESPACES:
        module = importlib.import_module(module_name)
        for name, value in vars(module).items():
            if (inspect.isfunction(value) or inspect.isbuiltin(value)) and \
                    not name.startswith("__") and name not in _NOT_TRACED:
                found.append((module, name, value))
    return tuple(found)


class _Patcher:
    """Swaps attributes and globals for the length of a trace, and puts them back."""

    def __init__(self) -> None:
        self._saved: list[tuple[Callable[[Any], None], Any]] = []
        self._seen: set[tuple[int, str]] = set()

    def set_attr(self, owner: Any, name: str, value: Any) -> None:
        if name in vars(owner):
            self._saved.append((functools.partial(setattr, owner, name), vars(owner)[name]))
        else:  # inherited: removing the patch uncovers the inherited one again
            self._saved.append((lambda _: delattr(owner, name), None))
        setattr(owner, name, value)

    def set_global(self, space: dict, name: str, value: Any) -> None:
        if (id(space), name) in self._seen:
            return
        self._seen.add((id(space), name))
        self._saved.append((functools.partial(space.__setitem__, name), space[name]))
        space[name] = value

    def restore(self) -> None:
        for put_back, original in reversed(self._saved):
            put_back(original)
        self._saved.clear()


class Tracer(TracerBase):
    """Records a module's or function's computation as a Graph."""

    def __init__(self, autowrap_modules: tuple = (math,), autowrap_functions: tuple = (),
                 param_shapes_constant: bool = False) -> None:
        self._autowrap_modules = tuple(autowrap_modules)
        self._autowrap = {id(v): v for m in autowrap_modules for k, v in vars(m).items()
                          if callable(v) and not k.startswith("_")}
        self._autowrap.update({id(f): f for f in autowrap_functions})
        self.param_shapes_constant = param_shapes_constant
        self.root: Any = None
        self.graph: Graph | None = None

    # -- torch's overridable hooks -----------------------------------------------------------
    def is_leaf_module(self, m: Any, module_qualified_name: str) -> bool:
        from gradcheck import ref

        home = type(m).__module__.replace("gradcheck.ref", "torch", 1)
        return home.startswith(("torch.nn", "torch.ao.nn")) and not isinstance(
            m, ref.nn.Sequential)

    def path_of_module(self, mod: Any) -> str:
        path = self._module_paths.get(id(mod))
        if path is None:
            raise NameError("module is not installed as a submodule")
        return path

    def call_module(self, m: Any, forward: Callable, args: tuple, kwargs: dict) -> Any:
        path = self.path_of_module(m)
        if not self.is_leaf_module(m, path):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", path, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict) -> Any:
        from gradcheck import ref

        if isinstance(attr_val, ref.nn.Parameter):
            name = self._tensor_names.get(id(attr_val))
            if name is not None:
                if name not in parameter_proxy_cache:
                    parameter_proxy_cache[name] = self.create_proxy("get_attr", name, (), {})
                return parameter_proxy_cache[name]
        return attr_val

    def create_arg(self, a: Any) -> Any:
        from gradcheck import ref

        if isinstance(a, ref.Tensor):
            return self._tensor_node(a)
        return super().create_arg(a)

    def _tensor_node(self, tensor: Any) -> Any:
        """A tensor met in a trace is read from the root: a parameter or buffer by its own
        name, any other tensor as a new ``_tensor_constant<n>`` attribute (as torch does)."""
        name = self._tensor_names.get(id(tensor))
        if name is None:
            name = f"_tensor_constant{self._constants}"
            self._constants += 1
            setattr(self.root, name, tensor)
            self._tensor_names[id(tensor)] = name
        return self.create_node("get_attr", name, (), {})

    # -- tracing -----------------------------------------------------------------------------
    def trace(self, root: Any, concrete_args: dict | None = None) -> Graph:
        from gradcheck import ref

        is_module = isinstance(root, ref.nn.Module)
        self.root = root if is_module else ref.nn.Module()
        fn = type(root).forward if is_module else root
        self.graph = Graph(tracer_cls=type(self))
        self._module_paths = {id(m): name for name, m in self.root.named_modules()}
        self._tensor_names = {id(t): name for name, t in [*self.root.named_parameters(),
                                                          *self.root.named_buffers()]}
        self._constants = 0
        patcher = _Patcher()
        global _is_fx_tracing_flag
        previous, _is_fx_tracing_flag = _is_fx_tracing_flag, True
        try:
            self._patch(patcher, fn)
            args, kwargs = self._root_inputs(fn, is_module, concrete_args or {})
            result = fn(*args, **kwargs)
            self.create_node("output", "output", (self.create_arg(result),), {},
                             type_expr=fn.__annotations__.get("return"))
        finally:
            patcher.restore()
            _is_fx_tracing_flag = previous
        return self.graph

    def _root_inputs(self, fn: Callable, is_module: bool, concrete: dict) -> tuple:
        """A placeholder per parameter of ``fn`` (``self`` aside); concrete values are
        passed as they are."""
        params = list(inspect.signature(fn).parameters.values())[1 if is_module else 0:]
        args, kwargs = ([self.root] if is_module else []), {}
        for param in params:
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise NotImplementedError(f"tracing a forward with *{param.name} is not "
                                          f"available in gradcheck.ref: name the inputs")
            if param.name in concrete:
                value = concrete[param.name]
            else:
                default = () if param.default is param.empty else (param.default,)
                value = self.create_proxy("placeholder", param.name, default, {})
            if param.kind is param.KEYWORD_ONLY:
                kwargs[param.name] = value
            else:
                args.append(value)
        return args, kwargs

    def _patch(self, patcher: _Patcher, fn: Callable) -> None:
        from gradcheck import ref

        originals = {}
        functional = importlib.import_module("gradcheck.ref.nn.functional")
        for module, name, function in _traceable_functions():
            if id(function) not in originals:
                originals[id(function)] = _recording(function, module is functional)
            patcher.set_attr(module, name, originals[id(function)])
        for space, name in _wrapped_globals:
            if name in space:
                patcher.set_global(space, name, _recording(space[name]))
        self._replaced = {**originals, **{k: _recording(v) for k, v in self._autowrap.items()}}
        for module in self._autowrap_modules:  # `math.sqrt(proxy)` as well as `sqrt(proxy)`
            for name, value in list(vars(module).items()):
                if id(value) in self._autowrap:
                    patcher.set_global(vars(module), name, self._replaced[id(value)])
        self._patch_globals(patcher, fn)
        self._patch_modules(patcher)
        _patch_tensor_operators(patcher, ref.Tensor)

    def _patch_globals(self, patcher: _Patcher, fn: Callable) -> None:
        """Names a forward imported from the engine (``from torch import relu``)."""
        space = getattr(fn, "__globals__", {})
        for name, value in list(space.items()):
            if id(value) in self._replaced:
                patcher.set_global(space, name, self._replaced[id(value)])

    def _patch_modules(self, patcher: _Patcher) -> None:
        from gradcheck import ref

        module_cls = ref.nn.Module
        original_call, original_getattr = module_cls.__call__, module_cls.__getattr__
        cache: dict = {}

        def module_call(mod: Any, *args: Any, **kwargs: Any) -> Any:
            self._patch_globals(patcher, getattr(type(mod).forward, "__func__",
                                                 type(mod).forward))
            return self.call_module(mod, lambda *a, **k: original_call(mod, *a, **k), args,
                                    kwargs)

        def module_getattr(mod: Any, attr: str) -> Any:
            return self.getattr(attr, original_getattr(mod, attr), cache)

        patcher.set_attr(module_cls, "__call__", module_call)
        patcher.set_attr(module_cls, "__getattr__", module_getattr)


def _patch_tensor_operators(patcher: _Patcher, tensor_cls: type) -> None:
    """``tensor + proxy``: the tensor steps aside (NotImplemented) so the Proxy's reflected
    operator records the node, as torch's ``__torch_function__`` does."""
    names = [f"__{m.rstrip('_')}__" for m in magic_methods if hasattr(operator, m)]
    names += [f"__r{m.rstrip('_')}__" for m in reflectable_magic_methods if hasattr(operator, m)]
    for name in names:
        method = getattr(tensor_cls, name, None)
        if method is None or name == "__getitem__":
            continue
        patcher.set_attr(tensor_cls, name, _stepping_aside(method))
    getitem = tensor_cls.__getitem__

    def traced_getitem(self: Any, key: Any) -> Any:
        # like torch, only a Proxy index (or one directly in a tuple index) is traced
        parts = key if isinstance(key, tuple) else (key,)
        proxy = next((p for p in parts if isinstance(p, Proxy)), None)
        if proxy is None:
            return getitem(self, key)
        return proxy.tracer.create_proxy("call_function", operator.getitem, (self, key), {})

    patcher.set_attr(tensor_cls, "__getitem__", traced_getitem)


def _stepping_aside(method: Callable) -> Callable:
    def operator_method(self: Any, *args: Any) -> Any:
        if any(isinstance(a, Proxy) for a in args):
            return NotImplemented
        return method(self, *args)

    return operator_method


def symbolic_trace(root: Any, concrete_args: dict | None = None) -> Any:
    """Trace ``root`` (a module or function) into a GraphModule that computes the same."""
    from gradcheck import ref
    from gradcheck.ref.fx.graph_module import GraphModule

    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, ref.nn.Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
