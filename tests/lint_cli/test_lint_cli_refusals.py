"""Never a traceback, never exit 1 for an error (issue 18).

Unbounded inputs (a symlink to /dev/zero, a FIFO, a huge file) are refused by name with the
limit; a file the process may not read and a directory it may not list are reported, never
skipped; an internal failure is a message and exit 2; Ctrl-C is 130; a closed pipe is quiet.
Permission tests run where file modes apply: as root, in a child that gave up the
capabilities that let root ignore them.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gradcheck import exitcodes

LINUX = sys.platform.startswith("linux")


def _no_traceback(text: str) -> None:
    assert "Traceback" not in text and "All checks passed!" not in text


def _lines(stdout: bytes | str) -> dict[str, str]:
    text = stdout.decode() if isinstance(stdout, bytes) else stdout
    return {line.split(":", 1)[0]: line for line in text.splitlines() if line}


@pytest.mark.skipif(not LINUX, reason="/dev/zero, mkfifo and sparse files as on Linux")
def test_unbounded_inputs_are_refused_by_name_and_the_run_goes_on(project, kit):
    # the reproduction, in a real process bounded in memory and time: before the fix
    # it read /dev/zero until MemoryError (exit 1) and blocked on the FIFO forever
    os.symlink("/dev/zero", project / "zero.py")
    os.mkfifo(project / "pipe.py")
    with open(project / "huge.py", "wb") as handle:
        handle.truncate(17 * 1024 * 1024)  # sparse: costs no disk
    (project / "walk").mkdir()
    os.symlink("/dev/zero", project / "walk" / "zero.py")
    os.mkfifo(project / "walk" / "pipe.py")
    os.symlink("nowhere.py", project / "walk" / "dangling.py")
    kit.write(project, {"bad.py": kit.MISSING_ZERO_GRAD, "walk/bad.py": kit.MISSING_ZERO_GRAD})

    def limit_memory() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    command = [sys.executable, "-c", "from gradcheck.cli import main; main()", "lint",
               "--no-cache", "zero.py", "pipe.py", "huge.py", "bad.py", "walk"]
    run = subprocess.run(command, cwd=project, capture_output=True, timeout=60, check=False,
                         preexec_fn=limit_memory)
    _no_traceback(run.stderr.decode() + run.stdout.decode())
    assert run.returncode == exitcodes.ERROR
    found = _lines(run.stdout)
    device = ("GC000 cannot read: it is a character device (a symlink to /dev/zero), "
              "not a regular file")
    assert device in found["zero.py"] and device in found["walk/zero.py"]
    assert "GC000 cannot read: it is a named pipe (FIFO)" in found["pipe.py"]
    assert "GC000 cannot read: it is a named pipe (FIFO)" in found["walk/pipe.py"]
    assert ("GC000 cannot read: the file is 17 MiB, over the 16 MiB limit on one file; exclude "
            "it (--extend-exclude) or split it") in found["huge.py"]
    assert "broken symbolic link to nowhere.py" in found["walk/dangling.py"]
    assert f"{kit.STEP_LINE}:5: GC002" in found["bad.py"]
    assert f"{kit.STEP_LINE}:5: GC002" in found["walk/bad.py"]
    assert "6 files could not be checked (GC000)" in run.stderr.decode()


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc")
def test_a_file_that_grows_past_the_limit_while_read_is_refused(project, kit, monkeypatch):
    # /proc files are regular files whose size says 0: the bound must hold on what is read
    monkeypatch.setattr("gradcheck.lint.reading.MAX_FILE_BYTES", 64)
    os.symlink("/proc/self/status", project / "status.py")
    run = kit.run_cli(["lint", "--no-cache", "status.py"])
    assert run.exit_code == exitcodes.ERROR
    assert run.stdout.startswith("status.py:1:1: GC000 cannot read: the file grew while read, "
                                 "over the 64 bytes limit on one file"), run.stdout


def test_stdin_over_the_limit_is_a_usage_error(project, kit, monkeypatch):
    monkeypatch.setattr("gradcheck.lint.reading.MAX_FILE_BYTES", 1024)
    run = kit.run_cli(["lint", "--no-cache", "-"], input="x = 1\n" * 400)
    assert run.exit_code == exitcodes.ERROR and run.stdout == ""
    assert "standard input holds more than" in run.stderr and "the limit on one file" in run.stderr
    small = kit.run_cli(["lint", "--no-cache", "-"], input=kit.MISSING_ZERO_GRAD)
    assert small.exit_code == exitcodes.FINDINGS


# ----- permissions ---------------------------------------------------------------------------
def _locked_tree(project, kit) -> None:
    kit.write(project, {"locked/a.py": kit.MISSING_ZERO_GRAD, "tree/bad.py": kit.MISSING_ZERO_GRAD,
                        "tree/closed/c.py": kit.MISSING_ZERO_GRAD,
                        "tree/unreadable.py": kit.MISSING_ZERO_GRAD})
    (project / "locked").chmod(0o600)  # no search permission: a.py cannot be reached
    (project / "tree" / "closed").chmod(0)
    (project / "tree" / "unreadable.py").chmod(0)


def _assert_locked_tree_reported(stdout: str, stderr: str, kit) -> None:
    _no_traceback(stdout + stderr)
    found = _lines(stdout)
    assert found["locked/a.py"] == "locked/a.py:1:1: GC000 cannot read: Permission denied"
    assert found["tree/closed"].startswith("tree/closed:1:1: GC000 cannot list this directory: "
                                           "Permission denied; the files in it were not checked")
    assert found["tree/unreadable.py"] == ("tree/unreadable.py:1:1: GC000 cannot read: "
                                           "Permission denied")
    assert f"{kit.STEP_LINE}:5: GC002" in found["tree/bad.py"]


def test_unreadable_paths_are_reported_where_modes_apply(project, kit):
    _locked_tree(project, kit)
    try:
        run = kit.run_where_modes_apply(["lint", "--no-cache", "locked/a.py", "tree"], project)
    finally:
        for path in ("locked", "tree/closed", "tree/unreadable.py"):
            (project / path).chmod(0o755)
    assert run.returncode == exitcodes.ERROR, run.stderr
    _assert_locked_tree_reported(run.stdout.decode(), run.stderr.decode(), kit)


def test_unreadable_paths_are_reported_with_the_oserror_simulated(project, kit, monkeypatch):
    # the same, on any platform and user: the calls fail as they do without permission
    kit.write(project, {"locked/a.py": kit.MISSING_ZERO_GRAD, "tree/bad.py": kit.MISSING_ZERO_GRAD,
                        "tree/closed/c.py": kit.MISSING_ZERO_GRAD,
                        "tree/unreadable.py": kit.MISSING_ZERO_GRAD})
    denied = PermissionError(13, "Permission denied")
    real_stat, real_scandir, real_open = os.stat, os.scandir, os.open

    def stat(path, *args, **kwargs):
        if "locked" in os.fspath(path):
            raise denied
        return real_stat(path, *args, **kwargs)

    def scandir(path="."):
        if os.fspath(path).endswith("closed"):
            raise denied
        return real_scandir(path)

    def open_(path, *args, **kwargs):
        if os.fspath(path).endswith(("unreadable.py", "locked/a.py")):
            raise denied
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "open", open_)
    run = kit.run_cli(["lint", "--no-cache", "-j", "1", "locked/a.py", "tree"])
    assert run.exit_code == exitcodes.ERROR
    _assert_locked_tree_reported(run.stdout, run.stderr, kit)


def test_an_unreadable_pyproject_is_an_error_not_an_absent_configuration(project, kit):
    kit.write(project, {"pyproject.toml": '[tool.gradcheck.lint]\nignore = ["GC002"]\n',
                        "a.py": kit.MISSING_ZERO_GRAD})
    (project / "pyproject.toml").chmod(0)
    try:
        run = kit.run_where_modes_apply(["lint", "--no-cache", "a.py"], project)
    finally:
        (project / "pyproject.toml").chmod(0o644)
    assert run.returncode == exitcodes.ERROR
    assert "pyproject.toml: cannot read: Permission denied" in run.stderr.decode()
    _no_traceback(run.stderr.decode())


def test_a_tree_deeper_than_the_recursion_limit_is_walked(project, kit):
    chain = [str(project)]
    try:
        for _ in range(sys.getrecursionlimit() + 50):  # os.makedirs would recurse itself
            chain.append(os.path.join(chain[-1], "d"))
            os.mkdir(chain[-1])
        bad = os.path.join(chain[-1], "bad.py")
        with open(bad, "w", encoding="utf-8") as handle:
            handle.write(kit.MISSING_ZERO_GRAD)
        run = kit.run_cli(["lint", "--no-cache", "."])
    finally:  # bottom up: pytest's own clean-up (shutil.rmtree) recurses and would fail on it
        if os.path.exists(os.path.join(chain[-1], "bad.py")):
            os.unlink(os.path.join(chain[-1], "bad.py"))
        for directory in reversed(chain[1:]):
            os.rmdir(directory)
    assert run.exit_code == exitcodes.FINDINGS, run.stderr
    assert f"/bad.py:{kit.STEP_LINE}:5: GC002" in run.stdout


# ----- --statistics --------------------------------------------------------------------------
def test_statistics_in_json_is_json(project, kit):
    kit.write(project, {"a.py": kit.MISSING_ZERO_GRAD, "b.py": kit.MISSING_ZERO_GRAD,
                        "c.py": kit.ZERO_BETWEEN})
    run = kit.run_cli(["lint", "--no-cache", "--statistics", "--format", "json"])
    assert run.exit_code == exitcodes.FINDINGS
    assert json.loads(run.stdout) == [
        {"code": "GC002", "name": "missing-zero-grad", "count": 2, "fixable": True},
        {"code": "GC001", "name": "zero-grad-between-backward-and-step", "count": 1,
         "fixable": True},
    ]


def test_statistics_in_a_format_without_a_statistics_form_is_a_usage_error(project, kit):
    kit.write(project, {"a.py": kit.MISSING_ZERO_GRAD})
    run = kit.run_cli(["lint", "--no-cache", "--statistics", "--format", "sarif"])
    assert run.exit_code == exitcodes.ERROR and run.stdout == ""
    assert "--statistics prints text or json; --format sarif has no statistics form" in run.stderr


# ----- failures inside -----------------------------------------------------------------------
@pytest.mark.parametrize("error", [RuntimeError("boom"), MemoryError(), RecursionError("deep")])
def test_an_internal_failure_is_a_message_and_exit_2(project, kit, monkeypatch, error):
    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr("gradcheck.lint.runner.discover", fail)
    kit.write(project, {"a.py": kit.MISSING_ZERO_GRAD})
    run = kit.run_cli(["lint", "--no-cache"])
    assert run.exit_code == exitcodes.ERROR
    assert run.stderr.startswith(f"gradcheck: error: internal error ({type(error).__name__}")
    assert "GRADCHECK_LINT_STRICT=1 shows the traceback" in run.stderr
    monkeypatch.setenv("GRADCHECK_LINT_STRICT", "1")
    with pytest.raises(type(error)):
        kit.run_cli(["lint", "--no-cache"])


def test_ctrl_c_exits_130_without_a_traceback(project, kit, monkeypatch):
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("gradcheck.lint.runner.discover", interrupt)
    run = kit.run_cli(["lint", "--no-cache"])
    assert run.exit_code == exitcodes.INTERRUPTED == 130
    assert run.stderr == "gradcheck: interrupted\n"


def test_a_closed_pipe_ends_the_output_quietly_with_the_runs_own_status(project, kit):
    # `gradcheck lint | head -1`: the reader goes away before the report is written
    kit.write(project, {f"m{i}.py": kit.MISSING_ZERO_GRAD for i in range(20)})
    command = [sys.executable, "-c", "from gradcheck.cli import main; main()", "lint",
               "--no-cache", "."]
    process = subprocess.Popen(command, cwd=project, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == exitcodes.FINDINGS, stderr
    assert "Traceback" not in stderr and "Found 20 errors." in stderr


@pytest.mark.skipif(not LINUX, reason="file names that are not UTF-8 need a byte-named file system")
@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github", "junit"])
def test_a_file_name_that_is_not_utf8_prints_in_every_format(project, kit, fmt):
    (project / os.fsdecode(b"bad\xff.py")).write_text(kit.MISSING_ZERO_GRAD, encoding="utf-8")
    run = kit.run_cli(["lint", "--no-cache", "--format", fmt])
    assert run.exit_code == exitcodes.FINDINGS, run.stderr
    shown = {"json": "bad\\ufffd.py", "sarif": "bad%EF%BF%BD.py"}.get(fmt, "bad\ufffd.py")
    assert shown in run.stdout
    to_file = kit.run_cli(["lint", "--no-cache", "--format", fmt, "-o", "report.out"])
    assert to_file.exit_code == exitcodes.FINDINGS
    assert (project / "report.out").stat().st_size > 0
