"""The guard's own line between the ranks of a DDP group: one small all-reduce per step, never a hang.

The guard's collectives must not share a process group with the program's: a rank that steps
once more or once less than the others would pair the guard's all-reduce with one of DDP's and
corrupt both. So each DDP group gets a gloo group of its own, built straight from the job's
key-value store (not registered with ``torch.distributed``: it takes no group name, counts no
group, and ``destroy_process_group`` leaves it alone). The ranks build it while they build their
first DDP model over that group, which they must all do together anyway.

Every all-reduce is asynchronous. The guard waits for one only for ``WAIT`` seconds, and only
while nothing earlier is still pending: a rank that skipped a step, or stopped stepping (uneven
inputs under ``Join``), costs the others one such wait, after which the late results are picked
up at later steps, or the channel closes once ``MOST_PENDING`` are outstanding. Every decision
taken from a result (the verdict, closing on a misalignment) is the same on every rank, since
every rank reads the same reduced numbers.

>>> Channel.open((0, 1), rank=None) is None  # not a distributed job
True
"""
from __future__ import annotations

import ctypes
import datetime
import os
import sys
from collections import deque
from dataclasses import dataclass
from typing import Any

WAIT = 2.0  # seconds a step waits for the other ranks' digests before leaving them for later
OPERATION_TIMEOUT = 120.0  # seconds gloo waits for a rank that never joins an all-reduce
MOST_PENDING = 4  # all-reduces outstanding before the channel gives up on the ranks lining up

_opened: dict[tuple[int, ...], int] = {}  # channels this process opened per group: store prefixes
_kept: list[Any] = []  # groups closed with work pending: never destroyed (see Channel.close)


@dataclass
class Pending:
    """An all-reduce in flight and what this rank knows about the step it stands for."""

    work: Any
    values: Any  # the tensor reduced in place: [maxima..., -minima...]
    context: Any  # the caller's own record of the step


class Channel:
    """A gloo group over ``ranks`` that reduces each step's digests to their maxima and minima."""

    def __init__(self, group: Any, ranks: tuple[int, ...]) -> None:
        self.group = group
        self.ranks = ranks
        self.pending: deque[Pending] = deque()
        self.closed_because = ""  # why no more steps are compared ("" while open)

    @classmethod
    def open(cls, ranks: tuple[int, ...], rank: int | None) -> Channel | None:
        """Build the group (every rank of ``ranks`` calls this at the same point) or None.

        Raises what gloo raises when it cannot connect; the caller notes it.
        """
        if rank is None or rank not in ranks or len(ranks) < 2:
            return None
        dist = sys.modules["torch.distributed"]
        count = _opened.get(ranks, 0)
        _opened[ranks] = count + 1
        restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
        prefix = f"gradcheck/{restart}/consistency/{'-'.join(map(str, ranks))}/{count}"
        store = dist.PrefixStore(prefix, sys.modules["torch.distributed.distributed_c10d"]
                                 ._get_default_store())
        timeout = datetime.timedelta(seconds=OPERATION_TIMEOUT)
        return cls(dist.ProcessGroupGloo(store, ranks.index(rank), len(ranks), timeout), ranks)

    @property
    def is_open(self) -> bool:
        return not self.closed_because

    def send(self, values: Any, context: Any) -> list[tuple[Any, Any, Any]]:
        """All-reduce one step's ``values`` (a float64 CPU tensor); return what has arrived.

        Each result is ``(context, maxima, minima)``, oldest first. Waits up to ``WAIT`` for this
        step's own result when nothing earlier is pending. Judge what ``receive`` returns first:
        a result can close the channel, and then nothing more may be sent.
        """
        if not self.is_open:
            return []
        if len(self.pending) >= MOST_PENDING:
            self.close(f"the other ranks stopped answering after {MOST_PENDING} steps (a rank "
                       "that stopped stepping, e.g. uneven inputs under Join)")
            return []
        quiet = not self.pending
        both = _dist().ReduceOp.MAX
        reduced = _torch().cat([values, -values])
        self.pending.append(Pending(self.group.allreduce([reduced], both), reduced, context))
        return self.receive(wait=WAIT if quiet else 0.0)

    def receive(self, wait: float) -> list[tuple[Any, Any, Any]]:
        """The results that have arrived, in order; the first may be waited for ``wait`` s."""
        arrived = []
        while self.pending and self.is_open:
            head = self.pending[0]
            if not self._done(head.work, wait):
                break
            self.pending.popleft()
            half = head.values.numel() // 2
            arrived.append((head.context, head.values[:half], -head.values[half:]))
            wait = 0.0
        return arrived

    def _done(self, work: Any, wait: float) -> bool:
        try:
            if wait > 0 and not work.is_completed():
                work.wait(datetime.timedelta(seconds=wait))
            if not work.is_completed():
                return False
            work.wait()  # raises what failed it
            return True
        except RuntimeError as exc:
            if not work.is_completed():  # our own wait ran out: the result may come later
                return False
            self.close(f"the all-reduce failed ({str(exc).splitlines()[0][:120]})")
            return False

    def close(self, because: str) -> None:
        """Stop comparing, and keep ``because`` for the report; the group stays up until the end
        (the other ranks may still be reading the last result through it)."""
        if not self.closed_because:
            self.closed_because = because

    def release(self) -> None:
        """At the end of the run: let the group go. Never waits for other ranks.

        Destroying a gloo group waits for its pending work, which waits for ranks that may never
        come (up to ``OPERATION_TIMEOUT``): such a group is kept alive to the end of the process.
        """
        if self.group is not None and any(not p.work.is_completed() for p in self.pending):
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(self.group))  # never destroyed
            _kept.append(self.group)
        self.pending.clear()
        self.group = None


def _torch() -> Any:
    return sys.modules["torch"]


def _dist() -> Any:
    return sys.modules["torch.distributed"]
