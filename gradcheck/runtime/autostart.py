"""``GRADCHECK_GUARD=1``: guard every optimizer of a program started any way at all.

Three ways in, all calling ``start_from_environment()`` at interpreter start-up:

- ``gradcheck-guard.pth``, installed into site-packages with the package (a wheel install);
- ``gradcheck run`` puts ``autostart_path/`` (holding a ``sitecustomize``) on ``PYTHONPATH``,
  so processes the script spawns (``torch.multiprocessing.spawn``, ``torchrun`` workers) are
  guarded in an editable install too;
- calling it yourself.

Unset, the cost is one environment lookup. ``GRADCHECK_ACTION`` (``warn`` or ``raise``) and
``GRADCHECK_ACCUMULATION_STEPS`` carry ``gradcheck run``'s options to those processes.

>>> start_from_environment({}) is None
True
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from gradcheck import exitcodes

if TYPE_CHECKING:
    from gradcheck.runtime.session import GuardSession

ENABLE = "GRADCHECK_GUARD"
ACTION = "GRADCHECK_ACTION"
ACCUMULATION_STEPS = "GRADCHECK_ACCUMULATION_STEPS"
FOUND_FILE = "GRADCHECK_FOUND_FILE"  # any process that reports a problem appends to it
PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "autostart_path")


def start_from_environment(environ: Mapping[str, str] = os.environ) -> GuardSession | None:
    """Install a guard session when ``GRADCHECK_GUARD`` is set to anything but ``0``."""
    if environ.get(ENABLE, "0") in ("", "0"):
        return None
    from gradcheck.runtime import session

    if session.active() is not None:
        return session.active()
    steps, action = environ.get(ACCUMULATION_STEPS, ""), environ.get(ACTION, "warn")
    if steps and not steps.isdigit() or steps == "0":
        raise ValueError(f"{ACCUMULATION_STEPS} must be a positive integer, got {steps!r}; "
                         f"unset {ENABLE} or fix the value")
    if action not in ("warn", "raise"):
        raise ValueError(f"{ACTION} must be 'warn' or 'raise', got {action!r}; "
                         f"unset {ENABLE} or fix the value")
    return session.GuardSession(int(steps) if steps else None, action).install()


def environment_for_children(
    accumulation_steps: int | None, action: str, found_file: str
) -> dict[str, str]:
    """The variables that make processes started by a guarded program guarded too."""
    path = os.environ.get("PYTHONPATH", "")
    return {
        ENABLE: "1",
        ACTION: action,
        ACCUMULATION_STEPS: str(accumulation_steps or ""),
        FOUND_FILE: found_file,
        "PYTHONPATH": PATH + (os.pathsep + path if path else ""),
    }


def note_found(problems: int) -> None:
    """Tell the ``gradcheck run`` that started this process that it reported problems."""
    path = os.environ.get(FOUND_FILE)
    if path and problems:
        with open(path, "a", encoding="utf-8") as found:
            found.write(f"{os.getpid()}\n")


def start_at_interpreter_start() -> None:
    """The .pth and sitecustomize entry: a bad value ends the process with a clear message."""
    try:
        start_from_environment()
    except ValueError as exc:
        print(f"gradcheck: {exc}", file=sys.stderr, flush=True)
        os._exit(exitcodes.ERROR)  # NOTE: raising here would end in a fatal error inside site
