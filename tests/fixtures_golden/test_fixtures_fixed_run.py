"""A fix is proven by running: every runnable bad fixture, fixed by `--fix --unsafe-fixes`,
runs on the engine and on torch, trains, lints clean, and the run-time guard stays silent.

The bug's own effect is asserted against a hand-written twin in ``test_fixtures_run.py``;
here the question is only whether the *automatic* fix yields a program that behaves.
"""
from __future__ import annotations

import numbers
from pathlib import Path
from typing import Any

import pytest

from lint_rules import check_source
from lint_rules.testing import apply_fixes


def _fixable(golden: Any) -> list[Path]:
    out = []
    for path in golden.fixture_paths():
        if not path.stem.startswith("bad_") or not golden.is_runnable(path):
            continue
        findings = check_source(path.read_text(encoding="utf-8"), path.name)
        if findings and all(f.fix is not None for f in findings):
            out.append(path)
    return out


def _fixed_copy(path: Path, tmp_path: Path) -> Path:
    source = path.read_text(encoding="utf-8")
    fixed = apply_fixes(source, check_source(source, path.name))
    assert fixed != source, f"{path.stem}: the fixes changed nothing"
    assert check_source(fixed, path.name) == [], f"{path.stem}: still has findings once fixed"
    target = tmp_path / path.name
    target.write_text(fixed, encoding="utf-8")
    return target


def _loss_series(observations: dict) -> list[tuple[str, list[float]]]:
    return [(key, value) for key, value in observations.items()
            if "loss" in key and isinstance(value, list) and len(value) > 1
            and all(isinstance(v, numbers.Real) for v in value)]


def test_enough_fixtures_have_a_complete_fix(golden: Any) -> None:
    assert len(_fixable(golden)) >= 8


def test_fixed_fixtures_run_train_and_satisfy_the_guard(
    golden: Any, tmp_path: Path, backend: str
) -> None:
    for path in _fixable(golden):
        fixed = _fixed_copy(path, tmp_path)
        if backend == "torch":
            observations = _run_guarded(golden, fixed)
        else:
            observations = golden.run_fixture(fixed, backend)
        for key, series in _loss_series(observations):
            if key.startswith(("d_", "g_", "critic", "gen")):
                continue  # in a two-player game neither loss need fall
            assert series[-1] < series[0], f"{path.stem} fixed: {key} did not fall: {series}"


def _run_guarded(golden: Any, fixed: Path) -> dict:
    """Run on torch with every optimizer guarded; any stale or wiped gradient raises."""
    pytest.importorskip("torch")
    from gradcheck.runtime.guard import GradGuardError
    from gradcheck.runtime.session import GuardSession

    session = GuardSession(action="raise").install()
    try:
        return golden.run_fixture(fixed, "torch")
    except GradGuardError as error:
        pytest.fail(f"{fixed.stem} fixed: the run-time guard objects: {error}")
    finally:
        session.finish()
