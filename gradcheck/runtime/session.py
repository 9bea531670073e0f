"""A guard session: every parameter and optimizer of a program guarded, one report at the end.

``gradcheck run`` and ``GRADCHECK_GUARD=1`` install a session. It wraps torch's entry points
(``gradcheck.runtime.patches``) as the program imports them, so a program that never imports
torch pays nothing: every parameter goes into one ``Ledger`` as its module registers it, every
optimizer gets a ``GuardState`` as it is built. Findings go to one ``Tally``; at exit, or when the
default process group is destroyed, every rank sends its findings to rank 0 (``exchange``),
which prints the only report.

``accumulation_steps`` is the user's (``--accumulation-steps``) when given, for every optimizer
or for the one built at a given line; otherwise the frameworks' own setting is read
(``gradcheck.integrations.frameworks``), so Lightning's ``accumulate_grad_batches`` and Hugging
Face's or accelerate's ``gradient_accumulation_steps`` are never reported.

>>> session = GuardSession(action="warn")
>>> session.finish()
''
"""
from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, TextIO

from gradcheck.runtime import autostart, distributed, exchange
from gradcheck.runtime.consistency import Consistency
from gradcheck.runtime.findings import GuardFinding, Tally, user_location, warn_at
from gradcheck.runtime.guard import (
    ACTIONS,
    GradGuardError,
    GradGuardWarning,
    GuardState,
    check_accumulation_steps,
)
from gradcheck.runtime.imports import after_import
from gradcheck.runtime.ledger import Ledger
from gradcheck.runtime.patches import PATCHES, patch_module_zero_grad
from gradcheck.runtime.scaling import ScaledClipping

_active: GuardSession | None = None


def _notes(parcels: list[exchange.Parcel]) -> list[str]:
    """The ranks' notes (on what was not compared), each once."""
    return list(dict.fromkeys(note for p in parcels for note in p.extra.get("notes", [])))


def parse_accumulation_steps(text: str) -> tuple[int | None, dict[str, int]]:
    """``"4"``, ``"train.py:40=2"``, or both comma-separated -> (k of every optimizer, k by line).

    >>> parse_accumulation_steps("1,gan.py:33=2")
    (1, {'gan.py:33': 2})
    """
    default: int | None = None
    per_line: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        where, equals, k = item.rpartition("=")
        if not k.isdigit() or int(k) < 1 or (equals and ":" not in where):
            raise ValueError(
                f"accumulation steps must be K or FILE:LINE=K with K a positive integer, got "
                f"{item!r}; FILE:LINE is where the optimizer is built, e.g. train.py:40=2")
        if where:
            per_line[where] = int(k)
        else:
            default = int(k)
    return default, per_line


def active() -> GuardSession | None:
    """The installed session of this process, if any."""
    return _active


class GuardSession:
    """Guards parameters and optimizers and tallies what they find.

    ``watch(optimizer)`` guards one optimizer; ``install()`` guards every parameter and optimizer
    built from then on; ``finish()`` removes the hooks and prints (and returns) the report.
    ``per_optimizer`` maps the line that builds an optimizer (``"train.py:40"``) to its own
    ``accumulation_steps``.
    """

    def __init__(
        self,
        accumulation_steps: int | None = None,
        action: str = "warn",
        stream: TextIO | None = None,
        per_optimizer: Mapping[str, int] | None = None,
    ) -> None:
        if action not in ACTIONS:
            raise ValueError(f"action must be one of {ACTIONS}, got {action!r}")
        check_accumulation_steps(accumulation_steps)
        for k in (per_optimizer or {}).values():
            check_accumulation_steps(k)
        self.k = accumulation_steps
        self.per_optimizer = dict(per_optimizer or {})
        self.action = action
        self.stream = stream
        self.tally = Tally()
        self.ledger = Ledger(sink=self._record)
        self.states: dict[int, GuardState] = {}
        self.consistency = Consistency(wait=action == "raise")
        self.clipping = ScaledClipping(self._record)
        self.finished = False
        self.failed = False  # the script ended with an error (set by whoever runs it)
        self.decides_exit_status = False  # this process's status is the job's
        self.exit_timeout = exchange.exit_timeout()
        self.found = 0  # problems in the report this process printed
        self.pid = os.getpid()
        self._undo: list[Any] = []

    def watch(self, optimizer: Any, accumulation_steps: int | None = None) -> GuardState:
        """Guard ``optimizer`` (once); an explicit ``accumulation_steps`` wins over the session's."""
        from gradcheck.integrations import frameworks

        optimizer = frameworks.unwrap_optimizer(optimizer)
        state = self.states.get(id(optimizer))
        if state is None:
            where = user_location()
            k = self._k_for(where)
            if k is None:
                k = frameworks.accumulation_from_stack()
            state = GuardState(optimizer, k, "raise", f"{type(optimizer).__name__} ({where})",
                               sink=self._record, ledger=self.ledger)
            state.k_fallback = frameworks.accelerate_accumulation_steps
            state.ordinal = len(self.states)
            state.before_judging = self._compare_ranks
            self.states[id(optimizer)] = state
        if accumulation_steps is not None:
            state.k = accumulation_steps
        return state

    def _k_for(self, where: str) -> int | None:
        for site, k in self.per_optimizer.items():
            if where == site or where.endswith((os.sep + site, "/" + site)):
                return k
        return self.k

    def install(self) -> GuardSession:
        """Guard every parameter and optimizer built from now on, and report at exit."""
        global _active
        if _active is not None:
            raise RuntimeError("a guard session is already installed in this process")
        _active = self
        for module, patch in PATCHES:
            after_import(module, lambda m, patch=patch: self._undo.extend(patch(self, m)))
        atexit.register(self._finish_at_exit)
        return self

    def see_module_resets(self) -> None:
        """Give ``model.zero_grad()`` calls inside a window their own line in the report."""
        after_import("torch.nn.modules.module",
                     lambda module: self._undo.extend(patch_module_zero_grad(self, module)))

    def _finish_at_exit(self) -> None:
        if os.getpid() != self.pid:  # a forked child that returned: not this session's process
            return
        # NOTE: Python sets sys.last_value when an uncaught exception ends the program, before
        # it runs the atexit callbacks: that is how a crashed rank knows it crashed
        self.failed = self.failed or getattr(sys, "last_value", None) is not None
        self.finish()

    def finish(self) -> str:
        """Remove every hook, bring the ranks' findings to rank 0 and print the report there.

        In a distributed job rank 0 prints one report for all ranks; a rank whose findings did
        not reach it in time (``GRADCHECK_EXIT_TIMEOUT``), or whose script failed, prints its own.
        """
        global _active
        if self.finished:
            return ""
        self.finished = True
        if _active is self:
            _active = None
        rank = distributed.rank()
        for state in self.states.values():
            state.final_findings()
            state.remove()
            for (call, location), count in state.undecided.items():
                self.tally.add_undecided(state.name, call, location, count, rank)
        self.ledger.remove()
        for undo in reversed(self._undo):
            undo()
        for finding in self.consistency.finish():  # too late to raise: the run is over
            self.tally.add(replace(finding, rank=rank))
        parcel = exchange.Parcel(rank, self.tally, self.failed,
                                 extra={"notes": self.consistency.notes,
                                        "summary": self.summary()})
        outcome = exchange.exchange(parcel, self.exit_timeout)
        if outcome.tally is not None:
            outcome.notes[:0] = _notes([parcel, *outcome.parcels])
        report = "\n".join(filter(None, [
            *outcome.notes, outcome.tally.render() if outcome.tally is not None else ""]))
        if report:
            print(report, file=self.stream or sys.stderr, flush=True)
        self.found = len(outcome.tally) if outcome.tally is not None else 0
        if not self.decides_exit_status:  # the deciding process counts itself
            summary = self.summary()
            autostart.note_found(self.found, summary["guarded"], summary["passes"])
        if self.found and self.decides_exit_status and outcome.parcels:
            exchange.wait_for_exit(outcome.parcels, min(self.exit_timeout, 5.0))
        return report

    def summary(self) -> dict[str, int]:
        """What this process guarded: optimizers that stepped, parameters updated by hand."""
        stepped = sum(1 for state in self.states.values() if state.steps)
        by_hand = len(self.ledger.updated_by_hand)
        return {"guarded": stepped + by_hand, "stepped": stepped, "by_hand": by_hand,
                "passes": self.ledger.backward_passes}

    def _compare_ranks(self, state: GuardState) -> None:
        """Before a step: the DDP ranks' gradients compared (each rank reaches the same verdict)."""
        for finding in self.consistency.record(state):
            self._record(finding)

    def _record(self, finding: GuardFinding) -> None:
        finding = GuardFinding(finding.kind, finding.optimizer, finding.call, finding.location,
                               finding.message, distributed.rank())
        sites = len(self.tally)
        self.tally.add(finding)
        where = f"{finding.location}: {finding.call}: {finding.message}"
        if self.action == "raise":
            raise GradGuardError(where)
        if len(self.tally) > sites:  # the first time at this call site
            warn_at(finding.location, GradGuardWarning(f"{finding.call}: {finding.message}"))

