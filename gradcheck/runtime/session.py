"""A guard session: every optimizer of a program guarded, one report at the end.

``gradcheck run`` and ``GRADCHECK_GUARD=1`` install a session. It wraps
``torch.optim.Optimizer.__init__`` (once ``torch.optim.optimizer`` is imported, so a program
that never imports torch pays nothing) and attaches a ``GuardState`` to each optimizer as it is
built. Findings go to one ``Tally``; at exit, or when the default process group is destroyed in
a distributed job, every rank sends its tally to rank 0, which prints the only report.

``accumulation_steps`` is the user's (``--accumulation-steps``) when given; otherwise the
frameworks' own setting is read (``gradcheck.integrations.frameworks``), so Lightning's
``accumulate_grad_batches`` and Hugging Face's or accelerate's ``gradient_accumulation_steps``
are never reported.

>>> session = GuardSession(action="warn")
>>> session.finish()
''
"""
from __future__ import annotations

import atexit
import functools
import sys
import warnings
from typing import Any, TextIO

from gradcheck.runtime import autostart, distributed
from gradcheck.runtime.findings import GuardFinding, Tally, user_location
from gradcheck.runtime.guard import (
    ACTIONS,
    GradGuardError,
    GradGuardWarning,
    GuardState,
    check_accumulation_steps,
)
from gradcheck.runtime.imports import after_import

_active: GuardSession | None = None


def active() -> GuardSession | None:
    """The installed session of this process, if any."""
    return _active


class GuardSession:
    """Guards optimizers and tallies what they find.

    ``watch(optimizer)`` guards one optimizer; ``install()`` guards every optimizer built from
    then on; ``finish()`` removes the hooks and prints (and returns) the report.
    """

    def __init__(
        self,
        accumulation_steps: int | None = None,
        action: str = "warn",
        stream: TextIO | None = None,
    ) -> None:
        if action not in ACTIONS:
            raise ValueError(f"action must be one of {ACTIONS}, got {action!r}")
        check_accumulation_steps(accumulation_steps)
        self.k = accumulation_steps
        self.action = action
        self.stream = stream
        self.tally = Tally()
        self.states: dict[int, GuardState] = {}
        self.finished = False
        self._undo: list[Any] = []

    def watch(self, optimizer: Any, accumulation_steps: int | None = None) -> GuardState:
        """Guard ``optimizer`` (once); an explicit ``accumulation_steps`` wins over the session's."""
        from gradcheck.integrations import frameworks

        optimizer = frameworks.unwrap_optimizer(optimizer)
        state = self.states.get(id(optimizer))
        if state is None:
            name = f"{type(optimizer).__name__} ({user_location()})"
            k = self.k if self.k is not None else frameworks.accumulation_from_stack()
            state = GuardState(optimizer, k, "raise", name, sink=self._record)
            state.k_fallback = frameworks.accelerate_accumulation_steps
            self.states[id(optimizer)] = state
        if accumulation_steps is not None:
            state.k = accumulation_steps
        return state

    def install(self) -> GuardSession:
        """Guard every optimizer built from now on, and report at exit."""
        global _active
        if _active is not None:
            raise RuntimeError("a guard session is already installed in this process")
        _active = self
        after_import("torch.optim.optimizer", self._patch_optimizer_class)
        self.see_module_resets()
        after_import("torch.distributed.distributed_c10d", self._patch_destroy_process_group)
        atexit.register(self.finish)
        return self

    def see_module_resets(self) -> None:
        """Give ``model.zero_grad()`` calls inside a window their own line in the report."""
        after_import("torch.nn.modules.module", self._patch_module_zero_grad)

    def finish(self) -> str:
        """Remove every hook, gather the ranks' findings and print the report (on rank 0)."""
        global _active
        if self.finished:
            return ""
        self.finished = True
        if _active is self:
            _active = None
        rank = distributed.rank()
        for state in self.states.values():
            state.remove()
            for (call, location), count in state.undecided.items():
                self.tally.add_undecided(state.name, call, location, count, rank)
        for undo in reversed(self._undo):
            undo()
        tally = distributed.gather_tally(self.tally, collective=self.action == "warn")
        report = tally.render() if tally is not None else ""
        if report:
            print(report, file=self.stream or sys.stderr, flush=True)
            autostart.note_found(len(tally))
        return report

    def _record(self, finding: GuardFinding) -> None:
        finding = GuardFinding(finding.kind, finding.optimizer, finding.call, finding.location,
                               finding.message, distributed.rank())
        sites = len(self.tally)
        self.tally.add(finding)
        where = f"{finding.location}: {finding.call}: {finding.message}"
        if self.action == "raise":
            raise GradGuardError(where)
        if len(self.tally) > sites:  # the first time at this call site
            filename, _, line = finding.location.rpartition(":")
            warnings.warn_explicit(GradGuardWarning(f"{finding.call}: {finding.message}"),
                                   GradGuardWarning, filename, int(line) if line.isdigit() else 0)

    def _patch_optimizer_class(self, module: Any) -> None:
        optimizer_class = module.Optimizer
        original = optimizer_class.__init__

        @functools.wraps(original)
        def __init__(optimizer: Any, *args: Any, **kwargs: Any) -> None:
            original(optimizer, *args, **kwargs)
            if not self.finished:
                self.watch(optimizer)

        optimizer_class.__init__ = __init__
        self._undo.append(lambda: setattr(optimizer_class, "__init__", original))

    def _patch_module_zero_grad(self, module: Any) -> None:
        """See ``model.zero_grad()`` calls, so a reset behind the optimizer gets its own line."""
        module_class = module.Module
        original = module_class.zero_grad

        @functools.wraps(original)
        def zero_grad(model: Any, *args: Any, **kwargs: Any) -> None:
            if self.states:
                location = user_location()
                for state in self.states.values():
                    state.note_reset("zero_grad()", location)
            return original(model, *args, **kwargs)

        module_class.zero_grad = zero_grad
        self._undo.append(lambda: setattr(module_class, "zero_grad", original))

    def _patch_destroy_process_group(self, module: Any) -> None:
        """Gather the report while the process group still exists."""
        original = module.destroy_process_group

        @functools.wraps(original)
        def destroy_process_group(group: Any = None) -> None:
            if group is None:
                self.finish()
            return original(group)

        for namespace in (module, sys.modules.get("torch.distributed")):
            if namespace is not None and getattr(namespace, "destroy_process_group", None) is original:
                namespace.destroy_process_group = destroy_process_group
                self._undo.append(functools.partial(setattr, namespace, "destroy_process_group",
                                                    original))
