"""Bringing every rank's findings to rank 0 at exit, without a collective and without waiting forever.

A collective at exit races the process group's teardown: gloo's worker thread can still need the
GIL for the exit-time gather while the main thread, holding it, destroys the group (issue 22).
So the ranks exchange findings through the group's key-value store instead: plain TCP requests
from the main thread, none of which involves the group's worker threads, each wait bounded by a
deadline.

    every rank:   set  rank/<r> = its parcel (findings, whether its script failed, host and pid)
    rank 0:       poll for every rank/<r> until the deadline, merge what came, print, set done
    rank r > 0:   poll for done until the deadline; without it, print its own findings

A rank whose script failed sends its parcel and prints its own findings at once: its launcher is
about to stop the other ranks, rank 0 included, so nobody may be left to print them.

>>> parcel = Parcel(rank=None, tally=Tally(), failed=False)
>>> exchange(parcel, timeout=1.0).tally is parcel.tally  # not a distributed job: nothing to do
True
"""
from __future__ import annotations

import contextlib
import os
import pickle
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from gradcheck.runtime import distributed
from gradcheck.runtime.findings import Tally

TIMEOUT_VARIABLE = "GRADCHECK_EXIT_TIMEOUT"
DEFAULT_TIMEOUT = 30.0  # seconds rank 0 waits for the others, and they for rank 0
POLL = 0.02
# what a store whose host is gone, or a damaged parcel, raises (DistStoreError is a RuntimeError)
STORE_ERRORS = (RuntimeError, OSError, ValueError, EOFError, pickle.UnpicklingError)


@dataclass
class Parcel:
    """What one rank sends: its findings, whether its script failed, and where it runs."""

    rank: int | None
    tally: Tally
    failed: bool
    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. gradient digests, by topic


@dataclass
class Outcome:
    """What this rank does after the exchange.

    ``tally`` is what it prints (None: another rank prints its findings); ``parcels`` are the
    other ranks' parcels that reached rank 0; ``notes`` explain what did not arrive.
    """

    tally: Tally | None
    parcels: list[Parcel] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def exit_timeout(environ: Any = os.environ) -> float:
    """The deadline of exit-time work, from ``GRADCHECK_EXIT_TIMEOUT`` (seconds)."""
    text = environ.get(TIMEOUT_VARIABLE, "")
    if not text:
        return DEFAULT_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ValueError(f"{TIMEOUT_VARIABLE} must be a number of seconds >= 0, got {text!r}; "
                         "unset it for the default of 30")
    return value


def exchange(parcel: Parcel, timeout: float) -> Outcome:
    """Send ``parcel`` to rank 0 (or, on rank 0, collect everyone's); never waits past ``timeout``."""
    job = distributed.job()
    if job is None:
        return Outcome(parcel.tally)
    store, rank, world_size = job
    try:
        store.set(f"rank/{rank}", pickle.dumps(parcel))
    except STORE_ERRORS as exc:  # the store's host is gone: nobody can gather
        note = (f"gradcheck: rank {rank} could not send its findings to rank 0 "
                f"({type(exc).__name__}); they follow")
        return Outcome(parcel.tally, notes=[note])
    if parcel.failed:
        if rank == 0:
            _set_done(store, b"0")  # nobody gathers: the others print their own findings
        return Outcome(parcel.tally)
    if rank != 0:
        gathered = _poll(store, ["done"], timeout) and _fetch_bytes(store, "done") == b"1"
        return Outcome(None if gathered else parcel.tally)
    return _collect(store, world_size, parcel, timeout)


def _collect(store: Any, world_size: int, own: Parcel, timeout: float) -> Outcome:
    keys = [f"rank/{r}" for r in range(1, world_size)]
    _poll(store, keys, timeout)
    merged, parcels, notes = Tally(), [], []
    merged.merge(own.tally)
    for r, key in enumerate(keys, start=1):
        parcel = _fetch(store, key)
        if parcel is None:
            notes.append(f"gradcheck: rank {r} sent no findings within {timeout:g} s (it was "
                         f"killed, or is still running); set {TIMEOUT_VARIABLE} to wait longer")
            continue
        parcels.append(parcel)
        if parcel.failed:
            notes.append(f"gradcheck: rank {r} ended with an error and printed its own findings")
        else:
            merged.merge(parcel.tally)
    _set_done(store, b"1")
    return Outcome(merged, parcels, notes)


def _set_done(store: Any, value: bytes) -> None:
    # if this fails the others time out and print their own findings
    with contextlib.suppress(*STORE_ERRORS):
        store.set("done", value)


def _poll(store: Any, keys: list[str], timeout: float) -> bool:
    """Whether every key appeared before the deadline (False too when the store is gone)."""
    deadline = time.monotonic() + timeout
    missing = list(keys)
    while True:
        try:
            missing = [key for key in missing if not store.check([key])]
        except STORE_ERRORS:
            return False
        if not missing:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL)


def _fetch(store: Any, key: str) -> Parcel | None:
    data = _fetch_bytes(store, key)
    try:
        return None if data is None else pickle.loads(data)
    except STORE_ERRORS:
        return None


def _fetch_bytes(store: Any, key: str) -> bytes | None:
    # NOTE: get() blocks until the key exists, for the store's own timeout (30 minutes by
    # default); check() first, so that a missing key costs nothing
    try:
        return store.get(key) if store.check([key]) else None
    except STORE_ERRORS:
        return None


def wait_for_exit(parcels: list[Parcel], timeout: float) -> None:
    """Wait (at most ``timeout``) until the other ranks on this host have exited.

    Under torchrun, a worker that exits non-zero makes the launcher stop the others with SIGTERM;
    rank 0, which carries the job's status, leaves last so that nobody is stopped that way.
    """
    host = socket.gethostname()
    pids = [p.pid for p in parcels if p.host == host and p.pid != os.getpid()]
    deadline = time.monotonic() + timeout
    while pids and time.monotonic() < deadline:
        pids = [pid for pid in pids if _running(pid)]
        if pids:
            time.sleep(POLL)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # NOTE: an exited child stays a zombie until its parent reaps it; it is not running
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return True
