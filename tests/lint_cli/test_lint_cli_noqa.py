"""Suppression comments: line ``# noqa`` (bare and with codes) and file-level ``# gradcheck: noqa``."""
from __future__ import annotations

import pytest

from gradcheck import exitcodes


def _with_comment(kit, comment: str) -> str:
    return kit.MISSING_ZERO_GRAD.replace("    optimizer.step()\n", f"    optimizer.step()  {comment}\n")


@pytest.mark.parametrize("comment", ["# noqa", "# noqa: GC002", "# NOQA:GC001,GC002",
                                     "# noqa: E501, GC002", "#noqa:GC002"])
def test_line_noqa_suppresses(project, kit, comment):
    kit.write(project, {"a.py": _with_comment(kit, comment)})
    run = kit.run_cli(["lint", "--no-cache"])
    assert run.exit_code == exitcodes.CLEAN, run.stdout


@pytest.mark.parametrize("comment", ["# noqa: GC001", "# noqa: E501", "# noqa-ish"])
def test_noqa_for_other_codes_does_not_suppress(project, kit, comment):
    kit.write(project, {"a.py": _with_comment(kit, comment)})
    run = kit.run_cli(["lint", "--no-cache"])
    assert run.exit_code == exitcodes.FINDINGS and "GC002" in run.stdout


def test_noqa_on_another_line_does_not_suppress(project, kit):
    source = kit.MISSING_ZERO_GRAD.replace("    loss.backward()\n", "    loss.backward()  # noqa\n")
    kit.write(project, {"a.py": source})
    assert kit.run_cli(["lint", "--no-cache"]).exit_code == exitcodes.FINDINGS


@pytest.mark.parametrize("header", ["# gradcheck: noqa\n", "#gradcheck:noqa\n",
                                    "# gradcheck: noqa: GC002\n"])
def test_file_level_noqa(project, kit, header):
    kit.write(project, {"a.py": header + kit.MISSING_ZERO_GRAD, "b.py": kit.ZERO_BETWEEN})
    run = kit.run_cli(["lint", "--no-cache"])
    assert "a.py" not in run.stdout and "b.py" in run.stdout


def test_file_level_noqa_with_codes_keeps_other_codes(project, kit):
    kit.write(project, {"a.py": "# gradcheck: noqa: GC002\n" + kit.ZERO_BETWEEN})
    assert "GC001" in kit.run_cli(["lint", "--no-cache"]).stdout


def test_unknown_codes_warn_but_do_not_fail(project, kit):
    kit.write(project, {"a.py": _with_comment(kit, "# noqa: GC002, GC999, E501")})
    run = kit.run_cli(["lint", "--no-cache"])
    assert run.exit_code == exitcodes.CLEAN
    assert f"warning: a.py:{kit.STEP_LINE}: unknown rule code GC999" in run.stderr
    assert "E501" not in run.stderr  # other tools' codes are theirs
    assert "GC999" not in kit.run_cli(["lint", "--no-cache", "--quiet"]).stderr


def test_unknown_code_warning_survives_the_cache(project, kit):
    kit.write(project, {"a.py": "x = 1  # noqa: GC123\n"})
    first = kit.run_cli(["lint"])
    second = kit.run_cli(["lint"])
    assert "GC123" in first.stderr and "GC123" in second.stderr


@pytest.mark.parametrize("comment", ["# NoQa", "# nOqA: gc002", "# noqa:gc002", "# NOQA : Gc002"])
def test_noqa_is_case_insensitive_like_ruff(project, kit, comment):
    kit.write(project, {"a.py": _with_comment(kit, comment)})
    run = kit.run_cli(["lint", "--no-cache"])
    assert run.exit_code == exitcodes.CLEAN, run.stdout


@pytest.mark.parametrize("statement", [
    'optimizer.step(); note = "# noqa"',
    "optimizer.step(); note = '# noqa: GC002'",
    'optimizer.step(); note = f"{1} # NOQA"',
    'optimizer.step(); note = "# noqa: GC002"  # noqa: GC001',  # the comment names another rule
])
def test_noqa_inside_a_string_literal_does_not_count(project, kit, statement):
    source = kit.MISSING_ZERO_GRAD.replace("    optimizer.step()\n", f"    {statement}\n")
    kit.write(project, {"a.py": source})
    run = kit.run_cli(["lint", "--no-cache"])
    assert run.exit_code == exitcodes.FINDINGS and f"a.py:{kit.STEP_LINE}:5: GC002" in run.stdout


def test_a_real_comment_after_a_string_with_noqa_still_counts(project, kit):
    statement = 'optimizer.step(); note = "# noqa: GC001"  # noqa: GC002'
    source = kit.MISSING_ZERO_GRAD.replace("    optimizer.step()\n", f"    {statement}\n")
    kit.write(project, {"a.py": source})
    assert kit.run_cli(["lint", "--no-cache"]).exit_code == exitcodes.CLEAN


def test_files_without_findings_are_never_tokenized(project, kit, monkeypatch):
    import tokenize

    monkeypatch.setattr("gradcheck.lint.workers.can_contain", lambda: False)  # count in-process
    calls = []
    real = tokenize.generate_tokens
    monkeypatch.setattr(tokenize, "generate_tokens", lambda *a: calls.append(1) or real(*a))
    kit.write(project, {"a.py": kit.CLEAN_LOOP.replace("optimizer.step()", "optimizer.step()  # noqa"),
                        "b.py": _with_comment(kit, "# noqa: GC002")})
    assert kit.run_cli(["lint", "--no-cache", "--jobs", "1", "a.py"]).exit_code == exitcodes.CLEAN
    assert calls == []
    assert kit.run_cli(["lint", "--no-cache", "--jobs", "1", "b.py"]).exit_code == exitcodes.CLEAN
    assert calls  # a finding on a noqa line: the comment is confirmed by the tokenizer


def test_unsuppressed_keeps_findings_on_lines_without_comments():
    from gradcheck.lint.noqa import scan, unsuppressed
    from lint_rules.finding import Finding

    source = 'a = "# noqa"\nb = 1  # noqa\nc = 2\n'
    findings = [Finding(line, 1, "GC002", "missing-zero-grad", "m") for line in (1, 2, 3)]
    kept = unsuppressed(findings, scan(source), source)
    assert [f.line for f in kept] == [1, 3]


def test_unknown_codes_inside_strings_do_not_warn(project, kit):
    kit.write(project, {"a.py": 'HELP = "write # noqa: GC999 to ..."\n"""\n>>> x  # noqa: GC998\n"""\n'
                                "y = 1  # noqa: GC997\n"})
    run = kit.run_cli(["lint", "--no-cache"])
    assert "GC999" not in run.stderr and "GC998" not in run.stderr
    assert "warning: a.py:5: unknown rule code GC997" in run.stderr
