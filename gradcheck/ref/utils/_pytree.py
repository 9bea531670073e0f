"""``torch.utils._pytree``: flatten nested lists, tuples and dicts to leaves and back.

>>> leaves, spec = tree_flatten({"a": [1, 2], "b": (3,)})
>>> leaves, tree_unflatten([x * 10 for x in leaves], spec)
([1, 2, 3], {'a': [10, 20], 'b': (30,)})
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

PyTree = Any


class TreeSpec(NamedTuple):
    kind: Any  # the container type, or None for a leaf
    context: Any  # dict keys, or the namedtuple type
    children: list

    @property
    def num_leaves(self) -> int:
        return 1 if self.kind is None else sum(c.num_leaves for c in self.children)


LeafSpec = lambda: TreeSpec(None, None, [])  # noqa: E731


class NodeDef(NamedTuple):
    """How a registered container type flattens (to children and a context) and unflattens."""

    type: type
    flatten_fn: Callable
    unflatten_fn: Callable


# user-registered container types (register_pytree_node); the built-ins are handled below
SUPPORTED_NODES: dict = {}


def register_pytree_node(cls: type, flatten_fn: Callable, unflatten_fn: Callable, *,
                         serialized_type_name: str | None = None, to_dumpable_context: Any = None,
                         from_dumpable_context: Any = None, flatten_with_keys_fn: Any = None
                         ) -> None:
    """Make ``cls`` a container: ``flatten_fn(x) -> (children, context)``,
    ``unflatten_fn(children, context) -> x``."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn)


_register_pytree_node = register_pytree_node


def _get_node_type(tree: Any) -> Any:
    """The type pytree dispatches on (namedtuples count as ``namedtuple``'s kind)."""
    return type(tree)


def _is_leaf(tree: Any, is_leaf: Any = None) -> bool:
    return (is_leaf is not None and is_leaf(tree)) or _children(tree) is None


def _dict_flatten(d: dict) -> tuple[list, list]:
    return list(d.values()), list(d.keys())


def _dict_unflatten(values: list, context: list) -> dict:
    return dict(zip(context, values))


@dataclass(frozen=True)
class GetAttrKey:
    """A path entry naming an attribute."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"

    def get(self, obj: Any) -> Any:
        return getattr(obj, self.name)


KeyEntry = Any


def _children(tree: Any) -> tuple[Any, Any, list] | None:
    node = SUPPORTED_NODES.get(type(tree))
    if node is not None:
        children, context = node.flatten_fn(tree)
        return type(tree), context, list(children)
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
    if spec.kind in SUPPORTED_NODES:
        return SUPPORTED_NODES[spec.kind].unflatten_fn(children, spec.context)
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
