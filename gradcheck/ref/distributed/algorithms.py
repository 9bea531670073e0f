"""``torch.distributed.algorithms``: activation-checkpoint wrappers (recomputation gives the
same values, so the wrapped module runs as it is), ``Join`` for uneven inputs (one rank has
nobody to wait for), the DDP communication hooks (``comm_hooks.py``) and model averagers.
"""
from __future__ import annotations

import contextlib
import enum
import types
import warnings
from typing import Any


class CheckpointImpl(enum.Enum):
    REENTRANT = 1
    NO_REENTRANT = 2


def checkpoint_wrapper(module: Any, checkpoint_impl: Any = CheckpointImpl.NO_REENTRANT,
                       checkpoint_fn: Any = None, **kwargs: Any) -> Any:
    return module


CheckpointWrapper = checkpoint_wrapper


def apply_activation_checkpointing(model: Any, checkpoint_wrapper_fn: Any = checkpoint_wrapper,
                                   check_fn: Any = lambda _: True,
                                   auto_wrap_policy: Any = None) -> None:
    """Checkpointing changes memory, not values: nothing to change here."""


_checkpoint = types.SimpleNamespace(checkpoint_wrapper=types.SimpleNamespace(
    checkpoint_wrapper=checkpoint_wrapper, CheckpointWrapper=CheckpointWrapper,
    CheckpointImpl=CheckpointImpl, apply_activation_checkpointing=apply_activation_checkpointing))


class Join(contextlib.AbstractContextManager):
    def __init__(self, joinables: list, enable: bool = True, throw_on_early_termination: bool =
                 False, **kwargs: Any) -> None:
        self.joinables = joinables

    def __exit__(self, *exc: Any) -> None:
        return None


join = types.SimpleNamespace(Join=Join)


from gradcheck.ref.distributed.comm_hooks import ddp_comm_hooks  # noqa: E402,F401


class ModelAverager:
    """Counts steps; subclasses decide when to average the parameters over the ranks."""

    def __init__(self, process_group: Any = None) -> None:
        from gradcheck.ref.distributed import _require_group, group

        _require_group()
        self.process_group = process_group if process_group is not None else group.WORLD
        self.step = 0

    def average_parameters(self, params: Any) -> None:
        raise NotImplementedError


class PeriodicModelAverager(ModelAverager):
    """Average every ``period`` steps after ``warmup_steps``; over one rank the average of
    each parameter is the parameter, so only the step count moves."""

    def __init__(self, period: int, warmup_steps: int = 0, process_group: Any = None) -> None:
        if warmup_steps < 0:
            raise ValueError("Arg ``warmup_steps`` must be a non-negative number.")
        if period < 1:
            raise ValueError("Arg ``period`` must be a positive value.")
        if period == 1:
            warnings.warn("When period is 1, no need to use model averaging because the "
                          "communication cost of all-reducing parameters will be no less "
                          "than the cost of all-reducing gradients by DistributedDataParallel "
                          "in the backward pass. Therefore, only DistributedDataParallel "
                          "should be used for this case.", stacklevel=2)
        super().__init__(process_group)
        self.warmup_steps, self.period = warmup_steps, period

    def average_parameters(self, params: Any) -> None:
        self.step += 1


def _install_model_averaging() -> None:
    import sys

    package = types.ModuleType(f"{__name__}.model_averaging")
    averagers = types.ModuleType(f"{__name__}.model_averaging.averagers")
    averagers.ModelAverager, averagers.PeriodicModelAverager = ModelAverager, \
        PeriodicModelAverager
    package.averagers = averagers
    sys.modules[package.__name__], sys.modules[averagers.__name__] = package, averagers
    globals()["model_averaging"] = package


_install_model_averaging()
