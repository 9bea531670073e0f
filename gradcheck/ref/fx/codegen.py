"""The ``forward`` source of a Graph, written as torch writes it.

Each node is one statement; a value is set to ``None`` right after its last use (and an
unused one right away), so memory is freed as early as in torch's generated code. Calls of
the engine's functions are written ``torch.<name>`` and run with ``torch`` bound to the
engine.
"""
from __future__ import annotations

import builtins
import math
import operator
from typing import Any

from gradcheck.ref.fx.graph import Graph, PythonCode, _Namespace, magic_methods
from gradcheck.ref.fx.node import Node, _get_qualified_name


def _base_globals() -> dict:
    from gradcheck import ref

    return {"torch": ref, "operator": operator, "builtins": builtins, "inf": math.inf,
            "nan": math.nan, "NoneType": type(None), "device": ref.device}


class _Writer:
    """The state of one generation: names of globals, the statements so far."""

    def __init__(self, graph: Graph, root: str) -> None:
        self.graph = graph
        self.root = root
        self.globals = _base_globals()
        self._global_names = _Namespace()
        for name in self.globals:
            self._global_names.create_name(name, None)
        self._global_of: dict[int, str] = {}
        self.wrapped: list[str] = []

    def global_name(self, obj: Any) -> str:
        """How the code refers to a callable: through ``torch``/``operator`` when it lives
        there, else a global of its own."""
        module = getattr(obj, "__module__", None)
        if module == "builtins":
            return obj.__name__
        qualified = _get_qualified_name(obj)
        if qualified.startswith(("torch.", "operator.")):
            return qualified
        if id(obj) not in self._global_of:
            name = self._global_names.create_name(qualified, None)
            self.globals[name] = obj
            self._global_of[id(obj)] = name
            if _is_wrapped(obj):
                self.wrapped.append(name)
        return self._global_of[id(obj)]

    def value(self, arg: Any) -> str:
        if isinstance(arg, Node):
            return arg.name
        if isinstance(arg, tuple) and not hasattr(arg, "_fields"):
            items = ", ".join(self.value(a) for a in arg)
            return f"({items},)" if len(arg) == 1 else f"({items})"
        if isinstance(arg, list):
            return "[" + ", ".join(self.value(a) for a in arg) + "]"
        if isinstance(arg, dict):
            return "{" + ", ".join(f"{k!r}: {self.value(v)}" for k, v in arg.items()) + "}"
        if isinstance(arg, slice):
            return f"slice({self.value(arg.start)}, {self.value(arg.stop)}, " \
                   f"{self.value(arg.step)})"
        if callable(arg) and not isinstance(arg, type) and hasattr(arg, "__name__"):
            return self.global_name(arg)
        return repr(arg)

    def call_args(self, args: tuple, kwargs: dict) -> str:
        parts = [self.value(a) for a in args] + [f"{k} = {self.value(v)}"
                                                 for k, v in kwargs.items()]
        return ", ".join(parts)

    def path(self, target: str) -> str:
        expr = self.root
        for atom in target.split("."):
            expr = f"{expr}.{atom}" if atom.isidentifier() else f'getattr({expr}, "{atom}")'
        return expr

    def expression(self, node: Node) -> str:
        if node.op == "get_attr":
            return self.path(node.target)
        if node.op == "call_module":
            return f"{self.path(node.target)}({self.call_args(node.args, node.kwargs)})"
        if node.op == "call_method":
            receiver, *rest = node.args
            return f"{self.value(receiver)}.{node.target}(" \
                   f"{self.call_args(tuple(rest), node.kwargs)})"
        return self.function_call(node)

    def function_call(self, node: Node) -> str:
        target, args = node.target, node.args
        if target is builtins.getattr and len(args) == 2 and not node.kwargs and \
                isinstance(args[1], str) and args[1].isidentifier():
            return f"{self.value(args[0])}.{args[1]}"
        name = getattr(target, "__name__", "")
        if getattr(target, "__module__", None) == "_operator" and name in magic_methods \
                and not node.kwargs and len(args) == magic_methods[name].count("{}"):
            return magic_methods[name].format(*(self.value(a) for a in args))
        return f"{self.global_name(target)}({self.call_args(args, node.kwargs)})"


def _is_wrapped(fn: Any) -> bool:
    """Whether ``fn`` was given to ``wrap`` or is one of the math functions tracing wraps."""
    from gradcheck.ref.fx._symbolic_trace import _wrapped_globals

    name = getattr(fn, "__name__", None)
    return getattr(math, name or "", None) is fn or any(
        space.get(name) is fn for space, wrapped in _wrapped_globals if wrapped == name)


def _last_uses(graph: Graph) -> dict[Node, list[Node]]:
    """For each node, the values whose last reader it is."""
    seen: set[Node] = set()
    freed: dict[Node, list[Node]] = {}
    for node in reversed(list(graph.nodes)):
        for used in node.all_input_nodes:
            if used not in seen:
                seen.add(used)
                freed.setdefault(node, []).append(used)
    return freed


def _signature(writer: _Writer, node: Node) -> str:
    if node.args:
        return f"{node.target} = {writer.value(node.args[0])}"
    return node.target


def generate(graph: Graph, root: str = "self") -> PythonCode:
    writer = _Writer(graph, root)
    freed = _last_uses(graph)
    params, body = [], []
    for node in graph.nodes:
        if node.op == "placeholder":
            params.append(_signature(writer, node))
            if node.target.lstrip("*") != node.name:  # a name like `input` became `input_1`
                body.append(f"{node.name} = {node.target.lstrip('*')}\n")
            continue
        if node.op == "output":
            body.append(f"return {writer.value(node.args[0])}\n")
            continue
        statement = f"{node.name} = {writer.expression(node)}"
        dead = [n.name for n in freed.get(node, [])]
        if not node.users:
            dead.append(node.name)
        if dead:
            statement += ";  " + " = ".join(dead) + " = None"
        body.append(statement + "\n")
    code = "".join(body)
    indented = "\n".join("    " + line for line in code.split("\n"))
    # torch re-registers the wrapped functions a forward calls when its code is run
    wraps = "\n".join(f'torch.fx._symbolic_trace.wrap("{name}")' for name in writer.wrapped)
    src = f"\n{wraps}\n\ndef forward({', '.join([root] + params)}):\n{indented}"
    return PythonCode(src, writer.globals)
