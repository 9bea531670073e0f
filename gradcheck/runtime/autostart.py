"""``GRADCHECK_GUARD=1``: guard every optimizer of a program started any way at all.

Three ways in, all calling ``start_from_environment()`` at interpreter start-up:

- ``gradcheck-guard.pth``, installed into site-packages with the package (a wheel install);
- ``gradcheck run`` puts ``autostart_path/`` (holding a ``sitecustomize``) on ``PYTHONPATH``,
  so processes the script spawns (``torch.multiprocessing.spawn``, ``torchrun`` workers) are
  guarded in an editable install too; ``python -m gradcheck.runtime.autostart`` prints that
  folder, for an editable install started some other way;
- calling it yourself.

Unset, the cost is one environment lookup. ``GRADCHECK_ACTION`` (``warn`` or ``raise``) and
``GRADCHECK_ACCUMULATION_STEPS`` carry ``gradcheck run``'s options to those processes.

One process of a guarded job decides its status: ``gradcheck run``, or the first process started
with ``GRADCHECK_GUARD=1`` (a launcher such as torchrun, or the script itself). It hands a job file
(``GRADCHECK_JOB_FILE``) to the processes it starts; each appends what it reported, and keeps its
own exit status, so a launcher never sees a worker fail because of a finding. At its end the
deciding process exits with ``GRADCHECK_EXIT_CODE`` (default 1; 0 keeps the program's status)
when any process of the job reported a problem and the program itself succeeded.

>>> start_from_environment({}) is None
True
"""
from __future__ import annotations

import atexit
import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from gradcheck import exitcodes

if TYPE_CHECKING:
    from gradcheck.runtime.session import GuardSession

ENABLE = "GRADCHECK_GUARD"
ACTION = "GRADCHECK_ACTION"
ACCUMULATION_STEPS = "GRADCHECK_ACCUMULATION_STEPS"
EXIT_CODE = "GRADCHECK_EXIT_CODE"
JOB_FILE = "GRADCHECK_JOB_FILE"  # every process of the job appends what it reported
PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "autostart_path")


def start_from_environment(environ: Mapping[str, str] = os.environ) -> GuardSession | None:
    """Install a guard session when ``GRADCHECK_GUARD`` is set to anything but ``0``."""
    if environ.get(ENABLE, "0") in ("", "0"):
        return None
    from gradcheck.runtime import session

    if session.active() is not None:
        return session.active()
    steps, action = environ.get(ACCUMULATION_STEPS, ""), environ.get(ACTION, "warn")
    try:
        default, per_line = session.parse_accumulation_steps(steps)
    except ValueError as exc:
        raise ValueError(f"{ACCUMULATION_STEPS}: {exc}; or unset {ENABLE}") from None
    if action not in ("warn", "raise"):
        raise ValueError(f"{ACTION} must be 'warn' or 'raise', got {action!r}; "
                         f"unset {ENABLE} or fix the value")
    code = exit_code(environ)
    guarded = session.GuardSession(default, action, per_optimizer=per_line)
    if environ is os.environ and not environ.get(JOB_FILE):
        _decide_exit_status(guarded, code)  # before install(): its exit handler must run last
    return guarded.install()


def exit_code(environ: Mapping[str, str] = os.environ) -> int:
    """The status of a job whose program succeeded but whose guard found problems."""
    text = environ.get(EXIT_CODE, "")
    if not text:
        return exitcodes.FINDINGS
    if not text.isdigit() or int(text) > 255:
        raise ValueError(f"{EXIT_CODE} must be an exit status from 0 to 255, got {text!r}; "
                         f"0 keeps the program's own status")
    return int(text)


class Job:
    """The job file of one guarded job and the environment that hands it to child processes."""

    def __init__(self, path: str, environment: dict[str, str]) -> None:
        self.path = path
        self.environment = environment

    @classmethod
    def create(cls, accumulation_steps: str = "", action: str = "warn") -> Job:
        descriptor, path = tempfile.mkstemp(prefix="gradcheck-job-")
        os.close(descriptor)
        python_path = os.environ.get("PYTHONPATH", "")
        return cls(path, {
            ENABLE: "1",
            ACTION: action,
            ACCUMULATION_STEPS: accumulation_steps,
            JOB_FILE: path,
            "PYTHONPATH": PATH + (os.pathsep + python_path if python_path else ""),
        })

    @contextlib.contextmanager
    def exported(self) -> Iterator[None]:
        """Within the block, processes started inherit the guard and report to this job."""
        saved = {name: os.environ.get(name) for name in self.environment}
        os.environ.update(self.environment)
        try:
            yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value

    def close(self) -> JobSummary:
        """What the job's processes reported (each wrote one line); removes the file."""
        summary = JobSummary()
        try:
            with open(self.path, encoding="utf-8") as job:
                for line in job:
                    summary.add(line)
            os.remove(self.path)
        except OSError:
            pass
        return summary


class JobSummary:
    """Problems reported and things guarded, over the processes of one job."""

    def __init__(self) -> None:
        self.problems = self.guarded = self.passes = self.processes = 0

    def add(self, line: str) -> None:
        """One process's line of the job file: pid, problems, things guarded, passes."""
        fields = [int(f) for f in line.split()[1:] if f.isdigit()]
        if len(fields) == 3:
            self.include(*fields)

    def include(self, problems: int, guarded: int, passes: int) -> None:
        self.processes += 1
        self.problems += problems
        self.guarded += guarded
        self.passes += passes

    def nothing_guarded(self) -> str:
        """The note for a job that guarded nothing; empty when it guarded something."""
        if self.guarded or not self.processes:
            return ""
        if not self.passes:
            return ("gradcheck: nothing was guarded: no backward() reached a parameter and no "
                    "torch.optim optimizer stepped")
        return ("gradcheck: nothing was guarded: backward() ran, but no torch.optim optimizer "
                "stepped and no parameter changed between backward passes, so no update was "
                "checked")


def note_found(problems: int, guarded: int = 0, passes: int = 0) -> None:
    """Tell the job's deciding process what this process reported and guarded."""
    path = os.environ.get(JOB_FILE)
    if path:
        with contextlib.suppress(OSError), open(path, "a", encoding="utf-8") as job:
            job.write(f"{os.getpid()} {problems} {guarded} {passes}\n")


def _decide_exit_status(session: GuardSession, code: int) -> None:
    """Make this process the one that carries the job's status (see the module's docstring)."""
    per_line = [f"{where}={k}" for where, k in session.per_optimizer.items()]
    job = Job.create(",".join([str(session.k or ""), *per_line]).strip(","), session.action)
    os.environ[JOB_FILE] = job.path  # inherited by every process started from now on
    session.decides_exit_status = True
    pid, ended = os.getpid(), _ExitRecorder()
    sys.exit = ended.exit  # type: ignore[assignment]

    def exit_with_findings() -> None:
        if os.getpid() != pid:  # a forked child that returned: not the deciding process
            return
        summary = job.close()
        summary.include(session.found, session.summary()["guarded"], session.summary()["passes"])
        found = summary.problems
        note = summary.nothing_guarded()
        if note:
            print(note, file=sys.stderr, flush=True)
        crashed = getattr(sys, "last_value", None) is not None
        if found and code and not crashed and ended.code in (None, 0):
            sys.stdout.flush()
            sys.stderr.flush()
            # NOTE: the only way to change the status of a program that already ended; it runs
            # last (registered first), so every other exit handler has run
            os._exit(code)

    atexit.register(exit_with_findings)


class _ExitRecorder:
    """Remembers the status passed to ``sys.exit``: the program's own, which a finding keeps."""

    def __init__(self) -> None:
        self.code: Any = None
        self.original = sys.exit

    def exit(self, code: Any = None) -> None:
        self.code = code
        self.original(code)


def start_at_interpreter_start() -> None:
    """The .pth and sitecustomize entry: a bad value ends the process with a clear message."""
    try:
        start_from_environment()
    except ValueError as exc:
        print(f"gradcheck: {exc}", file=sys.stderr, flush=True)
        os._exit(exitcodes.ERROR)  # NOTE: raising here would end in a fatal error inside site


if __name__ == "__main__":  # the folder to put on PYTHONPATH where no .pth is installed
    print(PATH)
