"""Do the ranks of a DDP job step on the same gradients? One number per step says, cheaply.

After DDP's all-reduce every rank holds the very same averaged gradient, bit for bit. Gradient
hooks lost when the wrapped model's parameters are replaced, a model called around its DDP
wrapper, a rank that skips synchronisation: each leaves the ranks stepping on gradients of
their own data, and training goes on with the ranks' models drifting apart, silently.

Before each ``step()`` of an optimizer over a DDP model's parameters, each rank records a digest
of those gradients: their squared norm summed over the optimizer's synchronised parameters, one
scalar per step, kept on the gradients' device (no copy, no synchronisation). The digests travel
to rank 0 with the findings at exit (``exchange``), never through a collective during training:
a collective the guard added could hang a job whose ranks already disagree. Rank 0 compares them
step by step within each DDP group and reports the first step where they differ.

Left out: DDP models with a communication hook (local SGD, say, keeps ranks apart on purpose),
parameters DDP was told to ignore, and steps beyond the first ``STEPS_KEPT``.

>>> Consistency().record(None) is None  # no DDP model built: nothing to do
True
"""
from __future__ import annotations

import sys
import weakref
from dataclasses import dataclass, field
from typing import Any

from gradcheck.runtime.findings import GuardFinding, user_location
from gradcheck.runtime.messages import message

STEPS_KEPT = 10_000
RELATIVE_TOLERANCE = 1e-5  # identical gradients give identical digests; this absorbs nothing else


@dataclass
class Digests:
    """One optimizer's per-step digests on one rank, and the DDP group they must agree in."""

    optimizer: str
    where: str  # the line of its first digested step()
    group: tuple[int, ...]
    values: list[Any] = field(default_factory=list)  # 0-d tensors until sent, then floats


class Consistency:
    """The DDP models of this process and each optimizer's gradient digests."""

    def __init__(self) -> None:
        self.models: weakref.WeakSet = weakref.WeakSet()
        self.digests: dict[int, Digests] = {}  # id(GuardState) -> its digests
        self.synced: dict[int, tuple[int, list[int]]] = {}  # id(state) -> (steps, slots)

    def add_model(self, ddp: Any) -> None:
        """A ``DistributedDataParallel`` was built (the session hooks its ``__init__``)."""
        self.models.add(ddp)

    def record(self, state: Any) -> None:
        """Before ``state``'s optimizer steps: digest the gradients DDP should have averaged."""
        if not self.models:
            return
        steps, slots = self.synced.get(id(state), (-1, []))
        if steps < 0 or state.steps in (1, 2, 4, 8, 16) or state.steps % 1024 == 0:
            slots = self._synced_slots(state)  # the set can change when modules are replaced
            self.synced[id(state)] = (state.steps, slots)
        if not slots:
            return
        digests = self.digests.get(id(state))
        if digests is None:
            digests = Digests(f"{state.name}#{state.ordinal}", user_location(),
                              self._group_of(state, slots))
            self.digests[id(state)] = digests
        if len(digests.values) < STEPS_KEPT:
            digests.values.append(_squared_norm(state.ledger, slots))

    def _synced_slots(self, state: Any) -> list[int]:
        ids: dict[int, Any] = {}
        for ddp in list(self.models):
            if getattr(ddp, "_comm_hooks", None):
                continue
            ignored = getattr(ddp, "parameters_to_ignore", set())
            for name, param in ddp.module.named_parameters():
                if param.requires_grad and name not in ignored:
                    ids[id(param)] = ddp
        ledger = state.ledger
        return [s for s in state.slots if (p := ledger.params[s]()) is not None and id(p) in ids]

    def _group_of(self, state: Any, slots: list[int]) -> tuple[int, ...]:
        dist = sys.modules["torch.distributed"]
        param = state.ledger.params[slots[0]]()
        for ddp in list(self.models):
            if any(p is param for p in ddp.module.parameters()):
                return tuple(dist.get_process_group_ranks(ddp.process_group))
        return tuple(range(dist.get_world_size()))

    def parcel(self) -> list[Digests]:
        """This rank's digests, as plain floats, to send to rank 0."""
        sent = []
        for digests in self.digests.values():
            values = [float(v) for v in digests.values]
            sent.append(Digests(digests.optimizer, digests.where, digests.group, values))
        return sent


def compare(by_rank: dict[int, list[Digests]]) -> list[tuple[GuardFinding, int]]:
    """Rank 0's verdict: a finding per optimizer whose ranks stepped on different gradients,
    with how many steps differed."""
    findings = []
    optimizers = {d.optimizer for digests in by_rank.values() for d in digests}
    for optimizer in sorted(optimizers):
        series = {rank: d for rank, digests in by_rank.items() for d in digests
                  if d.optimizer == optimizer}
        for group in sorted({d.group for d in series.values()}):
            members = {r: series[r] for r in group if r in series}
            finding = _compare_group(optimizer, members)
            if finding is not None:
                findings.append(finding)
    return findings


def _compare_group(optimizer: str, members: dict[int, Digests]) -> tuple[GuardFinding, int] | None:
    if len(members) < 2:
        return None
    steps = min(len(d.values) for d in members.values())
    differing = [step for step in range(steps) if _differ([d.values[step]
                                                           for d in members.values()])]
    if not differing:
        return None
    first = min(members)
    name = optimizer.rpartition("#")[0]
    ranks = ", ".join(str(r) for r in sorted(members))
    text = message("unsynced_gradients", name=name, ranks=ranks, differing=len(differing),
                   steps=steps, first=differing[0] + 1)
    finding = GuardFinding("unsynced_gradients", name, "step()", members[first].where, text)
    return finding, len(differing)


def _differ(values: list[float]) -> bool:
    low, high = min(values), max(values)
    return high - low > RELATIVE_TOLERANCE * max(abs(low), abs(high), 1e-30)


def _squared_norm(ledger: Any, slots: list[int]) -> Any:
    import torch  # only reached in a DDP job

    grads = [g for s in slots if (p := ledger.params[s]()) is not None and (g := p.grad) is not None]
    if not grads:
        return torch.zeros(())
    norms = torch._foreach_norm(grads)
    return torch.stack([n.to(norms[0].device) for n in norms]).double().square().sum()
