"""check_source never crashes: arbitrary generated programs and the whole standard library.

``strict=True`` makes internal errors raise here instead of being swallowed, so a crash in the
analysis fails these tests. The prefilter is bypassed so that every program is analysed.
"""
from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import lint_rules.check as check_module
from lint_rules import LintSyntaxError

hypothesmith = pytest.importorskip("hypothesmith")


@pytest.fixture
def no_prefilter(monkeypatch):
    monkeypatch.setattr(check_module, "could_have_findings", lambda source: True)


def _lint(source: str) -> list:
    try:
        return check_module.check_source(source, "generated.py", strict=True)
    except LintSyntaxError:
        return []


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(source=hypothesmith.from_grammar())
def test_generated_programs_never_crash(no_prefilter, source: str) -> None:
    for finding in _lint(source):
        assert finding.line >= 1 and finding.column >= 1


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(source=hypothesmith.from_node())
def test_generated_syntax_trees_never_crash(no_prefilter, source: str) -> None:
    _lint(source)


def _stdlib_sample() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.rglob("*.py") if "site-packages" not in p.parts)
    # Every seventh file keeps the run short (libcst parses several times slower than `ast`)
    # and deterministic while covering all packages.
    return files[::7]


@pytest.mark.slow
def test_standard_library_lints_without_crashing(no_prefilter) -> None:
    files = _stdlib_sample()
    assert len(files) > 200
    linted = 0
    for path in files:
        try:
            source = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        _lint(source)
        linted += 1
    assert linted > 200
