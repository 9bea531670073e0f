"""``torch.optim.swa_utils``: ``AveragedModel`` (a running average, or EMA, of a model's
parameters), ``SWALR`` (anneal to a constant SWA learning rate) and ``update_bn``.

Example:
    >>> import gradcheck.ref as torch
    >>> model = torch.nn.Linear(1, 1, bias=False)
    >>> swa = AveragedModel(model)
    >>> with torch.no_grad(): _ = model.weight.fill_(2.0)
    >>> swa.update_parameters(model); swa.module.weight.item()
    2.0
"""
from __future__ import annotations

import copy
import math
from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.nn.module import Module
from gradcheck.ref.optim.lr_scheduler import LRScheduler


def get_ema_multi_avg_fn(decay: float = 0.999):
    def ema_update(averaged: list, current: list, num_averaged: Any) -> None:
        for a, c in zip(averaged, current):
            a.lerp_(c, 1 - decay)

    return ema_update


def get_swa_multi_avg_fn():
    """Equal-weight running means of lists of tensors, in place."""

    def swa_update(averaged: list, current: list, num_averaged: Any) -> None:
        for a, c in zip(averaged, current):
            a.add_((c - a) / (num_averaged + 1))

    return swa_update


def get_swa_avg_fn():
    """The equal-weight running mean: a + (c - a) / (n + 1) after n averaged models."""

    def swa_update(averaged: Any, current: Any, num_averaged: Any) -> Any:
        return averaged + (current - averaged) / (num_averaged + 1)

    return swa_update


def get_ema_avg_fn(decay: float = 0.999):
    def ema_update(averaged: Any, current: Any, num_averaged: Any) -> Any:
        return decay * averaged + (1 - decay) * current

    return ema_update


class AveragedModel(Module):
    """A deep copy of ``model`` whose parameters average those of ``model`` over calls to
    ``update_parameters`` (equal weights by default, or ``avg_fn``/``multi_avg_fn``)."""

    def __init__(self, model: Module, device: Any = None, avg_fn: Any = None,
                 multi_avg_fn: Any = None, use_buffers: bool = False) -> None:
        super().__init__()
        self.module = copy.deepcopy(model)
        self.register_buffer("n_averaged", torch.tensor(0, dtype=torch.long))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def _tensors(self, model: Module) -> list:
        if self.use_buffers:
            return list(model.parameters()) + list(model.buffers())
        return list(model.parameters())

    def update_parameters(self, model: Module) -> None:
        mine, theirs = self._tensors(self.module), self._tensors(model)
        count = int(self.n_averaged.item())
        with torch.no_grad():
            for a, c in zip(mine, theirs):
                c = c.detach()
                if count == 0:
                    a.copy_(c)
                elif self.multi_avg_fn is not None:
                    continue
                elif self.avg_fn is not None:
                    a.copy_(self.avg_fn(a, c, self.n_averaged))
                else:
                    a.add_((c - a) / (count + 1))
            if count > 0 and self.multi_avg_fn is not None:
                self.multi_avg_fn(mine, [c.detach() for c in theirs], self.n_averaged)
        if not self.use_buffers:  # keep batch-norm statistics in step with the model
            for a, c in zip(self.module.buffers(), model.buffers()):
                a.copy_(c.detach())
        self.n_averaged += 1


class SWALR(LRScheduler):
    """Anneal each group's lr to ``swa_lr`` over ``anneal_epochs`` (cos or linear)."""

    def __init__(self, optimizer: Any, swa_lr: float | list, anneal_epochs: int = 10,
                 anneal_strategy: str = "cos", last_epoch: int = -1) -> None:
        swa_lrs = swa_lr if isinstance(swa_lr, (list, tuple)) else \
            [swa_lr] * len(optimizer.param_groups)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must by one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_strategy, self.anneal_epochs = anneal_strategy, anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _anneal(self, t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2 if self.anneal_strategy == "cos" else t

    def get_lr(self) -> list[float]:
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self._anneal(prev_t)
        prev_lrs = [self._pre_anneal_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self._anneal(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    @staticmethod
    def _pre_anneal_lr(lr: float, swa_lr: float, alpha: float) -> float:
        return lr if alpha == 1 else (lr - alpha * swa_lr) / (1 - alpha)


def update_bn(loader: Any, model: Module, device: Any = None) -> None:
    """Recompute batch-norm running statistics with one pass over ``loader`` (cumulative
    averages: momentum None), as torch does after SWA."""
    momenta = {}
    for module in model.modules():
        if hasattr(module, "running_mean") and module.running_mean is not None:
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)
