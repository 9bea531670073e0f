"""``torch.fx.GraphModule``: a module whose ``forward`` is the code of its Graph.

It holds the submodules, parameters and buffers the graph reads, copied by reference from
the traced root (so they are the same parameter objects, and gradients reach them), inside
plain ``Module`` containers where the root had other modules. Each instance gets its own
class, named after the traced root, as in torch.
"""
from __future__ import annotations

import copy
import itertools
from typing import Any

from gradcheck.ref.fx.graph import Graph
from gradcheck.ref.nn.module import Module

_compiled = itertools.count()
_REMINDER = "# To see more debug info, please use `graph_module.print_readable()`"


def _copy_attr(source: Any, target: Module, qualified_name: str) -> None:
    """Bring ``source.<qualified_name>`` into ``target`` at the same path."""
    *prefix, field = qualified_name.split(".")
    for item in prefix:
        from_child, to_child = getattr(source, item), getattr(target, item, None)
        if from_child is to_child:
            return
        if to_child is None:
            to_child = Module()
            setattr(target, item, to_child)
        source, target = from_child, to_child
    _assign(target, field, getattr(source, field))


def _assign(owner: Module, field: str, value: Any) -> None:
    from gradcheck import ref

    if isinstance(value, ref.Tensor) and not isinstance(value, ref.nn.Parameter):
        owner.register_buffer(field, value)
    else:
        setattr(owner, field, value)


def _assign_from_dict(values: dict, target: Module, qualified_name: str) -> None:
    *prefix, field = qualified_name.split(".")
    for item in prefix:
        child = getattr(target, item, None)
        if child is None:
            child = Module()
            setattr(target, item, child)
        target = child
    _assign(target, field, values[qualified_name])


class GraphModule(Module):
    """``GraphModule(root, graph, class_name)``: ``root`` is a module or a dict of the
    attributes the graph's ``get_attr``/``call_module`` nodes name."""

    def __new__(cls, *args: Any, **kwargs: Any) -> GraphModule:
        # a class per instance: recompiling one GraphModule never changes another's forward
        base = next(c for c in cls.__mro__ if c.__name__ != "GraphModuleImpl")
        impl = type("GraphModuleImpl", (base,), {"__module__": base.__module__})
        return object.__new__(impl)

    def __init__(self, root: Any, graph: Graph, class_name: str = "GraphModule") -> None:
        super().__init__()
        type(self).__name__ = class_name
        attribute_nodes = [n for n in graph.nodes if n.op in ("get_attr", "call_module")]
        if isinstance(root, Module):
            self.training = root.training
            for node in attribute_nodes:
                _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in attribute_nodes:
                if node.target not in root:
                    raise RuntimeError(f"Node {node} referenced target {node.target} but that "
                                       f"target was not provided in ``root``!")
                _assign_from_dict(root, self, node.target)
        else:
            raise RuntimeError(f"Unsupported type {root} passed for root!")
        self.meta: dict = {}
        self.graph = graph

    @property
    def graph(self) -> Graph:
        return self.__dict__["_graph"]

    @graph.setter
    def graph(self, g: Graph) -> None:
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        return self.__dict__["_code"]

    def recompile(self) -> Any:
        """Regenerate ``forward`` from the graph (after editing it)."""
        python_code = self.graph.python_code("self")
        self.__dict__["_code"] = python_code.src
        namespace = dict(python_code.globals)
        exec(compile(python_code.src, f"<eval_with_key>.{next(_compiled)}", "exec"), namespace)
        type(self).forward = namespace["forward"]
        return python_code

    def print_readable(self, print_output: bool = True, include_stride: bool = False,
                       include_device: bool = False, colored: bool = False) -> str:
        body = self.code.strip("\n").rstrip()
        text = f"class {type(self).__name__}(torch.nn.Module):\n" + "\n".join(
            f"    {line}" if line else line for line in body.split("\n")) + "\n"
        if print_output:
            print(text)
        return text

    def __deepcopy__(self, memo: dict) -> GraphModule:
        # the copy gets its own class and code, made from a copy of the graph
        members = Module()
        for store in ("_parameters", "_buffers", "_modules"):
            members.__dict__[store] = copy.deepcopy(self.__dict__[store], memo)
        graph = Graph()
        graph.output(graph.graph_copy(self.graph, {}))
        result = GraphModule(members, graph, type(self).__name__)
        result.training = self.training
        result.meta = copy.deepcopy(self.meta, memo)
        memo[id(self)] = result
        return result

    def __str__(self) -> str:
        return "\n".join([super().__repr__(), self.code, _REMINDER])
