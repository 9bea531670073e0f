"""The counters behind every guard: backward passes per parameter, windows, and the verdicts.

``GuardState`` hooks one optimizer. Per parameter it counts the backward passes accumulated into
``.grad`` since the last reset (``passes``) and since the last reset or ``step()`` (``window``),
and the passes a reset threw away before any step used them (``dropped``). The step pre/post
hooks turn those counts into findings; ``guard`` (a stand-in for the optimizer) and the session
of ``gradcheck run`` are two ways to hold one.

>>> import gradcheck.ref as torch
>>> model = torch.nn.Linear(2, 1)
>>> state = GuardState(torch.optim.SGD(model.parameters(), lr=0.1), 1, "warn", "SGD")
>>> model(torch.ones(1, 2)).sum().backward(); state.optimizer.step(); state.findings
[]
>>> state.remove()
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from gradcheck.runtime import adapter
from gradcheck.runtime.findings import GuardFinding, user_location


class GradGuardError(RuntimeError):
    """A ``step()`` or ``zero_grad()`` that breaks gradient accumulation (``action="raise"``)."""


class GradGuardWarning(UserWarning):
    """The same finding as ``GradGuardError``, issued with ``action="warn"``."""

class GuardState:
    """The counters and hooks behind one ``GradGuard`` (and each optimizer of a session).

    ``sink``, when set, receives every finding instead of ``action`` (the session tallies them);
    ``k_fallback`` supplies ``accumulation_steps`` at step time while ``k`` is None.
    """

    def __init__(
        self,
        optimizer: Any,
        k: int | None,
        action: str,
        name: str,
        sink: Callable[[GuardFinding], None] | None = None,
    ) -> None:
        self.optimizer = optimizer
        self.k = k
        self.k_fallback: Callable[[], int | None] | None = None
        self.action = action
        self.name = name
        self.sink = sink
        self.reset_at: tuple[str, str] | None = None  # (call, line) of a reset that dropped passes
        self.noted_reset: tuple[str, str] | None = None  # a reset seen outside the optimizer
        self.params = adapter.optimizer_parameters(optimizer)
        self.passes = [0] * len(self.params)  # since the last reset
        self.window = [0] * len(self.params)  # since the last reset or step()
        self.dropped = [0] * len(self.params)  # passes reset away since the last step()
        self.dropped_by = ""
        self.versions: list[int | None] = [None] * len(self.params)
        self.by_size = sorted(range(len(self.params)), key=lambda i: _numel(self.params[i]))
        self.findings: list[GuardFinding] = []
        self.undecided: dict[tuple[str, str], int] = {}  # (call, line) -> steps not judged
        self.in_closure_step = False
        self.evaluations = 0  # closure evaluations begun in this step(closure)
        self.evaluation_started = False  # the closure began a new evaluation, no pass yet
        self.closure_stale = False
        self.closure_backward = False  # a backward pass ran inside this step(closure)
        self.passes_at_step: list[int] = []
        self.handles = [p.register_hook(self._hook(i)) for i, p in enumerate(self.params)]
        self.handles += adapter.add_step_hooks(optimizer, self._before_step, self._after_step)
        self.original_zero_grad = optimizer.__dict__.get("zero_grad")
        bound = optimizer.zero_grad

        def zero_grad(*args: Any, **kwargs: Any) -> Any:
            self._on_reset("zero_grad()")
            return bound(*args, **kwargs)

        optimizer.zero_grad = zero_grad

    def _hook(self, index: int) -> Callable[[Any], None]:
        param = self.params[index]
        passes, window, versions = self.passes, self.window, self.versions

        def count(grad: Any) -> None:
            old = param.grad
            version = getattr(old, "_version", None)
            if old is None or (version != versions[index] and adapter.is_all_zero(old)):
                if window[index] and not self.in_closure_step:
                    self.reset_at = self.noted_reset or ("backward()", user_location())
                self._drop(index, "a gradient reset outside the optimizer")
                passes[index] = 0
            if self.in_closure_step:
                self.closure_backward = True
                if self.evaluation_started:  # the first pass of a closure evaluation
                    self.evaluation_started = False
                    self.closure_stale = self.closure_stale or self._stale_evaluation(index)
            passes[index] += 1
            window[index] += 1
            # NOTE: torch accumulates in place, adding exactly one to the version counter; any
            # other in-place write shows up as a different number. A non-zero result of such a
            # write (a scaler's unscale_, clipping) is a rescale and keeps the count.
            versions[index] = 0 if old is None else (version + 1 if version is not None else None)

        return count

    def _stale_evaluation(self, index: int) -> bool:
        """The closure's first pass lands on gradients it should have reset."""
        passes, k = self.passes[index], self._k()
        return (
            passes > self.window[index]  # left from before the previous step()
            or (k is not None and passes >= k)
            or (self.evaluations > 1 and passes > self.passes_at_step[index])
        )

    def _k(self) -> int | None:
        if self.k is None and self.k_fallback is not None:
            return self.k_fallback()
        return self.k

    def note_reset(self, call: str, location: str) -> None:
        """A reset outside the optimizer (``model.zero_grad()``) that the hooks will see later."""
        if any(self.window):
            self.noted_reset = (call, location)

    def _on_reset(self, how: str) -> None:
        if any(self.window):
            self.reset_at = ("zero_grad()", user_location())
        for i in range(len(self.passes)):
            self._drop(i, how)
            self.passes[i] = 0

    def _drop(self, index: int, how: str) -> None:
        """Remember passes a reset throws away; judged by the next ``step()``."""
        if self.window[index] and not self.in_closure_step:
            self.dropped[index] += self.window[index]
            self.dropped_by = how
        self.window[index] = 0

    def _before_step(self, optimizer: Any, args: Any, kwargs: Any) -> Any:
        # torch passes (optimizer, closure) as args; any callable there is the closure
        if callable(kwargs.get("closure")):
            kwargs = {**kwargs, "closure": self._watch_closure(kwargs["closure"])}
        elif any(callable(a) for a in args[1:]):
            args = tuple(self._watch_closure(a) if callable(a) else a for a in args)
        else:
            self._judge_step()
            return None
        self.in_closure_step, self.closure_stale, self.closure_backward = True, False, False
        self.evaluations, self.passes_at_step = 0, list(self.passes)
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
            self._judge_closure_step()
        for i in range(len(self.window)):
            self.window[i] = self.dropped[i] = 0
        self.reset_at = self.noted_reset = None

    def _judge_closure_step(self) -> None:
        if self.closure_stale:
            self._issue("stale_gradients", None, (
                f"{self.name}.step(closure) evaluated a closure whose backward() added to "
                "gradients left from before that evaluation: the update includes stale "
                "gradients. Call optimizer.zero_grad() at the top of the closure."
            ))
        elif not self.closure_backward or max(self.passes, default=0) == 0:
            self._judge_step()  # the closure ran no backward (Lightning's manual optimization)
        else:
            self._judge_window(self._k())

    def _judge_step(self) -> None:
        passes, k = max(self.passes, default=0), self._k()
        if passes == 0:
            self._issue("wiped_gradients", self.reset_at, (
                f"{self.name}.step() ran with no backward() since the last zero_grad() "
                "(0 backward passes), so it updates with wiped or missing gradients. Move "
                "zero_grad() so it runs before loss.backward() (or after step()), never between "
                "backward() and step()."
            ))
        elif self._holds_applied_passes() or (k is not None and passes > k):
            limit = f"accumulation_steps={k}" if k is not None else "an earlier step()"
            self._issue("stale_gradients", None, (
                f"{self.name}.step() ran on gradients accumulated over {passes} backward passes "
                f"since the last zero_grad(), beyond {limit}: the update "
                "includes stale gradients of earlier batches. Call zero_grad() once per update, "
                "right after step()."
            ))
        elif self._wiped_behind_the_optimizer():
            self._issue("wiped_gradients", self.noted_reset, (
                f"{self.name}.step() found every gradient None or zero although {passes} "
                "backward pass(es) ran: something reset them behind the optimizer (e.g. "
                "model.zero_grad() or p.grad = None) between backward() and step(). Move that "
                "reset before backward() or after step()."
            ))
        else:
            self._judge_window(k)

    def _holds_applied_passes(self) -> bool:
        """Some gradient still holds passes that an earlier ``step()`` already applied."""
        return any(p > w for p, w in zip(self.passes, self.window))

    def _wiped_behind_the_optimizer(self) -> bool:
        """All gradients None or zero. Cheap in the usual case: one version-counter read."""
        smallest = self.by_size[0]
        grad = self.params[smallest].grad
        if grad is not None:
            version = getattr(grad, "_version", None)
            if version is not None and version == self.versions[smallest]:
                return False  # untouched since its last accumulation, so not wiped
        grads = [self.params[i].grad for i in self.by_size]
        return all(g is None for g in grads) or _all_zero(grads)

    def _judge_window(self, k: int | None) -> None:
        """A step on fewer than ``k`` passes, after a reset threw passes away, lost them."""
        if k is None:  # cannot judge: remember it, so the report can say so
            if self.reset_at is not None and max(self.dropped, default=0):
                self.undecided[self.reset_at] = self.undecided.get(self.reset_at, 0) + 1
            return
        if k == 1:
            return
        dropped, kept = max(self.dropped, default=0), max(self.window, default=0)
        if dropped and kept < k:
            self._issue("discarded_accumulation", self.reset_at, (
                f"{self.dropped_by} on {self.name} discarded gradients of {dropped} backward "
                f"pass(es) that no step() used, and step() then ran on {kept} of "
                f"accumulation_steps={k}: the accumulation is broken. Call zero_grad() "
                "only after step()."
            ))

    def _issue(self, kind: str, where: tuple[str, str] | None, message: str) -> None:
        """Report at ``where`` (the offending call and its line), else at this ``step()``."""
        call, location = where or ("step()", user_location())
        finding = GuardFinding(kind, self.name, call, location, message)
        self.findings.append(finding)
        if self.sink is not None:
            self.sink(finding)
            return
        if self.action == "raise":
            raise GradGuardError(message)
        warnings.warn(GradGuardWarning(message), stacklevel=4)

    def remove(self) -> None:
        adapter.remove_handles(self.handles)
        if "zero_grad" in self.optimizer.__dict__:
            del self.optimizer.zero_grad
        if self.original_zero_grad is not None:
            self.optimizer.zero_grad = self.original_zero_grad


def _all_zero(grads: list[Any]) -> bool:
    """All present gradients are zero; pass the smallest first so the usual answer is cheap."""
    present = [g for g in grads if g is not None]
    if not present or not adapter.is_all_zero(present[0]):
        return False
    return all(adapter.is_all_zero(g) for g in present[1:])


def _numel(tensor: Any) -> int:
    size = getattr(tensor, "numel", None)
    return int(size()) if callable(size) else int(getattr(tensor, "size", 0))
