"""``torch.fx.Interpreter`` and ``Transformer``: run a GraphModule node by node.

An Interpreter calls one method per node kind (``placeholder``, ``get_attr``,
``call_function``, ``call_method``, ``call_module``, ``output``); a subclass overrides them
to observe or change execution. A Transformer runs the same methods on Proxies, so it
builds a new graph, and ``transform()`` returns it as a GraphModule.
"""
from __future__ import annotations

from typing import Any

from gradcheck.ref.fx.graph import Graph
from gradcheck.ref.fx.node import Node, map_aggregate, map_arg
from gradcheck.ref.fx.proxy import GraphAppendingTracer, Proxy


class Interpreter:
    def __init__(self, module: Any, garbage_collect_values: bool = True,
                 graph: Graph | None = None) -> None:
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env: dict[Node, Any] = {}
        self.garbage_collect_values = garbage_collect_values

    def run(self, *args: Any, initial_env: dict | None = None,
            enable_io_processing: bool = True) -> Any:
        self.env = dict(initial_env or {})
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            self.env[node] = self.run_node(node)
            if node.op == "output":
                return self.env[node]
        return None

    def boxed_run(self, args_list: list) -> Any:
        args = list(args_list)
        args_list.clear()
        return self.run(*args)

    def run_node(self, n: Node) -> Any:
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # -- one method per node kind --------------------------------------------------------------
    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Any:
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as missing:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but "
                               f"one was not passed in!") from missing

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Any:
        return self.fetch_attr(target)

    def call_function(self, target: Any, args: tuple, kwargs: dict) -> Any:
        return target(*args, **kwargs)

    def call_method(self, target: str, args: tuple, kwargs: dict) -> Any:
        receiver, *rest = args
        return getattr(receiver, target)(*rest, **kwargs)

    def call_module(self, target: str, args: tuple, kwargs: dict) -> Any:
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: str, args: tuple, kwargs: dict) -> Any:
        return args[0]

    # -- helpers -------------------------------------------------------------------------------
    def fetch_attr(self, target: str) -> Any:
        value = self.module
        for i, atom in enumerate(target.split(".")):
            if not hasattr(value, atom):
                raise RuntimeError(f"Node referenced nonexistent target "
                                   f"{'.'.join(target.split('.')[:i + 1])}")
            value = getattr(value, atom)
        return value

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple:
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args: Any, n: Node) -> Any:
        def load(node: Node) -> Any:
            if node not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {node}! Run "
                                   f"Graph.lint() to diagnose such issues")
            return self.env[node]

        return map_arg(args, load)


class Transformer(Interpreter):
    """Re-trace a GraphModule through overridable node methods into a new graph."""

    def __init__(self, module: Any) -> None:
        super().__init__(module)
        self.new_graph = Graph()
        self.tracer = GraphAppendingTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        default = args if args else ()
        return Proxy(self.new_graph.placeholder(target, default_value=default[0]
                                                if default else ...), self.tracer)

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_function(self, target: Any, args: tuple, kwargs: dict) -> Proxy:
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def call_module(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        return self.tracer.create_proxy("call_module", target, args, kwargs)

    def transform(self) -> Any:
        from gradcheck.ref.fx.graph_module import GraphModule

        result = super().run()
        if result is not None:
            self.new_graph.output(map_aggregate(
                result, lambda x: x.node if isinstance(x, Proxy) else x))
        return GraphModule(self.module, self.new_graph)
