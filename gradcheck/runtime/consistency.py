"""Do the ranks of a DDP job step on the same gradients? A few numbers per step say, at that step.

After DDP's all-reduce every rank holds the very same averaged gradient, bit for bit. Gradient
hooks lost when the wrapped model's parameters are replaced, a model called around its DDP
wrapper, a rank that skips synchronisation: each leaves the ranks stepping on gradients of
their own data, and training goes on with the ranks' models drifting apart, silently.

Before each ``step()`` of an optimizer over a DDP model's parameters, each rank digests those
gradients: one number per parameter group, their squared norm summed in float64. The digests
of all ranks meet in one small all-reduce of their maxima and minima (``channel``), and where a
group's maximum and minimum differ, the ranks stepped on different gradients: the finding names
the group, the step and its line. The all-reduce runs while the next step is computed and its
result is read at the next step (or at the end); with ``--action raise`` each step waits for its
own result instead, so that it stops before the optimizer applies the first unsynchronised
gradients. Steps whose last forward pass through the wrapper ran under ``no_sync()`` are not
compared (the accumulation is local on purpose), but still take part in the all-reduce, so that
every rank makes the same calls in the same order.

Left out: DDP models with a communication hook (local SGD, say, keeps ranks apart on purpose),
parameters DDP was told to ignore; after a rank skipped a step (the ranks' steps no longer line
up) or stopped answering, no further step is compared, and the report says so.

>>> Consistency().record(None)  # no DDP model built: nothing to do
[]
"""
from __future__ import annotations

import math
import sys
import weakref
from dataclasses import dataclass
from typing import Any

from gradcheck.runtime import distributed
from gradcheck.runtime.channel import Channel
from gradcheck.runtime.exchange import exit_timeout
from gradcheck.runtime.findings import GuardFinding, user_location
from gradcheck.runtime.messages import message

GROUPS = 16  # digest slots per step; later parameter groups share the last one
HEADER = 3  # optimizer ordinal, forward passes through the wrapper, whether they synchronised
RELATIVE_TOLERANCE = 1e-5  # identical gradients give identical digests; this absorbs
# nothing but a different reduction order (another thread count on another rank)


@dataclass
class Step:
    """What this rank remembers of a step whose digests are in flight."""

    state: Any  # the optimizer's GuardState
    number: int
    location: str
    groups: int


@dataclass
class Layout:
    """Which of an optimizer's parameters DDP averages, by parameter group, and their models."""

    slots: list[int]
    group_of: list[int]  # the digest slot of each of ``slots``
    models: list[Any]  # the DDP models that hold them (weak references)
    groups: int
    where: Any = None  # ``group_of`` shifted past the header, as a tensor (built at first use)


class Consistency:
    """The DDP models of this process, their channels to the other ranks, and the verdicts."""

    def __init__(self, wait: bool = False) -> None:
        self.wait = wait  # each step waits for its own verdict (to raise before the update)
        self.models: weakref.WeakSet = weakref.WeakSet()
        self.channels: dict[tuple[int, ...], Channel] = {}
        # id(DDP model) -> (its forward passes with grad enabled, whether the last synchronised)
        self.forwards: dict[int, tuple[int, bool]] = {}
        self.layouts: dict[int, tuple[int, Layout]] = {}  # id(state) -> (steps, layout)
        self.compared: dict[tuple[int, ...], int] = {}  # steps whose digests every rank shared
        self.tried: set[tuple[int, ...]] = set()  # groups whose channel was opened, or failed to
        self.notes: list[str] = []
        self.handles: list[Any] = []  # the forward hooks on the DDP models

    def add_model(self, ddp: Any) -> None:
        """A ``DistributedDataParallel`` was built (the session hooks its ``__init__``).

        Every rank of its group builds it at this point, so they open their channel here.
        """
        self.models.add(ddp)
        self.forwards[id(ddp)] = (0, True)
        self.handles.append(ddp.register_forward_pre_hook(self._forward_seen))
        ranks = tuple(sys.modules["torch.distributed"].get_process_group_ranks(ddp.process_group))
        if ranks in self.tried:  # NOTE: never again, not even after a failure: the other ranks
            return  # would not join the new group, and this one would wait for them
        self.tried.add(ranks)
        try:
            channel = Channel.open(ranks, distributed.rank())
        except (RuntimeError, ValueError) as exc:  # gloo could not connect: say so, train on
            self.notes.append(f"gradcheck: DDP gradients of ranks {_names(ranks)} were not "
                              f"compared: the guard's gloo group could not be built "
                              f"({str(exc).splitlines()[0][:120]})")
            return
        if channel is not None:
            self.channels[ranks] = channel

    def _forward_seen(self, ddp: Any, args: Any) -> None:
        # NOTE: a forward without grad (an evaluation on rank 0 alone) is neither counted nor
        # a synchronisation: the count tells the ranks' training steps apart
        if sys.modules["torch"].is_grad_enabled():
            count, _ = self.forwards.get(id(ddp), (0, True))
            self.forwards[id(ddp)] = (count + 1, bool(ddp.require_backward_grad_sync))

    def record(self, state: Any) -> list[GuardFinding]:
        """Before ``state``'s optimizer steps: share its digests; the findings that arrived."""
        if not self.channels:
            return []
        layout = self._layout(state)
        if layout is None:
            return []
        channel = self._channel(layout)
        if channel is None or not channel.is_open:
            return []
        findings = self._judge(channel, channel.receive(wait=0.0))  # earlier steps, late
        if not channel.is_open:
            return findings
        step = Step(state, state.steps + 1, user_location(), layout.groups)
        sent = channel.send(self._values(state, layout), step, self.wait)
        return findings + self._judge(channel, sent)

    def finish(self) -> list[GuardFinding]:
        """At the end of the run: the last results, and a note for each channel that closed."""
        findings = []
        for handle in self.handles:
            handle.remove()
        self.handles.clear()
        for ranks, channel in self.channels.items():
            if channel.is_open:
                findings += self._judge(channel, channel.flush())
                # the other ranks reach this flush too, later on a loaded machine: wait for
                # them as long as the rest of the exit-time work does
                findings += self._judge(channel, channel.receive(wait=exit_timeout()))
            if channel.is_open and channel.pending:
                channel.close(f"the results of its last {channel.unanswered} step(s) did not "
                              "arrive before the run ended")
            channel.release()
            if channel.closed_because:
                self.notes.append(f"gradcheck: DDP gradients of ranks {_names(ranks)} were "
                                  f"compared at {self.compared.get(ranks, 0)} step(s), then no "
                                  f"more: {channel.closed_because}")
        self.channels.clear()
        return findings

    # -- which parameters, and their digests ---------------------------------------------------

    def _layout(self, state: Any) -> Layout | None:
        steps, layout = self.layouts.get(id(state), (-1, None))
        if steps < 0 or state.steps in (1, 2, 4, 8, 16) or state.steps % 1024 == 0:
            layout = self._synced_layout(state)  # the set can change when modules are replaced
            self.layouts[id(state)] = (state.steps, layout)
        return layout if layout is not None and layout.slots else None

    def _synced_layout(self, state: Any) -> Layout:
        owner: dict[int, Any] = {}
        for ddp in list(self.models):
            if getattr(ddp, "_comm_hooks", None):
                continue
            ignored = getattr(ddp, "parameters_to_ignore", set())
            for name, param in ddp.module.named_parameters():
                if param.requires_grad and name not in ignored:
                    owner[id(param)] = ddp
        ledger = state.ledger
        slot_of = {id(p): s for s in state.slots if (p := ledger.params[s]()) is not None}
        slots, group_of, models, seen = [], [], [], set()
        param_groups = state.optimizer.param_groups
        for index, group in enumerate(param_groups):
            for param in group["params"]:
                ddp = owner.get(id(param))
                if ddp is None or id(param) in seen or id(param) not in slot_of:
                    continue
                seen.add(id(param))
                slots.append(slot_of[id(param)])
                group_of.append(min(index, GROUPS - 1))
                if not any(m() is ddp for m in models):
                    models.append(weakref.ref(ddp))
        return Layout(slots, group_of, models, min(len(param_groups), GROUPS))

    def _channel(self, layout: Layout) -> Channel | None:
        ddp = layout.models[0]()
        if ddp is None:
            return None
        ranks = tuple(sys.modules["torch.distributed"].get_process_group_ranks(ddp.process_group))
        return self.channels.get(ranks)

    def _values(self, state: Any, layout: Layout) -> Any:
        torch = sys.modules["torch"]
        forwards = [self.forwards.get(id(m()), (0, True)) for m in layout.models]
        values = torch.zeros(HEADER + GROUPS, dtype=torch.float64)
        values[0], values[1] = state.ordinal, forwards[0][0]
        values[2] = float(all(synced for _, synced in forwards))
        ledger, grads, where = state.ledger, [], []
        for slot, group in zip(layout.slots, layout.group_of):
            param = ledger.params[slot]()
            if param is not None and param.grad is not None:
                grads.append(param.grad)
                where.append(HEADER + group)
        if not grads:
            return values
        if len(grads) == len(layout.slots):  # the usual case: every gradient there
            if layout.where is None:
                layout.where = torch.tensor(where)
            index = layout.where
        else:
            index = torch.tensor(where)
        norms = torch._foreach_norm(grads)
        device = norms[0].device
        if any(n.device != device for n in norms):
            norms = [n.to(device) for n in norms]
        values.index_add_(0, index, torch.stack(norms).to("cpu", torch.float64).square())
        return values.nan_to_num(nan=math.inf)  # NaN on every rank is no disagreement

    # -- verdicts --------------------------------------------------------------------------------

    def _judge(self, channel: Channel, arrived: list) -> list[GuardFinding]:
        findings = []
        for step, maxima, minima in arrived:
            if maxima[0] != minima[0] or maxima[1] != minima[1]:
                channel.close(f"at step {step.number} of {step.state.name} the ranks were at "
                              "different iterations (a rank skipped a step() the others took, "
                              "or stepped an optimizer they did not)")
                break
            self.compared[channel.ranks] = self.compared.get(channel.ranks, 0) + 1
            if minima[2] < 1:  # a rank's last forward ran under no_sync(): local on purpose
                continue
            differing = [g for g in range(step.groups)
                         if _differ(float(minima[HEADER + g]), float(maxima[HEADER + g]))]
            if differing:
                findings.append(self._finding(channel, step, differing, maxima, minima))
        return findings

    def _finding(self, channel: Channel, step: Step, differing: list[int], maxima: Any,
                 minima: Any) -> GuardFinding:
        first = HEADER + differing[0]
        groups = ", ".join(str(g) for g in differing)
        if differing[-1] == GROUPS - 1:
            groups += " (and any later)"
        text = message("unsynced_gradients", name=step.state.name, step=step.number,
                       ranks=_names(channel.ranks), plural="s" if len(differing) > 1 else "",
                       groups=groups, low=float(minima[first]), high=float(maxima[first]))
        return GuardFinding("unsynced_gradients", step.state.name, "step()", step.location, text)


def _differ(low: float, high: float) -> bool:
    if low == high:
        return False
    if math.isinf(high):  # finite on one rank, overflowed on another
        return True
    return high - low > RELATIVE_TOLERANCE * max(abs(low), abs(high))


def _names(ranks: tuple[int, ...]) -> str:
    return ", ".join(str(r) for r in ranks)
