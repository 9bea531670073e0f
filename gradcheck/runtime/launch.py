"""``gradcheck run script.py``: run an unchanged training script with every optimizer guarded.

The script runs as ``__main__`` with ``sys.argv`` set, as ``python script.py`` would run it
(``gradcheck run -m module`` as ``python -m module``). Processes it starts
(``torch.multiprocessing.spawn``, a launcher such as ``-m torch.distributed.run``) inherit the
guard through the environment (``gradcheck.runtime.autostart``) and leave the job's status to it.

It behaves like ``python``: an exception prints the script's own traceback (no frames of
gradcheck or runpy) and exits 1, ``KeyboardInterrupt`` exits 130, ``sys.exit(n)`` exits ``n``.
When the script itself succeeds, the status is 1 (``GRADCHECK_EXIT_CODE`` if set) when the guard
found a problem, in this process or any it started, and 0 when it found none.
"""
from __future__ import annotations

import importlib.util
import os
import runpy
import sys
import traceback
from collections.abc import Callable, Sequence
from types import TracebackType

from gradcheck import exitcodes
from gradcheck.runtime import autostart
from gradcheck.runtime.guard import GradGuardError
from gradcheck.runtime.session import GuardSession, parse_accumulation_steps

INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a Python program stopped by Ctrl-C
_LAUNCHER_FILES = {os.path.normcase(__file__), runpy._run_code.__code__.co_filename}


def run_script(
    path: str,
    args: Sequence[str] = (),
    *,
    accumulation_steps: int | str | None = None,
    action: str = "warn",
) -> int:
    """Run ``path`` as ``__main__`` with ``args``, guarded; return the exit status.

    ``accumulation_steps`` is ``k`` for every optimizer, or text as ``--accumulation-steps``
    takes it (``"4"``, ``"train.py:40=2"``, comma-separated).

    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     script = os.path.join(folder, "noop.py")
    ...     _ = open(script, "w").write("import sys; print(sys.argv[1:])")
    ...     run_script(script, ["--epochs", "1"])
    ['--epochs', '1']
    0
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no script at {path!r}; pass the path of a Python file")
    # python runs the script by its absolute path (its frames, __file__) and keeps argv[0]
    absolute = os.path.abspath(path)
    return _run(lambda: runpy.run_path(absolute, run_name="__main__"), [path, *args],
                os.path.dirname(absolute), accumulation_steps, action)


def run_module(
    name: str,
    args: Sequence[str] = (),
    *,
    accumulation_steps: int | str | None = None,
    action: str = "warn",
) -> int:
    """Run module ``name`` as ``__main__`` (``python -m name args``), guarded; the exit status.

    ``run_module("torch.distributed.run", ["--nproc-per-node", "2", "train.py"])`` guards a
    torchrun job whose workers exit with their scripts' status, so torchrun ends cleanly and the
    job's status is this call's.
    """
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise ModuleNotFoundError(f"no module named {name!r}; pass an importable module, as "
                                  "for python -m")
    return _run(lambda: runpy.run_module(name, run_name="__main__", alter_sys=True),
                [name, *args], os.getcwd(), accumulation_steps, action)


def _run(run: Callable[[], object], argv: list[str], path0: str,
         accumulation_steps: int | str | None, action: str) -> int:
    text = "" if accumulation_steps is None else str(accumulation_steps)
    default, per_line = parse_accumulation_steps(text)
    found_status = autostart.exit_code()
    session = GuardSession(default, action, per_optimizer=per_line).install()
    session.decides_exit_status = True
    job = autostart.Job.create(text, action)
    saved_argv, saved_path0 = sys.argv[:], sys.path[0]
    sys.argv, sys.path[0] = argv, path0
    status = exitcodes.CLEAN
    try:
        with job.exported():
            run()
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except GradGuardError:
        status = exitcodes.FINDINGS  # --action raise: the report says where
    except KeyboardInterrupt as exc:
        _print_traceback(exc)
        status = INTERRUPTED
    except BaseException as exc:  # noqa: BLE001 - the script's own error, shown as python does
        _print_traceback(exc)
        status = exitcodes.FINDINGS
    finally:
        sys.argv, sys.path[0] = saved_argv, saved_path0
    session.failed = status != exitcodes.CLEAN
    session.finish()
    summary = job.close()
    own = session.summary()
    summary.include(session.found, own["guarded"], own["passes"])
    note = summary.nothing_guarded()
    if note:
        print(note, file=sys.stderr, flush=True)
    if status == exitcodes.CLEAN and summary.problems:
        status = found_status
    return status


def _exit_status(code: object) -> int:
    if code is None:
        return exitcodes.CLEAN
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return exitcodes.FINDINGS


def _print_traceback(exc: BaseException) -> None:
    """The traceback ``python script.py`` would print: from the script's first frame on."""
    tb: TracebackType | None = exc.__traceback__
    while tb is not None and os.path.normcase(tb.tb_frame.f_code.co_filename) in _LAUNCHER_FILES:
        tb = tb.tb_next
    exc.with_traceback(tb)  # NOTE: python's excepthook prints the exception's own traceback
    try:
        sys.excepthook(type(exc), exc, tb)
    except Exception:  # noqa: BLE001 - the script's broken excepthook: python falls back too
        traceback.print_exception(type(exc), exc, tb)
    sys.stderr.flush()
