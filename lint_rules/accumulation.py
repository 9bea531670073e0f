"""Running totals that add a backpropagated loss tensor inside a loop (what GC004 reports).

Within one unit (the module body or a function, nested definitions excluded), a loss is a
name whose value flows into a ``backward()`` call; a running total is ``total += expr`` or
``total = total + expr`` inside a loop (or in ``training_step``, which repeats per batch).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from lint_rules import events as ev
from lint_rules import syntax

_LOOPS = (cst.For, cst.While)
# Calls whose result no longer references the autograd graph.
_DETACHING = ("item", "detach", "tolist", "cpu", "numpy", "float", "int")


@dataclass(frozen=True)
class RunningTotal:
    """``statement`` adds the loss ``name`` (at the ``hits`` names) into ``target``."""

    statement: cst.CSTNode
    target: cst.CSTNode
    name: str
    backward: cst.Call
    hits: tuple[cst.Name, ...]


def running_totals(analysis) -> Iterator[RunningTotal]:
    """Every running total of a loss, unit by unit."""
    units: dict[int, cst.CSTNode] = {}
    for call in analysis.index.backward_calls:
        unit = analysis.function_of(call)
        if isinstance(unit, (cst.Lambda, cst.ClassDef)):
            continue
        unit = unit or analysis.tree
        units[id(unit)] = unit
    for unit in units.values():
        yield from _unit_totals(analysis, unit)


def _unit_totals(analysis, unit: cst.CSTNode) -> Iterator[RunningTotal]:
    nodes = list(_own_nodes(unit))
    losses: dict[str, cst.Call] = {}
    for node in nodes:
        if isinstance(node, cst.Call) and ev.is_backward_call(node):
            loss = ev.backward_loss(node)
            for name in _value_names(loss) if loss is not None else ():
                losses.setdefault(name.value, node)
    if not losses:
        return
    detached = {
        t.target.value for n in nodes if isinstance(n, cst.Assign) and _detaches(n.value)
        for t in n.targets if isinstance(t.target, cst.Name)
    }
    repeated = isinstance(unit, cst.FunctionDef) and unit.name.value == "training_step"
    for node in nodes:
        summed = _summed_value(node)
        if summed is None:
            continue
        target, value = summed
        if ev.dotted(target) in losses or not (repeated or _in_loop(analysis, node, unit)):
            continue
        hits = tuple(n for n in _value_names(value) if n.value in losses and n.value not in detached)
        if hits:
            name = hits[0].value
            yield RunningTotal(node, target, name, losses[name], hits)


def _own_nodes(unit: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Nodes of ``unit`` that are not inside a nested function or class."""
    block = unit if isinstance(unit, cst.Module) else unit.body
    stack = [s for s in syntax.statements(block) if not isinstance(s, syntax.SCOPES)]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(c for c in syntax.children(node) if not isinstance(c, syntax.SCOPES))


def _summed_value(node: cst.CSTNode):
    if isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.AddAssign):
        return node.target, node.value
    if (
        isinstance(node, cst.Assign)
        and len(node.targets) == 1
        and isinstance(node.value, cst.BinaryOperation)
        and isinstance(node.value.operator, cst.Add)
        and ev.dotted(node.value.left) is not None
        and ev.dotted(node.value.left) == ev.dotted(node.targets[0].target)
    ):
        return node.targets[0].target, node.value.right
    return None


def _value_names(expr: cst.CSTNode) -> list[cst.Name]:
    """Names whose tensor value flows into ``expr`` through arithmetic or ``scaler.scale(...)``."""
    if isinstance(expr, cst.Name):
        return [expr]
    if isinstance(expr, cst.BinaryOperation):
        return _value_names(expr.left) + _value_names(expr.right)
    if isinstance(expr, cst.UnaryOperation):
        return _value_names(expr.expression)
    if isinstance(expr, cst.Call) and syntax.callee_name(expr) == "scale" and isinstance(expr.func, cst.Attribute):
        return [n for a in syntax.positional(expr) for n in _value_names(a)]
    return []


def _detaches(value: cst.CSTNode) -> bool:
    return isinstance(value, cst.Call) and syntax.callee_name(value) in _DETACHING


def _in_loop(analysis, node: cst.CSTNode, unit: cst.CSTNode) -> bool:
    parent = analysis.index.parents.get(id(node))
    while parent is not None and parent is not unit:
        if isinstance(parent, _LOOPS):
            return True
        parent = analysis.index.parents.get(id(parent))
    return False
