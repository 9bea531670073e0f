"""Replay of one optimizer update on copies, to judge what ``step()`` did with its gradient.

``check_training_step`` captures, when ``step()`` starts, the parameter values, their gradients
and the optimizer's state. Later (when the batch ends, or when the next update starts) it builds
a fresh optimizer of the same class over detached copies, loads the captured state, hands the
copies the *expected* gradient and steps once. The real parameters must then equal the copies;
if they do not, something other than one update moved them: a second ``step()`` on the same
gradients, or a write to the parameters after the step.

>>> import gradcheck.ref as torch
>>> model = torch.nn.Linear(2, 1)
>>> opt = torch.optim.SGD(model.parameters(), lr=0.1)
>>> model(torch.ones(1, 2)).sum().backward()
>>> capture = UpdateCapture(opt, seq=0)
>>> opt.step()
>>> after = capture.replay({})
>>> bool(np.allclose(after[0], as_numpy(model.weight)))
True
"""
from __future__ import annotations

import copy
from typing import Any

import numpy as np

from gradcheck.runtime.adapter import as_numpy, optimizer_parameters, write_values

# relative distance allowed between the gradient at step() and (factor x) the window's sum
_RESCALE_TOLERANCE = 1e-4


class ReplayUnavailable(Exception):
    """The update cannot be replayed; the message is the reason, kept in the report."""


class UpdateCapture:
    """Everything one ``step()`` started from: values, gradients and optimizer state."""

    def __init__(self, optimizer: Any, seq: int) -> None:
        self.optimizer = optimizer
        self.seq = seq  # the ledger's pass counter when captured: new passes mean a new update
        self.steps = 1  # step() calls absorbed by this capture (more than one is a repeat)
        self.params = optimizer_parameters(optimizer)
        self.before = [as_numpy(p) for p in self.params]
        self.copies = [_leaf_copy(p) for p in self.params]
        self.grads = [None if p.grad is None else p.grad.detach().clone() for p in self.params]
        self.state = copy.deepcopy(optimizer.state_dict())

    def replay(self, gradients: dict[int, np.ndarray]) -> list[np.ndarray]:
        """Values after one update from the captured state; ``gradients`` overrides by index."""
        replica = self._rebuild()
        for index, (target, grad) in enumerate(zip(self.copies, self.grads)):
            if index in gradients and grad is not None:
                grad = grad.detach().clone()
                write_values(grad, gradients[index])
            target.grad = grad
        replica.step()
        return [as_numpy(target) for target in self.copies]

    def _rebuild(self) -> Any:
        by_id = {id(p): c for p, c in zip(self.params, self.copies)}
        groups = [
            {**{k: v for k, v in group.items() if k != "params"},
             "params": [by_id[id(p)] for p in group["params"]]}
            for group in self.optimizer.param_groups
        ]
        try:
            replica = type(self.optimizer)(groups)
            replica.load_state_dict(copy.deepcopy(self.state))
        except Exception as exc:  # a custom optimizer with another constructor
            raise ReplayUnavailable(
                f"{type(self.optimizer).__name__} could not be rebuilt from its param_groups "
                f"({type(exc).__name__}: {exc})"
            ) from exc
        return replica


class UpdateCheck:
    """The replay half of ``check_training_step``: capture at ``step()``, compare afterwards.

    ``params`` are the audited parameters; indices below are positions in that list. Results go
    to ``report`` (``replays``, ``replay_skips``); mismatches come back to the caller as
    ``(index, batch, message)`` so it files them with its other problems.
    """

    def __init__(self, params: list[Any], report: Any) -> None:
        self.params = params
        self.report = report
        self.options: tuple[bool, float, float] = (True, 1e-3, 0.0)  # enabled, rtol, atol
        self.pending: UpdateCapture | None = None
        self.batch = -1
        self.fresh = False
        self.judged: list[int] = []  # parameters whose gradient classification was clean
        self.expected: dict[int, np.ndarray] = {}  # index -> the window's summed gradient

    def capture(
        self, optimizer: Any, seq: int, batch: int, closure: bool
    ) -> list[tuple[int, int, str]]:
        """Called as ``step()`` starts; returns mismatches of the update before it."""
        pending, self.fresh = self.pending, False
        if pending is not None and pending.seq == seq:
            pending.steps += 1  # step() again with no backward(): the same gradient twice
            return []
        mismatches = self.verify()
        if self.options[0] and not closure:
            self.pending = UpdateCapture(optimizer, seq)
            self.batch, self.fresh = batch, True
            self.judged, self.expected = [], {}
        return mismatches

    def plan(self, judged: list[int], expected: dict[int, np.ndarray]) -> None:
        """What to compare and which gradients to use, from a fresh step's classification."""
        if self.fresh:
            self.judged, self.expected = judged, expected

    def skip(self, reason: str) -> None:
        self.pending = None
        if reason not in self.report.replay_skips:
            self.report.replay_skips.append(reason)

    def verify(self) -> list[tuple[int, int, str]]:
        """Compare the parameters now with one replayed update; forget the capture."""
        capture, (_, rtol, atol) = self.pending, self.options
        self.pending = None
        if capture is None or not self.judged:
            return []
        position = {id(p): i for i, p in enumerate(capture.params)}
        at = [position[id(p)] for p in self.params]
        got = [as_numpy(capture.grads[at[i]]) for i in self.expected]
        try:
            factor = common_factor(got, list(self.expected.values()))
            after = capture.replay({at[i]: factor * g for i, g in self.expected.items()})
        except ReplayUnavailable as exc:
            self.skip(str(exc))
            return []
        self.report.replays += 1
        found = []
        for index in self.judged:
            param, j = self.params[index], at[index]
            worst = update_mismatch(capture.before[j], after[j], as_numpy(param), param.dtype,
                                    rtol, atol)
            if worst is not None:
                found.append((index, self.batch, (
                    f"after the batch the parameter is up to {worst:.3g} away from one "
                    f"{type(capture.optimizer).__name__} update on the window's gradients "
                    f"(step() ran {capture.steps} time(s)); call optimizer.step() once per "
                    "update and do not write to parameters after it, or pass "
                    "check_update=False if the write is deliberate"
                )))
        return found


def common_factor(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    """The one factor ``c > 0`` with ``got ~= c * want`` for every pair, else raise.

    Clipping by the global norm and a loss scaler's ``unscale_`` both multiply every gradient by
    one number between ``backward()`` and ``step()``; anything else is not a rescale.

    >>> common_factor([np.array([2.0, 4.0])], [np.array([1.0, 2.0])])
    2.0
    """
    dot = sum(float(np.vdot(g, w)) for g, w in zip(got, want))
    norm = sum(float(np.vdot(w, w)) for w in want)
    if norm == 0.0:
        return 1.0
    factor = dot / norm
    residual = sum(float(np.sum((g - factor * w) ** 2)) for g, w in zip(got, want))
    scale = sum(float(np.vdot(g, g)) for g in got)
    if factor <= 0.0 or residual > (_RESCALE_TOLERANCE**2) * scale:
        raise ReplayUnavailable(
            "the gradient at step() is not the window's gradients times one common factor "
            "(.grad was edited between backward() and step() beyond clipping or unscaling)"
        )
    return 1.0 if abs(factor - 1.0) <= _RESCALE_TOLERANCE else factor


def update_mismatch(
    before: np.ndarray, replayed: np.ndarray, actual: np.ndarray, dtype: Any, rtol: float,
    atol: float,
) -> float | None:
    """The largest ``|actual - replayed|`` when it exceeds the tolerance, else ``None``.

    Each element may differ by ``atol + rtol * max|update|`` plus one unit of rounding of its
    value, so a tiny learning rate does not hide a doubled update.

    >>> update_mismatch(np.zeros(2), np.ones(2), np.full(2, 2.0), "float32", 1e-3, 0.0)
    1.0
    """
    if actual.shape != replayed.shape:
        return float("inf")
    diff = np.abs(actual - replayed)
    update = float(np.max(np.abs(replayed - before), initial=0.0))
    # NOTE: the real and replayed updates may round to neighbouring values: allow one unit in
    # the last place of each value, and no more, so a tiny learning rate still shows a repeat
    allowed = atol + rtol * update + 2.0 * _eps(dtype) * np.abs(before)
    return float(np.max(diff)) if np.any(diff > allowed) else None


def _eps(dtype: Any) -> float:
    """Machine epsilon of a torch or engine dtype (``torch.float32``) or a dtype name."""
    from gradcheck.checks.numeric import dtype_eps  # lazily: one table for the whole project

    return dtype_eps(str(dtype).rsplit(".", 1)[-1])


def _leaf_copy(param: Any) -> Any:
    return param.detach().clone().requires_grad_(True)
