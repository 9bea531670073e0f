"""The anatomy of a training loop: where its backward passes, steps and resets are.

The mutation operators need ground truth that does not come from the linter under test,
so this module reads a scope (a function, or a module's top level) with plain ``ast`` and
names, for each loop that trains, its statement-level events:

- ``backward``: ``loss.backward()``, ``scaler.scale(loss).backward()``,
  ``accelerator.backward(loss)``, ``self.manual_backward(loss)``;
- ``step``: ``optimizer.step()`` or ``scaler.step(optimizer)``;
- ``reset``: ``X.zero_grad()``, ``p.grad = None``, ``p.grad.zero_()``, or a ``for`` loop
  doing only those.

A reset is paired with an optimizer when its receiver is the optimizer (``opt.zero_grad()``
with ``opt.step()``), when the file builds that optimizer over the receiver's parameters
(``opt = Adam(net.parameters())`` pairs ``net.zero_grad()`` with ``opt.step()``), or when
the loop has exactly one reset and one optimizer step. Calls nested inside expressions and
calls in other functions are not events: the harness only mutates what it can see.
"""
from __future__ import annotations

import ast
import itertools
import re
from dataclasses import dataclass, field

LOOPS = (ast.For, ast.AsyncFor, ast.While)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef)
BACKWARD_WRAPPERS = re.compile(r"(accelerator|fabric|engine|autograd|trainer)$", re.IGNORECASE)
NOT_AN_OPTIMIZER = re.compile(r"sched|lr_|warmup|ema|env", re.IGNORECASE)
OPTIMIZER_CLASS = re.compile(
    r"(^|\.)(SGD|Adam|AdamW|Adamax|NAdam|RAdam|RMSprop|Adagrad|Adadelta|LBFGS|ASGD|Rprop|"
    r"SparseAdam|Lamb|LAMB|Lion|Adafactor|FusedAdam|FusedLAMB|Adam8bit|AdamW8bit)$")


@dataclass(frozen=True, eq=False)
class Event:
    """One statement of a training loop: a backward pass, a step or a reset."""

    kind: str  # "backward" | "step" | "reset"
    stmt: ast.stmt
    block: list[ast.stmt]  # the statement list that holds ``stmt``
    ancestors: tuple[ast.stmt, ...]  # enclosing compound statements, outermost first
    target: str | None  # optimizer of a step, receiver of a reset, None for a parameter reset
    losses: frozenset[str] = frozenset()  # names the backward pass differentiates

    @property
    def line(self) -> int:
        return self.stmt.lineno


@dataclass
class Optimizer:
    """One optimizer of a loop, with the resets and steps paired to it."""

    name: str
    steps: list[Event] = field(default_factory=list)
    resets: list[Event] = field(default_factory=list)


@dataclass
class TrainingLoop:
    """A loop (or a per-batch helper's whole body, ``loop=None``) that trains."""

    scope: ast.AST
    loop: ast.stmt | None
    events: list[Event]
    optimizers: list[Optimizer]
    unpaired_resets: list[Event]

    def of(self, kind: str) -> list[Event]:
        return [event for event in self.events if event.kind == kind]


def text(node: ast.AST) -> str:
    return ast.unparse(node)


def scopes(tree: ast.Module) -> list[tuple[str, ast.AST]]:
    """``(qualname, node)`` for the module's top level (``<module>``) and every function."""
    found: list[tuple[str, ast.AST]] = [("<module>", tree)]

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (*SCOPES, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if isinstance(child, SCOPES):
                    found.append((name, child))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def statements(body: list[ast.stmt], ancestors: tuple[ast.stmt, ...] = ()):
    """Every statement under ``body`` as ``(stmt, block, ancestors)``, not entering defs."""
    for stmt in body:
        yield stmt, body, ancestors
        if isinstance(stmt, (*SCOPES, ast.ClassDef)):
            continue
        inner = (*ancestors, stmt)
        for name in ("body", "orelse", "finalbody"):
            child = getattr(stmt, name, None)
            if isinstance(child, list) and child and isinstance(child[0], ast.stmt):
                yield from statements(child, inner)
        for handler in getattr(stmt, "handlers", []):
            yield from statements(handler.body, inner)
        for case in getattr(stmt, "cases", []):
            yield from statements(case.body, inner)


def classify(stmt: ast.stmt) -> tuple[str, str | None, frozenset[str]] | None:
    """``(kind, target, losses)`` when ``stmt`` is an event, else None."""
    if _is_parameter_reset(stmt) or _is_reset_loop(stmt):
        return "reset", None, frozenset()
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return None
    call = stmt.value
    if not isinstance(call.func, ast.Attribute):
        return None
    receiver, attr = call.func.value, call.func.attr
    if attr in ("backward", "manual_backward"):
        if "dist_autograd" in text(receiver):
            return None  # distributed autograd keeps gradients per context, not in .grad
        return "backward", None, _loss_names(call, receiver, attr)
    if attr == "zero_grad":
        return "reset", text(receiver), frozenset()
    if attr == "step":
        if call.args and "scal" in text(receiver).lower():
            return "step", text(call.args[0]), frozenset()
        if not call.args:
            return "step", text(receiver), frozenset()
    return None


def _loss_names(call: ast.Call, receiver: ast.expr, attr: str) -> frozenset[str]:
    wrapped = attr == "manual_backward" or BACKWARD_WRAPPERS.search(text(receiver))
    source = call.args[0] if wrapped and call.args else receiver
    if isinstance(source, ast.Call) and source.args:  # scaler.scale(loss).backward()
        source = source.args[0]
    return frozenset(n.id for n in ast.walk(source) if isinstance(n, ast.Name))


def _is_parameter_reset(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
        return (isinstance(target, ast.Attribute) and target.attr == "grad"
                and isinstance(stmt.value, ast.Constant) and stmt.value.value is None)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        return (isinstance(func, ast.Attribute) and func.attr == "zero_"
                and ".grad" in text(func.value))
    return False


def _is_reset_loop(stmt: ast.stmt) -> bool:
    """``for p in params: p.grad = None`` (possibly under ``if p.grad is not None:``)."""
    if not isinstance(stmt, ast.For):
        return False
    simple = [s for s, _, _ in statements(stmt.body) if not isinstance(s, ast.If)]
    return bool(simple) and all(_is_parameter_reset(s) for s in simple)


def events_of(body: list[ast.stmt]) -> list[Event]:
    found = []
    for stmt, block, ancestors in statements(body):
        if any(_is_reset_loop(a) for a in ancestors):
            continue
        kind = classify(stmt)
        if kind is not None:
            found.append(Event(kind[0], stmt, block, ancestors, kind[1], kind[2]))
    return found


def optimizer_owners(tree: ast.Module) -> dict[str, str]:
    """``{model: optimizer}`` from ``optimizer = Adam(model.parameters(), ...)`` in the file."""
    owners: dict[str, str] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.value, ast.Call) and node.value.args):
            continue
        if not OPTIMIZER_CLASS.search(text(node.value.func)):
            continue
        first = node.value.args[0]
        if (isinstance(first, ast.Call) and isinstance(first.func, ast.Attribute)
                and first.func.attr == "parameters"):
            owners[text(first.func.value)] = text(node.targets[0])
    return owners


def training_loops(scope: ast.AST, owners: dict[str, str], helper: bool) -> list[TrainingLoop]:
    """The innermost loops of ``scope`` that back-propagate, step and reset.

    With ``helper`` (the scope is a function called inside a loop of its file), a scope
    with no such loop but with all three events is returned whole, as ``loop=None``.
    """
    body = scope.body
    trains = []
    for stmt, _, _ in statements(body):
        if isinstance(stmt, LOOPS) and _trains(events_of([stmt])):
            trains.append(stmt)
    innermost = [loop for loop in trains
                 if not any(other is not loop and _contains(loop, other) for other in trains)]
    # A loop that ends in an unconditional `break` or `return` runs once: nothing it leaves
    # behind reaches a later iteration, so no operator can plant a bug in it.
    found = [_pair(scope, loop, events_of([loop]), owners) for loop in innermost
             if not _runs_once(loop)]
    if not found and helper and _trains(events_of(body)) and not _builds_optimizer(scope, events_of(body)):
        found.append(_pair(scope, None, events_of(body), owners))
    return found


def _runs_once(loop: ast.AST) -> bool:
    body = getattr(loop, "body", [])
    return bool(body) and isinstance(body[-1], (ast.Break, ast.Return))


def _builds_optimizer(scope: ast.AST, events: list[Event]) -> bool:
    """A helper that builds the optimizer it steps starts afresh on every call: deleting its
    reset plants no bug in it."""
    stepped = {e.target for e in events if e.kind == "step"}
    bound = {t.id for node in ast.walk(scope) if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)}
    return bool(stepped & bound)


def _trains(events: list[Event]) -> bool:
    kinds = {event.kind for event in events}
    return kinds >= {"backward", "step", "reset"}


def _contains(outer: ast.AST, inner: ast.AST) -> bool:
    return any(node is inner for node in ast.walk(outer))


def _pair(scope, loop, events: list[Event], owners: dict[str, str]) -> TrainingLoop:
    steps = [e for e in events if e.kind == "step" and not NOT_AN_OPTIMIZER.search(e.target)]
    resets = [e for e in events if e.kind == "reset"]
    optimizers: dict[str, Optimizer] = {}
    for step in steps:
        optimizers.setdefault(step.target, Optimizer(step.target)).steps.append(step)
    unpaired = []
    for reset in resets:
        name = reset.target if reset.target in optimizers else owners.get(reset.target or "")
        if name in optimizers:
            optimizers[name].resets.append(reset)
        else:
            unpaired.append(reset)
    paired = [o for o in optimizers.values() if o.resets]
    if not paired and len(unpaired) == 1 and len(optimizers) == 1:
        only = next(iter(optimizers.values()))
        if len(only.steps) == 1 and _on_one_path(unpaired[0], only.steps[0]):
            only.resets.append(unpaired.pop())
            paired = [only]
    return TrainingLoop(scope, loop, events, paired, unpaired)


def _on_one_path(first: Event, second: Event) -> bool:
    """Whether one event's branch path is a prefix of the other's: they are not in
    different branches of an ``if``/``try``, so the reset and the step belong together."""
    paths = [_branch_path(first), _branch_path(second)]
    shorter, longer = sorted(paths, key=len)
    return longer[:len(shorter)] == shorter


def _branch_path(event: Event) -> list[tuple[int, str]]:
    chain = [*event.ancestors, event.stmt]
    return [(id(parent), _field_holding(parent, child)) for parent, child in itertools.pairwise(chain)]


def _field_holding(parent: ast.stmt, child: ast.stmt) -> str:
    blocks = [(name, getattr(parent, name, None)) for name in ("body", "orelse", "finalbody")]
    blocks += [(f"handler{i}", h.body) for i, h in enumerate(getattr(parent, "handlers", []))]
    blocks += [(f"case{i}", c.body) for i, c in enumerate(getattr(parent, "cases", []))]
    for name, block in blocks:
        if isinstance(block, list) and any(stmt is child for stmt in block):
            return name
    return "?"


def called_in_loop(tree: ast.Module) -> set[str]:
    """Names of functions called (as ``f(...)`` or ``obj.f(...)``) inside some loop."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, LOOPS):
            for call in ast.walk(node):
                if isinstance(call, ast.Call):
                    func = call.func
                    if isinstance(func, ast.Name):
                        names.add(func.id)
                    elif isinstance(func, ast.Attribute):
                        names.add(func.attr)
    return names
