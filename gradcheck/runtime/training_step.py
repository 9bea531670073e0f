"""``check_training_step``: run the user's own step over a few batches and audit every update.

How it works. A tensor hook on each parameter records the *fresh* gradient that every backward
pass contributes (a leaf hook runs before accumulation, so it also sees whether ``.grad`` was
reset since the previous pass). That gives, per parameter, the ledger of contributions that
``.grad`` is made of. An optimizer step pre-hook reads the gradient actually present when
``step()`` runs and compares its make-up with the micro-batches that should be in it:

- contributions from batches before the current accumulation window -> ``stale_gradients``;
- a gradient that is ``None`` or zero although the window's batches produced one ->
  ``wiped_gradients``;
- fewer micro-batches than ``accumulation_steps`` -> ``discarded_accumulation``;
- with a ``loss_fn``, a gradient ``k`` times the mean of fresh gradients computed on a cloned
  model -> ``unscaled_accumulation`` (a warning).

Then the update itself is replayed (``gradcheck.runtime.replay``): a fresh optimizer over copies
of the parameters, loaded with the state from before the step, steps once on the window's summed
contributions; parameters that end the batch elsewhere -> ``update_mismatch`` (a second
``step()``, or a write to the parameters after it). Closure steps are not replayed.

Reading the gradient at step time (instead of the parameter update) keeps the verdict independent
of the optimizer, so SGD, Adam and friends are judged alike.
"""
from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from gradcheck.runtime import adapter, distributed
from gradcheck.runtime.replay import UpdateCheck
from gradcheck.runtime.report import StepProblem, TrainingStepError, TrainingStepReport

_UNSCALED_TOLERANCE = 0.05  # relative distance of the gradient ratio from k


class _Ledger:
    """Per-parameter record of the contributions that make up ``.grad``, filled by hooks."""

    def __init__(self, params: list[Any], names: list[str]) -> None:
        self.params = params
        self.names = names
        self.batch = -1
        self.seq = 0  # one number per recorded contribution
        self.pending: list[list[tuple[int, int, np.ndarray]]] = [[] for _ in params]
        self.history: list[set[int]] = [set() for _ in params]
        self.non_finite: list[tuple[int, str]] = []
        self.reused_in_closure: list[int] = []  # params whose closure pass found stale grads
        self.in_step = False
        self.step_started_at = 0

    def hook_for(self, index: int) -> Callable[[Any], None]:
        param = self.params[index]

        def record(grad: Any) -> None:
            old = param.grad
            if old is None or adapter.is_all_zero(old):
                self.pending[index] = []
            elif self.in_step and any(s < self.step_started_at for _, s, _ in self.pending[index]):
                self.reused_in_closure.append(index)
            value = adapter.as_numpy(grad)
            self.pending[index].append((self.batch, self.seq, value))
            if np.any(value):  # a pass that leaves a parameter's gradient at zero is no evidence
                self.history[index].add(self.batch)
            self.seq += 1

        return record


def check_training_step(
    step: Callable[[Any], Any],
    model: Any,
    optimizer: Any,
    batches: Iterable[Any],
    *,
    accumulation_steps: int = 1,
    loss_fn: Callable[[Any, Any], Any] | None = None,
    raise_on_failure: bool = True,
    check_update: bool = True,
    rtol: float = 1e-3,
    atol: float = 0.0,
) -> TrainingStepReport:
    """Run ``step(batch)`` on each batch and check that every optimizer update is right.

    ``step`` is the user's training-step function exactly as the loop calls it; its first call
    must start an accumulation window. ``loss_fn(model, batch)``, when given, is the loss of one
    whole batch; it lets the check compare against fresh gradients from a cloned model and spot
    an unscaled accumulation. The model's parameters, their gradients and the optimizer state are
    restored afterwards, whatever happens; state the step owns (a counter in its closure, a
    GradScaler, an LR scheduler) is not.

    With ``check_update`` (the default) each update is also replayed on copies from the state
    before the step; parameters that end the batch more than ``atol + rtol * |update|`` away
    from the replay are an ``update_mismatch``. Pass ``check_update=False`` for a loop that
    edits parameters after the step on purpose (weight clipping, projections).

    >>> import gradcheck.ref as torch
    >>> model = torch.nn.Linear(2, 1)
    >>> opt = torch.optim.SGD(model.parameters(), lr=0.1)
    >>> def step(batch):
    ...     model(batch).sum().backward()  # no zero_grad(): stale gradients
    ...     opt.step()
    >>> report = check_training_step(step, model, opt, [torch.ones(1, 2)] * 3,
    ...                              raise_on_failure=False)
    >>> sorted(report.kinds), report.problems[0].batch
    (['stale_gradients'], 1)
    """
    batches = _validate(step, batches, accumulation_steps)
    names_by_id = {id(p): name for name, p in adapter.named_parameters(model)}
    params = [p for p in adapter.optimizer_parameters(optimizer) if id(p) in names_by_id]
    if not params:
        raise ValueError(
            f"{type(model).__name__} has no trainable parameters that the optimizer "
            f"{type(optimizer).__name__} updates; pass the model the optimizer was built from"
        )
    ledger = _Ledger(params, [names_by_id[id(p)] for p in params])
    audit = _Audit(ledger, model, batches, accumulation_steps, loss_fn)
    audit.updates.options = (check_update, rtol, atol)
    snapshot = adapter.Snapshot(model, optimizer)
    handles: list[Any] = []
    try:
        for p in params:
            p.grad = None  # the check starts from a clean slate; restored below
        handles = [p.register_hook(ledger.hook_for(i)) for i, p in enumerate(params)]
        handles += adapter.add_step_hooks(optimizer, audit.before_step, audit.after_step)
        for index, batch in enumerate(batches):
            ledger.batch = index
            _run_one(step, batch, index)
            _raise_on_non_finite(ledger, index)
            audit.finish_batch()
    finally:
        adapter.remove_handles(handles)
        snapshot.restore()
    if audit.report.steps == 0:
        raise ValueError(
            f"optimizer.step() never ran during {len(batches)} batches with "
            f"accumulation_steps={accumulation_steps}; pass at least accumulation_steps batches "
            "and make sure the step function calls optimizer.step()"
        )
    audit.report.batches = len(batches)
    if raise_on_failure and not audit.report.passed:
        raise TrainingStepError(audit.report)
    return audit.report


def _validate(step: Any, batches: Iterable[Any], k: int) -> list[Any]:
    if not callable(step):
        raise TypeError(f"step must be a callable taking one batch, got {type(step).__name__}")
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"accumulation_steps must be a positive int, got {k!r}")
    batches = list(batches)
    if not batches:
        raise ValueError("batches is empty; pass a few batches (at least accumulation_steps + 1)")
    return batches


def _run_one(step: Callable[[Any], Any], batch: Any, index: int) -> None:
    try:
        step(batch)
    except Exception as exc:
        raise RuntimeError(
            f"step(batch) raised {type(exc).__name__} on batch {index}: {exc} "
            "(the model and optimizer were restored)"
        ) from exc


def _raise_on_non_finite(ledger: _Ledger, index: int) -> None:
    bad = [name for batch, name in ledger.non_finite if batch == index]
    for name, p in zip(ledger.names, ledger.params):
        if not np.all(np.isfinite(adapter.as_numpy(p))):
            bad.append(f"{name} (its values)")
    if bad:
        raise FloatingPointError(
            f"non-finite gradient or parameter at batch {index}: {', '.join(sorted(set(bad)))}; "
            "check the inputs, the loss and the learning rate before checking accumulation"
        )


class _Audit:
    """Optimizer step hooks that compare the gradient present at ``step()`` with the ledger."""

    def __init__(
        self, ledger: _Ledger, model: Any, batches: Sequence[Any], k: int, loss_fn: Any
    ) -> None:
        self.ledger = ledger
        self.batches = batches
        self.k = k
        self.loss_fn = loss_fn
        self.clone = copy.deepcopy(model) if loss_fn is not None else None
        self.report = TrainingStepReport()
        self.grads_at_step: list[np.ndarray | None] = []
        self.values_at_step: list[np.ndarray] = []
        self.updates = UpdateCheck(ledger.params, self.report)
        self.averaged = distributed.averages_gradients(model)  # DDP: .grad is the ranks' mean

    def before_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        ledger = self.ledger
        closure = callable(kwargs.get("closure")) or any(callable(a) for a in args[1:])
        self._report_mismatches(self.updates.capture(optimizer, ledger.seq, ledger.batch, closure))
        self.grads_at_step = [
            None if p.grad is None else adapter.as_numpy(p.grad) for p in ledger.params
        ]
        # NOTE: only gradients that reach step() must be finite; a loss scaler's overflowing
        # passes are legitimate as long as it skips the step, as GradScaler does
        for name, grad in zip(ledger.names, self.grads_at_step):
            if grad is not None and not np.all(np.isfinite(grad)):
                ledger.non_finite.append((ledger.batch, name))
        self.values_at_step = [adapter.as_numpy(p) for p in ledger.params]
        ledger.in_step, ledger.step_started_at = True, ledger.seq
        ledger.reused_in_closure = []

    def after_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        ledger = self.ledger
        ledger.in_step = False
        self.report.steps += 1
        if ledger.seq > ledger.step_started_at:  # a closure ran backward inside step()
            self.updates.skip("a closure step evaluates the loss several times inside step(), "
                              "so no single gradient determines its update")
            self._judge_closure_step()
        else:
            self._judge_step()

    def finish_batch(self) -> None:
        """Judge the pending update once the batch's ``step(batch)`` call has returned."""
        self._report_mismatches(self.updates.verify())

    def _report_mismatches(self, mismatches: list[tuple[int, int, str]]) -> None:
        for index, batch, message in mismatches:
            self._add("update_mismatch", index, message, batch=batch)

    def _judge_closure_step(self) -> None:
        for index in sorted(set(self.ledger.reused_in_closure)):
            self._add("stale_gradients", index, (
                "the closure's backward() added to gradients left from before this step(); "
                "call optimizer.zero_grad() at the top of the closure"
            ))

    def _judge_step(self) -> None:
        ledger, batch, k = self.ledger, self.ledger.batch, self.k
        window = set(range(max(0, batch - k + 1), batch + 1))
        clean = []
        start = len(self.report.problems)
        for index, grad in enumerate(self.grads_at_step):
            produced = window & ledger.history[index]
            if not produced:
                continue  # the window's batches do not reach this parameter
            used = [b for b, _, _ in ledger.pending[index]]
            if grad is None or not np.any(grad):
                state = "None" if grad is None else "all zeros"
                self._add("wiped_gradients", index, (
                    f"the gradient was {state} at optimizer.step() although backward() ran on "
                    f"batch(es) {sorted(produced)}; something zeroed it between backward() and "
                    "step(): move zero_grad() before backward() or after step()"
                ))
            elif min(used, default=batch) < min(window):
                earlier = sorted({b for b in used if b < min(window)})
                self._add("stale_gradients", index, (
                    f"the update includes gradients of earlier batch(es) {earlier}; call "
                    "optimizer.zero_grad() once per update, right after optimizer.step()"
                ))
            elif produced - set(used) and k == 1:
                self._add("wiped_gradients", index, (
                    f"the update ignores batch {batch}: its gradient was reset before step(); "
                    "move zero_grad() before backward() or after step()"
                ))
            elif produced - set(used):
                kept = sorted(produced & set(used))
                self._add("discarded_accumulation", index, (
                    f"the update uses {len(kept)} of {len(produced)} micro-batches (batches "
                    f"{kept} of {sorted(produced)}); a zero_grad() inside the accumulation "
                    "window discards the earlier ones: call it only after step()"
                ))
            else:
                clean.append(index)
        flagged = {p.parameter for p in self.report.problems[start:]}
        self.updates.plan(  # what the replay of this update starts from
            [i for i, name in enumerate(ledger.names) if name not in flagged],
            {i: expected for i, expected in enumerate(self._expected_gradients()) if i in clean},
        )
        repeated = self.updates.pending is not None and self.updates.pending.steps > 1
        # NOTE: a second step() on the same gradients moved the weights the fresh mean is
        # computed at; the scale cannot be judged then (the repeat is reported on its own).
        if self.loss_fn is not None and clean and len(window) == k and not repeated:
            self._judge_scale(clean, sorted(window))

    def _expected_gradients(self) -> list[np.ndarray]:
        """Each parameter's window contributions summed; under DDP, averaged over the ranks."""
        sums = [
            sum((v for _, _, v in pending), np.zeros(np.shape(adapter.as_numpy(p))))
            for p, pending in zip(self.ledger.params, self.ledger.pending)
        ]
        return distributed.mean_over_ranks(sums) if self.averaged else sums

    def _judge_scale(self, indices: list[int], window: list[int]) -> None:
        expected = self._fresh_mean_gradient(window)
        for index in indices:
            want, got = expected[index], self.grads_at_step[index]
            if want is None or got is None or not np.any(want):
                continue
            norm = float(np.vdot(want, want))
            ratio = float(np.vdot(got, want)) / norm
            if self.k > 1 and abs(ratio - self.k) <= _UNSCALED_TOLERANCE * self.k:
                self._add("unscaled_accumulation", index, (
                    f"the gradient is {ratio:.3g}x the mean over the {self.k} micro-batches; "
                    f"divide each micro-batch loss by accumulation_steps={self.k} before backward()"
                ))

    def _fresh_mean_gradient(self, window: list[int]) -> list[np.ndarray | None]:
        """Mean over the window of fresh ``loss_fn`` gradients on a clone at the step's values."""
        clone_params = dict(adapter.named_parameters(self.clone))
        targets = [clone_params[name] for name in self.ledger.names]
        for target, value in zip(targets, self.values_at_step):
            adapter.write_values(target, value)
        total: list[np.ndarray | None] = [None] * len(targets)
        for b in window:
            for target in targets:
                target.grad = None
            self.loss_fn(self.clone, self.batches[b]).backward()
            for i, target in enumerate(targets):
                if target.grad is not None:
                    g = adapter.as_numpy(target.grad) / len(window)
                    total[i] = g if total[i] is None else total[i] + g
        return total

    def _add(self, kind: str, index: int, message: str, batch: int | None = None) -> None:
        batch = self.ledger.batch if batch is None else batch
        problem = StepProblem(kind, batch, self.ledger.names[index], message)
        self.report.problems.append(problem)
