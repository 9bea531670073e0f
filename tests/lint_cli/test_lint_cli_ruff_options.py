"""The ruff options users expect (issue 18), with ruff's semantics.

``--show-files`` and ``--show-settings`` lint nothing; ``--config PATH`` is the one
configuration of every file and turns the search off, ``--config "KEY = VALUE"`` overrides a
key; ``--exclude`` replaces the configured excludes and ``--extend-exclude`` adds to them,
relative to the current directory, while a file named on the command line is still checked;
``--add-noqa`` silences each finding on its line, idempotently; ``--watch`` runs again on
every change.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading

import pytest

from gradcheck import exitcodes


def _paths(run) -> list[str]:
    return sorted({line.split(":", 1)[0] for line in run.stdout.splitlines() if line})


@pytest.fixture
def tree(project, kit):
    """A project: a config at the root, a nested one, ignored and excluded files."""
    bad = kit.MISSING_ZERO_GRAD
    kit.write(project, {
        "pyproject.toml": '[tool.gradcheck.lint]\nextend-exclude = ["generated/"]\n',
        ".gitignore": "scratch.py\n",
        "train.py": bad, "scratch.py": bad, "generated/out.py": bad, "build/b.py": bad,
        "src/legacy/old.py": bad, "src/new.py": bad,
        "nested/pyproject.toml": '[tool.gradcheck.lint]\nignore = ["GC002"]\n',
        "nested/n.py": bad,
    })
    (project / ".git").mkdir()
    return project


# ----- --show-files / --show-settings ------------------------------------------------------------
def test_show_files_lists_what_a_run_checks_and_lints_nothing(tree, kit):
    run = kit.run_cli(["lint", "--show-files"])
    assert run.exit_code == exitcodes.CLEAN
    assert run.stdout.splitlines() == ["nested/n.py", "src/legacy/old.py", "src/new.py",
                                       "train.py"]
    assert not (tree / ".gradcheck_cache").exists()
    named = kit.run_cli(["lint", "--show-files", "scratch.py", "src"])  # named files always count
    assert named.stdout.splitlines() == ["scratch.py", "src/legacy/old.py", "src/new.py"]


def test_show_files_reports_a_missing_path(tree, kit):
    run = kit.run_cli(["lint", "--show-files", "train.py", "nope.py"])
    assert run.exit_code == exitcodes.ERROR
    assert run.stdout == "train.py\n"
    assert "gradcheck: error: nope.py: no such file or directory" in run.stderr


def test_show_settings_resolves_the_first_file(tree, kit):
    run = kit.run_cli(["lint", "--show-settings", "nested"])
    assert run.exit_code == exitcodes.CLEAN
    lines = run.stdout.splitlines()
    assert lines[:3] == ["Resolved settings for: nested/n.py",
                         "Settings path: nested/pyproject.toml", "Project root: nested"]
    assert 'rules = ["GC001", "GC003", "GC004"]' in lines
    assert 'ignore = ["GC002"]' in lines
    assert 'extend-exclude = []' in lines  # the nested file's own table, not the root's
    root = kit.run_cli(["lint", "--show-settings", "--ignore", "GC004", "train.py"])
    assert 'rules = ["GC001", "GC002", "GC003"]' in root.stdout.splitlines()
    assert 'extend-exclude = ["generated/"]' in root.stdout.splitlines()
    assert 'command-line-ignore = ["GC004"]' in root.stdout.splitlines()


# ----- --config ----------------------------------------------------------------------------------
def test_config_path_governs_every_file_and_turns_the_search_off(tree, kit):
    kit.write(tree, {"ci/lint.toml": '[tool.gradcheck.lint]\nignore = ["GC001"]\n'
                                     'extend-exclude = ["legacy/"]\n'})
    plain = kit.run_cli(["lint", "--no-cache", "-q", "."])
    assert "nested/n.py" not in _paths(plain)  # its own pyproject ignores GC002
    run = kit.run_cli(["lint", "--no-cache", "-q", "--config", "ci/lint.toml", "."])
    assert run.exit_code == exitcodes.FINDINGS
    # nested/pyproject.toml no longer applies; generated/ is no longer excluded (that was the
    # root pyproject's); legacy/ is excluded at any depth, as the named file says, and its
    # paths are relative to the current directory (ruff's rule), so the defaults hold here
    assert _paths(run) == ["generated/out.py", "nested/n.py", "src/new.py", "train.py"]
    settings = kit.run_cli(["lint", "--show-settings", "--config", "ci/lint.toml", "nested"])
    assert settings.stdout.splitlines()[1:3] == ["Settings path: ci/lint.toml", "Project root: ."]


def test_config_key_value_overrides_every_configuration(tree, kit):
    run = kit.run_cli(["lint", "--no-cache", "--config", 'ignore = ["GC002"]', "train.py"])
    assert run.exit_code == exitcodes.CLEAN
    both = kit.run_cli(["lint", "--show-settings", "--config", "pyproject.toml",
                        "--config", 'select = ["GC004"]', "train.py"])
    assert 'rules = ["GC004"]' in both.stdout.splitlines()


@pytest.mark.parametrize(("value", "message"), [
    ("nope.toml", "--config nope.toml: no such file"),
    ("bogus = [1", "is neither an existing file nor a TOML `KEY = VALUE` pair"),
    ("selct = []", "--config: unknown key 'selct'"),
    ('select = "GC001"', "--config select must be a list of strings"),
    ("src/new.py", "cannot read it as TOML"),
])
def test_a_bad_config_value_is_a_usage_error_that_names_it(tree, kit, value, message):
    run = kit.run_cli(["lint", "--no-cache", "--config", value, "train.py"])
    assert run.exit_code == exitcodes.ERROR and run.stdout == ""
    assert message in run.stderr, run.stderr


def test_config_without_the_table_and_two_config_files_are_usage_errors(tree, kit):
    kit.write(tree, {"other.toml": "[tool.black]\n"})
    run = kit.run_cli(["lint", "--config", "other.toml", "train.py"])
    assert run.exit_code == exitcodes.ERROR
    assert "other.toml: the file has no [tool.gradcheck.lint] table" in run.stderr
    two = kit.run_cli(["lint", "--config", "pyproject.toml", "--config", "other.toml"])
    assert two.exit_code == exitcodes.ERROR and "--config names 2 files" in two.stderr


# ----- --exclude / --extend-exclude --------------------------------------------------------------
def test_extend_exclude_adds_patterns_relative_to_the_current_directory(tree, kit, monkeypatch):
    run = kit.run_cli(["lint", "--show-files", "--extend-exclude", "src/legacy,nested"])
    assert run.stdout.splitlines() == ["src/new.py", "train.py"]
    monkeypatch.chdir(tree / "src")  # an anchored pattern is anchored at the current directory
    inside = kit.run_cli(["lint", "--show-files", "--extend-exclude", "legacy", "."])
    assert inside.stdout.splitlines() == ["new.py"]
    anchored = kit.run_cli(["lint", "--show-files", "--extend-exclude", "/new.py", "."])
    assert anchored.stdout.splitlines() == ["legacy/old.py"]


def test_exclude_replaces_the_configured_excludes_defaults_included(tree, kit):
    run = kit.run_cli(["lint", "--show-files", "--exclude", "nested"])
    # build/ was excluded by a default, now replaced; the pyproject's extend-exclude stays
    assert run.stdout.splitlines() == ["build/b.py", "src/legacy/old.py", "src/new.py",
                                       "train.py"]


def test_an_excluded_file_named_on_the_command_line_is_still_checked(tree, kit):
    run = kit.run_cli(["lint", "--no-cache", "--extend-exclude", "train.py", "train.py"])
    assert run.exit_code == exitcodes.FINDINGS and _paths(run) == ["train.py"]


def test_a_bad_command_line_pattern_is_a_usage_error(tree, kit):
    run = kit.run_cli(["lint", "--extend-exclude", "[z-a]"])
    assert run.exit_code == exitcodes.ERROR and "is not a valid glob" in run.stderr


# ----- --add-noqa --------------------------------------------------------------------------------
def test_add_noqa_silences_every_finding_and_is_idempotent(project, kit):
    shared = kit.MISSING_ZERO_GRAD.replace("optimizer.step()\n",
                                           "optimizer.step()  # noqa: E501  (long)\n")
    kit.write(project, {"a.py": kit.MISSING_ZERO_GRAD.replace("\n", "\r\n"), "b.py": shared,
                        "clean.py": kit.CLEAN_LOOP, "c.py": kit.ZERO_BETWEEN + "  \n"})
    before = {p.name: p.read_bytes() for p in project.iterdir()}
    run = kit.run_cli(["lint", "--no-cache", "--add-noqa"])
    assert run.exit_code == exitcodes.CLEAN, run.stdout
    assert "Added 3 noqa directives." in run.stderr
    a = (project / "a.py").read_bytes()
    assert a == before["a.py"].replace(b"optimizer.step()\r\n",
                                       b"optimizer.step()  # noqa: GC002\r\n")
    assert b"optimizer.step()  # noqa: E501, GC002  (long)\n" in (project / "b.py").read_bytes()
    assert b"optimizer.zero_grad()  # noqa: GC001\n" in (project / "c.py").read_bytes()
    assert (project / "clean.py").read_bytes() == before["clean.py"]
    assert kit.run_cli(["lint", "--no-cache"]).exit_code == exitcodes.CLEAN
    again = kit.run_cli(["lint", "--no-cache", "--add-noqa"])
    assert again.exit_code == exitcodes.CLEAN and "Added 0 noqa directives." in again.stderr
    assert (project / "a.py").read_bytes() == a


def test_add_noqa_merges_codes_on_a_line_and_leaves_what_it_cannot_comment(project, kit):
    # the step shares its line with the start of a string: a comment there would be in the string
    text = kit.MISSING_ZERO_GRAD.replace("optimizer.step()\n", 'optimizer.step(); s = """\n"""\n')
    kit.write(project, {"a.py": text})
    run = kit.run_cli(["lint", "--no-cache", "--add-noqa", "a.py"])
    assert run.exit_code == exitcodes.FINDINGS
    assert (project / "a.py").read_text() == text
    assert (f"warning: a.py:{kit.STEP_LINE}: cannot add a noqa comment: the line ends inside "
            "a string") in run.stderr
    assert f"a.py:{kit.STEP_LINE}:5: GC002" in run.stdout
    assert "1 finding could not get one." in run.stderr


def test_add_noqa_works_through_the_cache_and_in_notebooks(project, kit):
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": kit.MISSING_ZERO_GRAD.splitlines(keepends=True)}
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    kit.write(project, {"n.ipynb": json.dumps(notebook, indent=1) + "\n"})
    assert kit.run_cli(["lint"]).exit_code == exitcodes.FINDINGS  # fills the cache
    run = kit.run_cli(["lint", "--add-noqa"])
    assert run.exit_code == exitcodes.CLEAN and "Added 1 noqa directive." in run.stderr
    source = json.loads((project / "n.ipynb").read_text())["cells"][0]["source"]
    assert "    optimizer.step()  # noqa: GC002\n" in source
    assert kit.run_cli(["lint"]).exit_code == exitcodes.CLEAN


@pytest.mark.parametrize("args", [["--fix"], ["--diff"], ["-"]])
def test_add_noqa_with_fix_diff_or_stdin_is_a_usage_error(project, kit, args):
    kit.write(project, {"a.py": kit.MISSING_ZERO_GRAD})
    run = kit.run_cli(["lint", "--add-noqa", *args], input="x = 1\n")
    assert run.exit_code == exitcodes.ERROR and run.stderr.startswith("gradcheck: error: ")
    assert (project / "a.py").read_text() == kit.MISSING_ZERO_GRAD


# ----- --watch -----------------------------------------------------------------------------------
def test_watch_runs_again_on_each_change_and_only_then(project, kit, monkeypatch):
    from gradcheck.lint import watch

    kit.write(project, {"a.py": kit.MISSING_ZERO_GRAD})
    edits = iter([
        lambda: None,  # a look without a change: no run
        lambda: (project / "a.py").write_text(kit.CLEAN_LOOP),
        lambda: None,
        lambda: (project / "b.py").write_text(kit.ZERO_BETWEEN),  # a new file counts
    ])
    looks = []
    monkeypatch.setattr(watch, "pause", lambda seconds: looks.append(seconds) or next(edits)())
    monkeypatch.setattr(watch, "MAX_RUNS", 3)
    run = kit.run_cli(["lint", "--no-cache", "--watch"])
    assert len(looks) == 4 and looks[0] == watch.POLL_SECONDS
    assert run.exit_code == exitcodes.FINDINGS  # the last run's status: b.py's GC001
    outputs = run.stdout.split("a.py:")  # the first run's finding, then none for a.py
    assert len(outputs) == 2 and "GC002" in outputs[1]
    assert run.stderr.count("File change detected, checking again.") == 2
    assert run.stderr.splitlines()[-2:] == ["File change detected, checking again.",
                                            "Found 1 error. [*] 1 fixable with --fix."]
    assert "b.py:" in run.stdout and "GC001" in run.stdout


def test_watch_with_fix_does_not_rerun_on_its_own_writes(project, kit, monkeypatch):
    from gradcheck.lint import watch

    kit.write(project, {"a.py": kit.ZERO_BETWEEN})
    monkeypatch.setattr(watch, "pause", lambda seconds: None)
    monkeypatch.setattr(watch, "MAX_RUNS", 2)
    calls = []
    real_state = watch.state

    def stop_after_five_looks(*args):
        if len(calls) > 5:
            raise KeyboardInterrupt
        return real_state(*args)

    monkeypatch.setattr(watch, "state", lambda *a: calls.append(1) or stop_after_five_looks(*a))
    run = kit.run_cli(["lint", "--no-cache", "--watch", "--fix"])
    assert run.exit_code == exitcodes.INTERRUPTED  # no second run came: only Ctrl-C ended it
    assert "File change detected" not in run.stderr
    assert "optimizer.zero_grad()" in (project / "a.py").read_text()


def test_watch_survives_a_broken_configuration_and_reports_it(project, kit, monkeypatch):
    from gradcheck.lint import watch

    kit.write(project, {"a.py": kit.MISSING_ZERO_GRAD})
    steps = iter([lambda: (project / "pyproject.toml").write_text("[tool.gradcheck.lint]\nx = [\n"),
                  lambda: (project / "pyproject.toml").write_text(
                      '[tool.gradcheck.lint]\nignore = ["GC002"]\n')])
    monkeypatch.setattr(watch, "pause", lambda seconds: next(steps)())
    monkeypatch.setattr(watch, "MAX_RUNS", 3)
    run = kit.run_cli(["lint", "--no-cache", "--watch"])
    assert "pyproject.toml: cannot read it as TOML" in run.stderr
    assert run.exit_code == exitcodes.CLEAN  # the repaired configuration ignores GC002


def test_watch_on_stdin_is_a_usage_error(project, kit):
    run = kit.run_cli(["lint", "--watch", "-"], input="x = 1\n")
    assert run.exit_code == exitcodes.ERROR and "--watch works on files" in run.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process as on POSIX")
def test_watch_in_a_real_process_ends_on_ctrl_c_with_130(project, kit):
    kit.write(project, {"a.py": kit.MISSING_ZERO_GRAD})
    command = [sys.executable, "-c", "from gradcheck.cli import main; main()", "lint",
               "--no-cache", "--watch"]
    # A job started in the background of a shell inherits SIGINT ignored, and Python then
    # installs no KeyboardInterrupt handler: give the child the default, as a terminal would.
    process = subprocess.Popen(command, cwd=project, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    watchdog = threading.Timer(120, process.kill)  # a watch that never prints must not hang
    watchdog.start()
    try:
        lines = []
        for line in process.stderr:  # the first run's summary, then Ctrl-C
            lines.append(line)
            if line.startswith("Found 1 error"):
                break
        process.send_signal(signal.SIGINT)
        rest = process.communicate(timeout=60)
    finally:
        watchdog.cancel()
        process.kill()
    assert lines[0] == "Watching for file changes (Ctrl-C to stop).\n"
    assert process.returncode == exitcodes.INTERRUPTED
    assert rest[1] == "gradcheck: interrupted\n"
    assert f"a.py:{kit.STEP_LINE}:5: GC002" in rest[0]
