"""``torch.fx.node``: one operation of a graph.

A Node has an ``op`` (``placeholder``, ``get_attr``, ``call_function``, ``call_method``,
``call_module`` or ``output``), a ``target``, ``args``/``kwargs`` that may hold other nodes,
and ``users``, the nodes reading it. Setting ``args``/``kwargs`` keeps the use lists right.
"""
from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, Union

from gradcheck.ref.fx.immutable_collections import immutable_dict, immutable_list

Target = Union[Callable[..., Any], str]
Argument = Any
BaseArgumentTypes = (str, int, float, bool, complex, type(None), type(Ellipsis))
_side_effectful_functions: set = set()


def has_side_effect(fn: Callable) -> Callable:
    """Keep calls of ``fn`` through ``Graph.eliminate_dead_code`` even when unused."""
    _side_effectful_functions.add(fn)
    return fn

# the engine's namespaces, named as torch names them in printed graphs and code
NAMESPACES = (("gradcheck.ref.nn.functional", "torch.nn.functional"),
              ("gradcheck.ref.special", "torch.special"), ("gradcheck.ref.linalg", "torch.linalg"),
              ("gradcheck.ref", "torch"))


# functionals that torch names by another home: its kernels and its aliases of torch.*
_ALIASED = ("relu_", "hardshrink", "pairwise_distance", "pdist", "cosine_similarity", "conv1d",
            "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
            "avg_pool1d", "adaptive_avg_pool1d", "prelu", "bilinear", "pixel_shuffle",
            "pixel_unshuffle")


def _namespace_name(target: Any) -> str | None:
    import importlib

    name = getattr(target, "__name__", None)
    for module_name, torch_name in NAMESPACES:
        module = importlib.import_module(module_name)
        if name is not None and getattr(module, name, None) is target:
            if torch_name == "torch.nn.functional":
                return _functional_home(name, target)
            return f"{torch_name}.{name}"
    return None


def _functional_home(name: str, target: Any) -> str:
    """Where torch's own functional of this name lives, when the engine has it there too
    (generated code must run on the engine)."""
    from gradcheck import ref
    from gradcheck.ref._C import NN_KERNELS

    if name in NN_KERNELS:
        return f"torch._C._nn.{name}"
    if name in _ALIASED and getattr(ref, name, None) is target:
        return f"torch.{name}"
    return f"torch.nn.functional.{name}"


def _get_qualified_name(target: Any) -> str:
    """How torch names a call_function target: ``torch.relu``, ``operator.add``,
    ``builtins.getattr``, ``module.function`` for anything else."""
    if getattr(target, "_fx_qualname", None):
        return target._fx_qualname
    found = _namespace_name(target)
    if found:
        return found
    module = getattr(target, "__module__", None) or ""
    if module == "_operator":
        module = "operator"
    name = target.__qualname__ if isinstance(target, types.FunctionType) else target.__name__
    return f"{module}.{name}"


def map_aggregate(a: Argument, fn: Callable[[Argument], Argument]) -> Argument:
    """Apply ``fn`` to every leaf of ``a`` through tuples, lists, dicts and slices."""
    if isinstance(a, tuple):
        mapped = tuple(map_aggregate(elem, fn) for elem in a)
        return type(a)(*mapped) if hasattr(a, "_fields") else mapped
    if isinstance(a, list):
        return immutable_list(map_aggregate(elem, fn) for elem in a)
    if isinstance(a, dict):
        return immutable_dict((k, map_aggregate(v, fn)) for k, v in a.items())
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Argument, fn: Callable[[Node], Argument]) -> Argument:
    """Apply ``fn`` to every Node inside ``a``."""
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


class Node:
    """One operation; its ``name`` is its variable in the generated code."""

    def __init__(self, graph: Any, name: str, op: str, target: Target, args: tuple,
                 kwargs: dict, return_type: Any = None) -> None:
        if op not in ("placeholder", "call_method", "call_module", "call_function",
                      "get_attr", "output", "root"):
            raise ValueError(f"Unsupported node op {op!r}")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.type = return_type
        self.users: dict[Node, None] = {}
        self.meta: dict[str, Any] = {}
        self._input_nodes: dict[Node, None] = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        self._update_args_kwargs(args, kwargs)

    # -- arguments and uses ------------------------------------------------------------------
    def _update_args_kwargs(self, args: tuple, kwargs: dict) -> None:
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        self._args = map_arg(tuple(args), self._collect)
        self._kwargs = map_arg(dict(kwargs), self._collect)
        for new in self._input_nodes:
            new.users.setdefault(self)

    def _collect(self, node: Node) -> Node:
        self._input_nodes.setdefault(node)
        return node

    @property
    def args(self) -> tuple:
        return self._args

    @args.setter
    def args(self, value: tuple) -> None:
        self._update_args_kwargs(value, self._kwargs)

    @property
    def kwargs(self) -> dict:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value: dict) -> None:
        self._update_args_kwargs(self._args, value)

    @property
    def all_input_nodes(self) -> list[Node]:
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg: Argument) -> None:
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg: Argument) -> None:
        self.kwargs = {**self.kwargs, key: arg}

    def replace_input_with(self, old: Node, new: Node) -> None:
        def swap(n: Node) -> Node:
            return new if n is old else n

        self._update_args_kwargs(map_arg(self.args, swap), map_arg(self.kwargs, swap))

    def replace_all_uses_with(self, replace_with: Node,
                              delete_user_cb: Callable[[Node], bool] = lambda user: True, *,
                              propagate_meta: bool = False) -> list[Node]:
        """Make every user read ``replace_with`` instead; returns the users changed."""
        changed = [user for user in list(self.users) if delete_user_cb(user)]
        for user in changed:
            user.replace_input_with(self, replace_with)
        return changed

    # -- position in the graph ---------------------------------------------------------------
    @property
    def next(self) -> Node | None:
        return self.graph._neighbour(self, 1)

    @property
    def prev(self) -> Node | None:
        return self.graph._neighbour(self, -1)

    def prepend(self, x: Node) -> None:
        """Move ``x`` just before this node."""
        self.graph._move(x, self, after=False)

    def append(self, x: Node) -> None:
        """Move ``x`` just after this node."""
        self.graph._move(x, self, after=True)

    def is_impure(self, impure_random: bool = True) -> bool:
        """Whether dead-code elimination must keep this node."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function" and self.target in _side_effectful_functions:
            return True
        if self.op == "call_module":
            module = self.graph.owning_module
            return bool(module and getattr(module.get_submodule(self.target), "_is_impure",
                                           False))
        name = self.target if isinstance(self.target, str) else getattr(self.target,
                                                                        "__name__", "")
        return name.endswith("_") and not name.endswith("__")

    # -- printing ----------------------------------------------------------------------------
    def _pretty_target(self) -> str:
        if self.op == "call_function":
            return _get_qualified_name(self.target)
        return str(self.target)

    def format_node(self, placeholder_names: list | None = None,
                    maybe_return_typename: list | None = None) -> str | None:
        users = f"[num_users={len(self.users)}]"
        if self.op == "placeholder":
            if placeholder_names is not None:
                placeholder_names.append(self.target)
                return None
            default = f"(default={self.args[0]})" if self.args else ""
            return f"%{self.name} : {users} = placeholder[target={self.target}]{default}"
        if self.op == "get_attr":
            return f"%{self.name} : {users} = get_attr[target={self.target}]"
        if self.op == "output":
            return f"return {self.args[0]}"
        return (f"%{self.name} : {users} = {self.op}[target={self._pretty_target()}]"
                f"(args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})")

    def __repr__(self) -> str:
        return self.name


def _format_arg(arg: Any) -> str:
    """The argument as torch prints it in a graph: nodes as ``%name``, no quotes on keys."""
    if isinstance(arg, Node):
        return f"%{arg}"
    if isinstance(arg, tuple):
        items = ", ".join(_format_arg(a) for a in arg)
        return f"({items},)" if len(arg) == 1 else f"({items})"
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    return str(arg)

