"""``torch.distributed.checkpoint``: with one rank, a distributed checkpoint is an ordinary
one. ``save``/``load`` write and read the state dict in one file under the checkpoint
folder; the ``state_dict`` helpers are the module's and optimizer's own state dicts.

>>> import gradcheck.ref as torch
>>> model = torch.nn.Linear(2, 1)
>>> sorted(state_dict.get_model_state_dict(model))
['bias', 'weight']
"""
from __future__ import annotations

import dataclasses
import os
import types
from typing import Any

_FILE = "gradcheck_ref_checkpoint.pt"


@dataclasses.dataclass
class StateDictOptions:
    full_state_dict: bool = False
    cpu_offload: bool = False
    ignore_frozen_params: bool = False
    keep_submodule_prefixes: bool = True
    strict: bool = True
    broadcast_from_rank0: bool = False
    flatten_optimizer_state_dict: bool = False


def get_model_state_dict(model: Any, *, submodules: Any = None,
                         options: StateDictOptions | None = None) -> dict:
    return model.state_dict()


def get_optimizer_state_dict(model: Any, optimizers: Any, *, submodules: Any = None,
                             options: StateDictOptions | None = None) -> dict:
    return optimizers.state_dict()


def get_state_dict(model: Any, optimizers: Any, **kwargs: Any) -> tuple:
    return model.state_dict(), optimizers.state_dict()


def set_model_state_dict(model: Any, model_state_dict: dict, *,
                         options: StateDictOptions | None = None) -> Any:
    strict = True if options is None else options.strict
    return model.load_state_dict(model_state_dict, strict=strict)


def set_optimizer_state_dict(model: Any, optimizers: Any, optim_state_dict: dict, *,
                             options: StateDictOptions | None = None) -> None:
    optimizers.load_state_dict(optim_state_dict)


def set_state_dict(model: Any, optimizers: Any, *, model_state_dict: dict,
                   optim_state_dict: dict, options: StateDictOptions | None = None) -> Any:
    set_optimizer_state_dict(model, optimizers, optim_state_dict, options=options)
    return set_model_state_dict(model, model_state_dict, options=options)


state_dict = types.SimpleNamespace(
    StateDictOptions=StateDictOptions, get_model_state_dict=get_model_state_dict,
    get_optimizer_state_dict=get_optimizer_state_dict, get_state_dict=get_state_dict,
    set_model_state_dict=set_model_state_dict,
    set_optimizer_state_dict=set_optimizer_state_dict, set_state_dict=set_state_dict)


class FileSystemWriter:
    def __init__(self, path: str, *args: Any, **kwargs: Any) -> None:
        self.path = os.fspath(path)


class FileSystemReader:
    def __init__(self, path: str, *args: Any, **kwargs: Any) -> None:
        self.path = os.fspath(path)


class DefaultSavePlanner:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass


DefaultLoadPlanner = DefaultSavePlanner
default_planner = types.SimpleNamespace(DefaultSavePlanner=DefaultSavePlanner,
                                        DefaultLoadPlanner=DefaultLoadPlanner)


def _folder(storage_writer: Any, checkpoint_id: Any) -> str:
    folder = checkpoint_id if checkpoint_id is not None else storage_writer.path
    return os.fspath(folder)


def save(state_dict: dict, *, checkpoint_id: Any = None, storage_writer: Any = None,
         planner: Any = None, process_group: Any = None, no_dist: bool = False) -> None:
    """Write ``state_dict`` (nested dicts of tensors and values) under the folder."""
    from gradcheck.ref.serialization import save as save_file

    folder = _folder(storage_writer, checkpoint_id)
    os.makedirs(folder, exist_ok=True)
    save_file(state_dict, os.path.join(folder, _FILE))


def load(state_dict: dict, *, checkpoint_id: Any = None, storage_reader: Any = None,
         planner: Any = None, process_group: Any = None, no_dist: bool = False) -> None:
    """Fill ``state_dict`` in place from the folder (tensors copied into the given ones)."""
    from gradcheck.ref.serialization import load as load_file

    saved = load_file(os.path.join(_folder(storage_reader, checkpoint_id), _FILE))
    _fill(state_dict, saved)


def _fill(target: dict, saved: dict) -> None:
    from gradcheck.ref import no_grad
    from gradcheck.ref.tensors import Tensor

    for key, value in saved.items():
        current = target.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            _fill(current, value)
        elif isinstance(current, Tensor) and isinstance(value, Tensor):
            with no_grad():
                current.copy_(value)
        else:
            target[key] = value


save_state_dict, load_state_dict = save, load


def _install_loading() -> None:
    import importlib

    # NOTE: imported by name: the package's __getattr__ would answer with a placeholder
    importlib.import_module(f"{__package__}.checkpoint_loading").install()


_install_loading()
