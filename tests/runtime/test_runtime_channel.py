"""The guard's per-step all-reduce between DDP ranks (``gradcheck.runtime.channel``), on a stand-in
group that plays the other rank in this process: which steps travel together, what comes back,
and when the channel gives up instead of waiting."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed")

from gradcheck.runtime import channel as channel_module
from gradcheck.runtime.channel import ALONE, BATCH, MOST_PENDING, Channel


class _Work:
    def __init__(self, done):
        self.done = done

    def is_completed(self):
        return self.done

    def wait(self, timeout=None):
        if not self.done:
            raise RuntimeError("Operation timed out!")
        return True


class _Group:
    """Reduces with the other rank's tensor, as ``other(tensor)`` makes it; or never answers."""

    def __init__(self, other=lambda t: t.clone(), answers=True):
        self.other, self.answers, self.sizes = other, answers, []

    def allreduce(self, tensors, op):
        tensor, = tensors
        self.sizes.append(tensor.numel())
        if self.answers:
            tensor.copy_(torch.maximum(tensor, self.other(tensor)))
        return _Work(self.answers)


def _values(x):
    return torch.tensor([0.0, 1.0, x], dtype=torch.float64)


def test_the_first_steps_go_alone_then_eight_at_a_time_all_in_one_size():
    group = _Group()
    channel = Channel(group, (0, 1))
    arrived = [len(channel.send(_values(step), step, wait=False)) for step in range(ALONE + BATCH)]
    assert arrived == [1] * ALONE + [0] * (BATCH - 1) + [BATCH]
    assert len(group.sizes) == ALONE + 1 and len(set(group.sizes)) == 1  # every rank, same calls
    channel.send(_values(99.0), "last", wait=False)
    (context, maxima, minima), = channel.flush()  # the end of the run sends what is left
    assert (context, maxima, minima) == ("last", [0.0, 1.0, 99.0], [0.0, 1.0, 99.0])


def test_results_carry_each_steps_maximum_and_minimum_over_the_ranks():
    def other(tensor):  # the other rank's digest is 10 higher: maxima up, minima the same
        half = tensor.numel() // 2
        theirs = tensor.clone()
        theirs[3:4] += 10.0
        theirs[half + 3:half + 4] -= 10.0
        return theirs

    (_, maxima, minima), = Channel(_Group(other), (0, 1)).send(_values(2.0), "s", wait=False)
    assert maxima == [0.0, 1.0, 12.0] and minima == [0.0, 1.0, 2.0]


def test_a_rank_with_a_step_more_in_an_all_reduce_closes_the_channel():
    def other(tensor):  # the other rank sent a second row in this all-reduce
        width = tensor.numel() // 2 // BATCH
        theirs = tensor.clone()
        theirs[width] = 1.0
        return theirs

    channel = Channel(_Group(other), (0, 1))
    assert channel.send(_values(1.0), "s", wait=False) == []
    assert channel.closed_because.startswith("the ranks had sent different numbers of steps")
    assert channel.send(_values(1.0), "t", wait=False) == []  # closed: nothing more is sent


def test_unanswered_all_reduces_close_the_channel_after_one_short_wait(monkeypatch):
    monkeypatch.setattr(channel_module, "WAIT", 0.01)
    group = _Group(answers=False)
    channel = Channel(group, (0, 1))
    for step in range(MOST_PENDING + 1):
        assert channel.send(_values(1.0), step, wait=True) == []
    assert len(group.sizes) == MOST_PENDING  # the last step found too many unanswered
    assert channel.closed_because.startswith(f"the other ranks stopped answering for "
                                             f"{MOST_PENDING} steps")
    channel.release()  # never destroys the group: a rank may still read through it
    assert channel.group is None and channel.pending == type(channel.pending)()
