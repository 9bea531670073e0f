"""Run the flow analysis over every unit of a module and sort its issues by rule.

A unit is the module body or one function. Lightning's ``training_step`` has no loop of its
own (the trainer calls it once per batch), so its body is analysed as a loop body unless this
file calls it itself; so is the body of any function that this file never calls, since its
caller elsewhere presumably runs it once per batch.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import ast

from lint_rules import events as ev
from lint_rules import rebinding, syntax
from lint_rules.finding import AnalysisIncomplete
from lint_rules.flow import MAX_WORLDS_RETRY, Interpreter, Issue, PathsMerged
from lint_rules.frameworks import another_frameworks_code
from lint_rules.source import SourceText
from lint_rules.summaries import ModuleIndex


# Hooks that a framework calls once per batch, so their bodies repeat like a loop body.
REPEATED_HOOKS = frozenset({"training_step"})
# unittest's set-up and tear-down methods run once per test, like the tests themselves.
RUNS_ONCE = frozenset({"setUp", "setUpClass", "tearDown", "tearDownClass", "main"})


@dataclass
class Analysis:
    """Everything the rules read: the parsed module, its text and the flow issues."""

    tree: ast.Module
    text: SourceText
    index: ModuleIndex
    gc001: list[Issue] = field(default_factory=list)
    gc002: list[Issue] = field(default_factory=list)
    gc003: list[tuple[ev.Event, ast.AST, Issue]] = field(default_factory=list)
    incomplete: list[AnalysisIncomplete] = field(default_factory=list)  # units given up on
    alias_sites: dict[str, ast.AST] = field(default_factory=dict)  # see effects.ALIAS_PREFIX
    other_framework: bool = False  # another autodiff framework's code (frameworks.py): no rule applies

    def statement_of(self, node: ast.AST) -> syntax.Statement | None:
        """The statement that contains ``node`` (itself if it is one); in ``a; b`` that is
        ``a`` or ``b``, not their shared line."""
        while node is not None and not isinstance(node, ast.stmt):
            node = self.index.parents.get(id(node))
        return node

    def block_of(self, stmt: syntax.Statement) -> list[syntax.Statement]:
        """The statements of the block that holds ``stmt`` (``stmt`` among them)."""
        parent = self.index.parents.get(id(stmt))
        return _block_holding(parent, stmt) if parent is not None else []

    def body_of(self, stmt: syntax.Statement) -> list[syntax.Statement]:
        """The statements of a compound statement's main body."""
        return syntax.body_of(stmt)

    def is_sole_statement(self, stmt: syntax.Statement) -> bool:
        """Whether ``stmt`` is the only statement of its block (removing it needs a ``pass``)."""
        block = self.block_of(stmt)
        return len(block) == 1 and block[0] is stmt

    def optimizer_text(self, step: ev.Event) -> str:
        """How the code spells the stepped optimizer: ``opt`` in ``opt.step()`` or ``scaler.step(opt)``."""
        call = step.node
        receiver = call.func.value
        args = syntax.positional(call)
        if self.index.is_optimizer(ev.dotted(receiver) or "") or not args:
            return self.text.segment(receiver)
        return self.text.segment(args[0])

    def function_of(self, node: ast.AST) -> ast.AST | None:
        """The innermost function or lambda around ``node``; None at module level."""
        node = self.index.parents.get(id(node))
        while node is not None and not isinstance(node, syntax.SCOPES):
            node = self.index.parents.get(id(node))
        return node


def analyse(tree: ast.Module, text: SourceText, project=None, path: str | None = None) -> Analysis:
    """Interpret every unit that holds a gradient event and collect GC001/GC002/GC003 issues."""
    from pathlib import Path

    index = ModuleIndex(tree, text, project=project, path=Path(path) if path else None)
    analysis = Analysis(tree, text, index)
    if another_frameworks_code(index.imported_modules()):
        analysis.other_framework = True
        return analysis
    issues: dict[tuple, tuple[Issue, dict]] = {}
    units = list(_units(tree, index))
    analysed = {id(function) for *_, function in units}
    for body, class_name, repeat, function in units:
        if not any(index.contains_events(stmt) for stmt in body):
            continue
        try:
            interpreter = _interpreted(index, text, body, class_name, repeat, function)
        except AnalysisIncomplete as gave_up:
            analysis.incomplete.append(gave_up)  # this unit only: the others still report
            continue
        # A call chain deeper than the inlining goes: what it did not walk is judged alone,
        # as a function that runs once, rather than never.
        for deep in interpreter.too_deep:
            if id(deep) not in analysed:
                analysed.add(id(deep))
                units.append((syntax.body_of(deep), index.enclosing_class(deep), None, deep))
        analysis.alias_sites.update(interpreter.alias_sites)
        for key, issue in interpreter.issues.items():
            if not _matched_windows(issue, interpreter.counter_zeroed_in_loop):
                issues.setdefault(key, (issue, interpreter.zeroed_in_loop))
    for issue, zeroed in _one_per_cause(issues.values()):
        if issue.code == "GC001":
            if not _remainder_stepped(analysis, issue):
                analysis.gc001.append(issue)
            continue
        if _reset_by_another_method(analysis.index, issue) or _tail_restep(analysis, issue):
            continue
        once = None if issue.restep else _zeroed_once_before(analysis, issue, zeroed)
        if once is None:
            issue.reset_elsewhere = _reset_on_other_paths(analysis, issue, zeroed)
            analysis.gc002.append(issue)
        else:
            analysis.gc003.append((once[0], once[1], issue))
    return analysis


def _interpreted(index: ModuleIndex, text, body, class_name, repeat, function) -> Interpreter:
    """The unit interpreted with few worlds, or with many when merging them made the first
    pass doubtful (its findings could be artefacts of the merge)."""
    interpreter = Interpreter(index, text)
    try:
        interpreter.run(body, class_name, repeat, function)
    except PathsMerged:
        interpreter = Interpreter(index, text, MAX_WORLDS_RETRY)
        interpreter.run(body, class_name, repeat, function)
    return interpreter


def _one_per_cause(found) -> list[tuple[Issue, dict]]:
    """One GC002 per optimizer and loop: the steps on every branch (`scaler.step(opt)` under
    AMP, `opt.step()` otherwise) miss the same reset, so report the first and name the rest."""
    kept: dict[tuple, tuple[Issue, dict]] = {}
    out: list[tuple[Issue, dict]] = []
    for issue, zeroed in sorted(found, key=lambda pair: (pair[0].at.line, pair[0].at.col)):
        if issue.code != "GC002":
            out.append((issue, zeroed))
            continue
        cause = (issue.optimizer, tuple(map(id, issue.loops)), issue.restep)
        if cause in kept:
            first = kept[cause][0]
            if issue.at != first.at and issue.at not in first.also:
                first.also += (issue.at,)
            first.applied_by += tuple(a for a in issue.applied_by if a not in first.applied_by)
            continue
        kept[cause] = (issue, zeroed)
        out.append((issue, zeroed))
    return out


def _units(tree: ast.Module, index: ModuleIndex):
    body = tree.body
    yield body, None, None, None
    stack = [n for n in body if index.contains_events(n)]
    while stack:
        node = stack.pop()
        if isinstance(node, syntax.FUNCTIONS):
            # A function this file never calls is called from elsewhere, typically once per
            # batch (like dslinter's W5517, we judge its body as a loop body).
            name = node.name
            if not index.is_called(node):
                # A function this file calls is analysed where it is called, with what each
                # call passes it; alone, its parameters would stand for anything.
                hook = name in REPEATED_HOOKS
                repeat = node if hook or _repeated(node, index) else None
                owner = index.enclosing_class(node)
                yield syntax.body_of(node), owner, repeat, node
                # A base class's loop that calls `self.batch_update()`: once more for each
                # subclass, whose override is what runs there.
                for sub in index.subclasses(owner) if owner else ():
                    if index.class_method(sub, name) is node:
                        yield syntax.body_of(node), sub, repeat, node
        stack.extend(c for c in syntax.children(node) if index.contains_events(c))


def _repeated(function: syntax.FunctionNode, index: ModuleIndex) -> bool:
    """Whether a function's body is judged as a loop body: it is never called in this file,
    or only handed to someone else (``Engine(update)``, ``trainer.add_callback(step)``), who
    presumably calls it once per batch."""
    name = function.name
    if index.is_called(function) or name.startswith("test") or name in RUNS_ONCE:
        return False  # called here (analysed in place), or a test / fixture that runs once
    if name in index.referenced and name not in index.passed_along:
        return False
    # A helper that steps an optimizer its caller hands in (a loss scaler's ``__call__``)
    # leaves the reset to that caller: judge it where it is called, not alone.
    return not index.steps_a_parameter(function)


def _matched_windows(issue: Issue, counter_zeroed: dict[int, set[str]]) -> bool:
    """A counter-gated step in a loop that also resets under a counter test: the two tests
    are assumed to delimit the same accumulation window (we do not do modular arithmetic)."""
    if issue.code != "GC002" or not issue.counter_gated or not issue.loops:
        return False
    zeroed = counter_zeroed.get(id(issue.loops[-1]), set())
    return ev.ALL in zeroed or issue.optimizer in zeroed


def _remainder_stepped(analysis: Analysis, issue: Issue) -> bool:
    """A reset once before an accumulation loop whose windows close inside the loop under a
    counter test (``(i + 1) % k == 0``) and, after it, with a step of the micro-batches left
    over (``if len(loader) % k != 0: step()``). Whether the two tests cover every batch is
    modular arithmetic the analysis does not do; the tail step shows the remainder was
    handled, so the gradients the reset would drop are unknown, hence benign."""
    if not issue.loop_carried:
        return False
    zero = analysis.statement_of(issue.at.node)
    steps = _steps_of(analysis, analysis.function_of(zero) or analysis.tree, issue.optimizer)
    return any(loop.lineno > zero.end_lineno and any(s.lineno > loop.end_lineno for s in steps)
               for loop, _ in _window_loops(analysis, steps))


def _tail_restep(analysis: Analysis, issue: Issue) -> bool:
    """The step after an accumulation loop, for the micro-batches left over, under a test of
    what the loop's own window test reads (``if not left: step()`` after ``if not left:
    step(); left = k`` inside): it runs only when the last window stayed open, so it never
    applies a window the loop already stepped. Whether the tests agree is arithmetic on the
    counter the analysis does not do: unknown, hence benign."""
    if not issue.restep:
        return False
    step = issue.at.node
    steps = _steps_of(analysis, analysis.function_of(step) or analysis.tree, issue.optimizer)
    guards = _guards(analysis, step, None)
    read = {p for test in guards for p in syntax.paths_in(test)} - {"self"}
    return any(step.lineno > loop.end_lineno and any(
        not read.isdisjoint(syntax.paths_in(test)) for test in tests)
        for loop, tests in _window_loops(analysis, steps))


def _steps_of(analysis: Analysis, scope: ast.AST, optimizer: str) -> list[ast.Call]:
    is_optimizer = analysis.index.is_optimizer
    return [node for node in syntax.walk(scope) if type(node) is ast.Call
            and (ev.step_target(node, is_optimizer) or ("",))[0] == optimizer]


def _window_loops(analysis: Analysis, steps: list[ast.Call]):
    """The loops around ``steps`` with, for each, the window tests (a counter test, or a
    test the guarded block sets again) that gate a step inside it."""
    parents = analysis.index.parents
    found: dict[int, tuple[ast.AST, list[ast.AST]]] = {}
    for step in steps:
        node = parents.get(id(step))
        while node is not None and not isinstance(node, syntax.SCOPES):
            if isinstance(node, syntax.LOOPS):
                tests = [t for t in _guards(analysis, step, node) if _window_test(analysis, t)]
                if tests:
                    found.setdefault(id(node), (node, []))[1].extend(tests)
            node = parents.get(id(node))
    return list(found.values())


def _guards(analysis: Analysis, node: ast.AST, stop: ast.AST | None) -> list[ast.AST]:
    """The tests of the ``if`` statements around ``node``, up to ``stop`` or its function."""
    tests, parents = [], analysis.index.parents
    node = parents.get(id(node))
    while node is not None and node is not stop and not isinstance(node, syntax.SCOPES):
        if type(node) is ast.If:
            tests.append(node.test)
        node = parents.get(id(node))
    return tests


def _window_test(analysis: Analysis, test: ast.AST) -> bool:
    """``(i + 1) % k == 0``, a flag bound from such a test, or a test whose block binds again
    what it reads (``if not left: ...; left = k``): a test that opens and closes windows."""
    if analysis.index.is_counter_test(test):
        return True
    block = analysis.index.parents.get(id(test))
    return not syntax.names_in(test).isdisjoint(syntax.assigned_in(syntax.body_of(block)))


def _reset_by_another_method(index: ModuleIndex, issue: Issue) -> bool:
    """A method that no code here calls steps an optimizer that another method of its class
    resets without stepping it (``backward()`` steps what ``process()`` reset, and a trainer
    elsewhere calls the two in turn): the order they run in is decided out of sight, hence
    benign. A method that resets and steps is a whole update, no half of this one."""
    if issue.restep or any(isinstance(n, syntax.LOOPS) for n in issue.loops):
        return False
    function = next((n for n in issue.loops if isinstance(n, syntax.FUNCTIONS)), None)
    cls = index.classes.get(index.enclosing_class(function) or "") if function else None
    if cls is None:
        return False
    for method in cls.body:
        if method is function or not isinstance(method, syntax.FUNCTIONS):
            continue
        calls = [node for node in syntax.walk(method) if type(node) is ast.Call]
        if any((ev.step_target(c, index.is_optimizer) or ("",))[0] == issue.optimizer for c in calls):
            continue  # a whole update of its own (`update_from_episodes`), not the other half
        for node in calls:
            receiver = ev.zero_call_receiver(node)
            if receiver and receiver != ev.ALL and (receiver == issue.optimizer or (
                    not index.is_optimizer(receiver)
                    and issue.optimizer in index.optimizers_of_model(receiver))):
                return True
    return False


def _reset_on_other_paths(analysis: Analysis, issue: Issue, zeroed: dict[int, set[str]]) -> bool:
    """Whether the loop that carries the stale gradients (or the function judged as one)
    resets this optimizer somewhere: then the finding rests on the analysis relating the
    paths that skip that reset, not on the plain absence of any reset."""
    loops = [n for n in issue.loops if not _member_loop(n, analysis.index)]
    carrying = [n for n in loops if isinstance(n, syntax.LOOPS)] or loops
    if not carrying:
        return False
    inside = zeroed.get(id(carrying[-1]), set())
    return ev.ALL in inside or issue.optimizer in inside


def _zeroed_once_before(
    analysis: Analysis, issue: Issue, zeroed: dict[int, set[str]]
) -> tuple[ev.Event, ast.AST] | None:
    """For a stale step in a loop that never zeroes: the zero that runs once before that loop."""
    # `for opt in optimizers:` visits each optimizer once; the loop around it is the one
    # whose iterations the gradients are carried across.
    loops = [n for n in issue.loops if isinstance(n, syntax.LOOPS)
             and not _member_loop(n, analysis.index)]
    if not loops:
        return None
    loop = loops[-1]
    inside = zeroed.get(id(loop), set())
    if ev.ALL in inside or issue.optimizer in inside:
        return None
    node: ast.AST = loop
    parents = analysis.index.parents
    # Climb block by block, looking at the statements that run before `node` in each.
    while True:
        owner = parents.get(id(node))
        if owner is None or isinstance(owner, (ast.Lambda, ast.ClassDef)):
            return None
        block = _block_holding(owner, node)
        position = next((i for i, s in enumerate(block) if s is node), None)
        for stmt in reversed(block[:position] if position is not None else []):
            event = _zero_statement(analysis, stmt, issue.optimizer, issue.names)
            if event is not None:
                return event, loop
        if isinstance(owner, (ast.Module, *syntax.FUNCTIONS)):
            return None
        node = owner


def _zero_statement(analysis: Analysis, stmt: syntax.Statement, optimizer: str,
                    names: dict[str, tuple[str, ...]] | None = None) -> ev.Event | None:
    node: ast.AST | None = None
    target = ev.ALL
    if type(stmt) is ast.Expr and type(stmt.value) is ast.Call:
        receiver = ev.zero_call_receiver(stmt.value)
        if receiver is not None:
            node, target = stmt.value, receiver
    elif isinstance(stmt, syntax.FOR_LOOPS) and ev.param_loop_zeroes(stmt):
        node, target = stmt, ev.param_loop_owner(stmt) or ev.ALL
    elif isinstance(stmt, syntax.FOR_LOOPS) and _zeroes_each_member(stmt, analysis.index, optimizer):
        node = stmt  # for opt in optimizers: opt.zero_grad()
    elif ev.is_grad_zeroing(stmt):
        node = stmt
    # inside a function walked at its call, its parameter stands for the caller's optimizer
    head, dot, rest = target.partition(".")
    spelled = {target} | {m + dot + rest for m in (names or {}).get(head, ())}
    if node is None or not any(_zeroes(analysis.index, t, optimizer) for t in spelled):
        return None
    return ev.Event(ev.ZERO, node, analysis.text, target)


def _member_loop(loop: ast.AST, index: ModuleIndex) -> bool:
    return isinstance(loop, syntax.FOR_LOOPS) and bool(rebinding.loop_members(loop, ev.dotted, index.is_optimizer))


def _zeroes_each_member(loop: ast.For, index: ModuleIndex, optimizer: str) -> bool:
    """``for opt in <optimizers holding optimizer>: opt.zero_grad()``."""
    body = syntax.body_of(loop)
    if len(body) != 1 or type(loop.target) is not ast.Name:
        return False
    call = body[0].value if type(body[0]) is ast.Expr else None
    receiver = ev.zero_call_receiver(call) if type(call) is ast.Call else None
    if receiver != loop.target.id:
        return False
    members = rebinding.loop_members(loop, ev.dotted, index.is_optimizer).get(receiver, ())
    return any(index.is_group(m) or m == optimizer for m in members)


def _zeroes(index: ModuleIndex, target: str, optimizer: str) -> bool:
    if target in (ev.ALL, optimizer) or ev.last_name(target) == ev.last_name(optimizer):
        return True
    if index.is_optimizer(target) and not index.is_group(target):
        return False
    owned = index.optimizers_of_model(target)
    return not owned or optimizer in owned | index.groups_holding(owned)


def _block_holding(owner: ast.AST, stmt: ast.AST) -> list[syntax.Statement]:
    """The statement list of ``owner`` (body, else, finally, handler) that holds ``stmt``."""
    return next((block for block in syntax.blocks_of(owner) if any(s is stmt for s in block)), [])
