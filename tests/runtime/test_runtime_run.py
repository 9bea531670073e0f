"""``gradcheck run`` on an mnist-style script (pytorch/examples' mnist/main.py on synthetic data):
each planted bug reported once at its line, the unmodified and the accumulating script silent;
and ``gradcheck run`` as transparent as ``python``: the script's traceback, its exit status, and
warnings at its lines."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

import gradcheck
from gradcheck.cli import main as cli
from gradcheck.runtime import GradGuardWarning, autostart
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
    ({"GRADCHECK_ACCUMULATION_STEPS": "four"}, "with K a positive integer, got 'four'"),
    ({"GRADCHECK_ACTION": "stop"}, "must be 'warn' or 'raise', got 'stop'"),
])
def test_bad_environment_values_are_refused(environ, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        autostart.start_from_environment({"GRADCHECK_GUARD": "1", **environ})


# -- gradcheck run behaves like python (issue 18) ------------------------------------------------

FAILING = '''\
def divide(a, b):
    return a / b


divide(1, 0)
'''


def _python(*args, cwd):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)


def test_a_failing_script_shows_its_own_traceback_as_python_does(tmp_path):
    (tmp_path / "fails.py").write_text(FAILING)
    plain = _python("fails.py", cwd=tmp_path)
    guarded = _python("-m", "gradcheck", "run", "fails.py", cwd=tmp_path)
    assert plain.returncode == guarded.returncode == 1
    assert guarded.stderr.startswith(plain.stderr), guarded.stderr
    assert plain.stderr.startswith("Traceback (most recent call last):\n  File ")
    assert 'fails.py", line 5, in <module>' in plain.stderr.splitlines()[1]
    assert "click" not in guarded.stderr and "runpy" not in guarded.stderr


@pytest.mark.parametrize("body, status, err", [
    ("import sys\nsys.exit(3)\n", 3, ""),
    ("import sys\nsys.exit('no data found')\n", 1, "no data found\n"),
    ("raise SystemExit\n", 0, ""),
    ("raise KeyboardInterrupt\n", 130, "KeyboardInterrupt\n"),
])
def test_exit_statuses_are_the_scripts_own(tmp_path, capsys, body, status, err):
    script = tmp_path / "ends.py"
    script.write_text(body)
    assert run_script(str(script)) == status
    printed = capsys.readouterr().err
    assert printed.split("gradcheck: nothing was guarded")[0].endswith(err)


def test_ctrl_c_exits_130_like_python(tmp_path):
    (tmp_path / "waits.py").write_text("import time\nprint('ready', flush=True)\ntime.sleep(60)\n")
    # A job started in the background of a shell inherits SIGINT ignored; a terminal's
    # Ctrl-C reaches a child with the default handler, so give it that.
    default_sigint = (lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)) if os.name == "posix" else None
    process = subprocess.Popen([sys.executable, "-m", "gradcheck", "run", "waits.py"],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, preexec_fn=default_sigint)
    assert process.stdout.readline() == "ready\n"
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130
    assert "KeyboardInterrupt" in err and "Aborted!" not in err and "click" not in err


def test_a_module_runs_as_python_m_runs_it(tmp_path):
    (tmp_path / "tool.py").write_text("import sys\nprint(__name__, sys.argv[1:])\nsys.exit(5)\n")
    guarded = _python("-m", "gradcheck", "run", "-m", "tool", "--flag", cwd=tmp_path)
    assert guarded.returncode == 5
    assert guarded.stdout == "__main__ ['--flag']\n"
    missing = _python("-m", "gradcheck", "run", "-m", "no_such_module", cwd=tmp_path)
    assert missing.returncode == 2 and "no module named 'no_such_module'" in missing.stderr


def test_session_warnings_point_at_the_users_line(capsys):
    pytest.importorskip("torch")
    script = MNIST / "bug_zero_grad_between_backward_and_step.py"
    line, _ = marked_line(script)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_script(str(script), SMALL)
    capsys.readouterr()
    guard_warnings = [w for w in caught if issubclass(w.category, GradGuardWarning)]
    assert [(Path(w.filename), w.lineno) for w in guard_warnings] == [(script, line)]


def test_guard_warnings_point_at_the_users_step():
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(2, 1)
    optimizer = gradcheck.guard(torch.optim.SGD(model.parameters(), lr=0.1), action="warn")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            model(torch.ones(1, 2)).sum().backward()
            optimizer.step()  # no zero_grad(): the second step is stale
    optimizer.remove()
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    step_line = next(i for i, text in enumerate(lines, 1) if "the second step is stale" in text)
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, step_line)]


# -- GRADCHECK_GUARD=1: the job's status -----------------------------------------------------------

DOUBLE_STEP = ROOT / "fixtures" / "runtime" / "silent" / "double_step.py"


def test_gradcheck_guard_sets_the_status_of_a_program_that_found_problems():
    """The program ends well, the guard found a problem: exit 1, so a CI job fails. (The page
    docs/runtime.md shows GRADCHECK_EXIT_CODE and the fixed script, and its test runs them.)"""
    pytest.importorskip("torch")
    environment = {**os.environ, "GRADCHECK_GUARD": "1", "PYTHONPATH": autostart.PATH,
                   "PYTHONWARNINGS": "ignore"}
    run = subprocess.run([sys.executable, str(DOUBLE_STEP), "--steps", "2"], cwd=ROOT,
                         env=environment, capture_output=True, text=True, timeout=120,
                         check=False)
    assert run.returncode == 1, run.stderr
    assert "repeated_step in SGD" in run.stderr


def test_gradcheck_exit_code_sets_gradcheck_runs_status_on_findings(monkeypatch, capsys):
    pytest.importorskip("torch")
    monkeypatch.setenv("GRADCHECK_EXIT_CODE", "0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        status = run_script(str(DOUBLE_STEP), ["--steps", "2"])
    assert status == 0 and "repeated_step in SGD" in capsys.readouterr().err
