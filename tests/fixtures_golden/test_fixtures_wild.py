"""Minimal programs for shapes of real code the linter was once wrong on.

Each file in ``fixtures/lint/wild/`` reproduces, in a few lines, the shape of code in which
an earlier version of the linter was wrong on the wild corpus (``bench/wild/triage.csv``);
each file in ``fixtures/lint/shapes/`` is written from the description of a false alarm or a
miss seen on repositories outside that corpus (issue reports). ``good_*`` must stay silent,
``bad_*`` must give exactly its ``.expected`` findings.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

import lint_rules

LINT = Path(__file__).resolve().parents[2] / "fixtures" / "lint"
WILD = LINT / "wild"
CASES = sorted(WILD.glob("*.py")) + sorted((LINT / "shapes").glob("*.py"))


def test_the_wild_and_shape_fixtures_exist() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_wild_fixture_gives_exactly_its_findings(golden: Any, path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    ast.parse(source, filename=path.name, feature_version=(3, 10))
    found = [(f.line, f.column, f.code, golden.one_line(f.message))
             for f in lint_rules.check_source(source, path.name, strict=True, select=lint_rules.EVERY_FORM)]
    expected = golden.parse_expected(path.with_suffix(".expected").read_text(encoding="utf-8"),
                                     path.name)
    assert found == [(e.line, e.column, e.code, golden.one_line(e.message)) for e in expected]
    assert path.stem.startswith("good_") == (not expected), path.stem


def test_one_cause_gets_one_reset_after_each_of_its_steps() -> None:
    from lint_rules.testing import apply_fixes

    source = (WILD / "bad_stale_first_batch_three_step_sites.py").read_text(encoding="utf-8")
    fixed = apply_fixes(source, lint_rules.check_source(source, select=lint_rules.EVERY_FORM))
    added = fixed.count("self.optimizer.zero_grad()") - source.count("self.optimizer.zero_grad()")
    assert added == 3, fixed
    assert lint_rules.check_source(fixed, select=lint_rules.EVERY_FORM) == []
    compile(fixed, "fixed.py", "exec")
