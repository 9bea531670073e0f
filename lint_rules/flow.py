"""Abstract interpretation of a training loop over per-optimizer gradient states.

The states and their transitions live in ``states.py``. This module walks the statements:
loops are iterated to a fixed point (so at least two iterations are seen); ``if`` tests are
remembered per path so that ``if c: step()`` ... ``if c: zero()`` correlate; inside
``with accelerator.accumulate(...)`` the optimizer's step and zero_grad are gated by the
sync flag, as accelerate does; calls to functions of the same file are walked in place.
A name that a loop target or an assignment binds to another optimizer starts a new story
(``rebinding.py``); ``with``/``try``/``match`` are walked by ``compound.py``.
"""
from __future__ import annotations

import ast

from lint_rules import events as ev
from lint_rules import rebinding, syntax
from lint_rules.bindings import Bindings
from lint_rules.compound import Compound, Flow, join_flows
from lint_rules.effects import Effects, Issue
from lint_rules.finding import AnalysisIncomplete
from lint_rules.source import SourceText
from lint_rules.states import (
    APPLIED,
    CLEAN,
    State,
    after_revert,
    compact,
    dropped,
    kinds,
    forget,
    initial_state,
    join,
    merge_facts,
)
from lint_rules.summaries import FunctionNode, ModuleIndex

MAX_LOOP_PASSES = 8
MAX_WORLDS = 32  # combinations of branch conditions kept apart on a first pass
MAX_WORLDS_RETRY = 256  # ... and on a second pass, when merging made the first one doubtful
BUDGET = 40_000  # statements interpreted per unit before giving up (GC000)
TestKey = tuple  # an `if` test: (its text without whitespace, the names it reads, their paths)


class _OutOfBudget(Exception):
    pass


class PathsMerged(AnalysisIncomplete):
    """Too many combinations of branch conditions: the paths were merged, and the findings
    may be artefacts of the merge."""


class Interpreter(Compound, Effects):
    """Runs one unit (module body or function) and collects Issues."""

    def __init__(self, index: ModuleIndex, text: SourceText, max_worlds: int = MAX_WORLDS) -> None:
        self.index = index
        self.max_worlds = max_worlds
        self.text = text
        self.issues: dict[tuple, Issue] = {}
        self.zeroed_in_loop: dict[int, set[str]] = {}
        self.counter_zeroed_in_loop: dict[int, set[str]] = {}  # resets under `if i % k == 0`
        # each reset: the loops around it and whether a non-counter test guards it
        self.zero_context: dict[ev.Event, tuple[tuple[int, ...], tuple]] = {}
        self.backward_loops: set[int] = set()  # loops whose body ran a backward pass
        self._loops: list[ast.AST] = []
        # enclosing if-tests: (text, loop depth, whether it is a modulo/counter test, the `if`)
        self._conditions: list[tuple[str, int, bool]] = []
        self._gates: list[TestKey] = []
        self._last_gate: TestKey | None = None  # the sync flag of the last `accumulate()` left
        self._gated_optimizers: set[str] = set()  # stepped or reset inside `accumulate()`
        self._handlers = 0
        self._frames: list[FunctionNode] = []
        # functions of this file whose calls lie past MAX_INLINE_DEPTH: analysed on their own
        self.too_deep: list[FunctionNode] = []
        self._owners: list[str | None] = [None]  # the optimizer whose own method runs now
        self._site: tuple | None = None  # (call, text) here, while another module's code runs
        self._subst: list[dict[str, tuple[str, ...]]] = [{}]
        self._constants: list[dict[str, object]] = [{}]  # parameters a call set to literals
        self._local_defs: list[dict[str, FunctionNode]] = [{}]
        self._class: list[str | None] = [None]
        self._unstable: set[TestKey] = set()
        self._budget = BUDGET
        self._loop_assigned: dict[int, set[str]] = {}
        self._if_nodes: dict[int, ast.If] = {}  # the `if` statements met, by id
        self._counters: dict[str, bool] = {}  # loop counter -> whether this is the first pass
        # (test, loop, truth): once the test takes this truth, it keeps it on every later pass
        self._settled: set[tuple] = set()
        self._first_only = 0  # inside branches that run on a loop's first iteration alone
        self._step_kinds: dict[tuple, set[str]] = {}  # (step, optimizer) -> kinds of facts met
        self._grad_off = 0  # `with torch.no_grad():` blocks around the code walked now
        self._bounds: dict[TestKey, tuple[str, str, int]] = {}  # `k > 1` -> ("k", ">", 1)
        self._bindings: dict[int, object] = {}  # scope -> its Bindings, for reach.py
        self._switching: dict[int, bool] = {}  # scope -> reach.switches_requires_grad
        self._aliases: dict[str, str] = {}  # model given another's gradient tensors -> their key
        self.alias_sites: dict[str, ast.AST] = {}  # that key -> the statement handing them over
        self._reached: dict[ev.Event, frozenset[str]] = {}  # backward -> optimizers of the models it goes through
        # backward -> optimizer -> the optimizers of the models whose outputs fed that one's
        self._feeders: dict[ev.Event, dict[str, frozenset[str]]] = {}
        self._epoch_unit = False
        self._merged = False  # paths were merged past MAX_WORLDS
        self._flag_tests: dict[int, frozenset[str]] = {}
        self._counting: dict[int, set[str]] = {}  # scope -> its counters (_is_optional_step)
        self._optimizer_resets: dict[int, bool] = {}  # scope -> whether it resets an optimizer

    # ----- entry points -------------------------------------------------------------------
    def run(
        self, body: list[syntax.Statement], class_name: str | None, repeat: ast.AST | None,
        function: FunctionNode | None = None,
    ) -> None:
        """Interpret ``body``; ``repeat`` wraps it in an implicit loop (Lightning hooks)."""
        self._class = [class_name]
        self._frames = [function] if function is not None else []  # no inlining into itself
        # A never-called function with a loop of its own is an epoch, not a batch: a reset
        # outside that loop drops whatever an unfinished window left, which is on purpose.
        self._epoch_unit = repeat is not None and any(
            isinstance(n, syntax.LOOPS) and self.contains_events(n)
            for n in syntax.walk(repeat) if n is not repeat
        )
        where = function or (body[0] if body else None)
        try:
            if repeat is not None:
                self._loop(repeat, body, initial_state(), infinite=True)
            else:
                self._block(body, initial_state())
        except _OutOfBudget:
            self._give_up(where, f"the flow analysis ran out of its budget of {BUDGET} "
                                 "statements")
        except RecursionError:
            self._give_up(where, "the code nests too deeply for the flow analysis")
        # A second step "with nothing new" is reported only when no path brings it new
        # gradients: a backward under a test we cannot read (`if loss.requires_grad:`)
        # leaves a path without one, which is no evidence of a double step.
        self.issues = {key: issue for key, issue in self.issues.items()
                       if not issue.restep or self._step_kinds[(issue.step.node_id, issue.optimizer)]
                       <= {APPLIED, CLEAN}}
        if self._merged and self.issues:
            # The findings may come from paths that merging made up: do not guess.
            raise PathsMerged(
                f"more than {self.max_worlds} combinations of branch conditions had to be "
                "merged, and the findings could be artefacts of that", *self._where(where))

    def _give_up(self, node: ast.AST | None, reason: str) -> None:
        raise AnalysisIncomplete(reason, *self._where(node))

    def _where(self, node: ast.AST | None) -> tuple[int, int]:
        return self.text.start(node) if node is not None else (1, 1)

    # ----- statements ---------------------------------------------------------------------
    def _block(self, stmts: list[syntax.Statement], state: State | None) -> Flow:
        flow = Flow(normal=state)
        gates = len(self._conditions)
        try:
            for stmt in stmts:
                if flow.normal is None:
                    break
                out = self._stmt(stmt, flow.normal)
                flow.brk = join(flow.brk, out.brk)
                flow.cont = join(flow.cont, out.cont)
                flow.ret = join(flow.ret, out.ret)
                flow.normal = out.normal
                if self._counter_continue(stmt):
                    # `if (i + 1) % k: continue`: what follows runs only when the counter
                    # test lets it, like a block under `if (i + 1) % k == 0:`
                    self._conditions.append((self._negated(stmt.test), len(self._loops), True, id(stmt)))
        finally:
            del self._conditions[gates:]
        return flow

    def _negated(self, test: ast.AST) -> str:
        """How a message names the test being false: ``(i + 1) % k == 0`` for ``(i + 1) % k
        != 0``, else ``not (...)``."""
        flipped = {ast.NotEq: ast.Eq, ast.Eq: ast.NotEq, ast.Lt: ast.GtE, ast.GtE: ast.Lt,
                   ast.Gt: ast.LtE, ast.LtE: ast.Gt}
        if type(test) is ast.Compare and len(test.ops) == 1 and type(test.ops[0]) in flipped:
            return ast.unparse(ast.Compare(test.left, [flipped[type(test.ops[0])]()], test.comparators))
        if type(test) is ast.BinOp and type(test.op) is ast.Mod:
            return f"{ast.unparse(test)} == 0"  # `if (i + 1) % k: continue`
        return f"not ({' '.join(self.text.segment(test).split())})"

    def _counter_continue(self, stmt: syntax.Statement) -> bool:
        """``if (i + 1) % k: continue`` (a `%` in the test itself, or in one operand of an
        ``and``): not ``if step < resume_step: continue``, whatever `resume_step` was."""
        if type(stmt) is not ast.If or stmt.orelse or not self._loops or type(stmt.body[-1]) is not ast.Continue:
            return False
        test = stmt.test
        operands = test.values if type(test) is ast.BoolOp and type(test.op) is ast.And else [test]
        return any(syntax.has_modulo(operand) for operand in operands)

    def _stmt(self, stmt: syntax.Statement, state: State) -> Flow:
        self._budget -= 1
        if self._budget < 0:
            raise _OutOfBudget
        kind = type(stmt)
        if kind in _FUNCTION_TYPES:
            self._local_defs[-1][stmt.name] = stmt
            return Flow(normal=state)
        if kind is ast.ClassDef:
            return Flow(normal=state)
        if kind is ast.Expr and type(stmt.value) is ast.Call and self._restores_weights(stmt.value):
            return Flow(normal=self._map_all(state, after_revert))
        if kind is ast.Assert:
            return Flow(normal=self._asserted(stmt, state))
        if not self.contains_events(stmt) and not syntax.may_jump(stmt):
            if syntax.is_compound(stmt) and any(
                    map(self.index.is_optimizer, syntax.bound_names(stmt))):
                # `if adam: opt = Adam(...) else: opt = SGD(...)`: a new optimizer either way
                for node in syntax.walk(stmt):
                    if type(node) is ast.Assign or type(node) is ast.AnnAssign:
                        state = self._assigned(node, state)
            return Flow(normal=self._assigned(stmt, state))
        if kind is ast.If:
            return self._if(stmt, state)
        if kind in _FOR_TYPES:
            if ev.param_loop_zeroes(stmt):
                return Flow(normal=self._param_zero(stmt, state))
            reset = ev.group_loop_optimizer(stmt)
            if reset is not None:
                return Flow(normal=self._group_zero(stmt, reset, state))
            return self._loop(stmt, syntax.body_of(stmt), state, infinite=False)
        if kind is ast.While:
            value = syntax.constant(stmt.test)
            infinite = syntax.has_value(value) and bool(value)
            return self._loop(stmt, syntax.body_of(stmt), state, infinite=infinite)
        if kind in _WITH_TYPES:
            return self._with(stmt, state)
        if kind in _TRY_TYPES:
            return self._try(stmt, state)
        if kind is ast.Match:
            return self._match(stmt, state)
        state = self._expressions(stmt, state)
        if kind is ast.Return:
            return Flow(ret=state)
        if kind is ast.Raise:
            return Flow()
        if kind is ast.Break:
            return Flow(brk=state)
        if kind is ast.Continue:
            return Flow(cont=self._skipped(state))
        return Flow(normal=self._assigned(stmt, state))

    def _asserted(self, stmt: ast.Assert, state: State) -> State | None:
        """``assert self.n_backward == 0`` holds from here on (or the code stops): an ``if``
        on the same test further on (``if self.n_backward == 0: opt.zero_grad()`` in a
        helper) takes its first branch. Only tests that some ``if`` reads are kept."""
        test, value = stmt.test, True
        while syntax.is_not(test):
            test, value = test.operand, not value
        if type(test) is ast.BoolOp or not self.index.tested_by_an_if(
                syntax.canonical_test(test, self.text.segment)[0]):
            return state
        _, key, value = self._canonical(test, value)
        return self._split(state, key, value)[0]

    def _if(self, stmt: ast.If, state: State) -> Flow:
        state = self._calls_in(stmt.test, stmt, state)
        test, value = stmt.test, True
        while syntax.is_not(test):
            test, value = test.operand, not value
        known = self._decided(stmt.test)
        if known is None and not syntax.may_jump(stmt):
            # `if p.grad is not None: p.grad = None` counts as run: where the test is false
            # there is no gradient to reset or apply, so the branch says nothing about them.
            known = _grad_presence(stmt.test)
        if known is None:
            # `if loss.requires_grad:` / `torch.is_grad_enabled()`: whether autograd records,
            # which the `with torch.no_grad():` blocks around this code decide
            known = _grad_mode_test(stmt.test, self._grad_off == 0)
        if known is None and self._frames:
            # `if (i + 1) % accumulate == 0:` with `accumulate = 1` in this function: every time
            known = _modulo_by_one(stmt.test, self._frames[-1],
                                   self._scope_bindings(self._frames[-1]))
        if known is not None:  # `if do_zero_grad:` with do_zero_grad=False at this call
            branch = syntax.body_of(stmt) if known else syntax.orelse_of(stmt)
            first_only = self._first_only_branch(stmt.test, known)
            self._first_only += first_only
            try:
                return self._block(branch, state)
            finally:
                self._first_only -= first_only
        _, key, value = self._canonical(test, value)
        self._note_settled(test, key)
        parts = self._reduced(test)[0]
        modulo = syntax.has_modulo(stmt.test) or not self.index.counter_flags().isdisjoint(key[1]) \
            or self._periodic(stmt, key[1])
        if modulo or not all(map(syntax.is_plain_test, parts)):
            self._unstable.add(key)  # a counter test (`i % k == 0`) differs every iteration
        yes, no = self._split(state, key, value)
        test_text = " ".join(self.text.segment(stmt.test).split())
        self._if_nodes[id(stmt)] = stmt
        self._conditions.append((test_text, len(self._loops), modulo, id(stmt)))
        then = self._block(syntax.body_of(stmt), yes) if yes else Flow()
        self._conditions[-1] = (f"not ({test_text})", len(self._loops), modulo, id(stmt))
        other = self._block(syntax.orelse_of(stmt), no) if no else Flow()
        self._conditions.pop()
        if other.normal is not None and not modulo and self._loops and self._is_optional_step(stmt):
            # `if update_param: opt.step()`: when the flag is off, this iteration's
            # gradients were not meant for any step; a later reset drops them on purpose
            other.normal = self._map_all(other.normal, dropped)
        flow = join_flows(then, other)
        if key[0] not in self.index.repeated_tests() and key not in self._bounds and (
                not self.contains_events(stmt) or not self._loops):
            # `if kind == "epsilon": ... else: raise` tells nothing about gradients, and no
            # other test reads the same: remembering which way it went only multiplies paths.
            # Nor does `if args.optimizer == "adam": opt = Adam(...)` outside every loop:
            # it runs once, so no later pass can take the other way.
            flow = _forgotten(flow, key)
        return flow

    def _note_settled(self, test: ast.AST, key: TestKey) -> None:
        """``if epoch < args.start_epoch: ...; continue`` in ``for epoch in range(n):`` runs
        on a prefix of the passes: once a pass goes the other way, no later one comes back."""
        for loop in reversed(self._loops):
            counter = syntax.ascending_counter(loop)
            truth = None if counter is None else syntax.settled_truth(test, counter)
            if truth is not None and _unchanged_in(test, counter, loop):
                self._settled.add((key, id(loop), self._canonical(test, truth)[2]))
                return

    def _periodic(self, stmt: ast.If, names: frozenset[str]) -> bool:
        """A comparison with what the guarded block itself sets again, such as ``if
        tokens_seen >= tokens_per_step: ...; tokens_seen = 0`` or ``if ni - last_step >=
        accumulate: ...; last_step = ni``: an accumulation window, like ``i % k == 0``. (A
        threshold that nothing restarts, ``if step > warmup:``, holds from some point on and
        opens no window.)"""
        test = stmt.test.operand if syntax.is_not(stmt.test) else stmt.test
        # a flag the block sets again (`if should_start_update: ...; should_start_update =
        # False`, set back after the step) opens a window too
        if not self._loops or type(test) not in (ast.Compare, ast.Name, ast.Attribute):
            return False
        return not names.isdisjoint(syntax.assigned_in(syntax.body_of(stmt)))

    def _first_only_branch(self, test: ast.AST, taken: bool) -> bool:
        """Whether the branch ``taken`` of ``test`` runs on a loop's first iteration alone."""
        for counter, first in self._counters.items():
            later = syntax.first_iteration_test(test, counter, False)
            if first and later is not None and later != taken:
                return True
        return False

    def _decided(self, test: ast.AST) -> bool | None:
        """The truth of a test made only of parameters the call set to literals (or of one on
        a loop counter, `if i == 0:`), else None."""
        for counter, first in self._counters.items():
            answer = syntax.first_iteration_test(test, counter, first)
            if answer is not None:
                return answer
        constants = self._constants[-1]
        if not constants:
            return None
        kind = type(test)
        if kind is ast.Name:
            return bool(constants[test.id]) if test.id in constants else None
        if syntax.is_not(test):
            inner = self._decided(test.operand)
            return None if inner is None else not inner
        if kind is ast.BoolOp:
            values = [self._decided(v) for v in test.values]
            absorbing = type(test.op) is ast.Or  # True for `or`, False for `and`
            if absorbing in values:
                return absorbing
            return None if None in values else not absorbing
        return None

    def _reduced(self, test: ast.AST) -> tuple[list[ast.AST], str]:
        """``a and b`` with ``b`` known true (``a or b`` with ``b`` known false) reads as ``a``:
        the operands left to test, and the operator that joins them."""
        if type(test) is not ast.BoolOp:
            return [test], ""
        neutral = type(test.op) is ast.And
        kept = [v for v in test.values if self._decided(v) is not neutral]
        if len(kept) == 1:
            return self._reduced(kept[0])
        if not kept or len(kept) == len(test.values):
            return [test], ""
        return kept, "and" if neutral else "or"

    def _test_key(self, parts: list[ast.AST], joiner: str = "") -> TestKey:
        # Two tests are the same assumption when they read the same, whatever the spacing.
        text = joiner.join("".join(self.text.segment(p).split()) for p in parts)
        return (text, frozenset(n for p in parts for n in syntax.names_in(p)),
                frozenset(x for p in parts for x in syntax.paths_in(p)))

    def _canonical(self, test: ast.AST, value: bool) -> tuple[ast.AST, TestKey, bool]:
        """The test as an assumption: `x != 0` is the assumption `x == 0` taken false, so two
        `if`s that test one condition both ways correlate; with its integer bound noted."""
        parts, joiner = self._reduced(test)  # `opt and do_zero_grad`, do_zero_grad=True
        if len(parts) == 1 and not joiner:
            text, flipped = syntax.canonical_test(parts[0], self.text.segment)
            base = self._test_key(parts)
            key = (text, base[1], base[2])
            bound = syntax.integer_bound(parts[0])
            if bound is not None:
                self._bounds[key] = bound
            return parts[0], key, value != flipped
        return test, self._test_key(parts, joiner), value

    def _split(self, state: State, key: TestKey, value: bool) -> tuple[State | None, State | None]:
        yes: State = {}
        no: State = {}
        for assumptions, facts in state.items():
            if (key, value) in assumptions:
                _add_world(yes, assumptions, facts)
            elif (key, not value) in assumptions:
                _add_world(no, assumptions, facts)
            else:
                # `if k > 1:` after `if k == 1:` held: only the branch the bounds allow
                if self._possible(assumptions, key, value):
                    _add_world(yes, assumptions | {(key, value)}, facts)
                if self._possible(assumptions, key, not value):
                    _add_world(no, assumptions | {(key, not value)}, facts)
        if len(yes) + len(no) > self.max_worlds:
            yes, no = compact(yes), compact(no)
        if len(yes) + len(no) > self.max_worlds:
            yes, no = compact(yes, kinds), compact(no, kinds)
        if len(yes) + len(no) > self.max_worlds:
            # NOTE: merging over-approximates: it can only add findings, never hide one, so a
            # unit that ends without findings is still clean (see run()).
            self._merged = True
            yes, no = forget(yes, lambda a: True), forget(no, lambda a: True)
        return (yes or None), (no or None)

    def _possible(self, assumptions: frozenset, key: TestKey, value: bool) -> bool:
        """Whether an integer satisfies every bound the world assumes on ``key``'s variable."""
        bound = self._bounds.get(key)
        if bound is None:
            return True
        bounds = [(op, n, value if k == key else held)
                  for k, held in (*assumptions, (key, value))
                  if (b := self._bounds.get(k)) is not None and b[0] == bound[0]
                  for _, op, n in (b,)]
        return syntax.bounds_agree(bounds)

    def _loop(self, node: ast.AST, body: list[syntax.Statement], state: State, infinite: bool) -> Flow:
        if self._loops and not any(self.contains_events(s) for s in body):
            return Flow(normal=state)
        assigned = self._loop_assigned.get(id(node))
        if assigned is None:
            assigned = self._loop_assigned[id(node)] = syntax.bound_names(node) - _self_aliases(node)
        unstable = self._unstable

        settled = self._settled

        def varies(assumption) -> bool:
            test = assumption[0]
            if (test, id(node), assumption[1]) in settled:
                return False
            return test in unstable or not assigned.isdisjoint(test[1])

        self._loops.append(node)
        self.zeroed_in_loop.setdefault(id(node), set())
        aliases = self._loop_aliases(node)
        if aliases:
            self._subst.append({**self._subst[-1], **aliases})
        # A target name not standing for known members is a new object each iteration.
        fresh = syntax.stored_names(node.target) - set(aliases) if isinstance(node, syntax.FOR_LOOPS) else set()
        fresh_optimizers = {n for n in fresh if self.index.is_optimizer(n)}
        targets = syntax.stored_names(node.target) if isinstance(node, syntax.FOR_LOOPS) else set()
        members = {k for keys in aliases.values() for k in keys}
        head = rebinding.restart(forget(state, varies), fresh, fresh_optimizers)
        entry = head
        brk = ret = done = None
        counter = self._first_iteration_counter(node, body)
        carried = None  # the state the last pass hands to the next iteration
        try:
            for number in range(MAX_LOOP_PASSES):
                if counter is not None:
                    # `for i, b in enumerate(loader): if i == 0: opt.zero_grad()`: the first
                    # pass is the one where `i == 0`; later ones start from the back edge only
                    self._counters[counter] = number == 0
                    if number == 1:
                        head = None if carried is None else carried
                flow = self._block(body, head) if head is not None else Flow()
                brk, ret = join(brk, flow.brk), join(ret, flow.ret)
                back = join(flow.normal, flow.cont)
                if isinstance(node, syntax.FUNCTIONS):
                    back = join(back, flow.ret)  # the next call starts where this one returned
                done = join(done, back)
                if back:
                    # The next iteration binds the next member / object: nothing carries over.
                    back = rebinding.restart(back, fresh, fresh_optimizers)
                    # `optimizers[a]` with `a` the loop's own target: the next iteration's is
                    # another member, in the state the loop found it in
                    picked = {k for facts in back.values() for k in facts
                              if k and not targets.isdisjoint(ev.member_index_names(k))}
                    back = rebinding.restore(back, members | picked, entry)
                carried = forget(back, varies) if back else None
                new_head = join(head, carried)
                if new_head == head and number > 0:
                    break
                head = new_head
        finally:
            self._loops.pop()
            if counter is not None:
                self._counters.pop(counter, None)
            if aliases:
                self._subst.pop()
        # NOTE: a loop is assumed to run at least once; the zero-iteration path of
        # `for opt in optimizers:` would otherwise invent findings on correct code.
        exit_state = brk if infinite else join(done, brk)
        orelse = syntax.orelse_of(node)
        if orelse and not infinite and done is not None:
            tail = self._block(orelse, done)
            return Flow(normal=join(tail.normal, brk), ret=join(ret, tail.ret))
        return Flow(normal=exit_state, ret=ret)

    def _first_iteration_counter(self, node: ast.AST, body: list[syntax.Statement]) -> str | None:
        """The loop's own counter (``i`` of ``enumerate(...)`` or ``range(n)``, from 0) when the
        body compares it with 0; else None."""
        if not isinstance(node, syntax.FOR_LOOPS) or type(node.iter) is not ast.Call:
            return None
        it, target = node.iter, node.target
        name = syntax.callee_name(it)
        if name == "enumerate" and len(it.args) == 1 and not it.keywords and \
                type(target) is ast.Tuple and target.elts and type(target.elts[0]) is ast.Name:
            counter = target.elts[0].id
        elif name == "range" and len(it.args) == 1 and type(target) is ast.Name:
            counter = target.id
        else:
            return None
        tested = any(syntax.first_iteration_test(n.test, counter) is not None for s in body for n in syntax.walk(s)
                     if type(n) is ast.If)
        return counter if tested else None

    def _loop_aliases(self, node: ast.AST) -> dict[str, tuple[str, ...]]:
        # `for opt in optimizers:` / `for opt in [opt_g, opt_d]:` -> opt names those optimizers.
        if not isinstance(node, syntax.FOR_LOOPS):
            return {}
        return rebinding.loop_members(node, self._key, self.index.is_optimizer)

    def _inner_conditions(self) -> list[bool]:
        depth = len(self._loops)
        return [modulo for _, d, modulo, _ in self._conditions if d == depth and depth]

    def _skipped(self, state: State) -> State:
        # `continue` in an except handler, or under a test that is not a counter test
        # (`if not math.isfinite(norm): continue`), drops the batch on purpose: its gradients
        # were never meant for a step, so a later reset of them is no loss.
        inner = self._inner_conditions()
        if not (self._handlers or (inner and not any(inner))):
            return state
        return self._map_all(state, dropped)

    def _assigned(self, stmt: syntax.Statement, state: State) -> State:
        if type(stmt) not in _ASSIGNMENTS:
            return state
        same = self._handed_back(stmt)
        for key in self.index.constructions.get(id(stmt), ()):
            # A newly built optimizer starts a new story (usually over new parameters too).
            if key not in same:
                state = self._map_key(state, self._subst_key(key), lambda f: (CLEAN,))
        if type(stmt) is ast.Assign and syntax.constant(stmt.value) is None and \
                syntax.has_value(syntax.constant(stmt.value)):
            # `model.optimizer = None`: no optimizer there any more, and nothing to carry over
            for target in stmt.targets:
                key = self._key(target)
                if key and self.index.is_optimizer(key):
                    state = self._map_key(state, key, lambda f: (CLEAN,))
        state = self._rebind(stmt, state, same)
        if _self_alias(stmt):
            # `params = self.params` at every call names the same object again: what
            # `if params.amp:` assumed still holds (a run-wide flag stays the same)
            return state
        written = {p for t in syntax.assignment_targets(stmt) for p in syntax.target_paths(t)}
        if written and any(len(a) for a in state):
            # `self.loss_G = ...` changes nothing that `if self.opt.netF == "mlp":` reads
            tests = {a[0] for world in state for a in world}
            stale = {t for t in tests
                     if any(syntax.related_paths(w, read) for w in written for read in t[2])}
            if stale:
                state = forget(state, lambda a: a[0] in stale)
        return self._literal_flag(stmt, state)

    def _tested_flags(self, function: ast.AST) -> frozenset[str]:
        """Names that ``if name:`` / ``if not name:`` test in ``function`` around a gradient
        event: the only flags worth remembering (each one kept apart splits the worlds)."""
        found = self._flag_tests.get(id(function))
        if found is None:
            nodes = list(syntax.walk(function))
            declared = {name for n in nodes if type(n) in (ast.Global, ast.Nonlocal) for name in n.names}
            found = frozenset(
                (node.test.operand if syntax.is_not(node.test) else node.test).id
                for node in nodes
                if type(node) is ast.If and self.contains_events(node)
                and type(node.test.operand if syntax.is_not(node.test) else node.test) is ast.Name
            ) - declared  # a global's value may come from anywhere
            self._flag_tests[id(function)] = found
        return found

    def _literal_flag(self, stmt: syntax.Statement, state: State) -> State:
        """``perform_backward = True``: until it is bound again, ``if perform_backward:``
        takes one branch only."""
        if type(stmt) is not ast.Assign or len(stmt.targets) != 1 or type(stmt.targets[0]) is not ast.Name:
            return state
        value = syntax.constant(stmt.value)
        if type(value) is not bool or not self._frames:
            # a module's `profile = False` is a default that a config file or the command
            # line may override (`exec(open("configurator.py").read())`)
            return state
        if stmt.targets[0].id not in self._tested_flags(self._frames[-1]):
            return state
        if not _bound_only_here(self._frames[-1], stmt.targets[0].id, stmt):
            # `ad_flag = False` then `if method == "dann": ad_flag = True`: statements with no
            # gradient event are not walked, so a later binding would go unseen
            return state
        _, key, holds = self._canonical(stmt.targets[0], value)
        return {assumptions | {(key, holds)}: facts for assumptions, facts in state.items()}

    def _rebind(self, stmt: syntax.Statement, state: State, same: set[str]) -> State:
        # `opt = optimizers[i]` starts a new story; `optimizer = self.optimizer` is another
        # spelling of the same optimizer, so events on either name reach the same state.
        subst = self._subst[-1]
        if subst:
            for target in syntax.assignment_targets(stmt):
                for name in syntax.stored_names(target) & set(subst):
                    del subst[name]
        rebound = rebinding.reassigned_optimizers(stmt, self.index.is_optimizer)
        rebound -= same  # `optimizer = adjust_lr(cfg, optimizer)` hands back the same one
        state = rebinding.restart(state, rebound, rebound)
        alias = rebinding.optimizer_alias(stmt, self._key, self.index.is_optimizer)
        if alias is not None:
            subst[alias[0]] = self._expand(alias[1])
        return state

    def _handed_back(self, stmt: syntax.Statement) -> set[str]:
        """``{"optimizer"}`` for ``optimizer = adjust_lr(cfg, optimizer)`` where the function
        returns the optimizer it was given: the same object again, with its gradients."""
        value = getattr(stmt, "value", None)
        if type(value) is not ast.Call or type(stmt) is not ast.Assign or len(stmt.targets) != 1 \
                or type(stmt.targets[0]) is not ast.Name:
            return set()
        name = stmt.targets[0].id
        if not self.index.is_optimizer(name):
            return set()  # only an optimizer's story can restart here
        callee = self.index.resolve(value, self._class[-1], self._local_defs[-1])
        given = rebinding.returned_argument(callee, value) if callee is not None else None
        return {name} if type(given) is ast.Name and given.id == name else set()

    def contains_events(self, node: ast.AST) -> bool:
        """Whether ``node`` holds any call or statement that could be a gradient event."""
        return self.index.contains_events(node)


def _self_aliases(node: ast.AST) -> set[str]:
    """Names that ``node`` binds only as ``name = self.attr``, to an attribute it never
    assigns: each iteration (each call of a method judged as a loop body) names the same
    object again, so what a test of it assumed carries over."""
    bindings: dict[str, list[ast.AST]] = {}
    written: set[str] = set()
    for n in syntax.walk(node):
        for target in syntax.assignment_targets(n):
            written.update(syntax.target_paths(target))
            for name in syntax.stored_names(target):
                bindings.setdefault(name, []).append(n)
    return {name for name, stmts in bindings.items()
            if all(_self_alias(s) and not any(syntax.related_paths(w, ev.dotted(s.value)) for w in written)
                   for s in stmts)}


def _self_alias(stmt: syntax.Statement) -> bool:
    """``name = self.attr`` (or ``self.a.b``): another spelling of the object's own state."""
    if type(stmt) is not ast.Assign or len(stmt.targets) != 1 or type(stmt.targets[0]) is not ast.Name:
        return False
    value = stmt.value
    if type(value) is not ast.Attribute:
        return False
    while type(value) is ast.Attribute:
        value = value.value
    return type(value) is ast.Name and value.id == "self"


def _grad_mode_test(test: ast.AST, recording: bool) -> bool | None:
    """The truth of ``x.requires_grad`` / ``torch.is_grad_enabled()`` (or their negation)
    when autograd is ``recording``; None for any other test."""
    negated = False
    while syntax.is_not(test):
        test, negated = test.operand, not negated
    if type(test) is ast.Attribute and test.attr == "requires_grad" or \
            type(test) is ast.Call and syntax.callee_name(test) == "is_grad_enabled":
        return recording != negated
    return None


def _grad_presence(test: ast.AST) -> bool | None:
    """True for ``x.grad is not None``, False for ``x.grad is None``, else None."""
    if type(test) is not ast.Compare or len(test.ops) != 1 or not ev.is_grad_attr(test.left):
        return None
    right = test.comparators[0]
    if type(right) is not ast.Constant or right.value is not None:
        return None
    return {ast.IsNot: True, ast.Is: False}.get(type(test.ops[0]))


def _forgotten(flow: Flow, key: TestKey) -> Flow:
    drop = lambda assumption: assumption[0] == key
    parts = (flow.normal, flow.brk, flow.cont, flow.ret)
    return Flow(*(forget(part, drop) if part else part for part in parts))


dotted = ev.dotted
_FUNCTION_TYPES = frozenset(syntax.FUNCTIONS)
_FOR_TYPES = frozenset(syntax.FOR_LOOPS)
_WITH_TYPES = frozenset(syntax.WITHS)
_TRY_TYPES = frozenset(syntax.TRIES)
_ASSIGNMENTS = frozenset({ast.Assign, ast.AugAssign, ast.AnnAssign})


def _add_world(state: State, assumptions: frozenset, facts) -> None:
    # A world that already assumed the test and one that learns it now become one world.
    state[assumptions] = merge_facts(state[assumptions], facts) if assumptions in state else facts


def _unchanged_in(test: ast.AST, counter: str, loop: ast.AST) -> bool:
    """Whether nothing in ``loop`` rebinds what ``test`` compares its counter with."""
    read = syntax.paths_in(test) - {counter}
    if not syntax.names_in(test).isdisjoint(syntax.bound_names(loop) - {counter}):
        return False
    written = {syntax.written_path(t) for n in syntax.walk(loop) for t in syntax.assignment_targets(n)
               if type(t) in (ast.Attribute, ast.Subscript)}
    return not any(w is None or syntax.related_paths(w, r) for w in written for r in read)


def _modulo_by_one(test: ast.AST, function: ast.AST, bindings: Bindings) -> bool | None:
    """True for ``x % k == 0`` (False for ``!= 0``) where ``k`` is 1, written so or bound to
    1 once in ``function`` (``bindings``, its own) and nowhere else there; None for any
    other test."""
    if type(test) is not ast.Compare or len(test.ops) != 1 or \
            type(test.ops[0]) not in (ast.Eq, ast.NotEq) or syntax.constant(test.comparators[0]) != 0:
        return None
    left = test.left
    if type(left) is not ast.BinOp or type(left.op) is not ast.Mod:
        return None
    modulus = left.right
    if type(modulus) is ast.Name:
        bound = bindings.of(modulus.id)
        if len(bound) != 1 or type(bound[0]) is not ast.Assign or \
                modulus.id in syntax.parameter_names(function.args):
            return None
        modulus = bound[0].value
    value = syntax.constant(modulus)
    if type(value) is not int or value != 1:
        return None
    return type(test.ops[0]) is ast.Eq


def _bound_only_here(function: ast.AST, name: str, stmt: ast.AST) -> bool:
    """Whether ``stmt`` is the only statement of ``function`` that binds ``name``."""
    for node in syntax.walk(function):
        if node is not stmt and any(name in syntax.stored_names(t)
                                    for t in syntax.assignment_targets(node)):
            return False
    return True
