"""Each rule's own VALID and INVALID examples, one test per example (ids like GC001-invalid-2)."""
from __future__ import annotations

import pytest

from lint_rules.testing import rule_cases, run_case

CASES = rule_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule_example(case) -> None:
    run_case(case)


def test_every_rule_has_examples_of_both_kinds() -> None:
    from lint_rules import RULES

    for rule in RULES:
        assert len(rule.VALID) >= 2 and len(rule.INVALID) >= 2, rule.CODE
