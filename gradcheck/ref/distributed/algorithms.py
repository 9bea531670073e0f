"""``torch.distributed.algorithms``: activation-checkpoint wrappers (recomputation gives the
same values, so the wrapped module runs as it is), ``Join`` for uneven inputs (one rank has
nobody to wait for) and the DDP communication hooks (nothing to compress over one rank).
"""
from __future__ import annotations

import contextlib
import enum
import types
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


def fp16_compress_hook(process_group: Any, bucket: Any) -> Any:
    raise NotImplementedError("DDP communication hooks are not available in gradcheck.ref: "
                              "one rank exchanges no gradients")


ddp_comm_hooks = types.SimpleNamespace(default_hooks=types.SimpleNamespace(
    fp16_compress_hook=fp16_compress_hook, allreduce_hook=fp16_compress_hook))
ddp_comm_hooks.default = ddp_comm_hooks.default_hooks
