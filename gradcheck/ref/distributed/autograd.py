"""``torch.distributed.autograd``: backward passes whose gradients are kept per context
(``get_gradients(context_id)``, keyed by leaf tensor) instead of in ``.grad``. With one worker
the graph is this process's graph; repeated ``backward`` calls in one context add up.

>>> import gradcheck.ref as torch
>>> x = torch.ones(2, requires_grad=True)
>>> with torch.distributed.autograd.context() as context_id:
...     torch.distributed.autograd.backward(context_id, [(3 * x).sum()])
...     grads = torch.distributed.autograd.get_gradients(context_id)
>>> grads[x], x.grad
(tensor([3., 3.]), None)
"""
from __future__ import annotations

import itertools
import threading
from typing import Any

_contexts: dict[int, dict] = {}
_ids = itertools.count()
_local = threading.local()


def _current() -> int | None:
    return getattr(_local, "context_id", None)


class context:  # noqa: N801 - torch's name
    """A fresh gradient store for this thread, released when the block ends."""

    def __enter__(self) -> int:
        if _current() is not None:
            raise RuntimeError("Already have an autograd context id for this thread.")
        self.autograd_context = next(_ids)
        _contexts[self.autograd_context] = {}
        _local.context_id = self.autograd_context
        return self.autograd_context

    def __exit__(self, *exc: Any) -> None:
        _contexts.pop(self.autograd_context, None)
        _local.context_id = None


def _store(context_id: int) -> dict:
    if context_id not in _contexts:
        raise RuntimeError(f"Could not find autograd context with id: {context_id}")
    return _contexts[context_id]


def _leaves(roots: list) -> list:
    """The tensors that require grad at the ends of the roots' graph, in first-seen order."""
    found, seen, stack = [], set(), [root.grad_fn for root in roots if root.grad_fn is not None]
    found += [root for root in roots if root.grad_fn is None and root.requires_grad]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            found.append(variable)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return list({id(t): t for t in found}.values())


def backward(context_id: int, roots: list, retain_graph: bool = False) -> None:
    """Differentiate the scalar ``roots`` into the context's store, leaving ``.grad`` alone."""
    from gradcheck.ref import autograd

    store = _store(context_id)
    leaves = _leaves(roots)
    grads = autograd.grad(roots, leaves, retain_graph=retain_graph, allow_unused=True)
    for leaf, grad in zip(leaves, grads):
        if grad is not None:
            store[leaf] = grad if leaf not in store else store[leaf] + grad


def get_gradients(context_id: int) -> dict:
    """``{leaf tensor: its gradient}`` accumulated in the context so far."""
    return dict(_store(context_id))
