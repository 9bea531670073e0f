"""``gradcheck run`` on an mnist-style script (pytorch/examples' mnist/main.py on synthetic data):
each planted bug reported once at its line, the unmodified and the accumulating script silent."""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradcheck.cli import main as cli
from gradcheck.runtime import autostart
from gradcheck.runtime.launch import run_script

ROOT = Path(__file__).resolve().parents[2]
MNIST = ROOT / "fixtures" / "runtime" / "mnist"
SMALL = ["--samples", "64"]  # 4 batches of 16: 4 steps, or 1 step with 4-step accumulation


def marked_line(path):
    """The line the fixture marks ``# gradcheck: <kind>``, and the kind."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = re.search(r"# gradcheck: (\w+)", line)
        if match:
            return number, match.group(1)
    return None, None


def run(stem, capsys, accumulation_steps=None, action="warn"):
    pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        status = run_script(str(MNIST / f"{stem}.py"), SMALL,
                            accumulation_steps=accumulation_steps, action=action)
    return status, capsys.readouterr().err


@pytest.mark.parametrize("stem, k, times", [
    ("bug_no_zero_grad", None, "3 times"),
    ("bug_zero_grad_between_backward_and_step", None, "4 times"),
    ("bug_zero_grad_every_micro_batch", 4, "once"),
])
def test_each_bug_is_reported_once_at_its_line(stem, k, times, capsys):
    status, err = run(stem, capsys, accumulation_steps=k)
    line, kind = marked_line(MNIST / f"{stem}.py")
    problems = [row for row in err.splitlines() if row.startswith("  ")]
    assert status == 1
    assert len(problems) == 1, err
    where = f"fixtures/runtime/mnist/{stem}.py"
    assert problems[0].startswith(f"  {where}:{line}: {kind} in Adadelta ({where}:"), err
    assert f", {times}: " in problems[0]


@pytest.mark.parametrize("stem, k", [("main", None), ("main", 1), ("correct_accumulation", None),
                                     ("correct_accumulation", 4)])
def test_correct_scripts_run_silent(stem, k, capsys):
    status, err = run(stem, capsys, accumulation_steps=k)
    assert (status, err) == (0, "")


def test_a_discard_with_unknown_accumulation_steps_is_said_to_be_unjudged(capsys):
    status, err = run("bug_zero_grad_every_micro_batch", capsys)
    line, _ = marked_line(MNIST / "bug_zero_grad_every_micro_batch.py")
    assert status == 0  # nothing was found; the report says what could not be judged
    assert err.startswith("gradcheck: not judged, because accumulation_steps is unknown")
    assert f"bug_zero_grad_every_micro_batch.py:{line}: zero_grad() on Adadelta" in err
    assert "before 1 step(s)" in err


def test_the_wrong_accumulation_steps_makes_a_correct_script_stale(capsys):
    status, err = run("correct_accumulation", capsys, accumulation_steps=2)
    assert status == 1 and "stale_gradients" in err and "beyond accumulation_steps=2" in err


def test_action_raise_stops_at_the_first_problem(capsys):
    status, err = run("bug_zero_grad_between_backward_and_step", capsys, action="raise")
    assert status == 1
    assert "wiped_gradients" in err and ", once: " in err


def test_script_failures_and_exit_codes_are_the_scripts_own(tmp_path, capsys):
    script = tmp_path / "fails.py"
    script.write_text("import sys\nsys.exit(3)\n")
    assert run_script(str(script)) == 3
    with pytest.raises(FileNotFoundError, match="no script at"):
        run_script(str(tmp_path / "missing.py"))


def test_the_cli_refuses_bad_options(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("")
    result = CliRunner().invoke(cli, ["run", "--accumulation-steps", "0", str(script)])
    assert result.exit_code == 2 and "accumulation-steps" in result.output
    result = CliRunner().invoke(cli, ["run", str(tmp_path / "missing.py")])
    assert result.exit_code == 2 and "no file" in result.output


@pytest.mark.parametrize("environ, message", [
    ({"GRADCHECK_ACCUMULATION_STEPS": "four"}, "must be a positive integer, got 'four'"),
    ({"GRADCHECK_ACTION": "stop"}, "must be 'warn' or 'raise', got 'stop'"),
])
def test_bad_environment_values_are_refused(environ, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        autostart.start_from_environment({"GRADCHECK_GUARD": "1", **environ})
