"""Run the flow analysis over every unit of a module and sort its issues by rule.

A unit is the module body or one function. Lightning's ``training_step`` has no loop of its
own (the trainer calls it once per batch), so its body is analysed as a loop body; so is the
body of any function that this file never calls, since its caller elsewhere presumably runs
it once per batch.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from lint_rules import events as ev
from lint_rules.flow import Interpreter, Issue
from lint_rules.source import SourceText
from lint_rules.summaries import ModuleIndex

# Hooks that a framework calls once per batch, so their bodies repeat like a loop body.
REPEATED_HOOKS = frozenset({"training_step"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


@dataclass
class Analysis:
    """Everything the rules read: the parsed module, its text and the flow issues."""

    tree: ast.Module
    text: SourceText
    index: ModuleIndex
    gc001: list[Issue] = field(default_factory=list)
    gc002: list[Issue] = field(default_factory=list)
    gc003: list[tuple[ev.Event, ast.AST, Issue]] = field(default_factory=list)

    def statement_of(self, node: ast.AST) -> ast.stmt | None:
        """The statement that contains ``node`` (itself if it is one)."""
        while node is not None and not isinstance(node, ast.stmt):
            node = self.index.parents.get(id(node))
        return node

    def function_of(self, node: ast.AST) -> ast.AST | None:
        """The innermost function or lambda around ``node``; None at module level."""
        node = self.index.parents.get(id(node))
        while node is not None and not isinstance(node, _SCOPES):
            node = self.index.parents.get(id(node))
        return node


def analyse(tree: ast.Module, text: SourceText) -> Analysis:
    """Interpret every unit that holds a gradient event and collect GC001/GC002/GC003 issues."""
    index = ModuleIndex(tree)
    analysis = Analysis(tree, text, index)
    issues: dict[tuple, tuple[Issue, dict]] = {}
    for body, class_name, repeat, function in _units(tree, index):
        interpreter = Interpreter(index, text)
        if not any(interpreter.contains_events(stmt) for stmt in body):
            continue
        interpreter.run(body, class_name, repeat, function)
        for key, issue in interpreter.issues.items():
            if not _matched_windows(issue, interpreter.counter_zeroed_in_loop):
                issues.setdefault(key, (issue, interpreter.zeroed_in_loop))
    for issue, zeroed in issues.values():
        if issue.code == "GC001":
            analysis.gc001.append(issue)
            continue
        once = _zeroed_once_before(analysis, issue, zeroed)
        if once is None:
            analysis.gc002.append(issue)
        else:
            analysis.gc003.append((once[0], once[1], issue))
    return analysis


def _units(tree: ast.Module, index: ModuleIndex):
    yield tree.body, None, None, None
    stack = [n for n in tree.body if index.contains_events(n)]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            # A function this file never calls is called from elsewhere, typically once per
            # batch (like dslinter's W5517, we judge its body as a loop body).
            repeated = node.name in REPEATED_HOOKS or node.name not in index.referenced
            yield node.body, index.enclosing_class(node), node if repeated else None, node
        stack.extend(c for c in ast.iter_child_nodes(node) if index.contains_events(c))


def _matched_windows(issue: Issue, counter_zeroed: dict[int, set[str]]) -> bool:
    """A counter-gated step in a loop that also resets under a counter test: the two tests
    are assumed to delimit the same accumulation window (we do not do modular arithmetic)."""
    if issue.code != "GC002" or not issue.counter_gated or not issue.loops:
        return False
    zeroed = counter_zeroed.get(id(issue.loops[-1]), set())
    return ev.ALL in zeroed or issue.optimizer in zeroed


def _zeroed_once_before(
    analysis: Analysis, issue: Issue, zeroed: dict[int, set[str]]
) -> tuple[ev.Event, ast.AST] | None:
    """For a stale step in a loop that never zeroes: the zero that runs once before that loop."""
    loops = [n for n in issue.loops if isinstance(n, (ast.For, ast.AsyncFor, ast.While))]
    if not loops:
        return None
    loop = loops[-1]
    inside = zeroed.get(id(loop), set())
    if ev.ALL in inside or issue.optimizer in inside:
        return None
    node = loop
    index = analysis.index
    while True:
        parent = index.parents.get(id(node))
        if parent is None or isinstance(parent, (ast.Lambda, ast.ClassDef)):
            return None
        for name in ("body", "orelse", "finalbody"):
            block = getattr(parent, name, None)
            if not isinstance(block, list):
                continue
            position = next((i for i, s in enumerate(block) if s is node), None)
            if position is None:
                continue
            for stmt in reversed(block[:position]):
                event = _zero_statement(analysis, stmt, issue.optimizer)
                if event is not None:
                    return event, loop
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        node = parent


def _zero_statement(analysis: Analysis, stmt: ast.stmt, optimizer: str) -> ev.Event | None:
    node: ast.AST | None = None
    target = ev.ALL
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        receiver = ev.zero_call_receiver(stmt.value)
        if receiver is not None:
            node, target = stmt.value, receiver
    elif isinstance(stmt, ast.For) and ev.param_loop_zeroes(stmt):
        node, target = stmt, ev.param_loop_owner(stmt) or ev.ALL
    elif ev.is_grad_zeroing(stmt):
        node = stmt
    if node is None or not _zeroes(analysis.index, target, optimizer):
        return None
    line, col = analysis.text.start(node)
    return ev.Event(ev.ZERO, node, line, col, analysis.text.segment(node), target)


def _zeroes(index: ModuleIndex, target: str, optimizer: str) -> bool:
    if target in (ev.ALL, optimizer) or ev.last_name(target) == ev.last_name(optimizer):
        return True
    if index.is_optimizer(target) and not ev.is_group_name(target):
        return False
    owned = index.optimizers_of_model(target)
    return not owned or optimizer in owned
