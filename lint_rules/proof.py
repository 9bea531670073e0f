"""A fix is offered only when the analysis of the fixed text proves it.

A rule proposes edits from what it saw; whether they repair the program is a question for
the analysis itself. The fixed text is analysed again, and a fix is kept only when that
analysis reports fewer findings of the fixed finding's code and no more of any other code,
and no GC000, possibly after the fixes that it makes necessary (a reset moved after the
first of two steps leaves the second stale until that one is fixed too). So applied fixes
lower the number of findings within a few passes: ``--fix`` reaches its fixed point in one
run, and a second run has nothing left to change. A finding whose fix fails the proof
stays, reported as unfixable.

The usual case costs one more analysis of the file: every fix is tried together first, and
only when that fails is each tried alone.

>>> from lint_rules.finding import Edit, Finding, Fix
>>> def lint(text):  # a toy analysis: one finding per "bad" word
...     return [Finding(1, 1, "GC002", "r", "m")] * text.count("bad")
>>> good = Finding(1, 1, "GC002", "r", "m", fix=Fix("d", (Edit(0, 3, "ok"),)))
>>> useless = Finding(1, 1, "GC002", "r", "m", fix=Fix("d", (Edit(3, 3, "bad"),)))
>>> [f.fix is not None for f in proven("bad", [good, useless], lint)]
[True, False]
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Sequence

from lint_rules.finding import NOT_CHECKED_CODE, Edit, Finding, LintSyntaxError

FOLLOW_UPS = 2  # rounds of fixes that a fix may need after it to show its worth
Lint = Callable[[str], Sequence[Finding]]  # text -> findings, with no proof of their fixes


def proven(text: str, findings: list[Finding], lint: Lint) -> list[Finding]:
    """``findings`` with every fix that the analysis of the fixed text does not prove removed."""
    fixable = [f for f in findings if f.fix is not None]
    if not fixable:
        return findings
    before = Counter(f.code for f in findings)
    if _holds(text, fixable, before, lint):
        return findings
    failed = {id(f) for f in fixable if not _holds(text, [f], before, lint)}
    return [dataclasses.replace(f, fix=None) if id(f) in failed else f for f in findings]


def _holds(text: str, chosen: list[Finding], before: Counter, lint: Lint) -> bool:
    """Whether applying ``chosen`` removes those findings, and ends (after at most
    ``FOLLOW_UPS`` rounds of fixing what it newly caused) with no GC000 and no code more
    frequent than before."""
    removed = Counter(f.code for f in chosen)
    for round_ in range(1 + FOLLOW_UPS):
        text = _fixed(text, chosen)
        if text is None:
            return False
        try:
            findings = list(lint(text))
        except LintSyntaxError:
            return False  # the fixed text does not even parse
        after = Counter(f.code for f in findings)
        if after[NOT_CHECKED_CODE] > before[NOT_CHECKED_CODE] or not all(
                after[code] <= before[code] - removed[code] for code in removed):
            return False
        grown = {code for code in after if after[code] > before[code]}
        if not grown:
            return True
        # A move can trade its finding for one that a further fix removes (a reset moved
        # after the first of two steps leaves the second one stale): follow that fix.
        chosen = [f for f in findings if f.fix is not None and f.code in grown]
        if not chosen:
            return False
    return False


def _fixed(text: str, chosen: list[Finding]) -> str | None:
    edits = sorted((e for f in chosen for e in f.fix.edits), key=lambda e: (e.start, e.end))
    return None if _overlap(edits) else _applied(text, edits)


def _overlap(edits: list[Edit]) -> bool:
    return any(b.start < a.end or (a.start == b.start and a.end == b.end)
               for a, b in zip(edits, edits[1:]))


def _applied(text: str, edits: list[Edit]) -> str:
    for edit in reversed(edits):
        text = text[: edit.start] + edit.replacement + text[edit.end:]
    return text
