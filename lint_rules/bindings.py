"""Which binding of a name a use sees, and whether code runs where autograd records nothing.

A name bound twice is two values: the ``loss`` of a validation loop is not the ``loss`` the
training loop backpropagated. ``Bindings`` answers "which statement bound the value that
``name`` holds here?" for one function (or module body), the way a semantic model does,
without a full data-flow analysis: the binding is the last one that precedes the use in the
text of the same scope. A loop's back edge (a use before the binding that feeds it on the
next iteration) is not followed; it then names another binding, and the rules stay silent.

>>> tree = ast.parse("loss = a\\nloss.backward()\\nloss = b\\ntotal += loss\\n")
>>> bindings = Bindings(tree, {})
>>> [bindings.reaching("loss", stmt).lineno for stmt in tree.body[1::2]]
[1, 3]
"""
from __future__ import annotations

import bisect

import ast

from lint_rules import syntax

# Context managers and decorators under which autograd records no graph.
_GRAPH_FREE = frozenset({"no_grad", "inference_mode"})


class Bindings:
    """The binding statements of every name in one scope, in source order."""

    def __init__(self, unit: ast.AST, parents: dict[int, ast.AST], nodes=None) -> None:
        """``nodes``: the scope's own nodes, when the caller has them already."""
        self.parents = parents
        self._at: dict[str, list[tuple[tuple[int, int], ast.AST]]] = {}
        for node in nodes if nodes is not None else own_nodes(unit):
            if type(node) in _BINDERS:
                for name in _bound_here(node):
                    self._at.setdefault(name, []).append(((node.lineno, node.col_offset), node))
        for entries in self._at.values():
            entries.sort(key=lambda entry: entry[0])

    def of(self, name: str) -> list[ast.AST]:
        """Every statement of this scope that binds ``name``, in source order."""
        return [node for _, node in self._at.get(name, ())]

    def reaching(self, name: str, use: ast.AST) -> ast.AST | None:
        """The statement whose binding of ``name`` the code at ``use`` sees; None for a
        parameter, a global or anything bound before this scope."""
        entries = self._at.get(name)
        if not entries:
            return None
        where = (use.lineno, use.col_offset)
        index = bisect.bisect_left(entries, where, key=lambda entry: entry[0]) - 1
        while index >= 0:
            binding = entries[index][1]
            if _seen_from(binding, use):
                return binding
            index -= 1
        return None

    def reaching_all(self, name: str, use: ast.AST) -> list[ast.AST | None]:
        """Every binding of ``name`` that may reach ``use``: the last one before it, and the
        ones before that while the later ones sit in a branch that may not run (a loss
        rebound to a detached copy under `if distributed:` leaves the loss itself on the
        other path); None stands for a binding from outside this scope."""
        entries = self._at.get(name) or []
        where = (use.lineno, use.col_offset)
        index = bisect.bisect_left(entries, where, key=lambda entry: entry[0]) - 1
        found: list[ast.AST | None] = []
        while index >= 0:
            binding = entries[index][1]
            index -= 1
            if not _seen_from(binding, use):
                continue
            found.append(binding)
            if self._always_before(binding, use):
                return found
        return [*found, None]

    def _always_before(self, binding: ast.AST, use: ast.AST) -> bool:
        """Whether every path to ``use`` runs ``binding``: no branch, loop or handler around
        the binding leaves ``use`` outside it."""
        current = self.parents.get(id(binding))
        child = binding
        while current is not None:
            if type(current) in _BRANCHES:
                if not _contains(current, use):
                    return False
                if type(current) is ast.If and (_in(current.body, child) != _in(current.body, use)):
                    return False
            child, current = current, self.parents.get(id(current))
        return True


_BRANCHES = frozenset({ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.ExceptHandler,
                       ast.match_case, *(t for t in syntax.TRIES)})


def _in(block: list[ast.stmt], node: ast.AST) -> bool:
    return any(_contains(stmt, node) or stmt is node for stmt in block)


def _seen_from(binding: ast.AST, use: ast.AST) -> bool:
    """Whether code at ``use`` sees what ``binding`` binds: not from inside the value being
    bound (``loss = loss.detach()`` reads the old loss), nor from a loop's iterable."""
    kind = type(binding)
    if kind in (ast.For, ast.AsyncFor):
        return not _contains(binding.iter, use)
    if kind in (ast.With, ast.AsyncWith):
        return not any(_contains(item.context_expr, use) for item in binding.items)
    value = getattr(binding, "value", None)
    return value is None or not _contains(value, use)


_BINDERS = frozenset({ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.With,
                      ast.AsyncWith, ast.NamedExpr})


def own_nodes(unit: ast.AST):
    """Nodes of ``unit`` that are not inside a nested function or class."""
    scopes, children = syntax.SCOPES, syntax.children
    stack = [s for s in getattr(unit, "body", []) if not isinstance(s, scopes)]
    pop, extend = stack.pop, stack.extend
    while stack:
        node = pop()
        yield node
        extend([c for c in children(node) if not isinstance(c, scopes)])


def _bound_here(node: ast.AST) -> set[str]:
    kind = type(node)
    if kind is ast.Assign:
        return {n for t in node.targets for n in syntax.stored_names(t)}
    if kind in (ast.AnnAssign, ast.AugAssign) and node.value is not None:
        return syntax.stored_names(node.target)
    if kind in (ast.For, ast.AsyncFor):
        return syntax.stored_names(node.target)
    if kind in (ast.With, ast.AsyncWith):
        return {n for item in node.items if item.optional_vars is not None
                for n in syntax.stored_names(item.optional_vars)}
    if kind is ast.NamedExpr:
        return syntax.stored_names(node.target)
    return set()


def _contains(outer: ast.AST, inner: ast.AST) -> bool:
    end = (getattr(outer, "end_lineno", 0), getattr(outer, "end_col_offset", 0))
    return (outer.lineno, outer.col_offset) <= (inner.lineno, inner.col_offset) < end


def graph_free_context(node: ast.AST, parents: dict[int, ast.AST], stop: ast.AST | None = None) -> bool:
    """Whether ``node`` runs under ``torch.no_grad()``, ``inference_mode()`` or
    ``set_grad_enabled(False)`` (a ``with`` around it, or a decorator of a function around it),
    looking no further out than ``stop``."""
    current: ast.AST | None = node
    while current is not None:
        kind = type(current)
        if kind in (ast.With, ast.AsyncWith) and current is not node \
                and any(_graph_free(item.context_expr) for item in current.items):
            return True
        if isinstance(current, syntax.FUNCTIONS) and any(map(_graph_free, current.decorator_list)):
            return True
        if current is stop:
            return False
        current = parents.get(id(current))
    return False


def graph_free(expr: ast.AST) -> bool:
    """Whether a context manager or decorator turns autograd's recording off."""
    return _graph_free(expr)


def _graph_free(expr: ast.AST) -> bool:
    call = expr if type(expr) is ast.Call else None
    name = syntax.callee_name(call) if call is not None else (
        expr.attr if type(expr) is ast.Attribute else getattr(expr, "id", ""))
    if name in _GRAPH_FREE:
        return True
    if name == "set_grad_enabled" and call is not None and call.args:
        return syntax.constant(call.args[0]) is False
    return False
