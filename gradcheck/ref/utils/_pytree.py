"""``torch.utils._pytree``: flatten nested lists, tuples and dicts to leaves and back.

>>> leaves, spec = tree_flatten({"a": [1, 2], "b": (3,)})
>>> leaves, tree_unflatten([x * 10 for x in leaves], spec)
([1, 2, 3], {'a': [10, 20], 'b': (30,)})
"""
from __future__ import annotations

from typing import Any, NamedTuple


class TreeSpec(NamedTuple):
    kind: Any  # the container type, or None for a leaf
    context: Any  # dict keys, or the namedtuple type
    children: list

    @property
    def num_leaves(self) -> int:
        return 1 if self.kind is None else sum(c.num_leaves for c in self.children)


LeafSpec = lambda: TreeSpec(None, None, [])  # noqa: E731


def _children(tree: Any) -> tuple[Any, Any, list] | None:
    if isinstance(tree, dict):
        keys = list(tree)
        return type(tree), keys, [tree[k] for k in keys]
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return tuple, type(tree), list(tree)
    if isinstance(tree, (list, tuple)):
        return type(tree), None, list(tree)
    return None


def tree_flatten(tree: Any, is_leaf: Any = None) -> tuple[list, TreeSpec]:
    parts = None if is_leaf is not None and is_leaf(tree) else _children(tree)
    if parts is None:
        return [tree], LeafSpec()
    kind, context, children = parts
    leaves, specs = [], []
    for child in children:
        child_leaves, spec = tree_flatten(child, is_leaf)
        leaves += child_leaves
        specs.append(spec)
    return leaves, TreeSpec(kind, context, specs)


def tree_unflatten(leaves: list, spec: TreeSpec) -> Any:
    leaves = list(leaves)
    return _build(iter(leaves), spec)


def _build(leaves: Any, spec: TreeSpec) -> Any:
    if spec.kind is None:
        return next(leaves)
    children = [_build(leaves, child) for child in spec.children]
    if spec.kind is tuple and spec.context is not None:
        return spec.context(*children)
    if issubclass(spec.kind, dict):
        return spec.kind(zip(spec.context, children))
    return spec.kind(children)


def tree_leaves(tree: Any, is_leaf: Any = None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_map(fn: Any, tree: Any, *rests: Any, is_leaf: Any = None) -> Any:
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [tree_flatten(r, is_leaf)[0] for r in rests]
    return tree_unflatten([fn(*xs) for xs in zip(leaves, *others)], spec)


def tree_structure(tree: Any, is_leaf: Any = None) -> TreeSpec:
    return tree_flatten(tree, is_leaf)[1]
