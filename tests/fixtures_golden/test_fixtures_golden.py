"""Golden test: each whole-program fixture in fixtures/lint gives exactly its expected findings.

The `.expected` files are the human-owned oracle (`LINE:COL CODE [message]`). Set
GRADCHECK_UPDATE_GOLDEN=1 to fill in or refresh the message of lines whose `LINE:COL CODE` already
match; lines are never added or removed by the update, and the test still fails on a mismatch.
Helpers (parsing, discovery) come from this directory's conftest through the `golden` fixture.
"""

from __future__ import annotations

import ast
import collections
import os
import re
import runpy
from pathlib import Path
from typing import Any

import lint_rules

UPDATE = os.environ.get("GRADCHECK_UPDATE_GOLDEN") == "1"


def _expected(golden: Any, fixture: Path) -> list:
    path = golden.expected_path(fixture)
    return golden.parse_expected(path.read_text(encoding="utf-8"), path.name)


def _report(name: str, missing: list, unexpected: list, actual_by_key: dict) -> str:
    lines = [f"{name}: the findings differ from {name}.expected"]
    lines += [f"  expected but not reported: {e.render()}" for e in missing]
    lines += [
        f"  reported but not expected: {k[0]}:{k[1]} {k[2]} {actual_by_key[k]}" for k in unexpected
    ]
    return "\n".join(lines)


def _refresh_messages(golden: Any, fixture: Path, actual_by_key: dict) -> None:
    """Rewrite only the messages of lines whose key matches; keep every line and its order."""
    path = golden.expected_path(fixture)
    refreshed = [
        golden.ExpectedFinding(e.line, e.column, e.code, actual_by_key[e.key])
        if e.key in actual_by_key
        else e
        for e in _expected(golden, fixture)
    ]
    text = "".join(e.render() + "\n" for e in refreshed)
    if text != path.read_text(encoding="utf-8"):
        path.write_text(text, encoding="utf-8")


def test_fixture_gives_exactly_the_expected_findings(golden: Any, golden_fixture: Path) -> None:
    source = golden_fixture.read_text(encoding="utf-8")
    rel = golden_fixture.relative_to(golden_fixture.parents[2]).as_posix()
    findings = lint_rules.check_source(source, rel, select=lint_rules.EVERY_FORM)
    actual_by_key = {(f.line, f.column, f.code): golden.one_line(f.message) for f in findings}
    assert len(actual_by_key) == len(findings), (
        f"{golden_fixture.stem}: more than one finding at the same (line, column, code): "
        f"{[(f.line, f.column, f.code) for f in findings]}"
    )
    if UPDATE:
        _refresh_messages(golden, golden_fixture, actual_by_key)
    expected = _expected(golden, golden_fixture)
    want = collections.Counter(e.key for e in expected)
    got = collections.Counter(list(actual_by_key))
    missing = [e for e in expected if e.key not in got]
    unexpected = sorted(k for k in got if k not in want)
    assert want == got, _report(golden_fixture.stem, missing, unexpected, actual_by_key)
    for e in expected:
        if e.message is not None:
            assert actual_by_key[e.key] == e.message, (
                f"{golden_fixture.stem}:{e.line}:{e.column} {e.code}: the message changed\n"
                f"  expected: {e.message}\n  actual:   {actual_by_key[e.key]}\n"
                "  (rerun with GRADCHECK_UPDATE_GOLDEN=1 if the new wording is intended)"
            )


def test_messages_tell_the_story_in_the_codes_own_terms(golden_fixture: Path) -> None:
    """The issue asks for messages that quote the code and give line numbers."""
    source = golden_fixture.read_text(encoding="utf-8")
    compact = "".join(source.split())
    for f in lint_rules.check_source(source, golden_fixture.name, select=lint_rules.EVERY_FORM):
        where = f"{golden_fixture.stem}:{f.line}:{f.column} {f.code}"
        cited = [int(n) for n in re.findall(r"\bline (\d+)", f.message)]
        assert cited, f"{where}: the message cites no line number: {f.message}"
        assert all(1 <= n <= len(source.splitlines()) for n in cited), f"{where}: {cited}"
        quoted = re.findall(r"`([^`]+)`", f.message)
        assert any("".join(q.split()) in compact for q in quoted), (
            f"{where}: the message quotes none of the code: {f.message}"
        )


# --- the oracle itself is well formed -------------------------------------------------------


def test_there_are_enough_fixtures(golden: Any) -> None:
    paths = golden.fixture_paths()
    assert len(paths) >= 40, f"only {len(paths)} fixtures in fixtures/lint; the issue asks for 40+"
    assert any(p.stem.startswith("good_") for p in paths)
    assert any(p.stem.startswith("bad_") for p in paths)


def test_every_fixture_has_an_expected_file_and_no_orphans(golden: Any) -> None:
    paths = golden.fixture_paths()
    missing = sorted(p.stem for p in paths if not golden.expected_path(p).exists())
    assert not missing, f"fixtures without a .expected file: {missing}"
    stems = {p.stem for p in paths}
    orphans = sorted(p.stem for p in golden.FIXTURE_DIR.glob("*.expected") if p.stem not in stems)
    assert not orphans, f".expected files without a fixture: {orphans}"


def test_fixture_is_named_and_headed_by_kind(golden: Any, golden_fixture: Path) -> None:
    stem = golden_fixture.stem
    first = golden_fixture.read_text(encoding="utf-8").splitlines()[0]
    expected = _expected(golden, golden_fixture)
    if stem.startswith("bad_"):
        assert first.startswith("# Bug: "), f"{stem}: the first line must be `# Bug: <what>`"
        assert expected, f"{stem}: a bad_ fixture must expect at least one finding"
    elif stem.startswith("good_"):
        assert first.startswith("# Correct: "), f"{stem}: the first line must be `# Correct: ...`"
        assert not expected, f"{stem}: a good_ fixture must expect no findings"
    else:
        raise AssertionError(f"{stem}: fixture names start with bad_ or good_")


def test_fixture_is_a_realistic_valid_program(golden_fixture: Path) -> None:
    source = golden_fixture.read_text(encoding="utf-8")
    ast.parse(source, filename=golden_fixture.name, feature_version=(3, 10))
    n_lines = len(source.splitlines())
    assert 30 <= n_lines <= 120, f"{golden_fixture.stem}: {n_lines} lines; keep fixtures 30-120"


def test_expected_positions_point_into_the_fixture(golden: Any, golden_fixture: Path) -> None:
    lines = golden_fixture.read_text(encoding="utf-8").splitlines()
    expected = _expected(golden, golden_fixture)
    for e in expected:
        where = f"{golden_fixture.stem}:{e.line}:{e.column}"
        assert e.code in golden.CODES, f"{where}: unknown code {e.code}"
        assert 1 <= e.line <= len(lines), f"{where}: the line is out of range"
        text = lines[e.line - 1]
        assert 1 <= e.column <= len(text), f"{where}: the column is out of range"
        assert not text[e.column - 1].isspace(), f"{where} points at whitespace: {text!r}"
        starts_node = text[e.column - 1].isalnum() or text[e.column - 1] in "_("
        assert starts_node and not text[e.column - 2 : e.column - 1].isalnum(), (
            f"{where} does not point at the start of a name or call: {text!r}"
        )
    assert len({e.key for e in expected}) == len(expected), f"{golden_fixture.stem}: duplicates"


# What the reported node must look like, per code (guards the oracle against off-by-one lines).
_NODE_SHAPE = {
    "GC001": re.compile(
        r"^(\w[\w.]*\.zero_grad\(|\w[\w.]*\.grad(\.data)?(\.zero_\(\)| = None)|for )"
    ),
    "GC002": re.compile(r"^\w[\w.]*\.step\("),
    "GC003": re.compile(r"^\w[\w.]*\.zero_grad\("),
    "GC004": re.compile(r"^[\w.]+ \+= \w+$"),
}


def test_expected_positions_point_at_the_right_kind_of_node(
    golden: Any, golden_fixture: Path
) -> None:
    lines = golden_fixture.read_text(encoding="utf-8").splitlines()
    for e in _expected(golden, golden_fixture):
        node = lines[e.line - 1][e.column - 1 :].split(";")[0].split("  #")[0].rstrip()
        assert _NODE_SHAPE[e.code].match(node), (
            f"{golden_fixture.stem}:{e.line}:{e.column} {e.code} points at {node!r}"
        )


def test_every_code_is_exercised_by_several_bad_fixtures(golden: Any) -> None:
    per_code: dict[str, set[str]] = {code: set() for code in golden.CODES}
    for path in golden.fixture_paths():
        for e in _expected(golden, path):
            per_code[e.code].add(path.stem)
    thin = {code: sorted(stems) for code, stems in per_code.items() if len(stems) < 2}
    assert not thin, f"codes exercised by fewer than two fixtures: {thin}"


def test_docs_table_is_current(golden: Any) -> None:
    script = Path(__file__).with_name("make_fixture_table.py")
    rendered = runpy.run_path(str(script))["render"]()
    docs = golden.FIXTURE_DIR.parents[1] / "docs" / "fixtures.md"
    assert docs.read_text(encoding="utf-8") == rendered, (
        "docs/fixtures.md is stale: python tests/fixtures_golden/make_fixture_table.py "
        "> docs/fixtures.md"
    )


def test_update_mode_refreshes_messages_only(golden: Any, tmp_path: Path) -> None:
    fixture = tmp_path / "bad_example.py"
    fixture.write_text("pass\n", encoding="utf-8")
    exp = golden.expected_path(fixture)
    exp.write_text("3:5 GC001 old words\n7:9 GC002\n9:1 GC004 kept\n", encoding="utf-8")
    actual = {(3, 5, "GC001"): "new words", (7, 9, "GC002"): "filled", (8, 1, "GC003"): "extra"}
    _refresh_messages(golden, fixture, actual)
    assert exp.read_text(encoding="utf-8") == (
        "3:5 GC001 new words\n7:9 GC002 filled\n9:1 GC004 kept\n"
    ), "messages refresh in place; no line is added (8:1) or removed (9:1)"


def test_expected_parser_rejects_malformed_lines(golden: Any) -> None:
    assert golden.parse_expected("\n12:5 GC003 a message: with colons\n") == [
        golden.ExpectedFinding(12, 5, "GC003", "a message: with colons")
    ]
    for bad in ("12 GC001", "12:5GC001", "12:5 gc001", "line 3: GC001"):
        try:
            golden.parse_expected(bad)
        except ValueError as err:
            assert "LINE:COL CODE" in str(err)
        else:
            raise AssertionError(f"{bad!r} should be rejected")
