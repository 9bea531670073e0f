"""What the guard reads from Lightning, transformers and accelerate, without importing them.

A framework that accumulates gradients itself (Lightning's ``accumulate_grad_batches``,
``TrainingArguments.gradient_accumulation_steps``, ``Accelerator(gradient_accumulation_steps=)``)
steps once every ``k`` backward passes on purpose; the guard must know ``k`` or it would call
that stale. Each reader looks only at modules the program has already imported, and recognises
a framework object by its class, never by a variable name.

>>> accumulation_from_stack() is None  # no trainer is building an optimizer here
True
"""
from __future__ import annotations

import sys
from typing import Any

_LIGHTNING_MODULES = ("lightning.pytorch.core.module", "pytorch_lightning.core.module")


def unwrap_optimizer(optimizer: Any) -> Any:
    """The torch optimizer inside a framework's wrapper (accelerate's, Lightning's)."""
    for _ in range(8):  # wrappers nest a few levels at most
        attributes = getattr(optimizer, "__dict__", {})
        inner = attributes.get("optimizer", attributes.get("_optimizer"))
        if inner is None or inner is optimizer or not hasattr(inner, "param_groups"):
            return optimizer
        optimizer = inner
    return optimizer


def accumulation_from_stack() -> int | None:
    """``k`` of the Lightning or Hugging Face trainer whose code is building an optimizer now.

    Lightning builds optimizers in ``LightningModule.configure_optimizers`` and transformers in
    ``Trainer.create_optimizer``; both run with the framework object as ``self`` on the stack.
    """
    classes = _trainer_classes()
    if not classes:
        return None
    frame = sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self")
        if owner is not None and isinstance(owner, classes):
            return _accumulation_of(owner)
        frame = frame.f_back
    return None


def _trainer_classes() -> tuple[type, ...]:
    found = []
    for name in _LIGHTNING_MODULES:
        module = sys.modules.get(name)
        if module is not None:
            found.append(module.LightningModule)
    trainer = sys.modules.get("transformers.trainer")
    if trainer is not None:
        found.append(trainer.Trainer)
    return tuple(found)


def _accumulation_of(owner: Any) -> int | None:
    if hasattr(owner, "automatic_optimization"):  # a LightningModule
        trainer = getattr(owner, "_trainer", None)
        if trainer is None or not owner.automatic_optimization:
            return None  # manual optimization accumulates however the user writes it
        return int(trainer.accumulate_grad_batches)
    return int(owner.args.gradient_accumulation_steps)


def accelerate_accumulation_steps() -> int | None:
    """``num_steps`` of accelerate's gradient state while it accumulates (``k > 1``), else None."""
    state = sys.modules.get("accelerate.state")
    if state is None or not state.GradientState._shared_state:
        return None
    steps = state.GradientState().num_steps
    return steps if steps > 1 else None
