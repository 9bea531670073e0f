"""Which models' parameters an optimizer is built over, read through the names the same
scope builds its parameter lists in.

``Adam(model.parameters())`` names its model in the call. Just as often the call receives a
name: ``params = list(encoder.parameters()) + list(decoder.parameters())``, param groups
``[{"params": backbone.parameters(), "lr": 1e-4}, {"params": head.parameters()}]``, or a list
grown with ``append``/``extend``/``+=``. Those are followed a few names deep. Anything else
(a helper that returns parameters, a comprehension over several models) makes the list
opaque, and then only the models named in the call itself count: what cannot be read is
not guessed.
"""
from __future__ import annotations

import ast

from lint_rules import syntax
from lint_rules.events import dotted

_PASS_THROUGH = frozenset({"list", "tuple", "set", "chain", "filter"})
_GROWING = frozenset({"append", "extend"})
_DEPTH = 2  # names followed through names: `params = g_params + d_params`

Models = set[str] | None  # None: opaque


def constructor_models(call: ast.Call, scope: ast.AST) -> set[str]:
    """The models whose parameters ``call`` (an optimizer's constructor) receives."""
    named = {dotted(n.func.value) or "" for n in syntax.walk(call) if _reads_parameters(n)} - {""}
    args = syntax.positional(call)
    first = args[0] if args else syntax.keyword(call, "params")
    if first is None:
        return named
    found = _models_in(first, scope, _DEPTH)
    return named if found is None else named | found


def _reads_parameters(node: ast.AST) -> bool:
    return type(node) is ast.Call and type(node.func) is ast.Attribute \
        and node.func.attr in ("parameters", "named_parameters")


def _models_in(value: ast.AST, scope: ast.AST, depth: int) -> Models:
    kind = type(value)
    if _reads_parameters(value):
        model = dotted(value.func.value)
        return {model} if model else None
    if kind is ast.Call:
        return _through_call(value, scope, depth)
    if kind in (ast.List, ast.Tuple, ast.Set):
        return _union([e.value if type(e) is ast.Starred else e for e in value.elts], scope, depth)
    if kind is ast.Dict:
        groups = [v for k, v in zip(value.keys, value.values)
                  if k is not None and syntax.constant(k) == "params"]
        return _union(groups, scope, depth) if groups else None
    if kind is ast.BinOp and type(value.op) is ast.Add:
        return _union([value.left, value.right], scope, depth)
    if kind in (ast.ListComp, ast.GeneratorExp) and len(value.generators) == 1:
        loop = value.generators[0]
        # `[p for p in model.parameters() if p.requires_grad]`: the elements themselves
        if type(value.elt) is ast.Name and value.elt.id in syntax.stored_names(loop.target):
            return _models_in(loop.iter, scope, depth)
        return None
    if kind is ast.Name:
        return _through_name(value.id, scope, depth)
    return None


def _through_call(call: ast.Call, scope: ast.AST, depth: int) -> Models:
    if syntax.callee_name(call) not in _PASS_THROUGH or call.keywords:
        return None
    args = syntax.positional(call)
    if syntax.callee_name(call) == "filter":  # filter(lambda p: p.requires_grad, params)
        args = args[1:]
    return _union(args, scope, depth)


def _union(values: list[ast.AST], scope: ast.AST, depth: int) -> Models:
    found: set[str] = set()
    for value in values:
        models = _models_in(value, scope, depth)
        if models is None:
            return None
        found |= models
    return found


def _through_name(name: str, scope: ast.AST, depth: int) -> Models:
    """The models of every value ``scope`` binds to ``name`` or adds to it."""
    if depth == 0:
        return None
    values = list(_values_given(name, scope))
    return _union(values, scope, depth - 1) if values else None


def _values_given(name: str, scope: ast.AST) -> list[ast.AST]:
    return syntax.memoised("values given", scope, _values_by_name).get(name, [])


def _values_by_name(scope: ast.AST) -> dict[str, list[ast.AST]]:
    """Every value ``scope`` binds to a plain name, adds to it, or appends to it, by name
    (one walk of the scope, however many names are asked about)."""
    given: dict[str, list[ast.AST]] = {}
    for node in syntax.walk(scope):
        kind = type(node)
        if kind is ast.Assign:
            for target in node.targets:
                if type(target) is ast.Name:
                    given.setdefault(target.id, []).append(node.value)
        elif kind is ast.AugAssign and type(node.target) is ast.Name:
            given.setdefault(node.target.id, []).append(node.value)
        elif kind is ast.Call and type(node.func) is ast.Attribute and node.func.attr in _GROWING \
                and type(node.func.value) is ast.Name:
            given.setdefault(node.func.value.id, []).extend(node.args)
    return given
