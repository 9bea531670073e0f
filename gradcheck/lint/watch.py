"""``--watch``: lint, then lint again whenever a checked file or a configuration changes.

No file-system events (no extra dependency): every :data:`POLL_SECONDS` the paths are
walked again and each file's size, modification time and inode are compared, so a new,
removed, edited or renamed file, a new ``.gitignore`` or an edited ``pyproject.toml`` all
start a new run. The run's own writes (``--fix``) are part of the state taken after it,
so they do not start another. Ctrl-C ends the loop.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gradcheck.lint.config import CommandLine

POLL_SECONDS = 0.5
# NOTE: a hook for tests: stop after this many runs (None: run until interrupted)
MAX_RUNS: int | None = None
_CONFIGURATION = ("pyproject.toml", ".gitignore")


def _stat(path: str) -> tuple[int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns, info.st_ino


def state(paths: list[str], command_line: CommandLine | None = None) -> frozenset:
    """What a new run starts on a change of: the files a run would check and the
    configuration files beside and above them, each with its size, mtime and inode.

    >>> state(["no_such_directory"]) == state(["no_such_directory"])
    True
    """
    from gradcheck.lint.config import ConfigError, ConfigFinder
    from gradcheck.lint.files import discover
    from gradcheck.lint.gitignore import PatternError

    directories = {os.path.abspath(p) for p in paths if os.path.isdir(p)} | {os.getcwd()}
    named = command_line.file if command_line is not None else None
    files: list[str] = [str(named)] if named is not None else []
    try:
        finder = ConfigFinder(Path.cwd(), command_line)
        found = discover([Path(p) for p in paths if p != "-"], finder)
    except (ConfigError, PatternError) as error:
        return frozenset({("error", str(error))})  # the next run reports it; a fix changes it
    for path in found.files:
        files.append(str(path))
        directories.add(os.path.dirname(os.path.abspath(path)))
    for directory in list(directories):
        parent = directory
        while True:  # configuration above a checked file counts too
            directories.add(parent)
            parent, child = os.path.dirname(parent), parent
            if parent == child or parent in directories:
                break
    files.extend(os.path.join(d, name) for d in directories for name in _CONFIGURATION)
    return frozenset((path, _stat(path)) for path in files) | {("errors", tuple(found.errors))}


def pause(seconds: float) -> None:
    """Wait between two looks at the files (tests replace it to change files in between)."""
    time.sleep(seconds)


def watch(run: Callable[[], int], snapshot: Callable[[], object],
          announce: Callable[[str], None], *, max_runs: int | None = None) -> int:
    """Call ``run`` now and again each time ``snapshot()`` changes; the last run's exit code
    once ``max_runs`` runs are done (without a limit, only Ctrl-C ends the loop).

    >>> import itertools
    >>> looks = itertools.count()  # every look sees a change
    >>> watch(lambda: 1, lambda: next(looks), print, max_runs=2)
    Watching for file changes (Ctrl-C to stop).
    File change detected, checking again.
    1
    """
    limit = MAX_RUNS if max_runs is None else max_runs
    announce("Watching for file changes (Ctrl-C to stop).")
    status, runs = run(), 1
    seen = snapshot()
    while limit is None or runs < limit:
        pause(POLL_SECONDS)
        current = snapshot()
        if current == seen:
            continue
        announce("File change detected, checking again.")
        status, runs = run(), runs + 1
        seen = snapshot()
    return status
