"""Compound statements other than ``if`` and loops: ``with``, ``try`` and ``match``.

``Compound`` is the part of ``flow.Interpreter`` that walks them; ``Flow`` says where control
leaves a block. Inside ``with accelerator.accumulate(...)`` the optimizer's step and
zero_grad are gated by the sync flag, as accelerate does; an exception handler starts from
the state before its ``try`` body.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import ast

from lint_rules import events as ev
from lint_rules import syntax
from lint_rules.bindings import graph_free
from lint_rules.states import State, join


EXPECTED_FAILURE = frozenset({"raises", "assertRaises", "assertRaisesRegex"})


@dataclass
class Flow:
    """Where control leaves a block: falling through, break, continue or return."""

    normal: State | None = None
    brk: State | None = None
    cont: State | None = None
    ret: State | None = None


class Compound:
    """Statement walking for ``with``/``try``/``match``; expects ``flow.Interpreter``'s attributes."""

    def _with(self, stmt: ast.With | ast.AsyncWith, state: State) -> Flow:
        gate = None
        for item in stmt.items:
            expr = item.context_expr
            if type(expr) is ast.Call and syntax.callee_name(expr) in EXPECTED_FAILURE:
                # A test that the block fails (`with pytest.raises(ValueError):`): what it does
                # to gradients on the way is the point of the test, not a training bug.
                return Flow(normal=state)
            state = self._calls_in(expr, stmt, state)
            if (
                type(expr) is ast.Call
                and type(expr.func) is ast.Attribute
                and expr.func.attr == "accumulate"
            ):
                owner = ev.dotted(expr.func.value) or "accelerator"
                # The same assumption as a test `if accelerator.sync_gradients:` in the code.
                gate = (f"{owner}.sync_gradients", frozenset(re.findall(r"^[A-Za-z_]\w*", owner)),
                        frozenset({f"{owner}.sync_gradients"}))
                self._unstable.add(gate)
        if gate:
            self._gates.append(gate)
        grad_off = any(graph_free(item.context_expr) for item in stmt.items)
        self._grad_off += grad_off
        try:
            return self._block(syntax.body_of(stmt), state)
        finally:
            self._grad_off -= grad_off
            if gate:
                self._gates.pop()
                self._last_gate = gate

    def _try(self, stmt: ast.Try, state: State) -> Flow:
        statements = syntax.body_of(stmt)
        body = self._block(statements, state)
        # NOTE: which statement of the body failed is unknown, and guessing one (a step that
        # raised after its backward, a zero_grad that raised) invents findings on ordinary
        # OOM-tolerant loops. Unknown means benign: a handler starts from the state before
        # the body, as if the batch had never been touched.
        handler_in = state
        flows = []
        self._handlers += 1
        try:
            for handler in stmt.handlers:
                flows.append(self._block(syntax.body_of(handler), handler_in))
        finally:
            self._handlers -= 1
        orelse = syntax.orelse_of(stmt)
        main = self._block(orelse, body.normal) if orelse else Flow(normal=body.normal)
        main.brk, main.cont, main.ret = (
            join(main.brk, body.brk), join(main.cont, body.cont), join(main.ret, body.ret)
        )
        finalbody = stmt.finalbody
        result = self._finally(finalbody, main, quiet=False)
        for flow in flows:
            # After a failed batch, `finally: opt.zero_grad()` discards its gradients on purpose.
            result = join_flows(result, self._finally(finalbody, flow, quiet=True))
        return result

    def _finally(self, finalbody: list[syntax.Statement], flow: Flow, quiet: bool) -> Flow:
        if not finalbody or flow.normal is None:
            return flow
        self._handlers += quiet
        try:
            tail = self._block(finalbody, flow.normal)
        finally:
            self._handlers -= quiet
        return Flow(tail.normal, flow.brk, flow.cont, join(flow.ret, tail.ret))

    def _match(self, stmt: ast.Match, state: State) -> Flow:
        state = self._calls_in(stmt.subject, stmt, state)
        result = Flow(normal=state)
        for case in stmt.cases:
            result = join_flows(result, self._block(syntax.body_of(case), state))
        return result


def join_flows(a: Flow, b: Flow) -> Flow:
    """Where control leaves either of two alternative blocks."""
    return Flow(join(a.normal, b.normal), join(a.brk, b.brk), join(a.cont, b.cont),
                join(a.ret, b.ret))


