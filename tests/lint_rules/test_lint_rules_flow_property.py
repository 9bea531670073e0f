"""The flow analysis against brute force: random loop bodies built from zero_grad / backward /
step / continue / break under per-iteration random flags, executed concretely for every flag
sequence.

- GC002 is exact on this language: a step is flagged iff some execution reaches it with
  gradients that mix a backward pass a step already applied with a new one, or some
  execution reaches it with only applied ones and none with anything new (a second step
  applies the same gradients again).
- GC001 never fires on a program where no execution ever discards unapplied gradients.
"""
from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lint_rules import EVERY_FORM, check_source
from lint_rules.testing import apply_fixes

FLAGS = ("a", "b")
ITERATIONS = 4

leaf = st.sampled_from([("zero",), ("backward",), ("step",), ("zero",), ("backward",), ("step",),
                        ("continue",), ("break",)])
block = st.recursive(
    st.lists(leaf, min_size=1, max_size=4),
    lambda inner: st.lists(
        st.one_of(leaf, st.tuples(st.just("if"), st.sampled_from(FLAGS), inner,
                                  st.one_of(st.just([]), inner))),
        min_size=1, max_size=4,
    ),
    max_leaves=8,
)


def render(body) -> tuple[str, list]:
    """Source text, and the body with each leaf statement tagged by its line number."""
    lines = ["for i in range(n):", "    a = coin()", "    b = coin()"]

    def emit(stmts, depth):
        pad = "    " * depth
        tagged = []
        for stmt in stmts:
            if stmt[0] == "if":
                lines.append(f"{pad}if {stmt[1]}:")
                then = emit(stmt[2], depth + 1)
                other = []
                if stmt[3]:
                    lines.append(f"{pad}else:")
                    other = emit(stmt[3], depth + 1)
                tagged.append(("if", stmt[1], then, other))
                continue
            text = {"zero": "optimizer.zero_grad()", "backward": "loss.backward()",
                    "step": "optimizer.step()", "continue": "continue", "break": "break"}[stmt[0]]
            lines.append(pad + text)
            tagged.append((stmt[0], len(lines)))
        return tagged

    tagged = emit(body, 1)
    return "\n".join(lines) + "\n", tagged


class _Continue(Exception):
    pass


class _Break(Exception):
    pass


class _Machine:
    """Concrete gradients: the set of backward passes (iteration, line) they hold."""

    def __init__(self) -> None:
        self.grads: set = set()
        self.applied: set = set()
        self.stale: set = set()
        self.discards = False
        self.wiped = False  # the last reset threw away gradients no step had used
        self.kinds: dict[int, set[str]] = {}  # step line -> what the gradients were there

    def run(self, stmts, env: dict, iteration: int) -> None:
        for stmt in stmts:
            kind = stmt[0]
            if kind == "if":
                self.run(stmt[2] if env[stmt[1]] else stmt[3], env, iteration)
            elif kind == "continue":
                raise _Continue
            elif kind == "break":
                raise _Break
            elif kind == "backward":
                self.grads.add((iteration, stmt[1]))
                self.wiped = False
            elif kind == "zero":
                self.wiped = bool(self.grads - self.applied)
                self.discards |= self.wiped
                self.grads = set()
            else:  # step
                self.kinds.setdefault(stmt[1], set()).add(self._kind())
                self.applied |= self.grads
                self.wiped = False

    def _kind(self) -> str:
        new, old = self.grads - self.applied, self.grads & self.applied
        if not self.grads:
            return "wiped" if self.wiped else "clean"
        return "stale" if new and old else "applied" if old else "fresh"


def simulate(body):
    """(lines of stale steps, whether any reset discards unapplied gradients).

    A step is stale when some run reaches it with old gradients mixed with new ones; it
    applies the same gradients again when some run reaches it with only old ones and no run
    brings it anything new (a backward under a test that is sometimes false is no evidence
    of a double step)."""
    kinds: dict[int, set[str]] = {}
    discards = False
    for flags in itertools.product([False, True], repeat=len(FLAGS) * ITERATIONS):
        machine = _Machine()
        for it in range(ITERATIONS):
            env = dict(zip(FLAGS, flags[it * len(FLAGS):(it + 1) * len(FLAGS)]))
            try:
                machine.run(body, env, it)
            except _Continue:
                pass
            except _Break:
                break
        for line, seen in machine.kinds.items():
            kinds.setdefault(line, set()).update(seen)
        discards |= machine.discards
    stale = {line for line, seen in kinds.items()
             if "stale" in seen or "applied" in seen and seen <= {"applied", "clean"}}
    return stale, discards


@given(block)
def test_gc002_matches_brute_force_and_gc001_needs_a_real_discard(body) -> None:
    source, tagged = render(body)
    stale, discards = simulate(tagged)
    findings = check_source(source, strict=True, select=EVERY_FORM)
    flagged = {f.line for f in findings if f.code == "GC002"}
    for finding in findings:  # one finding per cause names the other stale steps it covers
        also = re.search(r"The steps? on lines? ([\d and]+) appl", finding.message)
        flagged |= {int(n) for n in also.group(1).split(" and ")} if also else set()
    assert flagged == stale, source
    if not discards:
        assert not [f for f in findings if f.code == "GC001"], source


def test_a_second_step_after_a_branch_whose_nested_reset_never_runs_is_a_restep() -> None:
    # found by a random search: on `a` false the inner `if a:` never runs, so the last step
    # re-applies what the `else` step applied; the analysis does not report it yet
    body = [("backward",), ("if", "a", [("zero",), ("zero",)], [("step",), ("if", "a", [("zero",)], [])]),
            ("step",)]
    source, tagged = render(body)
    stale, _ = simulate(tagged)
    flagged = {f.line for f in check_source(source, strict=True, select=EVERY_FORM) if f.code == "GC002"}
    assert stale == {9, 12}
    if flagged != stale:
        pytest.xfail("known miss: the restep at line 12 is not reported (only line 9 is)")


@given(block)
def test_applying_fixes_one_at_a_time_converges_to_a_clean_program(body) -> None:
    # The CLI applies a fix, re-lints and repeats; every generated bug must end up fixed,
    # except a second step with nothing new to apply: which of the two steps is wrong is the
    # author's call, so it has no fix.
    source, _ = render(body)
    for _ in range(12):
        fixable = [f for f in check_source(source, strict=True, select=EVERY_FORM) if f.fix is not None]
        if not fixable:
            break
        source = apply_fixes(source, fixable[:1])
        compile(source, "fixed.py", "exec")
    left = check_source(source, strict=True, select=EVERY_FORM)
    assert all(f.fix is None for f in left), source
    # what stays has no fix on purpose: a second step with nothing new to apply, or a reset
    # that clears a backward placed after the step, in the previous iteration (is the
    # backward misplaced, or the step? the author's call)
    assert all("applies the same gradients again" in f.message or _backward_after_step(f.message)
               for f in left), source


def _backward_after_step(message: str) -> bool:
    found = re.search(r"`loss.backward\(\)` \(line (\d+)\) before `optimizer.step\(\)` \(line (\d+)\)",
                      message)
    return found is not None and int(found.group(1)) > int(found.group(2))
