"""``torch.multiprocessing``: Python's ``multiprocessing`` plus torch's additions.

Everything of the standard module is re-exported. ``spawn(fn, nprocs=1)`` calls ``fn(0, *args)``
in this process: an engine model has no device to give each worker, and a one-process run
computes what the one spawned worker would. More than one process raises NotImplementedError.

>>> import gradcheck.ref as torch
>>> seen = []
>>> torch.multiprocessing.spawn(lambda rank, tag: seen.append((rank, tag)), args=("a",))
>>> seen, torch.multiprocessing.get_sharing_strategy()
([(0, 'a')], 'file_descriptor')
"""
from __future__ import annotations

from multiprocessing import *  # noqa: F403 - torch.multiprocessing re-exports all of it
from multiprocessing import get_all_start_methods  # noqa: F401
import os
import traceback
from typing import Any

_strategy = ["file_descriptor"]


def get_all_sharing_strategies() -> set:
    return {"file_descriptor", "file_system"}


def get_sharing_strategy() -> str:
    return _strategy[0]


def set_sharing_strategy(new_strategy: str) -> None:
    if new_strategy not in get_all_sharing_strategies():
        raise ValueError(f"sharing strategy must be one of {sorted(get_all_sharing_strategies())},"
                         f" got {new_strategy!r}")
    _strategy[0] = new_strategy


def spawn(fn: Any, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
          start_method: str = "spawn") -> None:
    """Run ``fn(0, *args)`` here for one process; refuse more (named in the error)."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)


def start_processes(fn: Any, args: tuple = (), nprocs: int = 1, join: bool = True,
                    daemon: bool = False, start_method: str = "spawn") -> None:
    if nprocs != 1:
        raise NotImplementedError(
            f"torch.multiprocessing.spawn with nprocs={nprocs} is not available in "
            "gradcheck.ref: the engine runs one process; use nprocs=1 (world size 1)")
    try:
        fn(0, *args)
    except Exception:  # noqa: BLE001 - reported as torch reports a worker's failure
        raise ProcessRaisedException(
            "\n\n-- Process 0 terminated with the following error:\n"
            + traceback.format_exc(), 0, os.getpid()) from None


class ProcessException(Exception):
    """A spawned worker failed; ``error_index`` is its rank, ``error_pid`` its process id."""

    def __init__(self, msg: str, error_index: int, pid: int) -> None:
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A spawned worker raised an exception; the message holds its traceback."""

    def __init__(self, msg: str, error_index: int, error_pid: int) -> None:
        super().__init__(msg, error_index, error_pid)
        self.error_pid = error_pid


def _install_reductions() -> None:
    import importlib

    globals()["reductions"] = importlib.import_module("gradcheck.ref.mp_reductions")


_install_reductions()
