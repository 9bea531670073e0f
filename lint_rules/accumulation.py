"""Running totals that add a backpropagated loss tensor inside a loop (what GC004 reports).

Within one unit (the module body or a function, nested definitions excluded), a loss is a
name whose value flows into a ``backward()`` call; a running total is ``total += expr`` or
``total = total + expr`` inside a loop (or in ``training_step``, which repeats per batch).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import ast

from lint_rules import events as ev
from lint_rules import syntax

_LOOPS = syntax.LOOPS
# Calls whose result no longer references the autograd graph.
_DETACHING = ("item", "detach", "tolist", "cpu", "numpy", "float", "int")


@dataclass(frozen=True)
class RunningTotal:
    """``statement`` adds the loss ``name`` (at the ``hits`` names) into ``target``."""

    statement: ast.AST
    target: ast.AST
    name: str
    backward: ast.Call
    hits: tuple[ast.Name, ...]


def running_totals(analysis) -> Iterator[RunningTotal]:
    """Every running total of a loss, unit by unit."""
    units: dict[int, ast.AST] = {}
    for call in analysis.index.backward_calls:
        unit = analysis.function_of(call)
        if isinstance(unit, (ast.Lambda, ast.ClassDef)):
            continue
        unit = unit or analysis.tree
        units[id(unit)] = unit
    for unit in units.values():
        yield from _unit_totals(analysis, unit)


def _unit_totals(analysis, unit: ast.AST) -> Iterator[RunningTotal]:
    nodes = list(_own_nodes(unit))
    losses: dict[str, ast.Call] = {}
    for node in nodes:
        if type(node) is ast.Call and ev.is_backward_call(node):
            loss = ev.backward_loss(node)
            for name in _value_names(loss) if loss is not None else ():
                losses.setdefault(name.id, node)
    if not losses:
        return
    detached = {
        t.id for n in nodes if type(n) is ast.Assign and _detaches(n.value)
        for t in n.targets if type(t) is ast.Name
    }
    repeated = isinstance(unit, syntax.FUNCTIONS) and unit.name == "training_step"
    for node in nodes:
        summed = _summed_value(node)
        if summed is None:
            continue
        target, value = summed
        if ev.dotted(target) in losses or not (repeated or _in_loop(analysis, node, unit)):
            continue
        hits = tuple(n for n in _value_names(value) if n.id in losses and n.id not in detached)
        if hits:
            name = hits[0].id
            yield RunningTotal(node, target, name, losses[name], hits)


def _own_nodes(unit: ast.AST) -> Iterator[ast.AST]:
    """Nodes of ``unit`` that are not inside a nested function or class."""
    stack = [s for s in unit.body if not isinstance(s, syntax.SCOPES)]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(c for c in syntax.children(node) if not isinstance(c, syntax.SCOPES))


def _summed_value(node: ast.AST):
    kind = type(node)
    if kind is ast.AugAssign and type(node.op) is ast.Add:
        return node.target, node.value
    if (
        kind is ast.Assign
        and len(node.targets) == 1
        and type(node.value) is ast.BinOp
        and type(node.value.op) is ast.Add
        and ev.dotted(node.value.left) is not None
        and ev.dotted(node.value.left) == ev.dotted(node.targets[0])
    ):
        return node.targets[0], node.value.right
    return None


def _value_names(expr: ast.AST) -> list[ast.Name]:
    """Names whose tensor value flows into ``expr`` through arithmetic or ``scaler.scale(...)``."""
    kind = type(expr)
    if kind is ast.Name:
        return [expr]
    if kind is ast.BinOp:
        return _value_names(expr.left) + _value_names(expr.right)
    if kind is ast.UnaryOp:
        return _value_names(expr.operand)
    if kind is ast.Call and syntax.callee_name(expr) == "scale" and type(expr.func) is ast.Attribute:
        return [n for a in syntax.positional(expr) for n in _value_names(a)]
    return []


def _detaches(value: ast.AST) -> bool:
    return type(value) is ast.Call and syntax.callee_name(value) in _DETACHING


def _in_loop(analysis, node: ast.AST, unit: ast.AST) -> bool:
    parent = analysis.index.parents.get(id(node))
    while parent is not None and parent is not unit:
        if isinstance(parent, _LOOPS):
            return True
        parent = analysis.index.parents.get(id(parent))
    return False
