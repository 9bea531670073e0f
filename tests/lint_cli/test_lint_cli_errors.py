"""GC000: files that cannot be checked are reported one by one; the run goes on; exit 2."""
from __future__ import annotations

import json

from gradcheck import exitcodes


def _records(run) -> dict[str, list[dict]]:
    by_path: dict[str, list[dict]] = {}
    for record in json.loads(run.stdout):
        by_path.setdefault(record["path"], []).append(record)
    return by_path


def test_syntax_error_non_utf8_and_missing_path_each_give_gc000(project, kit):
    kit.write(project, {
        "broken.py": "def train(:\n    loss.backward()\n    optimizer.step()\n",
        "latin1.py": "# caf\xe9\nx = 1\n".encode("latin-1"),
        "bad.py": kit.MISSING_ZERO_GRAD,
        "broken.ipynb": "{not json",
    })
    run = kit.run_cli(["lint", "--no-cache", "--format", "json", ".", "missing.py"])
    assert run.exit_code == exitcodes.ERROR
    records = _records(run)
    assert [r["code"] for r in records["broken.py"]] == ["GC000"]
    assert records["broken.py"][0]["line"] == 1 and "syntax" in records["broken.py"][0]["message"]
    assert "UTF-8" in records["latin1.py"][0]["message"]
    assert records["missing.py"][0]["code"] == "GC000"
    assert "no such file" in records["missing.py"][0]["message"]
    assert records["broken.ipynb"][0]["code"] == "GC000"
    # the run carried on past the broken files
    assert [r["code"] for r in records["bad.py"]] == ["GC002"]


def test_gc000_in_text_output_and_summary(project, kit):
    kit.write(project, {"broken.py": "for x in:\n    loss.backward(); opt.step()\n"})
    run = kit.run_cli(["lint", "--no-cache"])
    assert run.exit_code == exitcodes.ERROR
    assert run.stdout.startswith("broken.py:1:")
    assert " GC000 " in run.stdout
    assert "could not be checked" in run.stderr


def test_exit_zero_does_not_hide_unchecked_files(project, kit):
    kit.write(project, {"broken.py": "def f(:\n    loss.backward(); opt.step()\n"})
    assert kit.run_cli(["lint", "--no-cache", "--exit-zero"]).exit_code == exitcodes.ERROR


def test_a_crashing_rule_becomes_gc000_not_a_traceback(project, kit, fake_rules):
    kit.write(project, {"a.py": "CRASH\n", "b.py": "BUG\n"})
    run = kit.run_cli(["lint", "--no-cache"])
    assert run.exit_code == exitcodes.ERROR
    assert "a.py:1:1: GC000 internal error in the rules (RuntimeError: boom)" in run.stdout
    assert "b.py:1:1: GC009" in run.stdout


def test_rules_syntax_error_position_is_reported(project, kit, fake_rules):
    kit.write(project, {"a.py": "x = SYNTAX\n"})
    run = kit.run_cli(["lint", "--no-cache"])
    assert run.stdout.startswith("a.py:1:5: GC000 syntax error: invalid syntax")


def test_unreadable_file(project, kit):
    import os

    if os.geteuid() == 0:
        import pytest

        pytest.skip("root can read any file")
    path = project / "secret.py"
    path.write_text("x = 1\n")
    path.chmod(0)
    run = kit.run_cli(["lint", "--no-cache", "secret.py"])
    assert run.exit_code == exitcodes.ERROR and "GC000 cannot read" in run.stdout


def test_syntax_errors_in_files_the_prefilter_skips_are_not_parsed(project, kit):
    # By design: a file that mentions no backward call cannot hold a finding, so it is
    # never parsed (that is what makes large trees cheap); ruff would report it.
    kit.write(project, {"notes.py": "def f(:\n    return 1\n"})
    run = kit.run_cli(["lint", "--no-cache"])
    assert run.exit_code == exitcodes.CLEAN
