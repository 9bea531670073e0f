"""A Lightning ``Callback`` that guards the trainer's optimizers.

    trainer = Trainer(callbacks=[GradcheckCallback()])

Automatic optimization takes ``accumulation_steps`` from ``accumulate_grad_batches``, so
Lightning's own accumulation is never reported; manual optimization accumulates however the
module's ``training_step`` is written, so pass ``accumulation_steps`` for it. With
``action="raise"`` the first problem stops ``trainer.fit``; with ``"warn"`` the report is
printed when training ends and kept in ``callback.report``.

Importing this module imports Lightning (``lightning`` or ``pytorch_lightning``).
"""
from __future__ import annotations

from typing import Any

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:  # the older package name
    from pytorch_lightning.callbacks import Callback

from gradcheck.runtime import session as sessions


class GradcheckCallback(Callback):
    """Guard every optimizer of the ``Trainer`` from ``on_train_start`` to ``on_train_end``."""

    def __init__(self, action: str = "raise", accumulation_steps: int | None = None) -> None:
        self.session = sessions.GuardSession(accumulation_steps, action)  # checks the options
        self.action, self.accumulation_steps = action, accumulation_steps
        self.report = ""

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        k = self.accumulation_steps
        if k is None and pl_module.automatic_optimization:
            k = int(trainer.accumulate_grad_batches)
        self.session = sessions.GuardSession(k, self.action)  # a fresh one for every fit
        session = sessions.active() or self.session
        if session is self.session:
            session.see_module_resets()
        for optimizer in trainer.optimizers:
            session.watch(optimizer, k)
        # NOTE: Lightning's optimizer wrappers copied each optimizer's __dict__ before this hook
        # ran, so they miss the guard's zero_grad; hand it to them
        for wrapper in getattr(trainer.strategy, "_lightning_optimizers", []):
            inner = getattr(wrapper, "_optimizer", None)
            if inner is not None and "zero_grad" in vars(inner):
                wrapper.zero_grad = inner.zero_grad

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self.report = self.session.finish()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self.session.finish()  # take the hooks off; the exception says what went wrong
