"""GC000: files that cannot be checked are reported one by one; the run goes on; exit 2."""
from __future__ import annotations

import json

import pytest

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
    assert "a.py:1:1: GC000 not fully analysed: internal error in the rules (RuntimeError: boom)" in run.stdout
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


def test_syntax_errors_in_walked_files_the_prefilter_skips_are_not_parsed(project, kit, monkeypatch):
    # By design: in a directory walk a file that mentions no backward call cannot hold a
    # finding, so it is never parsed (that is what makes large trees cheap).
    from gradcheck.lint import checker

    parsed: list[str] = []
    real = checker.syntax_errors
    monkeypatch.setattr(checker, "syntax_errors", lambda *a: parsed.append(a[1]) or real(*a))
    kit.write(project, {"notes.py": "def f(:\n    return 1\n", "ok.py": "x = 1\n"})
    run = kit.run_cli(["lint", "--no-cache"])
    assert run.exit_code == exitcodes.CLEAN and parsed == []


BROKEN = "x = 1\ndef f(:\n    return 1\n"  # no backward call: the prefilter skips it


@pytest.mark.parametrize("cache", [[], ["--no-cache"]])
def test_a_file_named_on_the_command_line_always_reports_its_syntax_error(project, kit, cache):
    kit.write(project, {"notes.py": BROKEN})
    kit.run_cli(["lint", *cache])  # a walk first: its cached "clean" must not answer below
    run = kit.run_cli(["lint", *cache, "notes.py"])
    assert run.exit_code == exitcodes.ERROR
    assert run.stdout.startswith("notes.py:2:")
    assert "GC000 syntax error: cannot parse notes.py" in run.stdout


def test_stdin_always_reports_its_syntax_error(project, kit):
    run = kit.run_cli(["lint", "--no-cache", "-", "--stdin-filename", "snippet.py"], input=BROKEN)
    assert run.exit_code == exitcodes.ERROR and "snippet.py:2:" in run.stdout
    assert "GC000 syntax error" in run.stdout


@pytest.mark.parametrize("header", ["# gradcheck: noqa\n", "# gradcheck: noqa: GC000\n"])
def test_suppression_comments_never_hide_a_syntax_error(project, kit, header):
    kit.write(project, {"a.py": header + "loss.backward()\nopt.step()\n" + BROKEN})
    run = kit.run_cli(["lint", "--no-cache", "a.py"])
    assert run.exit_code == exitcodes.ERROR and "a.py:5:" in run.stdout


def test_an_explicit_file_with_every_rule_ignored_still_parses(project, kit):
    kit.write(project, {"a.py": BROKEN, "b.py": "x = 1\n"})
    run = kit.run_cli(["lint", "--no-cache", "--ignore", "ALL", "a.py", "b.py"])
    assert run.exit_code == exitcodes.ERROR
    assert "a.py:2:" in run.stdout and "b.py" not in run.stdout
