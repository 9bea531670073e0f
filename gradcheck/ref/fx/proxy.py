"""``torch.fx.proxy``: the stand-in values a traced function computes with.

Every operation on a Proxy records a node instead of computing: arithmetic records
``operator`` calls, a method records ``call_method``, an attribute read ``getattr``.
Control flow on a Proxy cannot be recorded and raises TraceError, as in torch.
"""
from __future__ import annotations

import bisect
import dis
import inspect
import operator
from typing import Any

from gradcheck.ref.fx.graph import Graph, magic_methods, reflectable_magic_methods
from gradcheck.ref.fx.node import Node


class TraceError(ValueError):
    pass


_CONSTANT_TYPES = (str, int, float, bool, complex, type(None), type(Ellipsis), range)


class TracerBase:
    """What every tracer shares: building nodes and turning values into node arguments."""

    graph: Graph
    proxy_buffer_attributes: bool = False

    def create_node(self, kind: str, target: Any, args: tuple, kwargs: dict,
                    name: str | None = None, type_expr: Any = None) -> Node:
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Any, args: tuple, kwargs: dict,
                     name: str | None = None, type_expr: Any = None,
                     proxy_factory_fn: Any = None) -> Proxy:
        node = self.create_node(kind, target, self.create_arg(tuple(args)),
                                self.create_arg(dict(kwargs)), name, type_expr)
        return proxy_factory_fn(node) if proxy_factory_fn else self.proxy(node)

    def create_arg(self, a: Any) -> Any:
        """A value as a node argument: proxies become their nodes, containers are mapped."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Node):
            return a
        if isinstance(a, (tuple, list)) and not hasattr(a, "_fields"):
            return type(a)(self.create_arg(elem) for elem in a)
        if isinstance(a, tuple):
            return type(a)(*(self.create_arg(elem) for elem in a))
        if isinstance(a, dict):
            return {k: self.create_arg(v) for k, v in a.items()}
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, _CONSTANT_TYPES) or _is_engine_constant(a):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: Proxy) -> bool:
        raise TraceError("symbolically traced variables cannot be used as inputs to control "
                         "flow")

    def iter(self, obj: Proxy) -> Any:
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the "
                         "Proxy is used in a loop or as a *args or **kwargs function argument. "
                         "See the torch.fx docs on pytorch.org for a more detailed explanation "
                         "of what types of control flow can be traced, and check out the "
                         "Proxy docstring for help troubleshooting Proxy iteration errors")

    def keys(self, obj: Proxy) -> Any:
        return Attribute(obj, "keys")()


def _is_engine_constant(a: Any) -> bool:
    from gradcheck import ref

    return isinstance(a, (ref.dtype, ref.device, ref.Size))


class GraphAppendingTracer(TracerBase):
    """A tracer that only appends to ``graph`` (how a Transformer builds its new graph)."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.root = None
        self.tensor_attrs: dict = {}


class Proxy:
    """A value in a trace: it records what is done with it as nodes of ``tracer.graph``."""

    def __init__(self, node: Node, tracer: TracerBase | None = None) -> None:
        self.node = node
        self.tracer = tracer if tracer is not None else GraphAppendingTracer(node.graph)

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> Attribute:
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return Attribute(self, k)

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self) -> Any:
        # `a, b = proxy` can be traced: the caller's bytecode says how many values it takes
        caller = inspect.currentframe().f_back
        instructions = list(dis.get_instructions(caller.f_code))
        index = bisect.bisect_left(instructions, caller.f_lasti, key=lambda i: i.offset)
        if index < len(instructions) and instructions[index].opname == "UNPACK_SEQUENCE":
            return (self[i] for i in range(instructions[index].argval))
        return self.tracer.iter(self)

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call torch.fx.wrap('len') at "
                           "module scope")

    def keys(self) -> Any:
        return self.tracer.keys(self)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})

    def __deepcopy__(self, memo: dict) -> Proxy:
        return self


class Attribute(Proxy):
    """``proxy.name``: a ``getattr`` node, made only when the value is used; calling it
    records a ``call_method`` instead."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


def _magic(name: str):
    target = getattr(operator, name)

    def method(*args: Any) -> Proxy:
        tracer = next(a.tracer for a in args if isinstance(a, Proxy))
        return tracer.create_proxy("call_function", target, args, {})

    method.__name__ = f"__{name.rstrip('_')}__"
    return method


def _reflected(name: str):
    target = getattr(operator, name)

    def method(self: Proxy, other: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", target, (other, self), {})

    method.__name__ = f"__r{name.rstrip('_')}__"
    return method


for _name in [m for m in magic_methods if hasattr(operator, m)]:  # no operator.div in py3
    setattr(Proxy, f"__{_name.rstrip('_')}__", _magic(_name))
for _name in [m for m in reflectable_magic_methods if hasattr(operator, m)]:
    setattr(Proxy, f"__r{_name.rstrip('_')}__", _reflected(_name))
Proxy.__hash__ = object.__hash__  # __eq__ records a node; proxies still go in dicts and sets
