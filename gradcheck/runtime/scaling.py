"""Clipping gradients a ``GradScaler`` still holds scaled: a norm measured ``scale`` times too big.

Between ``scaler.scale(loss).backward()`` and ``scaler.step(optimizer)`` every gradient is
multiplied by the scaler's scale (65536 at first). ``clip_grad_norm_(params, max_norm)`` there
compares that inflated norm with ``max_norm``, so it clips almost every step, by the wrong
factor; ``clip_grad_value_`` clips at a bound ``scale`` times too small. AMP's recipe calls
``scaler.unscale_(optimizer)`` first. Torch records whether it did, per optimizer, in the
scaler's per-optimizer state; this module reads that state when a clip function runs.

>>> watch = ScaledClipping(lambda finding: None)
>>> watch.check("clip_grad_norm_", [], ledger=None)  # no scaler has scaled anything
"""
from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from typing import Any

from gradcheck.runtime.findings import GuardFinding, user_location
from gradcheck.runtime.messages import message

CLIP_FUNCTIONS = ("clip_grad_norm_", "clip_grad_value_")


class ScaledClipping:
    """Scalers that scaled a loss since their last ``update()``; clip calls judged against them."""

    def __init__(self, sink: Callable[[GuardFinding], None]) -> None:
        self.sink = sink
        self.scaling: weakref.WeakSet = weakref.WeakSet()

    def scaled(self, scaler: Any) -> None:
        if getattr(scaler, "_enabled", True):
            self.scaling.add(scaler)

    def updated(self, scaler: Any) -> None:
        self.scaling.discard(scaler)

    def check(self, function: str, params: list[Any], ledger: Any) -> None:
        """Before a clip function runs on ``params``: are their gradients still scaled?"""
        if not self.scaling:
            return
        optimizers = _optimizers_of(params, ledger)
        for scaler in list(self.scaling):
            stale = [o for o in optimizers if _still_scaled(scaler, o)]
            if stale:
                self.sink(self._finding(function, scaler, stale[0]))
                return

    def _finding(self, function: str, scaler: Any, state: Any) -> GuardFinding:
        scale = float(scaler.get_scale())
        effect = ("measured a norm that many times too large" if function == "clip_grad_norm_"
                  else "compared every element with a bound that many times too small")
        text = message("unscaled_clipping", function=function, scale=scale, effect=effect)
        return GuardFinding("unscaled_clipping", state.name, f"{function}()", user_location(),
                            text)


def _optimizers_of(params: list[Any], ledger: Any) -> list[Any]:
    found: dict[int, Any] = {}
    for param in params:
        slot = ledger.slot_of.get(id(param))
        if slot is not None and ledger.params[slot]() is param:
            for state in ledger.owners[slot]:
                found.setdefault(id(state), state)
    return list(found.values())


def _still_scaled(scaler: Any, state: Any) -> bool:
    """The scaler scaled a loss, and has not unscaled this optimizer's gradients since."""
    grad_scaler = sys.modules.get("torch.amp.grad_scaler")
    states = getattr(scaler, "_per_optimizer_states", None)
    if grad_scaler is None or states is None:
        return False
    record = states.get(id(state.optimizer)) if hasattr(states, "get") else None
    stage = record["stage"] if record else grad_scaler.OptState.READY
    return stage is grad_scaler.OptState.READY
