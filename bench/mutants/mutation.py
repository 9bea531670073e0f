"""Six mutation operators that plant a gradient bug into a correct training loop.

Each operator applies only where its result is a bug by construction, reading the loop
with ``loop_anatomy`` (never with the linter under test), and edits the original text by
whole lines or one span, so a mutant differs from its original only at the mutation.

| operator | edit | expected |
|---|---|---|
| ``delete-reset`` | delete the optimizer's only reset | GC002 |
| ``reset-before-step`` | move the reset to just after the last backward before the step | GC001 |
| ``reset-before-loop`` | move the only reset to just before the loop | GC003 |
| ``reset-out-of-guard`` | move the reset out of the accumulation ``if`` it shares with step | GC001 |
| ``drop-item`` | ``total += loss.item()`` (or ``float``/``.detach()``) becomes ``total += loss`` | GC004 |
| ``swap-resets`` | swap the receivers of two optimizers' resets | GC001 or GC002 |

A mutant's ``anchors`` are the lines (in the mutant) of the mutated statements and of the
steps whose meaning changed; a finding of an expected code within ``TOLERANCE`` lines of an
anchor catches it.
"""
from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass

from loop_anatomy import Event, Optimizer, TrainingLoop, events_of, statements, text
from loss_flow import loss_reaches
from source_edits import LineEdit, alone_on_its_lines, indent_of, reindented, span

TOLERANCE = 3
EXPECTED = {
    "delete-reset": ("GC002",),
    "reset-before-step": ("GC001",),
    "reset-before-loop": ("GC003",),
    "reset-out-of-guard": ("GC001",),
    "drop-item": ("GC004",),
    "swap-resets": ("GC001", "GC002"),
}
OPERATORS = tuple(EXPECTED)
ACCUMULATION_NAME = re.compile(r"accum|sync_grad", re.IGNORECASE)
DETACHING = {"item", "detach", "cpu", "numpy", "tolist", "data"}
NO_GRAD = re.compile(r"no_grad|inference_mode")
FROZEN = re.compile(r"requires_grad\s*=\s*False|requires_grad_\(\s*False")


@dataclass(frozen=True)
class Mutant:
    operator: str
    source: str
    anchors: tuple[int, ...]
    where: str  # what was changed, with original line numbers

    @property
    def expected(self) -> tuple[str, ...]:
        return EXPECTED[self.operator]


@dataclass
class Context:
    """One scope of one file, as the operators need it."""

    source: str
    lines: list[str]
    scope: ast.AST
    owners: dict[str, str]  # model -> optimizer, from constructors in the file
    tree: ast.Module


def mutants(context: Context, loop: TrainingLoop) -> list[Mutant]:
    """Every mutant of every operator that applies to ``loop``, each compiling."""
    found = []
    for operator in (delete_reset, reset_before_step, reset_before_loop, reset_out_of_guard,
                     drop_item, swap_resets):
        for mutant in operator(context, loop):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    compile(mutant.source, "<mutant>", "exec")
            except SyntaxError:
                continue
            found.append(mutant)
    return found


# --- shared preconditions and edits ------------------------------------------------------

def _single(optimizer: Optimizer) -> Event | None:
    return optimizer.resets[0] if len(optimizer.resets) == 1 and optimizer.steps else None


def _sole_in_scope(context: Context, loop: TrainingLoop, reset: Event) -> bool:
    """No other reset in the scope but those of the loop's other optimizers, so without
    this one nothing in sight clears the optimizer's gradients (a ``model.zero_grad()``
    before the loop would turn a deleted reset into GC003, not GC002)."""
    others = {id(r.stmt) for o in loop.optimizers for r in o.resets if r is not reset}
    return not any(e.kind == "reset" and e.stmt is not reset.stmt and id(e.stmt) not in others
                   for e in events_of(context.scope.body))


def _bound_in(node: ast.AST | None, scope: ast.AST) -> set[str]:
    bound = set()
    for child in ast.walk(node if node is not None else scope):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            bound.add(child.id)
    return bound


def _movable(context: Context, loop: TrainingLoop, reset: Event) -> bool:
    """A reset whose names keep their meaning when it moves within or out of the loop."""
    used = {n.id for n in ast.walk(reset.stmt) if isinstance(n, ast.Name)}
    return (alone_on_its_lines(context.lines, reset.stmt)
            and not used & _bound_in(loop.loop, context.scope))


def _take_out(edit: LineEdit, context: Context, stmt: ast.stmt, block: list[ast.stmt]) -> None:
    """Remove ``stmt``, leaving ``pass`` where the block would otherwise be empty."""
    if len(block) == 1:
        edit.replace_lines(stmt.lineno, stmt.end_lineno,
                           [indent_of(context.lines, stmt) + "pass\n"], tag="pass")
    else:
        edit.remove(stmt.lineno, stmt.end_lineno)


def _where(reset: Event, to: str) -> str:
    return f"{text(reset.stmt)} (line {reset.line}) {to}"


# --- the operators -------------------------------------------------------------------

def delete_reset(context: Context, loop: TrainingLoop) -> list[Mutant]:
    found = []
    for optimizer in loop.optimizers:
        reset = _single(optimizer)
        if reset is None or not _sole_in_scope(context, loop, reset):
            continue
        if not alone_on_its_lines(context.lines, reset.stmt):
            continue
        edit = LineEdit(context.source)
        _take_out(edit, context, reset.stmt, reset.block)
        anchors = [edit.new_line(s.line) for s in optimizer.steps]
        if reset.line > 1:  # where the reset was: the line above it
            anchors.append(edit.new_line(reset.line - 1))
        found.append(Mutant("delete-reset", edit.text(), tuple(anchors),
                            _where(reset, "deleted")))
    return found


def reset_before_step(context: Context, loop: TrainingLoop) -> list[Mutant]:
    found = []
    parents = _blocks(context.scope)
    for optimizer in loop.optimizers:
        reset = _single(optimizer)
        if reset is None or not _movable(context, loop, reset):
            continue
        step = optimizer.steps[0]
        backward = _backward_before(loop, step, parents)
        if backward is None or not alone_on_its_lines(context.lines, backward.stmt):
            continue
        if reset.block is backward.block and backward.line < reset.line < step.line:
            continue  # already between them: the original itself would be the bug
        edit = LineEdit(context.source)
        _take_out(edit, context, reset.stmt, reset.block)
        edit.insert_after(backward.stmt.end_lineno,
                          reindented(context.lines, reset.stmt,
                                     indent_of(context.lines, backward.stmt)), tag="moved")
        found.append(Mutant("reset-before-step", edit.text(), (edit.tagged_line("moved"),),
                            _where(reset, f"moved after line {backward.stmt.end_lineno}")))
    return found


def _blocks(scope: ast.AST) -> dict[int, list[ast.stmt]]:
    return {id(stmt): block for stmt, block, _ in statements(scope.body)}


def _backward_before(loop: TrainingLoop, step: Event, parents) -> Event | None:
    """The last backward pass before ``step`` in the block that holds the step or one of
    its enclosing statements inside the loop."""
    chain = [step.stmt, *reversed(step.ancestors)]
    for holder in chain:
        if holder is loop.loop:
            return None
        block = parents.get(id(holder))
        before = [e for e in loop.of("backward")
                  if e.block is block and e.stmt.end_lineno < holder.lineno]
        if before:
            return before[-1]
    return None


def reset_before_loop(context: Context, loop: TrainingLoop) -> list[Mutant]:
    if loop.loop is None or not alone_on_its_lines(context.lines, loop.loop):
        return []
    found = []
    for optimizer in loop.optimizers:
        reset = _single(optimizer)
        if reset is None or not _sole_in_scope(context, loop, reset):
            continue
        if not _movable(context, loop, reset):
            continue
        edit = LineEdit(context.source)
        _take_out(edit, context, reset.stmt, reset.block)
        edit.insert_before(loop.loop.lineno,
                           reindented(context.lines, reset.stmt,
                                      indent_of(context.lines, loop.loop)), tag="moved")
        anchors = (edit.tagged_line("moved"), *(edit.new_line(s.line) for s in optimizer.steps))
        found.append(Mutant("reset-before-loop", edit.text(), anchors,
                            _where(reset, f"moved before the loop at line {loop.loop.lineno}")))
    return found


def reset_out_of_guard(context: Context, loop: TrainingLoop) -> list[Mutant]:
    found = []
    for optimizer in loop.optimizers:
        reset = _single(optimizer)
        if reset is None or not reset.ancestors or not _movable(context, loop, reset):
            continue
        guard = reset.ancestors[-1]
        if not (isinstance(guard, ast.If) and reset.block is guard.body and not guard.orelse):
            continue
        if not any(s.block is guard.body for s in optimizer.steps):
            continue
        if not _accumulation_test(guard.test) or guard is loop.loop:
            continue
        if not alone_on_its_lines(context.lines, guard):
            continue
        backwards = loop.of("backward")
        if any(guard in b.ancestors for b in backwards):
            continue  # a backward inside the guard: the window is the guard itself
        if not any(b.stmt.end_lineno < guard.lineno for b in backwards):
            continue
        edit = LineEdit(context.source)
        edit.remove(reset.stmt.lineno, reset.stmt.end_lineno)
        last = guard.end_lineno
        while reset.stmt.lineno <= last <= reset.stmt.end_lineno:
            last -= 1
        edit.insert_after(last, reindented(context.lines, reset.stmt,
                                           indent_of(context.lines, guard)), tag="moved")
        found.append(Mutant("reset-out-of-guard", edit.text(), (edit.tagged_line("moved"),),
                            _where(reset, f"moved out of the `if` at line {guard.lineno}")))
    return found


def _accumulation_test(test: ast.expr) -> bool:
    """A counter test (``% k``) or a flag named for accumulation or gradient sync."""
    for node in ast.walk(test):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            return True
        if isinstance(node, (ast.Name, ast.Attribute)) and ACCUMULATION_NAME.search(text(node)):
            return True
    return False


def drop_item(context: Context, loop: TrainingLoop) -> list[Mutant]:
    if loop.loop is None:
        return []
    losses = frozenset().union(*(b.losses for b in loop.of("backward")))
    reassigned = {text(t) for node in ast.walk(loop.loop) if isinstance(node, ast.Assign)
                  for t in node.targets}
    found = []
    for stmt, _, ancestors in statements(loop.loop.body):
        if not (isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add)):
            continue
        if text(stmt.target) in reassigned or text(stmt.target) in losses:
            continue
        if any(isinstance(a, ast.With) and NO_GRAD.search(text(a)) for a in ancestors):
            continue
        detached = _detached_loss(stmt.value, losses)
        if detached is None:
            continue
        node, name = detached
        try:
            line, start, end = span(context.lines, node)
        except ValueError:
            continue
        edit = LineEdit(context.source)
        edit.replace_span(line, start, end, name)
        found.append(Mutant("drop-item", edit.text(), (edit.new_line(stmt.lineno),),
                            f"{text(node)} -> {name} in `{text(stmt)}` (line {stmt.lineno})"))
    return found


def _detached_loss(value: ast.expr, losses: frozenset[str]) -> tuple[ast.AST, str] | None:
    """The outermost ``loss.item()``/``float(loss)``/``loss.detach()`` in ``value``."""
    for node in ast.walk(value):
        inner, peeled = node, 0
        while True:
            if (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute)
                    and inner.func.attr in DETACHING and not inner.args):
                inner = inner.func.value
            elif isinstance(inner, ast.Attribute) and inner.attr == "data":
                inner = inner.value
            elif (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name)
                  and inner.func.id == "float" and len(inner.args) == 1):
                inner = inner.args[0]
            else:
                break
            peeled += 1
        if peeled and isinstance(inner, ast.Name) and inner.id in losses:
            return node, inner.id
    return None


def swap_resets(context: Context, loop: TrainingLoop) -> list[Mutant]:
    """Swap two optimizers' resets in a two-phase update (reset, backward, step; reset,
    backward, step) where one phase calls the network the other phase's optimizer owns,
    as a GAN's generator loss runs through the discriminator: after the swap, one
    optimizer steps with gradients of the other phase's loss."""
    if len(loop.optimizers) != 2 or loop.unpaired_resets:
        return []
    first, second = sorted(loop.optimizers, key=lambda o: o.steps[0].line)
    resets = [_single(first), _single(second)]
    if None in resets or len(first.steps) != 1 or len(second.steps) != 1:
        return []
    reset_a, reset_b = resets
    step_a, step_b = first.steps[0], second.steps[0]
    if not reset_a.line < step_a.line < reset_b.line < step_b.line:
        return []
    if not all(_reset_then_backward(loop, r, s) for r, s in ((reset_a, step_a), (reset_b, step_b))):
        return []
    if not all(isinstance(r.stmt, ast.Expr) and r.target for r in resets):
        return []
    if not all(_sole_in_scope(context, loop, r) for r in resets):
        return []
    if reset_a.target == reset_b.target or not _crossing(context, loop, first, second):
        return []
    edit = LineEdit(context.source)
    for reset, other in ((reset_a, reset_b), (reset_b, reset_a)):
        try:
            line, start, end = span(context.lines, reset.stmt.value.func.value)
        except ValueError:
            return []
        edit.replace_span(line, start, end, other.target)
    anchors = tuple(edit.new_line(e.line) for e in (reset_a, step_a, reset_b, step_b))
    return [Mutant("swap-resets", edit.text(), anchors,
                   f"{reset_a.target} (line {reset_a.line}) <-> {reset_b.target} "
                   f"(line {reset_b.line})")]


def _reset_then_backward(loop: TrainingLoop, reset: Event, step: Event) -> bool:
    return any(reset.line < b.line < step.line for b in loop.of("backward"))


def _crossing(context: Context, loop: TrainingLoop, first: Optimizer, second: Optimizer) -> bool:
    """Whether one phase's loss is computed through the network the other phase's optimizer
    owns (by the optimizer constructors in the file), with nothing frozen in between."""
    models = {optimizer: model for model, optimizer in context.owners.items()}
    model_a, model_b = models.get(first.name), models.get(second.name)
    region = loop.loop if loop.loop is not None else context.scope
    if model_a is None or model_b is None or FROZEN.search(ast.unparse(region)):
        return False
    phases = []
    for optimizer in (first, second):
        step, reset = optimizer.steps[0], optimizer.resets[0]
        losses = frozenset().union(*(b.losses for b in loop.of("backward")
                                     if reset.line < b.line < step.line))
        phases.append((losses, step.line))
    (losses_a, before_a), (losses_b, before_b) = phases
    return (loss_reaches(context.tree, region, losses_b, model_a, before_b)
            or loss_reaches(context.tree, region, losses_a, model_b, before_a))
