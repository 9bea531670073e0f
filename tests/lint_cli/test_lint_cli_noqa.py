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
