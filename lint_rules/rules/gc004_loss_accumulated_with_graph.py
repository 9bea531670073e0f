"""GC004 loss-accumulated-with-graph."""
from __future__ import annotations

import ast
from typing import ClassVar

from lint_rules import events as ev
from lint_rules.finding import Edit
from lint_rules.rules.base import Invalid, Rule, Valid

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_DETACHING = ("item", "detach", "tolist", "cpu", "numpy", "float", "int")


class LossAccumulatedWithGraph(Rule):
    """## What it does
    Flags `total += loss` (or `total = total + loss`) inside a loop, where `loss` is the tensor
    that the same function backpropagates, added without `.item()` or `.detach()`.

    ## Why is this bad?
    The running total becomes a tensor that references `loss`, and through it the whole
    autograd graph of every iteration. None of those graphs can be freed, so memory grows with
    every step until the run fails with an out-of-memory error, usually hours in.

    ## Known problems
    The rule only recognises the backpropagated loss by name within one function. A total that
    is itself backpropagated later (summing losses on purpose) is not flagged.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        running_loss += loss
    ```

    ## Use instead
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        running_loss += loss.item()
    ```

    ## Fix safety
    The fix appends `.item()` to the loss in the sum. It is always unsafe: if the total is
    used as a tensor later (moved to a device, all-reduced, backpropagated), a Python float
    breaks that code.
    """

    CODE = "GC004"
    NAME = "loss-accumulated-with-graph"
    MESSAGE = "a running total keeps every iteration's autograd graph alive"
    SEVERITY = "warning"
    FIX_SAFETY = "unsafe"

    VALID: ClassVar[list[Valid]] = [
        Valid(
            "for x, y in loader:\n"
            "    loss = criterion(model(x), y)\n"
            "    loss.backward()\n"
            "    total += loss.item()\n"
        ),
        Valid(
            "for x, y in loader:\n"
            "    loss = criterion(model(x), y)\n"
            "    loss.backward()\n"
            "    total += loss.detach() * x.size(0)\n"
        ),
        Valid(
            "for head in heads:\n"
            "    loss += head(x)\n"
            "loss.backward()\n"
        ),
        Valid(
            "for x, y in loader:\n"
            "    loss = criterion(model(x), y)\n"
            "    total_loss += loss\n"
            "total_loss.backward()\n"
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            "for x, y in loader:\n"
            "    loss = criterion(model(x), y)\n"
            "    loss.backward()\n"
            "    running_loss += loss\n",
            (4,),
            "for x, y in loader:\n"
            "    loss = criterion(model(x), y)\n"
            "    loss.backward()\n"
            "    running_loss += loss.item()\n",
        ),
        Invalid(
            "def train(model, loader, scaler):\n"
            "    total = 0.0\n"
            "    for x, y in loader:\n"
            "        loss = model(x, y)\n"
            "        scaler.scale(loss).backward()\n"
            "        scaler.step(optimizer)\n"
            "        optimizer.zero_grad()\n"
            "        total = total + loss * x.shape[0]   \n",
            (8,),
            "def train(model, loader, scaler):\n"
            "    total = 0.0\n"
            "    for x, y in loader:\n"
            "        loss = model(x, y)\n"
            "        scaler.scale(loss).backward()\n"
            "        scaler.step(optimizer)\n"
            "        optimizer.zero_grad()\n"
            "        total = total + loss.item() * x.shape[0]   \n",
        ),
    ]

    @classmethod
    def check(cls, analysis) -> list:
        findings = []
        units: dict[int, ast.AST] = {}
        for call in analysis.index.backward_calls:
            unit = analysis.function_of(call)
            if isinstance(unit, (ast.Lambda, ast.ClassDef)):
                continue
            unit = unit or analysis.tree
            units[id(unit)] = unit
        for unit in units.values():
            findings.extend(_check_unit(cls, analysis, unit))
        return findings


def _check_unit(cls, analysis, unit: ast.AST) -> list:
    nodes = list(_own_nodes(unit))
    losses: dict[str, ast.Call] = {}
    for node in nodes:
        if isinstance(node, ast.Call) and ev.is_backward_call(node):
            loss = ev.backward_loss(node)
            for name in _value_names(loss) if loss is not None else ():
                losses.setdefault(name.id, node)
    if not losses:
        return []
    detached = {
        t.id for n in nodes if isinstance(n, ast.Assign) and _detaches(n.value)
        for t in n.targets if isinstance(t, ast.Name)
    }
    repeated = getattr(unit, "name", "") == "training_step"
    findings = []
    for node in nodes:
        summed = _summed_value(node)
        if summed is None:
            continue
        target, value = summed
        target_key = ev.dotted(target)
        if target_key in losses or not (repeated or _in_loop(analysis, node, unit)):
            continue
        hits = [n for n in _value_names(value) if n.id in losses and n.id not in detached]
        if not hits:
            continue
        name = hits[0].id
        bw = losses[name]
        bw_line = analysis.text.start(bw)[0]
        message = (
            f"`{analysis.text.segment(target)}` accumulates `{name}`, the tensor that "
            f"`{' '.join(analysis.text.segment(bw).split())}` (line {bw_line}) backpropagates: every "
            f"iteration's autograd graph stays alive and memory grows each step; add "
            f"`{name}.item()` (or `{name}.detach()`) instead."
        )
        edits = tuple(
            Edit(end, end, ".item()")
            for end in (analysis.text.offset(n.end_lineno, n.end_col_offset) for n in hits)
        )
        findings.append(cls.finding(analysis, node, message, edits, safe=False,
                                    description=f"add `{name}.item()` instead of `{name}`"))
    return findings


def _own_nodes(unit: ast.AST):
    """Nodes of ``unit`` that are not inside a nested function or class."""
    stack = [s for s in unit.body if not isinstance(s, _SCOPES)]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, _SCOPES):
                stack.append(child)


def _summed_value(node: ast.AST):
    if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
        return node.target, node.value
    if (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.value, ast.BinOp)
        and isinstance(node.value.op, ast.Add)
        and ev.dotted(node.value.left) is not None
        and ev.dotted(node.value.left) == ev.dotted(node.targets[0])
    ):
        return node.targets[0], node.value.right
    return None


def _value_names(expr: ast.AST) -> list[ast.Name]:
    """Names whose tensor value flows into ``expr`` through arithmetic or call arguments."""
    if isinstance(expr, ast.Name):
        return [expr]
    if isinstance(expr, ast.BinOp):
        return _value_names(expr.left) + _value_names(expr.right)
    if isinstance(expr, ast.UnaryOp):
        return _value_names(expr.operand)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "scale":
        return [n for a in expr.args for n in _value_names(a)]
    return []


def _detaches(value: ast.AST) -> bool:
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in _DETACHING
    return False


def _in_loop(analysis, node: ast.AST, unit: ast.AST) -> bool:
    parent = analysis.index.parents.get(id(node))
    while parent is not None and parent is not unit:
        if isinstance(parent, _LOOPS):
            return True
        parent = analysis.index.parents.get(id(parent))
    return False
