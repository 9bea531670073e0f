"""The verdicts on one optimizer's steps, drawn from its parameters' pass counts (the ledger).

``GuardState`` hooks one optimizer: step pre/post hooks, and its ``zero_grad``. Each ``step()`` is
judged on the counts the ``Ledger`` keeps for the optimizer's parameters (``passes`` since the
last reset, ``fresh`` ones no update applied yet, ``dropped`` ones a reset threw away):

- no pass since the last reset -> ``wiped_gradients`` (or, if no parameter of the optimizer has
  ever had a gradient, a step that changes nothing: ``optimizer_without_gradients``, judged when
  the run ends);
- passes, but none since the last step -> ``repeated_step``;
- passes an earlier step applied -> ``stale_gradients`` (a missing reset);
- more fresh passes than ``accumulation_steps``, gathered while other optimizers stepped ->
  ``frozen_by_omission``, else ``stale_gradients``;
- fewer than ``k`` after a reset dropped passes no step used -> ``discarded_accumulation``.

``k`` is the user's, a framework's, or unknown; unknown, it is inferred from the optimizer's own
windows, for ``frozen_by_omission`` only (a GAN's discriminator steps on two passes by design).

>>> import gradcheck.ref as torch
>>> model = torch.nn.Linear(2, 1)
>>> state = GuardState(torch.optim.SGD(model.parameters(), lr=0.1), 1, "warn", "SGD")
>>> model(torch.ones(1, 2)).sum().backward(); state.optimizer.step(); state.findings
[]
>>> state.remove()
"""
from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from gradcheck.runtime import adapter
from gradcheck.runtime.findings import GuardFinding, user_location, warn_at
from gradcheck.runtime.ledger import Ledger
from gradcheck.runtime.messages import message

WINDOWS_KEPT = 16  # fresh-pass counts remembered per optimizer, to infer its accumulation


class GradGuardError(RuntimeError):
    """A ``step()`` or ``zero_grad()`` that breaks gradient accumulation (``action="raise"``)."""


class GradGuardWarning(UserWarning):
    """The same finding as ``GradGuardError``, issued with ``action="warn"``."""


class GuardState:
    """The hooks and verdicts of one optimizer (of a ``GradGuard``, or of a session).

    ``sink``, when set, receives every finding instead of ``action`` (the session tallies them);
    ``ledger`` is the session's, shared by its optimizers, else one of this optimizer's own;
    ``k_fallback`` supplies ``accumulation_steps`` at step time while ``k`` is None.
    """

    def __init__(
        self,
        optimizer: Any,
        k: int | None,
        action: str,
        name: str,
        sink: Callable[[GuardFinding], None] | None = None,
        ledger: Ledger | None = None,
    ) -> None:
        self.optimizer = optimizer
        self.k = k
        self.k_fallback: Callable[[], int | None] | None = None
        self.before_judging: Callable[[GuardState], None] | None = None  # DDP digests
        self.ordinal = 0  # the session's count of optimizers built before this one
        self.action = action
        self.name = name
        self.sink = sink
        self.own_ledger = ledger is None
        self.ledger = ledger if ledger is not None else Ledger(sink=self._deliver)
        self.slots = [self.ledger.track(p) for p in adapter.optimizer_parameters(optimizer)]
        self.slot_set = set(self.slots)
        for slot in self.slots:
            self.ledger.owners[slot].append(self)
        self._pick = _picker(self.slots)
        self.unhooked = [s for s in self.slots if not self.ledger.hooked[s]]
        sizes = {s: _numel(self.ledger.params[s]()) for s in self.slots}
        self.by_size = sorted(self.slots, key=sizes.__getitem__)
        self.reset_at: tuple[str, str] | None = None  # (call, line) of the last zero_grad()
        self.findings: list[GuardFinding] = []
        self.warned: set[tuple[str, str]] = set()
        self.undecided: dict[tuple[str, str], int] = {}  # (call, line) -> steps not judged
        self.steps = 0
        self.windows: list[int] = []  # fresh passes at each of the first steps
        self.pending: tuple[int, int, int, str] | None = None  # (step, fresh, foreign, line)
        self.inert_steps = 0  # steps while no parameter of this optimizer ever had a gradient
        self.inert_at = ""
        self.in_closure_step = False
        self.evaluations = 0  # closure evaluations begun in this step(closure)
        self.evaluation_started = False  # the closure began a new evaluation, no pass yet
        self.closure_stale = False
        self.closure_backward = False  # a backward pass ran inside this step(closure)
        self.passes_at_step: dict[int, int] = {}
        self.fresh_at_step: dict[int, int] = {}
        self.handles = adapter.add_step_hooks(optimizer, self._before_step, self._after_step)
        self.original_zero_grad = optimizer.__dict__.get("zero_grad")
        bound = optimizer.zero_grad

        def zero_grad(*args: Any, **kwargs: Any) -> Any:
            self.on_zero_grad()
            return bound(*args, **kwargs)

        optimizer.zero_grad = zero_grad

    # -- what the ledger and the session tell this optimizer ------------------------------------

    def on_zero_grad(self) -> None:
        """The optimizer's ``zero_grad()`` (or a wrapper's) is about to reset every gradient."""
        if any(self._pick(self.ledger.fresh)):  # a reset that drops passes: where?
            self.reset_at = ("zero_grad()", user_location())
        self.ledger.reset_slots(self.slots, self.reset_at or ("", ""))

    def owns(self, slot: int) -> bool:
        return slot in self.slot_set

    def on_pass(self, slot: int) -> None:
        """A backward pass reached ``slot`` while this optimizer runs ``step(closure)``."""
        if slot not in self.slot_set:
            return
        self.closure_backward = True
        if self.evaluation_started:  # the first pass of a closure evaluation
            self.evaluation_started = False
            self.closure_stale = self.closure_stale or self._stale_evaluation(slot)

    def pre_step_passes(self, slot: int) -> int:
        """Fresh passes from before this ``step(closure)`` that a reset inside it drops (once)."""
        return self.fresh_at_step.pop(slot, 0)

    # -- step hooks ------------------------------------------------------------------------------

    def _before_step(self, optimizer: Any, args: Any, kwargs: Any) -> Any:
        # torch passes (optimizer, closure) as args; any callable there is the closure
        if callable(kwargs.get("closure")):
            kwargs = {**kwargs, "closure": self._watch_closure(kwargs["closure"])}
        elif any(callable(a) for a in args[1:]):
            args = tuple(self._watch_closure(a) if callable(a) else a for a in args)
        else:
            if self.before_judging is not None:
                self.before_judging(self)
            self._judge_step()
            return None
        ledger = self.ledger
        self.in_closure_step, self.closure_stale, self.closure_backward = True, False, False
        self.evaluations = 0
        self.passes_at_step = {s: ledger.passes[s] for s in self.slots}
        self.fresh_at_step = {s: ledger.fresh[s] for s in self.slots if ledger.fresh[s]}
        ledger.closure = self
        return args, kwargs  # judged afterwards

    def _watch_closure(self, closure: Callable[[], Any]) -> Callable[[], Any]:
        def evaluation(*args: Any, **kwargs: Any) -> Any:
            self.evaluation_started = True
            self.evaluations += 1
            return closure(*args, **kwargs)

        return evaluation

    def _after_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self.in_closure_step:
            self.in_closure_step = self.evaluation_started = False
            self.ledger.closure = None
            self._judge_closure_step()
        self.ledger.applied(self.slots)
        self.steps += 1
        self.reset_at = None
        self.ledger.noted_reset = None
        if self.unhooked and (self.steps < 8 or self.steps % 64 == 0):
            self.unhooked = [s for s in self.unhooked if not self.ledger.hook(s)]

    # -- verdicts --------------------------------------------------------------------------------

    def _stale_evaluation(self, slot: int) -> bool:
        """The closure's first pass lands on gradients it should have reset."""
        ledger, k = self.ledger, self._k()
        passes = ledger.passes[slot]
        return (
            passes > ledger.fresh[slot]  # left from before the previous step()
            or (k is not None and passes >= k)
            or (self.evaluations > 1 and passes > self.passes_at_step.get(slot, 0))
        )

    def _k(self) -> int | None:
        if self.k is None and self.k_fallback is not None:
            return self.k_fallback()
        return self.k

    def _judge_closure_step(self) -> None:
        if self.closure_stale:
            self._issue("stale_gradients", None, message("stale_closure", name=self.name))
        elif not self.closure_backward or max(self._pick(self.ledger.passes)) == 0:
            self._judge_step()  # the closure ran no backward (Lightning's manual optimization)
        else:
            self._judge_window(self._k(), max(self._pick(self.ledger.fresh)))

    def _judge_step(self) -> None:
        ledger, k = self.ledger, self._k()
        passes, fresh = max(self._pick(ledger.passes)), max(self._pick(ledger.fresh))
        if passes == 0:
            self._judge_no_passes()
        elif fresh == 0:
            self._issue("repeated_step", None,
                        message("repeated_step", name=self.name, passes=passes))
        elif any(p > f for p, f in zip(self._pick(ledger.passes), self._pick(ledger.fresh))):
            self._issue("stale_gradients", None, message("stale_gradients", name=self.name))
        elif k is not None and fresh > k:
            self._judge_too_many(k, fresh)
        elif self._wiped_behind_the_optimizer():
            self._issue("wiped_gradients", ledger.noted_reset,
                        message("wiped_behind", name=self.name, passes=passes))
        else:
            self._judge_window(k, fresh)
            self._learn_window(fresh)

    def _judge_no_passes(self) -> None:
        ledger = self.ledger
        if ledger.step_through_aliases(self.slots, self.name):
            return
        grads = [g for s in self.slots if (g := ledger.grad(s)) is not None]
        if grads and not _all_zero(grads):  # gradients set by hand: not for counts to judge
            return
        if not any(ledger.total[s] for s in self.slots):
            self.inert_steps += 1
            self.inert_at = self.inert_at or user_location()
            return
        self._issue("wiped_gradients", self.reset_at, message("wiped_gradients", name=self.name))

    def _judge_too_many(self, k: int, fresh: int) -> None:
        _, foreign = self._longest_window()
        if foreign >= 2:
            self._issue("frozen_by_omission", None, message(
                "frozen_by_omission", name=self.name, fresh=fresh, foreign=foreign, usual=k))
            return
        self._issue("stale_gradients", None,
                    message("stale_beyond_k", name=self.name, fresh=fresh, k=k))

    def _longest_window(self) -> tuple[int, int]:
        """The slot with the most fresh passes, and how many other steps ran meanwhile."""
        ledger = self.ledger
        slot = max(self.slots, key=ledger.fresh.__getitem__)
        return slot, ledger.step_serial - ledger.window_start[slot]

    def _learn_window(self, fresh: int) -> None:
        """Infer this optimizer's passes per step; judge a suspected omission once it is known."""
        if len(self.windows) >= WINDOWS_KEPT:
            return  # inferred from the first steps only
        self.windows.append(fresh)
        _, foreign = self._longest_window()
        if foreign >= 2 and fresh > 1 and (self.pending is None or fresh > self.pending[1]):
            self.pending = (len(self.windows) - 1, fresh, foreign, user_location())
        if self.pending is None:
            return
        later = self.windows[self.pending[0] + 1:]
        if len(later) >= 2 and later[-1] == later[-2]:
            _, pending_fresh, pending_foreign, where = self.pending
            self.pending = None
            if pending_fresh > later[-1]:
                self._issue("frozen_by_omission", ("step()", where), message(
                    "frozen_by_omission", name=self.name, fresh=pending_fresh,
                    foreign=pending_foreign, usual=later[-1]))

    def _wiped_behind_the_optimizer(self) -> bool:
        """All gradients None or zero. Cheap in the usual case: one version-counter read."""
        ledger, smallest = self.ledger, self.by_size[0]
        grad = ledger.grad(smallest)
        if grad is not None:
            version = getattr(grad, "_version", None)
            if version is not None and version == ledger.versions[smallest]:
                return False  # untouched since its last accumulation, so not wiped
        grads = [ledger.grad(s) for s in self.by_size]
        return all(g is None for g in grads) or _all_zero(grads)

    def _judge_window(self, k: int | None, kept: int) -> None:
        """A step on fewer than ``k`` passes, after a reset threw passes away, lost them."""
        ledger = self.ledger
        dropped = max(self._pick(ledger.dropped))
        if not dropped:
            return
        site = ledger.drop_site[max(self.slots, key=ledger.dropped.__getitem__)]
        if k is None:  # cannot judge: remember it, so the report can say so
            if site is not None:
                self.undecided[site] = self.undecided.get(site, 0) + 1
            return
        if k > 1 and kept < k:
            call = site[0] if site else "a reset"
            how = "a gradient reset outside the optimizer" if call == "backward()" else call
            self._issue("discarded_accumulation", site, message(
                "discarded_accumulation", how=how, name=self.name, dropped=dropped, kept=kept,
                k=k))

    def final_findings(self) -> None:
        """Verdicts that need the whole run: steps that never had a gradient to apply."""
        ledger = self.ledger
        if not self.inert_steps or any(ledger.total[s] for s in self.slots):
            return
        params = [p for s in self.slots if (p := ledger.params[s]()) is not None]
        if any(getattr(p, "grad", None) is not None for p in params):
            return  # gradients arrived where no hook could count them: unknown, benign
        frozen = all(not getattr(p, "requires_grad", True) for p in params)
        why = (f"all {len(params)} of its parameters are frozen (requires_grad=False)" if frozen
               else f"no backward() reached any of its {len(params)} parameters")
        context = ", although backward() ran and reached other parameters" \
            if ledger.backward_passes else ""
        self._issue("optimizer_without_gradients", ("step()", self.inert_at), message(
            "optimizer_without_gradients", name=self.name, why=why, context=context),
            count=self.inert_steps)

    def _issue(self, kind: str, where: tuple[str, str] | None, message: str,
               count: int = 1) -> None:
        """Report at ``where`` (the offending call and its line), else at this ``step()``."""
        call, location = where if where and where[1] else ("step()", user_location())
        finding = GuardFinding(kind, self.name, call, location, message)
        self.findings.append(finding)
        for _ in range(count if self.sink is not None else 1):
            self._deliver(finding)

    def _deliver(self, finding: GuardFinding) -> None:
        if self.sink is not None:
            self.sink(finding)
            return
        if finding not in self.findings:
            self.findings.append(finding)  # from the ledger: an unowned parameter's finding
        if self.action == "raise":
            raise GradGuardError(finding.message)
        if (finding.kind, finding.location) not in self.warned:  # once per line, as python
            self.warned.add((finding.kind, finding.location))
            warn_at(finding.location, GradGuardWarning(finding.message))

    def remove(self) -> None:
        adapter.remove_handles(self.handles)
        if self.own_ledger:
            self.ledger.remove()
        if self.ledger.closure is self:
            self.ledger.closure = None
        if "zero_grad" in self.optimizer.__dict__:
            del self.optimizer.zero_grad
        if self.original_zero_grad is not None:
            self.optimizer.zero_grad = self.original_zero_grad


def _picker(slots: list[int]) -> Callable[[list[int]], tuple[int, ...]]:
    """A fast ``lambda column: tuple(column[s] for s in slots)`` (at least one element)."""
    if not slots:
        return lambda column: (0,)
    if len(slots) == 1:
        only = slots[0]
        return lambda column: (column[only],)
    return operator.itemgetter(*slots)


def _all_zero(grads: list[Any]) -> bool:
    """All present gradients are zero; pass the smallest first so the usual answer is cheap."""
    present = [g for g in grads if g is not None]
    if not present or not adapter.is_all_zero(present[0]):
        return False
    return all(adapter.is_all_zero(g) for g in present[1:])


def _numel(tensor: Any) -> int:
    size = getattr(tensor, "numel", None)
    return int(size()) if callable(size) else int(getattr(tensor, "size", 0))
