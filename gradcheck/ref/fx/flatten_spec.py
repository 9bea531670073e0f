"""``torch.fx._pytree``: flatten a pytree by a spec taken from another one, as the code
``fx`` generates for ``concrete_args`` and pytree inputs does (``tree_flatten_spec``).
A dict is read by the spec's keys (extra keys are ignored), a list or tuple by the spec's
number of children; other container types register their reader with
``register_pytree_flatten_spec``.

>>> from gradcheck.ref.utils._pytree import tree_flatten
>>> _, spec = tree_flatten({"a": 1, "b": [2, 3]})
>>> tree_flatten_spec({"b": [20, 30, 40], "a": 10, "c": 0}, spec)
[10, 20, 30]
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gradcheck.ref.utils._pytree import TreeSpec

SUPPORTED_NODES: dict = {}


def register_pytree_flatten_spec(cls: type, flatten_fn_spec: Callable,
                                 flatten_fn_exact_match_spec: Callable | None = None) -> None:
    """How to read ``cls`` by a spec: ``flatten_fn_spec(obj, spec) -> children``."""
    SUPPORTED_NODES[cls] = flatten_fn_spec


def _dict_children(d: dict, spec: TreeSpec) -> list:
    return [d[key] for key in spec.context]


def _sequence_children(seq: Any, spec: TreeSpec) -> list:
    return [seq[i] for i in range(len(spec.children))]


def _reader(kind: type) -> Callable:
    """The reader of the spec's container type (the pytree is read as the spec says)."""
    if kind in SUPPORTED_NODES:
        return SUPPORTED_NODES[kind]
    if issubclass(kind, dict):
        return _dict_children
    if issubclass(kind, (list, tuple)):
        return _sequence_children
    raise RuntimeError(f"{kind} does not have a flatten_fn_spec associated with it. Please "
                       f"register one with torch.fx._pytree.register_pytree_flatten_spec.  If "
                       f"you have serialized your model, make sure that any custom pytrees "
                       f"have been registered before loading it.")


def tree_flatten_spec(pytree: Any, spec: TreeSpec) -> list:
    """The leaves of ``pytree`` in the order ``spec`` lays them out."""
    if spec.kind is None:
        return [pytree]
    leaves: list = []
    for child, child_spec in zip(_reader(spec.kind)(pytree, spec), spec.children):
        leaves += tree_flatten_spec(child, child_spec)
    return leaves
