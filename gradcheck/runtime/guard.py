"""``guard``: cheap always-on accumulation checks inside a real training loop.

The guard counts, per parameter, the backward passes accumulated into ``.grad`` since it was last
reset, using a tensor hook on each parameter (it runs before accumulation, so it sees a ``None``
gradient, or for torch an in-place change since the last pass, as a reset). ``optimizer.zero_grad``
is wrapped on the instance to see resets through the optimizer, and step pre/post hooks judge
each ``step()``:

- no backward pass since the last reset -> the gradients were wiped (or never computed);
- more passes than ``accumulation_steps`` -> stale gradients from earlier batches;
- with ``accumulation_steps > 1``, a ``step()`` on fewer than ``k`` passes after a reset threw
  away passes that no ``step()`` used -> broken (discarded) accumulation. Judging at the step,
  not at the reset, keeps deliberate drops silent: a GAN's cross-gradient wiped before the next
  window, or a partial window dropped at the end of an epoch, never shortens an update.

A ``None`` or all-zero gradient is a reset; any other in-place change (clipping, unscaling) is a
rescale and keeps the count. For ``step(closure)`` each closure evaluation must begin from reset
gradients; it may run ``backward()`` several times after that.

Limits: a reset that bypasses the optimizer (``model.zero_grad()``, ``p.grad = None``) is seen
when the next backward pass or ``step()`` runs, not when it happens; on the reference engine an
in-place zeroing that bypasses the optimizer is not seen; an unscaled loss is invisible to counts
(use ``check_training_step`` with a ``loss_fn``).

>>> import gradcheck.ref as torch
>>> with guard(torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=0.1)) as opt:
...     opt.findings
[]
"""
from __future__ import annotations

from typing import Any

from gradcheck.runtime.counters import GradGuardError, GradGuardWarning, GuardState
from gradcheck.runtime.findings import GuardFinding

ACTIONS = ("raise", "warn")
__all__ = ["ACTIONS", "GradGuard", "GradGuardError", "GradGuardWarning", "GuardState", "guard"]


class GradGuard:
    """Hooks on one optimizer; a context manager, and a stand-in for the optimizer itself.

    Attribute access is forwarded, so ``opt = guard(opt)`` keeps ``opt.step()``,
    ``opt.zero_grad()`` and ``opt.param_groups`` working (and ``isinstance`` checks still see the
    optimizer's class). Leaving the ``with`` block, or ``remove()``, takes every hook off.
    """

    def __init__(
        self, optimizer: Any, accumulation_steps: int | None, action: str, name: str
    ) -> None:
        from gradcheck.integrations.frameworks import unwrap_optimizer  # accelerate's wrapper

        state = GuardState(unwrap_optimizer(optimizer), accumulation_steps, action, name)
        object.__setattr__(self, "_optimizer", optimizer)
        object.__setattr__(self, "_state", state)

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # lets isinstance(opt, torch.optim.Optimizer) hold
        return type(self._optimizer)

    @property
    def findings(self) -> list[str]:
        """Every message issued so far (also kept with ``action="warn"``)."""
        return [finding.message for finding in self._state.findings]

    @property
    def problems(self) -> list[GuardFinding]:
        """Every finding so far, with its kind, the offending call and its line in your code."""
        return self._state.findings

    def remove(self) -> None:
        """Judge what needs the whole run, then take every hook off (once)."""
        state = self._state
        if state.handles:
            try:
                state.final_findings()
            finally:
                state.remove()

    def __enter__(self) -> GradGuard:  # noqa: PYI034 - the proxy reports the optimizer's class
        return self

    def __exit__(self, exc_type: object, *exc_info: object) -> None:
        if exc_type is None:
            self.remove()
        else:  # an error is already on its way: judge nothing more, never hide it
            self._state.remove()

    def __getattr__(self, name: str) -> Any:
        if name in ("_optimizer", "_state"):  # not yet set (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self._optimizer, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._optimizer, name, value)

    def __repr__(self) -> str:
        return f"guard({self._optimizer!r})"


def guard(
    optimizer: Any,
    *,
    accumulation_steps: int | None = 1,
    action: str = "raise",
    name: str | None = None,
) -> GradGuard:
    """Watch ``optimizer`` for steps on wiped or stale gradients and for discarded accumulation.

    Use it as ``with guard(opt): ...`` or keep the returned stand-in: ``opt = guard(opt)``.
    ``accumulation_steps=None`` means "not known": a step is then stale only when its gradients
    hold passes an earlier ``step()`` already applied, and discards are not judged.

    >>> import gradcheck.ref as torch
    >>> model = torch.nn.Linear(2, 1)
    >>> opt = guard(torch.optim.SGD(model.parameters(), lr=0.1))
    >>> model(torch.ones(1, 2)).sum().backward()
    >>> opt.zero_grad()  # between backward() and step(): the step has nothing to apply
    >>> opt.step()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    gradcheck.runtime.counters.GradGuardError: SGD.step() ran with no backward() since the last ...
    >>> opt.remove()
    """
    if isinstance(optimizer, GradGuard):
        raise TypeError("this optimizer is already guarded; call guard() once per optimizer")
    if action not in ACTIONS:
        raise ValueError(f"action must be one of {ACTIONS}, got {action!r}")
    check_accumulation_steps(accumulation_steps)
    return GradGuard(optimizer, accumulation_steps, action, name or type(optimizer).__name__)


def check_accumulation_steps(k: Any) -> None:
    """Raise a clear error unless ``k`` is a positive int or None (unknown)."""
    if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k < 1):
        raise ValueError(
            f"accumulation_steps must be a positive int (or None when unknown), got {k!r}"
        )
