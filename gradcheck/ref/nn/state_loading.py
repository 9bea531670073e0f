"""``Module.load_state_dict`` as torch runs it: each module's ``_load_from_state_dict`` copies
its own parameters and persistent buffers from the entries under its prefix and reports
missing, unexpected and mismatched keys, then its children do the same with theirs. A
subclass can override ``_load_from_state_dict`` (to rename or convert old keys) and call
``super()._load_from_state_dict``, as code written for torch does.

>>> import gradcheck.ref as torch
>>> layer = torch.nn.Linear(2, 1)
>>> layer.load_state_dict({"weight": torch.ones(1, 2), "bias": torch.zeros(1)})
<All keys matched successfully>
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from gradcheck import ref as torch

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


def load_from_state_dict(module: Any, state_dict: dict, prefix: str, local_metadata: dict,
                         strict: bool, missing_keys: list, unexpected_keys: list,
                         error_msgs: list) -> None:
    """Copy ``module``'s own entries (``prefix`` + name) from ``state_dict``."""
    from gradcheck.ref.nn.lazy import is_lazy

    persistent = {k: v for k, v in module._buffers.items()
                  if k not in module._non_persistent_buffers}
    local_state = {k: v for k, v in [*module._parameters.items(), *persistent.items()]
                   if v is not None}
    assign = local_metadata.get("assign_to_params_buffers", False)
    for name, param in local_state.items():
        key = prefix + name
        if key not in state_dict:
            if strict:
                missing_keys.append(key)
            continue
        value = state_dict[key]
        if not isinstance(value, torch.Tensor):
            error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor '
                              f"or Tensor-like object from checkpoint but received {type(value)}")
            continue
        if is_lazy(param) and not is_lazy(value):
            param.materialize(value.shape)  # torch's lazy modules take the checkpoint's shape
        lazy = is_lazy(param)
        if not lazy and param.dim() == 0 and value.dim() == 1 and value.shape[0] == 1:
            value = value[0]  # checkpoints of old torch kept scalars as one-element vectors
        if not lazy and value.shape != param.shape:
            error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                              f"{value.shape} from checkpoint, the shape in current model is "
                              f"{param.shape}.")
            continue
        _store(module, name, param, value, assign)
    _extra_state(module, state_dict, prefix + _EXTRA_STATE_KEY_SUFFIX, strict, missing_keys,
                 unexpected_keys)
    if strict:
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        for key in state_dict:
            if key.startswith(prefix) and key != extra_key:
                head = key[len(prefix):].split(".", 1)[0]
                if head not in module._modules and head not in local_state:
                    unexpected_keys.append(key)


def _store(module: Any, name: str, param: Any, value: Any, assign: bool) -> None:
    from gradcheck.ref.nn.parameter import Parameter

    if not assign:
        with torch.no_grad():
            param.copy_(value)
    elif name in module._parameters:
        module._parameters[name] = (value if isinstance(value, Parameter)
                                    else Parameter(value, requires_grad=param.requires_grad))
    else:
        module._buffers[name] = value


def _extra_state(module: Any, state_dict: dict, key: str, strict: bool, missing_keys: list,
                 unexpected_keys: list) -> None:
    custom = getattr(type(module), "set_extra_state", None)
    if custom is not None and custom is not getattr(torch.nn.Module, "set_extra_state", None):
        if key in state_dict:
            module.set_extra_state(state_dict[key])
        elif strict:
            missing_keys.append(key)
    elif strict and key in state_dict:
        unexpected_keys.append(key)


def load_state_dict(module: Any, state_dict: Mapping, strict: bool = True,
                    assign: bool = False) -> Any:
    """Load ``state_dict`` into ``module`` and its children; raise on any problem if ``strict``."""
    from gradcheck.ref.nn.module import IncompatibleKeys

    if not isinstance(state_dict, Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
    missing_keys: list = []
    unexpected_keys: list = []
    error_msgs: list = []
    metadata = getattr(state_dict, "_metadata", None)
    state_dict = OrderedDict(state_dict)

    def load(child: Any, local: dict, prefix: str = "") -> None:
        local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
        if assign:
            local_metadata["assign_to_params_buffers"] = assign
        child._load_from_state_dict(local, prefix, local_metadata, True, missing_keys,
                                    unexpected_keys, error_msgs)
        for name, grandchild in child._modules.items():
            if grandchild is not None:
                child_prefix = f"{prefix}{name}."
                load(grandchild, {k: v for k, v in local.items() if k.startswith(child_prefix)},
                     child_prefix)

    load(module, state_dict)
    if strict:
        if unexpected_keys:
            error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                ", ".join(f'"{k}"' for k in unexpected_keys)))
        if missing_keys:
            error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                ", ".join(f'"{k}"' for k in missing_keys)))
    if error_msgs:
        raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
            type(module).__name__, "\n\t".join(error_msgs)))
    return IncompatibleKeys(missing_keys, unexpected_keys)
