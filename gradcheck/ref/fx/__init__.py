"""``torch.fx``: there is no symbolic tracer over a numpy engine. Libraries use ``fx.wrap`` at
import time to keep a function out of traces, so it is accepted and returns its argument;
``symbolic_trace``, ``GraphModule``, ``Tracer`` and the other classes raise NotImplementedError
naming the API when a script actually calls them.

>>> import gradcheck.ref as torch
>>> @torch.fx.wrap
... def helper(x):
...     return x + 1
>>> helper(1), torch.fx.wrap("len")
(2, 'len')
>>> torch.fx.symbolic_trace(helper)
Traceback (most recent call last):
...
NotImplementedError: torch.fx.symbolic_trace is not available in gradcheck.ref: there is no symbolic tracer; run the module eagerly
"""
from __future__ import annotations

from typing import Any

from gradcheck.ref.fx import _symbolic_trace  # noqa: F401
from gradcheck.ref.fx._symbolic_trace import is_fx_tracing  # noqa: F401
from gradcheck.ref.standins import module_fallback, unsupported

WHY = "there is no symbolic tracer; run the module eagerly"
__getattr__ = module_fallback("torch.fx", WHY)

symbolic_trace = unsupported("torch.fx.symbolic_trace", WHY)
GraphModule = unsupported("torch.fx.GraphModule", WHY)
Graph = unsupported("torch.fx.Graph", WHY)
Tracer = unsupported("torch.fx.Tracer", WHY)
Proxy = unsupported("torch.fx.Proxy", WHY)
Node = unsupported("torch.fx.Node", WHY)
Interpreter = unsupported("torch.fx.Interpreter", WHY)
Transformer = unsupported("torch.fx.Transformer", WHY)


def wrap(fn_or_name: Any) -> Any:
    """Mark a function as a leaf for tracing; without a tracer it is returned unchanged."""
    return fn_or_name
