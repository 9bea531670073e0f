"""``ReduceLROnPlateau``: cut the learning rate by ``factor`` once a metric has stopped
improving for more than ``patience`` epochs, then wait ``cooldown`` epochs before counting
again. Unlike the other schedulers it is driven by the metric passed to ``step``.

Example:
    >>> import gradcheck.ref as torch
    >>> opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    >>> sched = ReduceLROnPlateau(opt, patience=1, factor=0.5)
    >>> for loss in (3.0, 3.0, 3.0, 3.0): sched.step(loss)
    >>> sched.get_last_lr()
    [0.5]
"""
from __future__ import annotations

import math
import warnings
from typing import Any

from gradcheck.ref.optim.lr_scheduler import LRScheduler
from gradcheck.ref.optim.optimizer import Optimizer


class ReduceLROnPlateau(LRScheduler):
    """torch's rule: an epoch is better when ``metric < best * (1 - threshold)`` (mode min,
    threshold_mode rel) or the matching max/abs forms; a cut smaller than ``eps`` is skipped.
    An ``LRScheduler`` as in torch, with its own constructor (there is no initial step)."""

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1,
                 patience: int = 10, threshold: float = 1e-4, threshold_mode: str = "rel",
                 cooldown: int = 0, min_lr: float | list = 0, eps: float = 1e-8) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        groups = optimizer.param_groups
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(groups):
                raise ValueError(f"expected {len(groups)} min_lrs, got {len(min_lr)}")
            self.default_min_lr, self.min_lrs = None, list(min_lr)
        else:
            self.default_min_lr, self.min_lrs = min_lr, [min_lr] * len(groups)
        self.optimizer, self.factor, self.patience = optimizer, factor, patience
        self.cooldown, self.eps, self.last_epoch = cooldown, eps, 0
        self._last_lr = [group["lr"] for group in groups]
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in {"min", "max"}:
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in {"rel", "abs"}:
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        self.mode_worse = math.inf if mode == "min" else -math.inf

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def is_better(self, a: float, best: float) -> bool:
        if self.threshold_mode == "rel":
            scale = 1.0 - self.threshold if self.mode == "min" else 1.0 + self.threshold
            return a < best * scale if self.mode == "min" else a > best * scale
        if self.mode == "min":
            return a < best - self.threshold
        return a > best + self.threshold

    _is_better = is_better

    def step(self, metrics: Any, epoch: int | None = None) -> None:
        """Record one epoch's metric (a float or a 0-d tensor) and cut the lr if it is due."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn("passing an epoch to lr_scheduler.step() is deprecated; call step() "
                          "without arguments", UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self.is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The number of param groups in the `optimizer` ({len(groups)}) differs "
                    f"from when `ReduceLROnPlateau` was initialized ({len(self.min_lrs)}); set "
                    "`min_lrs` to one value per param group.")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, min_lr)
            if old_lr - new_lr > self.eps:
                group["lr"] = new_lr

    def get_last_lr(self) -> list[float]:
        return self._last_lr

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)
