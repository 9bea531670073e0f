"""``torch.distributed.elastic.multiprocessing.errors``: ``@record`` around a worker's entry
point writes the exception it raises to the file ``TORCHELASTIC_ERROR_FILE`` names (when set),
then re-raises it, so the launcher can report the root cause; ``ChildFailedError`` is what a
launcher raises for failed workers.

>>> @record
... def main():
...     return "ran"
>>> main()
'ran'
"""
from __future__ import annotations

import functools
import json
import os
import sys
import time
import traceback
import types
from collections.abc import Callable
from typing import Any


class ChildFailedError(Exception):
    """Raised by a launcher when worker processes failed; ``failures`` maps rank -> failure."""

    def __init__(self, name: str, failures: dict) -> None:
        self.name, self.failures = name, failures
        super().__init__(f"{name} FAILED: {len(failures)} worker(s) failed")


def _write_error_file(error: BaseException) -> None:
    path = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if not path:
        return
    message = {"message": f"{type(error).__name__}: {error}",
               "extraInfo": {"py_callstack": traceback.format_exc(),
                             "timestamp": str(int(time.time()))}}
    with open(path, "w") as handle:
        json.dump({"message": message}, handle)


def record(fn: Callable | None = None, error_handler: Any = None) -> Callable:
    """Run ``fn``; an exception it raises is written to the error file and raised again."""
    if fn is None:
        return functools.partial(record, error_handler=error_handler)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SystemExit as exit_:
            if exit_.code not in (0, None):
                _write_error_file(exit_)
            raise
        except Exception as error:
            _write_error_file(error)
            raise

    return wrapper


def _install() -> None:
    """Make ``elastic.multiprocessing.errors`` importable under its torch path."""
    package = types.ModuleType(f"{__name__}.multiprocessing")
    errors = types.ModuleType(f"{__name__}.multiprocessing.errors")
    errors.record, errors.ChildFailedError = record, ChildFailedError
    package.errors = errors
    sys.modules[package.__name__], sys.modules[errors.__name__] = package, errors
    globals()["multiprocessing"] = package


_install()
