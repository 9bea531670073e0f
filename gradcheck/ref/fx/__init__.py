"""``torch.fx``: symbolic tracing of the engine's modules and functions into graphs.

``symbolic_trace(model)`` records what ``model.forward`` does (submodule calls, functions,
methods, attribute reads) as a Graph, and returns a GraphModule whose generated ``forward``
computes the same values, with gradients reaching the same parameters. See
``_symbolic_trace`` for how calls are intercepted without ``__torch_function__``.

>>> import gradcheck.ref as torch
>>> class Net(torch.nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.fc = torch.nn.Linear(2, 2)
...     def forward(self, x):
...         return torch.relu(self.fc(x)) + 1
>>> traced = torch.fx.symbolic_trace(Net())
>>> [n.op for n in traced.graph.nodes]
['placeholder', 'call_module', 'call_function', 'call_function', 'output']
>>> [n.name for n in traced.graph.nodes]
['x', 'fc', 'relu', 'add', 'output']
"""
from __future__ import annotations

from gradcheck.ref.fx import _compatibility, _symbolic_trace, graph, graph_module  # noqa: F401
from gradcheck.ref.fx import immutable_collections, interpreter, node, proxy  # noqa: F401
from gradcheck.ref.fx._symbolic_trace import Tracer, is_fx_tracing, symbolic_trace, wrap  # noqa: F401
from gradcheck.ref.fx.graph import Graph  # noqa: F401
from gradcheck.ref.fx.graph_module import GraphModule  # noqa: F401
from gradcheck.ref.fx.interpreter import Interpreter, Transformer  # noqa: F401
from gradcheck.ref.fx.node import Node, has_side_effect, map_arg  # noqa: F401
from gradcheck.ref.fx.proxy import Proxy  # noqa: F401
from gradcheck.ref.standins import module_fallback


def _pytree_namespace() -> object:
    import types

    from gradcheck.ref.fx import flatten_spec
    from gradcheck.ref.utils._pytree import TreeSpec

    return types.SimpleNamespace(
        TreeSpec=TreeSpec, tree_flatten_spec=flatten_spec.tree_flatten_spec,
        register_pytree_flatten_spec=flatten_spec.register_pytree_flatten_spec,
        SUPPORTED_NODES=flatten_spec.SUPPORTED_NODES)


_pytree = _pytree_namespace()

__getattr__ = module_fallback("torch.fx", "this part of torch.fx is not implemented here")
