"""Loading a distributed checkpoint without knowing its keys, and converting between the
two checkpoint formats: ``state_dict_loader._load_state_dict`` (and ``_from_keys``),
``format_utils`` (``_EmptyStateDictLoadPlanner``, ``dcp_to_torch_save``,
``torch_save_to_dcp``), ``api.CheckpointException`` and ``state_dict._init_optim_state``.
With one rank the checkpoint is the engine's one file (see ``checkpoint``), so an empty
state dict loaded with the empty planner receives every saved entry.

>>> import gradcheck.ref as torch
>>> optimizer = torch.optim.Adam([torch.nn.Parameter(torch.ones(2))])
>>> _init_optim_state(optimizer)
>>> sorted(optimizer.state_dict()["state"][0])
['exp_avg', 'exp_avg_sq', 'step']
"""
from __future__ import annotations

import os
import traceback
from typing import Any

import importlib

checkpoint = importlib.import_module(f"{__package__}.checkpoint")


class _EmptyStateDictLoadPlanner(checkpoint.DefaultLoadPlanner):
    """Load every entry of the checkpoint into an empty state dict (``keys`` limits them)."""

    def __init__(self, keys: Any = None, *args: Any, **kwargs: Any) -> None:
        self.keys = keys
        super().__init__(*args, **kwargs)


def _load_state_dict(state_dict: dict, storage_reader: Any, process_group: Any = None,
                     coordinator_rank: int = 0, no_dist: bool = False,
                     planner: Any = None) -> None:
    """``load`` with the reader and planner given positionally (torch's internal entry)."""
    checkpoint.load(state_dict, storage_reader=storage_reader, planner=planner,
                    process_group=process_group, no_dist=no_dist)
    keys = getattr(planner, "keys", None)
    if keys is not None:
        for key in [k for k in state_dict if k not in keys]:
            del state_dict[key]


def _load_state_dict_from_keys(keys: set | str | None = None, *, checkpoint_id: Any = None,
                               storage_reader: Any = None, process_group: Any = None) -> dict:
    """The checkpoint's entries (only ``keys`` when given), loaded into this process."""
    if isinstance(keys, str):
        keys = {keys}
    if storage_reader is None:
        storage_reader = checkpoint.FileSystemReader(checkpoint_id)
    loaded: dict = {}
    _load_state_dict(loaded, storage_reader, process_group, no_dist=True,
                     planner=_EmptyStateDictLoadPlanner(keys=keys))
    return loaded


def dcp_to_torch_save(dcp_checkpoint_dir: str | os.PathLike,
                      torch_save_path: str | os.PathLike) -> None:
    """Write the distributed checkpoint in ``dcp_checkpoint_dir`` as one ``torch.save`` file."""
    from gradcheck.ref.serialization import save

    save(_load_state_dict_from_keys(checkpoint_id=dcp_checkpoint_dir), torch_save_path)


def torch_save_to_dcp(torch_save_path: str | os.PathLike,
                      dcp_checkpoint_dir: str | os.PathLike) -> None:
    """Write a ``torch.save`` file as a distributed checkpoint in ``dcp_checkpoint_dir``."""
    from gradcheck.ref.serialization import load

    state_dict = load(torch_save_path, weights_only=False)
    checkpoint.save(state_dict, checkpoint_id=dcp_checkpoint_dir, no_dist=True)


class CheckpointException(BaseException):
    """Failures of a distributed save or load, one (exception, traceback) pair per rank."""

    def __init__(self, msg: str, failures: dict) -> None:
        super().__init__(msg, failures)
        self._failures = failures

    @property
    def failures(self) -> dict:
        return self._failures

    def __str__(self) -> str:
        text = f"CheckpointException ranks:{self._failures.keys()}\n"
        for rank, (error, trace) in self._failures.items():
            text += f"Traceback (most recent call last): (RANK {rank})\n"
            if trace is not None:
                text += "".join(traceback.format_list(trace))
            text += "".join(traceback.format_exception_only(type(error), error))
        return text


def _init_optim_state(optim: Any) -> None:
    """Create the optimizer's state with one step of zero gradients and learning rate 0
    (torch's way of making a fresh optimizer's state dict complete before loading)."""
    from gradcheck.ref import tensor, zeros_like
    from gradcheck.ref.tensors import Tensor

    if optim.state:
        return
    params = [p for group in optim.param_groups for p in group["params"]]
    if any(p.grad is not None for p in params):
        return
    for param in params:
        if param.requires_grad:
            param.grad = zeros_like(param)
    rates = []
    for group in optim.param_groups:
        if "lr" in group:
            rates.append(group["lr"])
            group["lr"] = tensor(0.0) if isinstance(group["lr"], Tensor) else 0.0
    optim.step(closure=None)
    for group in optim.param_groups:
        if "lr" in group:
            group["lr"] = rates.pop(0)
    optim.zero_grad(set_to_none=True)


def install() -> None:
    import importlib
    import types

    checkpoint.format_utils = types.SimpleNamespace(
        _EmptyStateDictLoadPlanner=_EmptyStateDictLoadPlanner, _load_state_dict=_load_state_dict,
        dcp_to_torch_save=dcp_to_torch_save, torch_save_to_dcp=torch_save_to_dcp)
    checkpoint.state_dict_loader = types.SimpleNamespace(
        load=checkpoint.load, load_state_dict=checkpoint.load_state_dict,
        _load_state_dict=_load_state_dict, _load_state_dict_from_keys=_load_state_dict_from_keys)
    checkpoint.api = types.SimpleNamespace(CheckpointException=CheckpointException)
    importlib.import_module(f"{__package__}.checkpoint_metadata").install(checkpoint)
    checkpoint.CheckpointException = CheckpointException
    checkpoint.state_dict._init_optim_state = _init_optim_state
