"""Turn each rule's VALID and INVALID examples into test cases (used by tests and docs).

>>> cases = rule_cases()
>>> cases[0].id
'GC001-valid-1'
"""
from __future__ import annotations

from dataclasses import dataclass

from lint_rules.check import EVERY_FORM, check_source
from lint_rules.rules import RULES
from lint_rules.rules.base import Invalid, Valid


@dataclass(frozen=True)
class RuleCase:
    """One example program of one rule, with a readable test id."""

    id: str
    rule: type
    example: Valid | Invalid


def rule_cases() -> list[RuleCase]:
    """Every VALID and INVALID example of every rule, in rule order."""
    cases = []
    for rule in RULES:
        cases += [RuleCase(f"{rule.CODE}-valid-{i}", rule, v) for i, v in enumerate(rule.VALID, 1)]
        cases += [RuleCase(f"{rule.CODE}-invalid-{i}", rule, v) for i, v in enumerate(rule.INVALID, 1)]
    return cases


def apply_fixes(source: str, findings) -> str:
    """Apply every fix in ``findings`` (safe or not), from the end of the file backwards."""
    edits = sorted(
        (edit for f in findings if f.fix for edit in f.fix.edits),
        key=lambda e: (e.start, e.end),
        reverse=True,
    )
    for edit in edits:
        source = source[: edit.start] + edit.replacement + source[edit.end:]
    return source


def run_case(case: RuleCase) -> None:
    """Assert that the rule behaves as its example says; raises AssertionError otherwise."""
    code = case.example.code
    found = [f for f in check_source(code, strict=True, select=EVERY_FORM) if f.code == case.rule.CODE]
    if isinstance(case.example, Valid):
        assert not found, f"{case.id}: unexpected findings {[(f.line, f.message) for f in found]}"
        return
    lines = tuple(f.line for f in found)
    assert lines == case.example.expected_lines, (
        f"{case.id}: expected lines {case.example.expected_lines}, got {lines}: "
        f"{[f.message for f in found]}"
    )
    expected_fixed = case.example.expected_fixed
    if expected_fixed is None:
        assert all(f.fix is None for f in found), f"{case.id}: a fix was offered but none expected"
        return
    fixed = apply_fixes(code, found)
    assert fixed == expected_fixed, f"{case.id}: fixed source differs:\n{fixed}"
    again = [f for f in check_source(fixed, strict=True, select=EVERY_FORM) if f.code == case.rule.CODE]
    assert not again, f"{case.id}: the fixed source still has {[(f.line, f.message) for f in again]}"


PROGRAM_HEADER = "import torch\nfrom torch import nn\n"


def program_findings(body: str, name: str = "program") -> list[tuple[int, str]]:
    """(line, code) of every finding in a dedented program body after the torch imports.

    >>> program_findings('''
    ...     for x, y in loader:
    ...         model(x).sum().backward()
    ...         optimizer.step()
    ... ''')
    [(5, 'GC002')]
    """
    import textwrap

    source = PROGRAM_HEADER + textwrap.dedent(body).lstrip("\n")
    return [(f.line, f.code) for f in check_source(source, f"{name}.py", strict=True, select=EVERY_FORM)]
