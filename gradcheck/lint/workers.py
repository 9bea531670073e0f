"""Where the rules run: worker processes that may die without taking the run with them.

A parser can overflow the C stack on hostile input (a segfault, which no ``except``
catches): Python 3.10's does on long expression chains, and libcst's native parser, which
the shared-line fixes use, on deep nesting. So on platforms that fork, the files that reach the rules are checked
in child processes: a pool when there is enough work for several cores, else one child.
When a child dies, its batch is split in half and each half retried in a fresh child,
until the one file that kills its process is found; that file gets a GC000 result and
every other file is still reported. Without ``fork`` (macOS, Windows) the files are
checked in this process, behind the parser's own depth guards.
"""
from __future__ import annotations

import multiprocessing
import signal
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

from gradcheck.lint.result import FileResult

Job = TypeVar("Job")
Work = Callable[[list], list[FileResult]]  # a module-level function (the pool pickles it)
Crashed = Callable[[object, str], FileResult]  # (job, how the process died) -> a GC000 result
# NOTE: several batches per worker, so that the pool hands work to whichever worker is free
# and no worker idles long while the other finishes one oversized batch
_BATCHES_PER_WORKER = 32
_MIN_BATCH_BYTES = 8_000  # smaller batches cost more in round trips than they balance


def can_contain() -> bool:
    """Whether crashes can be contained here (the platform starts processes by fork)."""
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def batches(jobs: list, size: Callable[[object], int], count: int) -> list[list]:
    """``jobs``, sorted biggest first, packed in order into about ``count`` batches of
    similar total size; a job bigger than a share is a batch of its own.

    >>> batches([9, 5, 2, 2, 1, 1], size=lambda job: job, count=3)
    [[9], [5, 2], [2, 1, 1]]
    """
    share = max(sum(map(size, jobs)) / max(count, 1), 1)
    packed: list[list] = []
    current: list = []
    current_size = 0
    for job in jobs:
        current.append(job)
        current_size += size(job)
        if current_size >= share:
            packed.append(current)
            current, current_size = [], 0
    return packed + [current] if current else packed


def run_in_pool(jobs: list, size: Callable[[object], int], work: Work, workers: int,
                crashed: Crashed) -> list[FileResult]:
    """``work`` on ``jobs`` in a pool of ``workers`` processes, in batches of similar size,
    the biggest jobs first (so a large file is not left to start last while the other
    workers idle). The batches of a pool that breaks are retried one child at a time."""
    context = multiprocessing.get_context("fork" if can_contain() else None)
    jobs = sorted(jobs, key=size, reverse=True)
    results: list[FileResult] = []
    lost: list[list] = []
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=context,
                             initializer=_quiet_crashes) as pool:
        most = sum(map(size, jobs)) // _MIN_BATCH_BYTES
        count = max(workers, min(workers * _BATCHES_PER_WORKER, most))
        futures = [(batch, pool.submit(work, batch)) for batch in batches(jobs, size, count)]
        for batch, future in futures:
            try:
                results.extend(future.result())
            except BrokenProcessPool:
                lost.append(batch)  # one dead worker fails every batch still pending
    for batch in lost:
        results.extend(run_contained(batch, work, crashed))
    return results


def run_contained(jobs: list, work: Work, crashed: Crashed) -> list[FileResult]:
    """``work(jobs)`` in a child process, bisecting on a crash (in this process when the
    platform cannot fork)."""
    if not jobs:
        return []
    if not can_contain():
        return work(jobs)
    outcome = _in_child(jobs, work)
    if isinstance(outcome, list):
        return outcome
    if len(jobs) == 1:
        return [crashed(jobs[0], outcome)]
    middle = len(jobs) // 2
    return run_contained(jobs[:middle], work, crashed) + run_contained(jobs[middle:], work, crashed)


def _in_child(jobs: list, work: Work) -> list[FileResult] | str:
    """The child's results, or how it died (e.g. ``"signal SIGSEGV"``)."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child_main, args=(sender, jobs, work), daemon=True)
    child.start()
    sender.close()
    try:
        results = receiver.recv()  # before join(): a large result would fill the pipe
    except (EOFError, OSError):
        results = None
    finally:
        receiver.close()
        child.join()
    if results is not None and child.exitcode == 0:
        return results
    return _death(child.exitcode)


def _quiet_crashes() -> None:
    import faulthandler
    import os

    faulthandler.disable()  # a crash is reported by the parent, as a GC000, not as a dump
    # NOTE: a child forked from a threaded parent (a test runner's worker, an IDE) inherits
    # the standard streams' locks as they were, maybe held by a thread it does not have;
    # flushing them on the way out would wait forever. Workers print nothing: give them
    # streams of their own.
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115  (lives as long as the child)


def _child_main(sender, jobs: list, work: Work) -> None:
    _quiet_crashes()
    sender.send(work(jobs))
    sender.close()


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"signal {-exitcode}"
    return f"exit status {exitcode}"
