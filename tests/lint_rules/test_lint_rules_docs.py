"""docs/rules.md is generated from the rule classes and must match them."""
from __future__ import annotations

from pathlib import Path

from lint_rules.docs import render

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


def test_committed_rules_doc_is_up_to_date() -> None:
    assert DOCS.read_text(encoding="utf-8") == render(), (
        "docs/rules.md is stale: run `python -m lint_rules.docs > docs/rules.md`"
    )


def test_rules_doc_has_a_section_with_examples_per_rule() -> None:
    from lint_rules import RULES

    text = render()
    for rule in RULES:
        assert f"## {rule.CODE} {rule.NAME}" in text
        assert rule.INVALID[0].code.replace("\r\n", "\n").rstrip() in text
