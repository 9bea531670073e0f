"""A Hugging Face ``TrainerCallback`` that guards the ``Trainer``'s optimizer.

    trainer = Trainer(model, args, train_dataset=data, callbacks=[GradcheckTrainerCallback()])

``accumulation_steps`` comes from ``TrainingArguments.gradient_accumulation_steps``, so the
Trainer's own accumulation is never reported. With ``action="raise"`` the first problem stops
``trainer.train()``; with ``"warn"`` the report is printed when training ends and kept in
``callback.report``.

Importing this module imports transformers.
"""
from __future__ import annotations

from typing import Any

from transformers import TrainerCallback

from gradcheck.runtime import session as sessions


class GradcheckTrainerCallback(TrainerCallback):
    """Guard the optimizer from ``on_train_begin`` to ``on_train_end``."""

    def __init__(self, action: str = "raise") -> None:
        self.session = sessions.GuardSession(None, action)  # checks the option
        self.action = action
        self.report = ""

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        optimizer = kwargs.get("optimizer")
        if optimizer is None:
            raise ValueError(
                "GradcheckTrainerCallback got no optimizer in on_train_begin; it needs a "
                "transformers.Trainer, which creates the optimizer before training starts"
            )
        self.session = sessions.GuardSession(None, self.action)  # a fresh one for every run
        session = sessions.active() or self.session
        if session is self.session:
            session.see_module_resets()
        session.watch(optimizer, int(args.gradient_accumulation_steps))

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.report = self.session.finish()
