"""The gradient state of every parameter: how many backward passes its ``.grad`` holds, and whose.

One tensor hook per parameter runs before each accumulation into ``.grad``. It counts

- ``passes``: passes in ``.grad`` since it was last reset (``None`` or zeroed);
- ``fresh``: those no update has applied yet. An update (an optimizer's ``step()``, a change of
  the parameter's values by hand, a step through an aliased gradient) marks them applied;
- ``dropped``: fresh passes a reset threw away before any update used them;
- ``total``: every pass ever, to tell "never had a gradient" from "had one, then lost it".

So a parameter is *reset* (``passes == 0``), *fresh* (``fresh > 0``) or *applied*
(``passes > fresh``): a pass that lands on applied passes means a reset is missing. Optimizers
(``GuardState``) judge their steps on these counts; parameters that belong to no optimizer are
judged here, when their values change between passes (updates written by hand) or when an
optimizer stepped on their gradient through another parameter (``global._grad = local.grad``).

>>> import gradcheck.ref as torch
>>> layer = torch.nn.Linear(2, 1)
>>> ledger = Ledger()
>>> slots = [ledger.track(p) for p in layer.parameters()]
>>> layer(torch.ones(1, 2)).sum().backward()
>>> [ledger.passes[i] for i in slots], [ledger.fresh[i] for i in slots]
([1, 1], [1, 1])
>>> ledger.remove()
"""
from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from gradcheck.runtime import adapter
from gradcheck.runtime.findings import GuardFinding, user_location
from gradcheck.runtime.messages import message

_steps = [0]  # steps of every guarded optimizer of the process, whichever ledger counts it


class Ledger:
    """Per-parameter pass counts, kept by one tensor hook per parameter.

    Parallel lists indexed by slot keep the hook to a few list operations. ``sink`` receives the
    findings about parameters no optimizer owns.
    """

    def __init__(self, sink: Callable[[GuardFinding], None] | None = None) -> None:
        self.sink = sink
        self.params: list[weakref.ref] = []
        self.names: list[str] = []
        self.slot_of: dict[int, int] = {}
        self.passes: list[int] = []
        self.fresh: list[int] = []
        self.dropped: list[int] = []
        self.total: list[int] = []
        self.versions: list[int | None] = []
        self.window_start: list[int] = []  # step_serial when the fresh passes began
        self.drop_site: list[tuple[str, str] | None] = []  # the reset that dropped fresh passes
        self.owners: list[list[Any]] = []  # the GuardStates of the optimizers over each slot
        self.marks: list[Any] = []  # values' fingerprint at the last pass (slots no one owns)
        self.applied_by: list[tuple[str, str, str] | None] = []  # (kind, where, who) if by hand
        self.hooked: list[bool] = []
        self.handles: list[Any] = []
        self.steps_here = 0  # steps of this ledger's optimizers
        self.last_issued: dict[str, int] = {}  # kind -> pass index of its last finding
        self.updated_by_hand: set[int] = set()  # slots whose values changed between passes
        self.closure: Any = None  # the GuardState inside step(closure), if any
        self.noted_reset: tuple[str, str] | None = None  # a reset outside every optimizer
        self.backward_passes = 0  # passes over all parameters, for the "guarded nothing" note

    @property
    def step_serial(self) -> int:
        """Steps of every guarded optimizer of the process so far (standalone guards too)."""
        return _steps[0]

    def track(self, param: Any, name: str = "") -> int:
        """The slot of ``param``, hooking it on first sight (if it requires grad)."""
        slot = self.slot_of.get(id(param))
        if slot is not None and self.params[slot]() is param:
            return slot
        slot = len(self.params)
        self.slot_of[id(param)] = slot
        self.params.append(weakref.ref(param))
        self.names.append(name or f"parameter of shape {tuple(getattr(param, 'shape', ()))}")
        for column in (self.passes, self.fresh, self.dropped, self.total, self.window_start):
            column.append(0)
        for column in (self.versions, self.drop_site, self.marks, self.applied_by):
            column.append(None)
        self.owners.append([])
        self.hooked.append(False)
        self.hook(slot)
        return slot

    def hook(self, slot: int) -> bool:
        """Hook the slot's parameter if it requires grad now; whether it is hooked."""
        param = self.params[slot]()
        if self.hooked[slot] or param is None or not getattr(param, "requires_grad", False):
            return self.hooked[slot]
        self.handles.append(param.register_hook(self._counter(slot, param)))
        self.hooked[slot] = True
        return True

    def _counter(self, slot: int, param: Any) -> Callable[[Any], None]:
        passes, fresh, total, versions = self.passes, self.fresh, self.total, self.versions
        owners = self.owners[slot]

        def count(grad: Any) -> None:
            old = param.grad
            version = getattr(old, "_version", None)
            reset = old is None or (version != versions[slot] and adapter.is_all_zero(old))
            if reset:
                self._reset(slot)
            if not owners:
                self._unowned_pass(slot, param, old, reset)
            if self.closure is not None:
                self.closure.on_pass(slot)
            passes[slot] += 1
            if not fresh[slot]:
                self.window_start[slot] = self.step_serial
            fresh[slot] += 1
            total[slot] += 1
            self.backward_passes += 1
            # NOTE: torch accumulates in place, adding exactly one to the version counter; any
            # other in-place write shows up as a different number. A non-zero result of such a
            # write (a scaler's unscale_, clipping) is a rescale and keeps the count.
            versions[slot] = 0 if old is None else (version + 1 if version is not None else None)

        return count

    def _reset(self, slot: int) -> None:
        """The hook found ``.grad`` reset since the last pass, by something it could not see."""
        if self.fresh[slot] and self.owners[slot]:  # zero_grad() would have zeroed the count
            self.drop(slot, self.noted_reset or ("backward()", user_location()))
        self.fresh[slot] = 0
        self.passes[slot] = 0
        self.applied_by[slot] = None

    def drop(self, slot: int, site: tuple[str, str]) -> None:
        """A reset: fresh passes no update used are thrown away (judged by the next step)."""
        fresh = self.fresh[slot]
        if not fresh:
            return
        closure = self.closure
        kept = closure.pre_step_passes(slot) if closure is not None and closure.owns(slot) else fresh
        # NOTE: passes that began before another optimizer's step are that step's by-product
        # (a GAN's cross-gradient, wiped before the next window), never a broken accumulation
        if kept and self.step_serial == self.window_start[slot]:
            self.dropped[slot] += kept
            self.drop_site[slot] = site
        self.fresh[slot] = 0

    def reset_slots(self, slots: list[int], site: tuple[str, str]) -> None:
        """``zero_grad()`` of an optimizer over ``slots``."""
        for slot in slots:
            self.drop(slot, site)
            self.passes[slot] = 0

    def applied(self, slots: list[int]) -> None:
        """An optimizer over ``slots`` stepped: their fresh passes are now applied."""
        fresh, dropped = self.fresh, self.dropped
        for slot in slots:
            fresh[slot] = dropped[slot] = 0
        _steps[0] += 1
        self.steps_here += 1

    def applied_through(self, slot: int, optimizer: str, where: str) -> None:
        """``optimizer`` stepped on this slot's gradient through an alias."""
        self.fresh[slot] = 0
        self.applied_by[slot] = ("aliased_gradients", where, optimizer)

    def grad(self, slot: int) -> Any:
        param = self.params[slot]()
        return None if param is None else param.grad

    def step_through_aliases(self, slots: list[int], optimizer: str) -> bool:
        """Whether ``optimizer``, over ``slots``, is stepping on other parameters' ``.grad``
        (``global._grad = local.grad``); those passes are then applied."""
        grads = {id(g) for s in slots if (g := self.grad(s)) is not None}
        if not grads:
            return False
        mine, where, found = set(slots), "", False
        for slot in range(len(self.params)):
            if slot not in mine and id(self.grad(slot)) in grads:
                where = where or user_location()
                self.applied_through(slot, optimizer, where)
                found = True
        return found

    def _unowned_pass(self, slot: int, param: Any, old: Any, reset: bool) -> None:
        """A pass of a parameter no optimizer owns: was it updated by hand, or through an alias?"""
        if self.steps_here == 0:  # no optimizer has stepped: updates may be written by hand
            mark = adapter.fingerprint(param)
            changed = self.marks[slot] is not None and mark != self.marks[slot]
            self.marks[slot] = mark
            if changed:
                self.updated_by_hand.add(slot)
                if not reset and adapter.is_all_zero(old):  # p.grad.data.zero_(): no version
                    reset = True
                    self._reset(slot)
                if not reset and self.fresh[slot]:
                    self.fresh[slot] = 0
                    self.applied_by[slot] = ("stale_gradients", "", "")
        if not reset and self.applied_by[slot] is not None and self.passes[slot] > self.fresh[slot]:
            self._issue_applied(slot)

    def _issue_applied(self, slot: int) -> None:
        kind, where, optimizer = self.applied_by[slot]  # type: ignore[misc]
        name = self.names[slot]
        if kind == "aliased_gradients":
            text = message("aliased_gradients", name=optimizer, parameter=name)
            finding = GuardFinding(kind, optimizer, "step()", where, text)
        else:
            text = message("stale_by_hand", name=name)
            finding = GuardFinding(kind, "an update by hand", "backward()", user_location(), text)
        self.applied_by[slot] = None  # once per update; the next one is judged again
        # NOTE: every parameter of a model reports the same update; count it once per pass
        # index, so "N times" counts updates, not parameters times updates
        if self.sink is not None and self.last_issued.get(kind) != self.total[slot]:
            self.last_issued[kind] = self.total[slot]
            self.sink(finding)

    def remove(self) -> None:
        adapter.remove_handles(self.handles)
