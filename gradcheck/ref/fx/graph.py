"""``torch.fx.graph``: an ordered list of Nodes and the Python code it stands for.

Node names follow torch's rules (a target's name in snake case, ``_1``, ``_2``... on
repeats, never shadowing a builtin: ``sum_1``), and ``python_code`` writes the ``forward``
torch writes: one statement per node, each value set to ``None`` after its last use.
"""
from __future__ import annotations

import builtins
import contextlib
import keyword
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from gradcheck.ref.fx.node import Node, map_arg

reflectable_magic_methods = {
    "add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}",
    "truediv": "{} / {}", "div": "{} / {}", "mod": "{} % {}", "pow": "{} ** {}",
    "lshift": "{} << {}", "rshift": "{} >> {}", "and_": "{} & {}", "or_": "{} | {}",
    "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}",
}
magic_methods = {"eq": "{} == {}", "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}",
                 "le": "{} <= {}", "ge": "{} >= {}", "pos": "+{}", "neg": "-{}",
                 "invert": "~{}", **reflectable_magic_methods}

_NAME = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")
_ILLEGAL_CHARS = re.compile("[^0-9a-zA-Z_]+")
_ILLEGAL_NAMES = {**{k: object() for k in keyword.kwlist}, **builtins.__dict__}


def _snake_case(name: str) -> str:
    return re.sub(r"(?<=[a-z])([A-Z])", r"_\1", name).lower()


class _Namespace:
    """Unique names, torch's way: ``relu``, ``relu_1``...; a builtin's name only for it."""

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._base_count: dict[str, int] = {}

    def create_name(self, candidate: str, obj: Any) -> str:
        match = _NAME.match(candidate)
        if match is None:
            candidate = _ILLEGAL_CHARS.sub("_", candidate) or "_unnamed"
            if candidate[0].isdigit():
                candidate = f"_{candidate}"
            match = _NAME.match(candidate)
        base, num = match.group(1, 2)
        if num is None or candidate in self._used:
            num = self._base_count.get(base, 0)
            if _ILLEGAL_NAMES.get(candidate, obj) is not obj:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num)
        while candidate in self._used:
            num += 1
            candidate = f"{base}_{num}"
        self._used.add(candidate)
        self._base_count[base] = num
        return candidate


@dataclass
class PythonCode:
    """The generated source and the globals it runs with."""

    src: str
    globals: dict


def _target_name(target: Any) -> str:
    name = target.__name__ if callable(target) else str(target)
    if name.startswith("__") and name.endswith("__"):
        name = name[2:-2]
    return _snake_case(name)


class _NodeList:
    """``graph.nodes``: iterable (also reversed) and sized, as torch's view is."""

    def __init__(self, nodes: list) -> None:
        self._nodes = nodes

    def __iter__(self) -> Iterator[Node]:
        return iter(list(self._nodes))

    def __reversed__(self) -> Iterator[Node]:
        return reversed(list(self._nodes))

    def __len__(self) -> int:
        return len(self._nodes)


class Graph:
    """Nodes in execution order, with torch's node-building methods."""

    def __init__(self, owning_module: Any = None, tracer_cls: Any = None,
                 tracer_extras: dict | None = None) -> None:
        self._nodes: list[Node] = []
        self._namespace = _Namespace()
        self._insert_at: Callable[[Node], None] = self._nodes.append
        self.owning_module = owning_module
        self._tracer_cls = tracer_cls

    @property
    def nodes(self) -> _NodeList:
        return _NodeList(self._nodes)

    def find_nodes(self, *, op: str, target: Any = None, sort: bool = True) -> list[Node]:
        return [n for n in self._nodes if n.op == op and (target is None or n.target == target)]

    # -- building ----------------------------------------------------------------------------
    def create_node(self, op: str, target: Any, args: tuple | None = None,
                    kwargs: dict | None = None, name: str | None = None,
                    type_expr: Any = None) -> Node:
        candidate = name if name is not None else _target_name(target)
        unique = self._namespace.create_name(candidate, None)
        node = Node(self, unique, op, target, tuple(args or ()), dict(kwargs or {}), type_expr)
        self._insert_at(node)
        return node

    def placeholder(self, name: str, type_expr: Any = None, default_value: Any = ...) -> Node:
        args = () if default_value is ... else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any = None) -> Node:
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple | None = None,
                    kwargs: dict | None = None, type_expr: Any = None) -> Node:
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple | None = None,
                    kwargs: dict | None = None, type_expr: Any = None) -> Node:
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable, args: tuple | None = None,
                      kwargs: dict | None = None, type_expr: Any = None) -> Node:
        return self.create_node("call_function", the_function, args, kwargs,
                                type_expr=type_expr)

    def output(self, result: Any, type_expr: Any = None) -> Node:
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Any] = lambda x: x) -> Node:
        """A copy of ``node`` (from any graph) in this one, its inputs mapped."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        copy = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        copy.meta = dict(node.meta)
        return copy

    def graph_copy(self, g: Graph, val_map: dict, return_output_node: bool = False) -> Any:
        """Copy ``g``'s nodes in; returns what its output node returned, mapped."""
        for node in g._nodes:
            if node.op == "output":
                result = map_arg(node.args[0], lambda n: val_map[n])
                return (result, node) if return_output_node else result
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    # -- editing -----------------------------------------------------------------------------
    def erase_node(self, to_erase: Node) -> None:
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: {to_erase.users}!")
        to_erase._update_args_kwargs((), {})
        self._nodes.remove(to_erase)

    @contextlib.contextmanager
    def _inserting(self, node: Node | None, after: bool):
        saved = self._insert_at
        anchor = [node]

        def insert(new: Node) -> None:
            if anchor[0] is None:
                self._nodes.insert(len(self._nodes) if after else 0, new)
            else:
                self._nodes.insert(self._nodes.index(anchor[0]) + (1 if after else 0), new)
            if after:  # the next insertion goes after this one, keeping creation order
                anchor[0] = new

        self._insert_at = insert
        try:
            yield
        finally:
            self._insert_at = saved

    def inserting_before(self, n: Node | None = None):
        """New nodes go before ``n`` (at the start when None)."""
        return self._inserting(n, after=False)

    def inserting_after(self, n: Node | None = None):
        """New nodes go after ``n`` (at the end when None), in creation order."""
        return self._inserting(n, after=True)

    def _neighbour(self, node: Node, step: int) -> Node | None:
        index = self._nodes.index(node) + step
        return self._nodes[index] if 0 <= index < len(self._nodes) else None

    def _move(self, x: Node, anchor: Node, after: bool) -> None:
        self._nodes.remove(x)
        self._nodes.insert(self._nodes.index(anchor) + (1 if after else 0), x)

    def eliminate_dead_code(self) -> bool:
        """Erase unused nodes without side effects, last first; whether any went."""
        changed = False
        for node in reversed(self._nodes[:]):
            if not node.users and not node.is_impure():
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Check ownership and that every node's inputs come before it."""
        seen: set[Node] = set()
        for node in self._nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node {node} does not belong to this Graph!")
            for used in node.all_input_nodes:
                if used not in seen:
                    raise RuntimeError(f"Argument '{used}' of Node '{node}' was used before it "
                                       f"has been defined! Please check that Nodes in the graph "
                                       f"are topologically ordered\n{self}")
            seen.add(node)

    # -- printing and code -------------------------------------------------------------------
    def __str__(self) -> str:
        lines = "".join(f"\n    {node.format_node()}" for node in self._nodes)
        return f"graph():{lines}"

    def print_tabular(self) -> None:
        """The nodes as a table (needs the ``tabulate`` package, as torch's does)."""
        try:
            from tabulate import tabulate
        except ImportError:
            print("`print_tabular` relies on the library `tabulate`, which could not be found "
                  "on this machine. Run `pip install tabulate` to install the library.")
            raise
        rows = [[n.op, n.name, n.target, n.args, n.kwargs] for n in self._nodes]
        print(tabulate(rows, headers=["opcode", "name", "target", "args", "kwargs"]))

    def python_code(self, root_module: str = "self", *, verbose: bool = False) -> PythonCode:
        from gradcheck.ref.fx.codegen import generate

        return generate(self, root_module)

    def on_generate_code(self, make_transformer: Callable) -> Any:
        return contextlib.nullcontext()

