"""Abstract interpretation of a training loop over per-optimizer gradient states.

The states and their transitions live in ``states.py``. This module walks the statements:
loops are iterated to a fixed point (so at least two iterations are seen); ``if`` tests are
remembered per path so that ``if c: step()`` ... ``if c: zero()`` correlate; inside
``with accelerator.accumulate(...)`` the optimizer's step and zero_grad are gated by the
sync flag, as accelerate does; calls to functions of the same file are walked in place.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from lint_rules import events as ev
from lint_rules.effects import Effects, Issue
from lint_rules.source import SourceText
from lint_rules.states import (
    CLEAN,
    State,
    dropped,
    forget,
    initial_state,
    join,
)
from lint_rules.summaries import FunctionNode, ModuleIndex

MAX_LOOP_PASSES = 8
MAX_WORLDS = 32
BUDGET = 40_000  # statements interpreted per unit before giving up silently


class _OutOfBudget(Exception):
    pass


@dataclass
class Flow:
    """Where control leaves a block: falling through, break, continue or return."""

    normal: State | None = None
    brk: State | None = None
    cont: State | None = None
    ret: State | None = None


class Interpreter(Effects):
    """Runs one unit (module body or function) and collects Issues."""

    def __init__(self, index: ModuleIndex, text: SourceText) -> None:
        self.index = index
        self.text = text
        self.issues: dict[tuple, Issue] = {}
        self.zeroed_in_loop: dict[int, set[str]] = {}
        self.counter_zeroed_in_loop: dict[int, set[str]] = {}  # resets under `if i % k == 0`
        self._loops: list[ast.AST] = []
        # enclosing if-tests: (text, loop depth, whether it is a modulo/counter test)
        self._conditions: list[tuple[str, int, bool]] = []
        self._gates: list[str] = []
        self._handlers = 0
        self._frames: list[FunctionNode] = []
        self._subst: list[dict[str, tuple[str, ...]]] = [{}]
        self._local_defs: list[dict[str, FunctionNode]] = [{}]
        self._class: list[str | None] = [None]
        self._unstable: set[str] = set()
        self._budget = BUDGET
        self._loop_assigned: dict[int, set[str]] = {}

    # ----- entry points -------------------------------------------------------------------
    def run(
        self, body: list[ast.stmt], class_name: str | None, repeat: ast.AST | None,
        function: FunctionNode | None = None,
    ) -> None:
        """Interpret ``body``; ``repeat`` wraps it in an implicit loop (Lightning hooks)."""
        self._class = [class_name]
        self._frames = [function] if function is not None else []  # no inlining into itself
        try:
            if repeat is not None:
                self._loop(repeat, body, initial_state(), infinite=True)
            else:
                self._block(body, initial_state())
        except (_OutOfBudget, RecursionError):
            self.issues.clear()

    # ----- statements ---------------------------------------------------------------------
    def _block(self, stmts: list[ast.stmt], state: State | None, trace: list | None = None) -> Flow:
        flow = Flow(normal=state)
        for stmt in stmts:
            if flow.normal is None:
                break
            out = self._stmt(stmt, flow.normal)
            flow.brk = join(flow.brk, out.brk)
            flow.cont = join(flow.cont, out.cont)
            flow.ret = join(flow.ret, out.ret)
            flow.normal = out.normal
            if trace is not None and out.normal is not None:
                trace.append(out.normal)
        return flow

    def _stmt(self, stmt: ast.stmt, state: State) -> Flow:
        self._budget -= 1
        if self._budget < 0:
            raise _OutOfBudget
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._local_defs[-1][stmt.name] = stmt
            return Flow(normal=state)
        if isinstance(stmt, ast.ClassDef):
            return Flow(normal=state)
        if not self.contains_events(stmt) and not _jumps(stmt):
            return Flow(normal=self._assigned(stmt, state))
        if isinstance(stmt, ast.If):
            return self._if(stmt, state)
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            if ev.param_loop_zeroes(stmt):
                return Flow(normal=self._param_zero(stmt, state))
            return self._loop(stmt, stmt.body, state, infinite=False)
        if isinstance(stmt, ast.While):
            infinite = isinstance(stmt.test, ast.Constant) and bool(stmt.test.value)
            return self._loop(stmt, stmt.body, state, infinite=infinite)
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            return self._with(stmt, state)
        if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            return self._try(stmt, state)
        if type(stmt).__name__ == "Match":
            return self._match(stmt, state)
        state = self._expressions(stmt, state)
        if isinstance(stmt, ast.Return):
            return Flow(ret=state)
        if isinstance(stmt, ast.Raise):
            return Flow()
        if isinstance(stmt, ast.Break):
            return Flow(brk=state)
        if isinstance(stmt, ast.Continue):
            return Flow(cont=self._skipped(state))
        return Flow(normal=self._assigned(stmt, state))

    def _if(self, stmt: ast.If, state: State) -> Flow:
        state = self._calls_in(stmt.test, stmt, state)
        test, value = stmt.test, True
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, value = test.operand, not value
        key = ast.dump(test)
        trackable = all(
            isinstance(n, (ast.Name, ast.Attribute, ast.Constant, ast.Compare, ast.BoolOp,
                           ast.BinOp, ast.UnaryOp, ast.Load, ast.operator, ast.cmpop,
                           ast.boolop, ast.unaryop))
            for n in ast.walk(test)
        )
        if not trackable or any(isinstance(n, ast.Mod) for n in ast.walk(test)):
            self._unstable.add(key)  # a counter test (`i % k == 0`) differs every iteration
        yes, no = self._split(state, key, value)
        test_text = " ".join(self.text.segment(stmt.test).split())
        modulo = any(isinstance(n, ast.Mod) for n in ast.walk(stmt.test))
        self._conditions.append((test_text, len(self._loops), modulo))
        then = self._block(stmt.body, yes) if yes else Flow()
        self._conditions[-1] = (f"not ({test_text})", len(self._loops), modulo)
        other = self._block(stmt.orelse, no) if no else Flow()
        self._conditions.pop()
        return _join_flows(then, other)

    def _split(self, state: State, key: str, value: bool) -> tuple[State | None, State | None]:
        yes: State = {}
        no: State = {}
        for assumptions, facts in state.items():
            if (key, value) in assumptions:
                yes[assumptions] = facts
            elif (key, not value) in assumptions:
                no[assumptions] = facts
            else:
                yes[assumptions | {(key, value)}] = facts
                no[assumptions | {(key, not value)}] = facts
        if len(yes) + len(no) > MAX_WORLDS:
            yes, no = forget(yes, lambda a: True), forget(no, lambda a: True)
        return (yes or None), (no or None)

    def _loop(self, node: ast.AST, body: list[ast.stmt], state: State, infinite: bool) -> Flow:
        if self._loops and not any(self.contains_events(s) for s in body):
            return Flow(normal=state)
        assigned = self._loop_assigned.get(id(node))
        if assigned is None:
            assigned = self._loop_assigned[id(node)] = _assigned_names(node)
        unstable = self._unstable

        def varies(assumption) -> bool:
            test = assumption[0]
            return test in unstable or any(f"id='{name}'" in test for name in assigned)

        self._loops.append(node)
        self.zeroed_in_loop.setdefault(id(node), set())
        aliases = self._loop_aliases(node)
        if aliases:
            self._subst.append({**self._subst[-1], **aliases})
        head = forget(state, varies)
        brk = ret = done = None
        try:
            for _ in range(MAX_LOOP_PASSES):
                flow = self._block(body, head)
                brk, ret = join(brk, flow.brk), join(ret, flow.ret)
                back = join(flow.normal, flow.cont)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    back = join(back, flow.ret)  # the next call starts where this one returned
                done = join(done, back)
                new_head = join(head, forget(back, varies) if back else None)
                if new_head == head:
                    break
                head = new_head
        finally:
            self._loops.pop()
            if aliases:
                self._subst.pop()
        # NOTE: a loop is assumed to run at least once; the zero-iteration path of
        # `for opt in optimizers:` would otherwise invent findings on correct code.
        exit_state = brk if infinite else join(done, brk)
        orelse = getattr(node, "orelse", None)
        if orelse and not infinite and done is not None:
            tail = self._block(orelse, done)
            return Flow(normal=join(tail.normal, brk), ret=join(ret, tail.ret))
        return Flow(normal=exit_state, ret=ret)

    def _loop_aliases(self, node: ast.AST) -> dict[str, tuple[str, ...]]:
        # `for opt in optimizers:` / `for opt in [opt_g, opt_d]:` -> opt names those optimizers.
        if not isinstance(node, (ast.For, ast.AsyncFor)) or not isinstance(node.target, ast.Name):
            return {}
        it = node.iter
        if isinstance(it, (ast.List, ast.Tuple)):
            keys = tuple(self._key(e) or "" for e in it.elts)
            if keys and all(k and self.index.is_optimizer(k) for k in keys):
                return {node.target.id: keys}
            return {}
        key = dotted(it)
        if key and ev.is_group_name(key):
            return {node.target.id: (key,)}
        return {}

    def _with(self, stmt: ast.With, state: State) -> Flow:
        gate = None
        for item in stmt.items:
            state = self._calls_in(item.context_expr, stmt, state)
            expr = item.context_expr
            if (
                isinstance(expr, ast.Call)
                and isinstance(expr.func, ast.Attribute)
                and expr.func.attr == "accumulate"
            ):
                owner = dotted(expr.func.value) or "accelerator"
                gate = ast.dump(ast.parse(f"{owner}.sync_gradients", mode="eval").body)
                self._unstable.add(gate)
        if gate:
            self._gates.append(gate)
        try:
            return self._block(stmt.body, state)
        finally:
            if gate:
                self._gates.pop()

    def _try(self, stmt: ast.Try, state: State) -> Flow:
        trace: list[State] = [state]
        body = self._block(stmt.body, state, trace)
        handler_in: State | None = None
        # An exception interrupts some statement, so a handler starts from the state before it.
        for before in trace[: len(stmt.body)]:
            handler_in = join(handler_in, before)
        flows = []
        self._handlers += 1
        try:
            for handler in stmt.handlers:
                flows.append(self._block(handler.body, handler_in))
        finally:
            self._handlers -= 1
        main = self._block(stmt.orelse, body.normal) if stmt.orelse else Flow(normal=body.normal)
        main.brk, main.cont, main.ret = (
            join(main.brk, body.brk), join(main.cont, body.cont), join(main.ret, body.ret)
        )
        result = main
        for flow in flows:
            result = _join_flows(result, flow)
        if stmt.finalbody and result.normal is not None:
            tail = self._block(stmt.finalbody, result.normal)
            result.normal = tail.normal
            result.ret = join(result.ret, tail.ret)
        return result

    def _match(self, stmt: ast.AST, state: State) -> Flow:
        state = self._calls_in(stmt.subject, stmt, state)
        result = Flow(normal=state)
        for case in stmt.cases:
            result = _join_flows(result, self._block(case.body, state))
        return result

    def _inner_conditions(self) -> list[bool]:
        depth = len(self._loops)
        return [modulo for _, d, modulo in self._conditions if d == depth and depth]

    def _skipped(self, state: State) -> State:
        # `continue` in an except handler, or under a test that is not a counter test
        # (`if not math.isfinite(norm): continue`), drops the batch on purpose: its gradients
        # were never meant for a step, so a later reset of them is no loss.
        inner = self._inner_conditions()
        if not (self._handlers or (inner and not any(inner))):
            return state
        return self._map_all(state, dropped)

    def _assigned(self, stmt: ast.stmt, state: State) -> State:
        if not isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            return state
        for key in self.index.constructions.get(id(stmt), ()):
            # A newly built optimizer starts a new story (usually over new parameters too).
            state = self._map_key(state, self._subst_key(key), lambda f: (CLEAN,))
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if not names or not any(len(a) for a in state):
            return state
        return forget(state, lambda a: any(f"id='{n}'" in a[0] for n in names))

    def contains_events(self, node: ast.AST) -> bool:
        """Whether ``node`` holds any call or statement that could be a gradient event."""
        return self.index.contains_events(node)


dotted = ev.dotted
_JUMPS = (ast.Break, ast.Continue, ast.Return, ast.Raise)


def _jumps(stmt: ast.stmt) -> bool:
    """Whether ``stmt`` may leave its block early (break, continue, return, raise)."""
    return isinstance(stmt, _JUMPS) or (
        hasattr(stmt, "body") and any(isinstance(n, _JUMPS) for n in ast.walk(stmt))
    )


def _assigned_names(node: ast.AST) -> set[str]:
    names = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        # Arguments change from call to call, except the object the method belongs to.
        names.update(a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg))
        names -= {"self", "cls"}
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
    return names


def _join_flows(a: Flow, b: Flow) -> Flow:
    return Flow(join(a.normal, b.normal), join(a.brk, b.brk), join(a.cont, b.cont),
                join(a.ret, b.ret))


