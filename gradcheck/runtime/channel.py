"""The guard's own line between the ranks of a DDP group: one small all-reduce per step, never a hang.

The guard's collectives must not share a process group with the program's: a rank that steps
once more or once less than the others would pair the guard's all-reduce with one of DDP's and
corrupt both. So each DDP group gets a gloo group of its own, built straight from the job's
key-value store (not registered with ``torch.distributed``: it takes no group name, counts no
group, and ``destroy_process_group`` leaves it alone). The ranks build it while they build their
first DDP model over that group, which they must all do together anyway.

Every all-reduce is asynchronous: a step's result is read at a later step, when it has long
arrived (the ranks met in DDP's all-reduce since). The first ``ALONE`` steps each get an
all-reduce; later steps go ``BATCH`` at a time, since an all-reduce costs the same whatever its
few numbers (its result then comes up to ``BATCH`` steps later). Only where the caller asks
(``--action raise``, which must stop before the update) does each step go alone and wait for its
own result, for ``WAIT`` seconds at most and only while nothing earlier is pending: a rank that skipped a step, or stopped stepping
(uneven inputs under ``Join``), costs the others one such wait, after which the late results are
picked up at later steps, or the channel closes once ``MOST_PENDING`` are outstanding. Every decision
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
ALONE = 16  # the first steps each get an all-reduce of their own (most bugs show from the start)
BATCH = 8  # steps per all-reduce after those (each all-reduce costs the same, whatever its size)

_opened: dict[tuple[int, ...], int] = {}  # channels this process opened per group: store prefixes
_kept: list[Any] = []  # groups let go at the end of a run: never destroyed (see release)


@dataclass
class Pending:
    """An all-reduce in flight and what this rank knows about the steps it carries."""

    work: Any
    values: Any  # the tensor reduced in place: BATCH rows of [present, values...], then negated
    contexts: list[Any]  # the caller's own record of each step, one per row sent


class Channel:
    """A gloo group over ``ranks`` that reduces steps' digests to their maxima and minima."""

    def __init__(self, group: Any, ranks: tuple[int, ...]) -> None:
        self.group = group
        self.ranks = ranks
        self.pending: deque[Pending] = deque()
        self.batch: list[tuple[Any, Any]] = []  # (values, context) of steps not yet sent
        self.steps = 0  # steps given to send(): the same count on every rank while in line
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

    @property
    def unanswered(self) -> int:
        """Steps sent whose result has not arrived."""
        return sum(len(p.contexts) for p in self.pending)

    def send(self, values: Any, context: Any, wait: bool) -> list[tuple[Any, Any, Any]]:
        """Give one step's ``values`` (a float64 CPU tensor) to the all-reduce; what has arrived.

        Each result is ``(context, maxima, minima)``, oldest first. The first ``ALONE`` steps go
        alone, later ones ``BATCH`` at a time; with ``wait``, each step goes alone and waits up to
        ``WAIT`` for its own result when nothing earlier is pending. Judge what ``receive``
        returns before sending: a result can close the channel (a rank that sends once more than
        the others, before it learns, hangs nobody: nobody waits for it).
        """
        if not self.is_open:
            return []
        self.batch.append((values, context))
        self.steps += 1
        if not wait and self.steps > ALONE and len(self.batch) < BATCH:
            return []
        return self.flush(wait)

    def flush(self, wait: bool = False) -> list[tuple[Any, Any, Any]]:
        """Send the steps kept for the next all-reduce now (at the end of the run, say)."""
        if not self.is_open or not self.batch:
            return []
        arrived = []
        if len(self.pending) >= MOST_PENDING:  # all-reduces later, the oldest should be here
            arrived = self.receive(wait=WAIT)
            if len(self.pending) >= MOST_PENDING and self.is_open:
                self.close(f"the other ranks stopped answering for {self.unanswered} steps (a "
                           "rank that stopped stepping, e.g. uneven inputs under Join)")
            if not self.is_open:
                return arrived
        torch = _torch()
        rows = torch.zeros(BATCH, 1 + self.batch[0][0].numel(), dtype=torch.float64)
        rows[:len(self.batch), 0] = 1.0  # present: a rank with fewer steps here is out of line
        rows[:len(self.batch), 1:] = torch.stack([values for values, _ in self.batch])
        reduced = torch.cat([rows.flatten(), -rows.flatten()])
        quiet = not self.pending
        try:
            work = self.group.allreduce([reduced], _dist().ReduceOp.MAX)
        except RuntimeError as exc:  # a rank's group went away: never the user's error
            self.close(f"the all-reduce failed ({str(exc).splitlines()[0][:120]})")
            return arrived
        self.pending.append(Pending(work, reduced, [context for _, context in self.batch]))
        self.batch = []
        return arrived + self.receive(wait=WAIT if wait and quiet else 0.0)

    def receive(self, wait: float) -> list[tuple[Any, Any, Any]]:
        """The results that have arrived, in order; the first may be waited for ``wait`` s."""
        arrived = []
        while self.pending and self.is_open:
            head = self.pending[0]
            if not self._done(head.work, wait):
                break
            self.pending.popleft()
            reduced = head.values.tolist()
            half = len(reduced) // 2
            width = half // BATCH
            rows = [(reduced[r * width:(r + 1) * width],
                     [-v for v in reduced[half + r * width:half + (r + 1) * width]])
                    for r in range(BATCH)]
            if any(maxima[0] != minima[0] for maxima, minima in rows):  # none of it pairs up
                self.close("the ranks had sent different numbers of steps (a rank skipped a "
                           "step() the others took)")
                break
            arrived += [(context, maxima[1:], minima[1:])
                        for context, (maxima, minima) in zip(head.contexts, rows)]
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
        """At the end of the run: stop using the group, and keep it alive to the end of the process.

        Destroying a gloo group right after its last all-reduce finished here can drop the
        message that finishes it on another rank (which then waits for ``OPERATION_TIMEOUT``),
        and destroying one with work pending waits for ranks that may never come; destroying
        none costs two idle threads and a socket per group until the process ends.
        """
        if self.group is not None:
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(self.group))  # never destroyed
            _kept.append(self.group)
        self.pending.clear()
        self.batch = []
        self.group = None


def _torch() -> Any:
    return sys.modules["torch"]


def _dist() -> Any:
    return sys.modules["torch.distributed"]
