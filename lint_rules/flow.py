"""Abstract interpretation of a training loop over per-optimizer gradient states.

Each optimizer's gradients are, on every path, in one of these states:

- ``clean``: zeroed (or never written) since the last step;
- ``fresh``: holding backward passes that no step has used yet;
- ``applied``: a step has used them and nothing has zeroed them since;
- ``stale``: a backward added to ``applied`` gradients: the next step re-applies old ones (GC002);
- ``foreign``: fresh, but another optimizer's step consumed that backward (GANs, actor-critic),
  so zeroing them is housekeeping, not a loss;
- ``wiped``: a zero discarded fresh gradients; a step reached from here is GC001;
- ``wfresh``: the same backward ran again after the wipe: the step sees only the last pass.

Loops are iterated to a fixed point (so at least two iterations are seen); ``if`` tests are
remembered per path so that ``if c: step()`` ... ``if c: zero()`` correlate; inside
``with accelerator.accumulate(...)`` the optimizer's step and zero_grad are gated by the
sync flag, as accelerate does.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from lint_rules import events as ev
from lint_rules.source import SourceText
from lint_rules.summaries import FunctionNode, ModuleIndex

CLEAN, FRESH, APPLIED, STALE, FOREIGN, WIPED, WFRESH = (
    "clean", "fresh", "applied", "stale", "foreign", "wiped", "wfresh",
)
MAX_LOOP_PASSES = 8
MAX_WORLDS = 32
MAX_INLINE_DEPTH = 3
BUDGET = 40_000  # statements interpreted per unit before giving up silently

State = dict  # {frozenset of (test, bool): {optimizer key or None (others): frozenset of facts}}


class _OutOfBudget(Exception):
    pass


@dataclass
class Issue:
    """A raw GC001/GC002 observation, turned into a Finding by the rule modules."""

    code: str
    at: ev.Event  # the zero (GC001) or the step (GC002)
    step: ev.Event
    optimizer: str
    backwards: tuple[ev.Event, ...]
    loop_carried: bool = False
    conditions: tuple[str, ...] = ()
    loops: tuple[ast.AST, ...] = field(default=(), repr=False)
    counter_gated: bool = False  # the step sits under a modulo test in its loop


@dataclass
class Flow:
    """Where control leaves a block: falling through, break, continue or return."""

    normal: State | None = None
    brk: State | None = None
    cont: State | None = None
    ret: State | None = None


def join(a: State | None, b: State | None) -> State | None:
    """Union of two path sets."""
    if a is None:
        return b
    if b is None:
        return a
    out = dict(a)
    for assumptions, facts in b.items():
        out[assumptions] = _merge(out[assumptions], facts) if assumptions in out else facts
    return out


def _merge(x: dict, y: dict) -> dict:
    keys = set(x) | set(y)
    return {k: x.get(k, x[None]) | y.get(k, y[None]) for k in keys}


def initial_state() -> State:
    return {frozenset(): {None: frozenset({(CLEAN,)})}}


def _forget(state: State, drop) -> State:
    out: State = {}
    for assumptions, facts in state.items():
        kept = frozenset(a for a in assumptions if not drop(a))
        out[kept] = _merge(out[kept], facts) if kept in out else facts
    return out


class Interpreter:
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

    # ----- entry points -------------------------------------------------------------------
    def run(self, body: list[ast.stmt], class_name: str | None, repeat: ast.AST | None) -> None:
        """Interpret ``body``; ``repeat`` wraps it in an implicit loop (Lightning hooks)."""
        self._class = [class_name]
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
        if not trackable:
            self._unstable.add(key)
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
            yes, no = _forget(yes, lambda a: True), _forget(no, lambda a: True)
        return (yes or None), (no or None)

    def _loop(self, node: ast.AST, body: list[ast.stmt], state: State, infinite: bool) -> Flow:
        if self._loops and not any(self.contains_events(s) for s in body):
            return Flow(normal=state)
        assigned = _assigned_names(node)
        unstable = self._unstable

        def varies(assumption) -> bool:
            test = assumption[0]
            return test in unstable or any(f"id='{name}'" in test for name in assigned)

        self._loops.append(node)
        self.zeroed_in_loop.setdefault(id(node), set())
        aliases = self._loop_aliases(node)
        if aliases:
            self._subst.append({**self._subst[-1], **aliases})
        head = _forget(state, varies)
        brk = ret = done = None
        try:
            for _ in range(MAX_LOOP_PASSES):
                flow = self._block(body, head)
                brk, ret = join(brk, flow.brk), join(ret, flow.ret)
                back = join(flow.normal, flow.cont)
                done = join(done, back)
                new_head = join(head, _forget(back, varies) if back else None)
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
        return self._map_all(state, _dropped)

    def _assigned(self, stmt: ast.stmt, state: State) -> State:
        if not isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
            return state
        for key in self.index.constructions.get(id(stmt), ()):
            # A newly built optimizer starts a new story (usually over new parameters too).
            state = self._map_key(state, self._subst_key(key), lambda f: (CLEAN,))
        names = _assigned_names(stmt)
        if not names:
            return state
        return _forget(state, lambda a: any(f"id='{n}'" in a[0] for n in names))

    # ----- expressions and events ---------------------------------------------------------
    def _expressions(self, stmt: ast.stmt, state: State) -> State:
        if ev.is_grad_zeroing(stmt):
            owners = self.index.optimizers_of_param(ev.grad_owner(stmt) or "")
            event = self._event(ev.ZERO, stmt, ev.ALL, partial=not owners)
            return self._apply_zero(event, tuple(sorted(owners)) or (ev.ALL,), state)
        return self._calls_in(stmt, stmt, state)

    def _calls_in(self, node: ast.AST, stmt: ast.stmt, state: State) -> State:
        calls = [n for n in _walk_executed(node) if isinstance(n, ast.Call)]
        calls.sort(key=lambda c: (c.end_lineno or 0, c.end_col_offset or 0))
        for call in calls:
            state = self._call(call, stmt, state)
        return state

    def _call(self, call: ast.Call, stmt: ast.stmt, state: State) -> State:
        if ev.is_backward_call(call):
            event = self._event(ev.BACKWARD, call, self.text.segment(call))
            return self._map_all(state, lambda f: _on_backward(f, event))
        receiver = ev.zero_call_receiver(call)
        if receiver is not None:
            return self._zero_call(call, receiver, state)
        step = ev.step_target(call, lambda k: self.index.is_optimizer(self._subst_key(k)))
        if step is not None:
            key, closure = step
            if closure is not None:
                state = self._closure(closure, state)
            for opt in self._expand(key):
                state = self._gated(state, lambda s, o=opt: self._apply_step(call, o, s))
            return state
        callee = self.index.resolve(call, self._class[-1], self._local_defs[-1])
        if callee is not None:
            return self._inline(callee, call, state)
        return state

    def _zero_call(self, call: ast.Call, receiver: str, state: State) -> State:
        keys = self._expand(receiver) if receiver != ev.ALL else (ev.ALL,)
        targets: list[str] = []
        gated = True
        for key in keys:
            if key != ev.ALL and self.index.is_optimizer(key) and not ev.is_group_name(key):
                targets.append(key)
                continue
            gated = False
            owned = self.index.optimizers_of_model(key) if key != ev.ALL else set()
            targets.extend(sorted(owned) or [ev.ALL])
        event = self._event(ev.ZERO, call, receiver)
        apply = lambda s: self._apply_zero(event, tuple(targets), s)
        return self._gated(state, apply) if gated else apply(state)

    def _param_zero(self, loop: ast.For, state: State) -> State:
        owner = ev.param_loop_owner(loop)
        owned = self.index.optimizers_of_model(owner) if owner else set()
        event = self._event(ev.ZERO, loop, owner or ev.ALL, partial=owner is None)
        return self._apply_zero(event, tuple(sorted(owned)) or (ev.ALL,), state)

    def _gated(self, state: State, apply) -> State:
        # Inside `accelerator.accumulate`, optimizer.step()/zero_grad() only act on sync steps.
        if not self._gates:
            return apply(state)
        yes, no = self._split(state, self._gates[-1], True)
        return join(apply(yes) if yes else None, no)

    def _apply_zero(self, event: ev.Event, targets: tuple[str, ...], state: State) -> State:
        for loop in self._loops:
            self.zeroed_in_loop[id(loop)].update(targets)
        inner = self._inner_conditions()
        # A reset under a counter test (`if i % k == 0: zero_grad()`) opens an accumulation
        # window on purpose: GC001 trusts it, and so does GC002 when the step is counter-gated.
        counter = bool(inner and inner[-1])
        if counter and self._loops:
            self.counter_zeroed_in_loop.setdefault(id(self._loops[-1]), set()).update(targets)
        quiet = self._handlers > 0 or event.partial or counter
        fn = lambda f: _on_zero(f, event, quiet)
        if ev.ALL in targets:
            return self._map_all(state, fn)
        for key in targets:
            state = self._map_key(state, key, fn)
        return state

    def _apply_step(self, call: ast.Call, opt: str, state: State) -> State:
        event = self._event(ev.STEP, call, opt)
        out: State = {}
        for assumptions, facts in state.items():
            facts = dict(facts)
            mine = facts.get(opt, facts[None])
            new_mine = set()
            for fact in mine:
                self._report(fact, event, opt)
                new_mine.add(_after_step(fact))
            for other in list(facts):
                if other != opt:
                    facts[other] = frozenset(_after_other_step(f) for f in facts[other])
            facts[opt] = frozenset(new_mine)
            out[assumptions] = facts
        return out

    def _report(self, fact: tuple, step: ev.Event, opt: str) -> None:
        kind = fact[0]
        # Only tests inside the innermost loop explain why the step is skipped.
        depth = len(self._loops)
        conditions = tuple(t for t, d, _ in self._conditions if d == depth and depth)
        if self._gates:
            conditions += ("<sync>",)
        if kind == STALE:
            issues = [Issue("GC002", step, step, opt, (fact[1],), True, conditions,
                            tuple(self._loops), any(self._inner_conditions()))]
        elif kind in (WIPED, WFRESH):
            backwards = tuple(sorted(fact[2], key=_pos))
            issues = [Issue("GC001", zero, step, opt, backwards, kind == WFRESH, conditions,
                            tuple(self._loops)) for zero in sorted(fact[1], key=_pos)]
        else:
            return
        for issue in issues:
            self.issues.setdefault((issue.code, issue.at.line, issue.at.col, opt), issue)

    def _closure(self, closure: ast.AST, state: State) -> State:
        if isinstance(closure, ast.Lambda):
            return self._calls_in(closure.body, closure, state)
        if isinstance(closure, ast.Name):
            fn = self._local_defs[-1].get(closure.id) or self.index.functions.get(closure.id)
            if fn is not None:
                return self._inline(fn, None, state)
        return state

    def _inline(self, fn: FunctionNode, call: ast.Call | None, state: State) -> State:
        if fn in self._frames or len(self._frames) >= MAX_INLINE_DEPTH:
            return state
        subst = dict(self._subst[-1]) if call is None else self._bind(fn, call)
        self._frames.append(fn)
        self._subst.append(subst)
        self._local_defs.append(dict(self._local_defs[-1]) if call is None else {})
        self._class.append(self.index.enclosing_class(fn) or self._class[-1])
        conditions, self._conditions = self._conditions, list(self._conditions)
        try:
            flow = self._block(fn.body, state)
        finally:
            self._frames.pop()
            self._subst.pop()
            self._local_defs.pop()
            self._class.pop()
            self._conditions = conditions
        return join(flow.normal, flow.ret) or state

    def _bind(self, fn: FunctionNode, call: ast.Call) -> dict[str, tuple[str, ...]]:
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        if params and params[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
            params = params[1:]
        bound: dict[str, tuple[str, ...]] = {}
        pairs = list(zip(params, call.args))
        pairs += [(kw.arg, kw.value) for kw in call.keywords if kw.arg]
        for name, arg in pairs:
            key = self._key(arg)
            if key:
                bound[name] = self._expand(key)
        return bound

    # ----- helpers ------------------------------------------------------------------------
    def _event(self, kind: str, node: ast.AST, target: str, partial: bool = False) -> ev.Event:
        line, col = self.text.start(node)
        return ev.Event(kind, node, line, col, self.text.segment(node), target, partial)

    def _key(self, node: ast.AST) -> str | None:
        key = dotted(node)
        return self._subst_key(key) if key else None

    def _subst_key(self, key: str) -> str:
        head, dot, rest = key.partition(".")
        mapped = self._subst[-1].get(head)
        if mapped and len(mapped) == 1:
            return mapped[0] + dot + rest
        return key

    def _expand(self, key: str) -> tuple[str, ...]:
        head, dot, rest = key.partition(".")
        mapped = self._subst[-1].get(head)
        if mapped:
            return tuple(m + dot + rest for m in mapped)
        return (key,)

    def _map_all(self, state: State, fn) -> State:
        return {a: {k: frozenset(map(fn, v)) for k, v in facts.items()} for a, facts in state.items()}

    def _map_key(self, state: State, key: str, fn) -> State:
        out: State = {}
        for assumptions, facts in state.items():
            facts = dict(facts)
            facts[key] = frozenset(map(fn, facts.get(key, facts[None])))
            out[assumptions] = facts
        return out

    def contains_events(self, node: ast.AST) -> bool:
        """Whether ``node`` holds any call or statement that could be a gradient event."""
        return self.index.contains_events(node)


dotted = ev.dotted


def _walk_executed(node: ast.AST):
    """Nodes evaluated when ``node`` runs: skips lambdas and nested definitions."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for child in ast.iter_child_nodes(current):
            if not isinstance(child, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef,
                                      ast.ClassDef)):
                stack.append(child)


_JUMPS = (ast.Break, ast.Continue, ast.Return, ast.Raise)


def _jumps(stmt: ast.stmt) -> bool:
    """Whether ``stmt`` may leave its block early (break, continue, return, raise)."""
    return isinstance(stmt, _JUMPS) or (
        hasattr(stmt, "body") and any(isinstance(n, _JUMPS) for n in ast.walk(stmt))
    )


def _assigned_names(node: ast.AST) -> set[str]:
    names = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        names.update(a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg))
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
    return names


def _join_flows(a: Flow, b: Flow) -> Flow:
    return Flow(join(a.normal, b.normal), join(a.brk, b.brk), join(a.cont, b.cont),
                join(a.ret, b.ret))


def _pos(event: ev.Event) -> tuple[int, int]:
    return event.line, event.col


def _on_backward(fact: tuple, bw: ev.Event) -> tuple:
    kind = fact[0]
    if kind in (CLEAN, FOREIGN):
        return (FRESH, frozenset({bw}))
    if kind == FRESH:
        return (FRESH, fact[1] | {bw})
    if kind == APPLIED:
        return (STALE, bw)
    if kind == WIPED:
        # Only the same backward running again means the wiped gradients were wanted.
        return (WFRESH, fact[1], fact[2]) if bw in fact[2] else (FRESH, frozenset({bw}))
    return fact


def _on_zero(fact: tuple, zero: ev.Event, quiet: bool) -> tuple:
    kind = fact[0]
    if kind == FRESH and not quiet:
        return (WIPED, frozenset({zero}), fact[1])
    if kind == WFRESH and not quiet:
        return (WIPED, fact[1], fact[2])
    if kind == WIPED:
        return fact if quiet else (WIPED, fact[1] | {zero}, fact[2])
    return (CLEAN,)


def _dropped(fact: tuple) -> tuple:
    if fact[0] == FRESH:
        return (FOREIGN,)
    return (CLEAN,) if fact[0] == WIPED else fact


def _after_step(fact: tuple) -> tuple:
    # After a wipe the step had nothing to apply, so nothing stale is left behind.
    return (CLEAN,) if fact[0] in (CLEAN, WIPED) else (APPLIED,)


def _after_other_step(fact: tuple) -> tuple:
    return (FOREIGN,) if fact[0] == FRESH else fact
