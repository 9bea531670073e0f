"""``torch.distributed.fsdp``: FullyShardedDataParallel over one rank shards nothing, so the
wrapper runs its module as it is: the same parameters (by the module's own names), the same
gradients, the same optimizer steps. The configuration objects are accepted; a
``MixedPrecision`` policy would change the arithmetic and is refused at construction.

>>> import gradcheck.ref as torch
>>> torch.distributed.init_process_group("gloo", world_size=1, rank=0)
>>> model = FullyShardedDataParallel(torch.nn.Linear(2, 1))
>>> model(torch.ones(3, 2)).shape
torch.Size([3, 1])
>>> torch.distributed.destroy_process_group()
"""
from __future__ import annotations

import contextlib
import dataclasses
import enum
from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.nn.module import Module


class ShardingStrategy(enum.Enum):
    FULL_SHARD = 1
    SHARD_GRAD_OP = 2
    NO_SHARD = 3
    HYBRID_SHARD = 4
    _HYBRID_SHARD_ZERO2 = 5


class StateDictType(enum.Enum):
    FULL_STATE_DICT = 1
    LOCAL_STATE_DICT = 2
    SHARDED_STATE_DICT = 3


class BackwardPrefetch(enum.Enum):
    BACKWARD_PRE = 1
    BACKWARD_POST = 2


@dataclasses.dataclass
class MixedPrecision:
    param_dtype: Any = None
    reduce_dtype: Any = None
    buffer_dtype: Any = None
    keep_low_precision_grads: bool = False
    cast_forward_inputs: bool = False
    cast_root_forward_inputs: bool = True



@dataclasses.dataclass
class CPUOffload:
    offload_params: bool = False


@dataclasses.dataclass
class FullStateDictConfig:
    offload_to_cpu: bool = False
    rank0_only: bool = False


@dataclasses.dataclass
class ShardedStateDictConfig:
    offload_to_cpu: bool = False


@dataclasses.dataclass
class LocalStateDictConfig:
    offload_to_cpu: bool = False


class OptimStateKeyType(enum.Enum):
    """How an optimizer state dict names its parameters: by name or by index."""

    PARAM_NAME = enum.auto()
    PARAM_ID = enum.auto()


FullOptimStateDictConfig = FullStateDictConfig
ShardedOptimStateDictConfig = ShardedStateDictConfig


class FullyShardedDataParallel(Module):
    """One rank: no sharding, so the wrapped module runs unchanged."""

    def __init__(self, module: Module, process_group: Any = None, *args: Any,
                 mixed_precision: MixedPrecision | None = None, **kwargs: Any) -> None:
        if not torch.distributed.is_initialized():
            raise ValueError(torch.distributed.NOT_INITIALIZED)
        if mixed_precision is not None and any(
                d is not None for d in (mixed_precision.param_dtype,
                                        mixed_precision.reduce_dtype)):
            raise NotImplementedError(
                "FullyShardedDataParallel(mixed_precision=...) is not available in "
                "gradcheck.ref: it would compute in another dtype; cast the model instead")
        super().__init__()
        self._fsdp_wrapped_module = module

    @property
    def module(self) -> Module:
        return self._fsdp_wrapped_module

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._fsdp_wrapped_module(*args, **kwargs)

    def state_dict(self, *args: Any, **kwargs: Any) -> Any:
        return self._fsdp_wrapped_module.state_dict(*args, **kwargs)

    def load_state_dict(self, *args: Any, **kwargs: Any) -> Any:
        return self._fsdp_wrapped_module.load_state_dict(*args, **kwargs)

    def clip_grad_norm_(self, max_norm: float, norm_type: float = 2.0) -> Any:
        return torch.nn.utils.clip_grad_norm_(self.parameters(), max_norm, norm_type)

    @contextlib.contextmanager
    def no_sync(self):
        yield

    @staticmethod
    @contextlib.contextmanager
    def state_dict_type(module: Module, state_dict_type: Any, state_dict_config: Any = None,
                        optim_state_dict_config: Any = None):
        yield

    @staticmethod
    @contextlib.contextmanager
    def summon_full_params(module: Module, recurse: bool = True, writeback: bool = True,
                           rank0_only: bool = False, offload_to_cpu: bool = False,
                           with_grads: bool = False):
        yield

    @staticmethod
    def optim_state_dict(model: Module, optim: Any, optim_state_dict: Any = None,
                         group: Any = None) -> dict:
        return optim.state_dict() if optim_state_dict is None else optim_state_dict

    @staticmethod
    def optim_state_dict_to_load(model: Module, optim: Any, optim_state_dict: dict,
                                 is_named_optimizer: bool = False, load_directly: bool = False,
                                 group: Any = None) -> dict:
        return optim_state_dict

    full_optim_state_dict = optim_state_dict

    @staticmethod
    def scatter_full_optim_state_dict(full_optim_state_dict: dict | None, model: Module,
                                      optim_input: Any = None, optim: Any = None,
                                      group: Any = None) -> dict:
        """Rank 0's full optimizer state, split for each rank: one rank keeps all of it."""
        return full_optim_state_dict

    @staticmethod
    def fsdp_modules(module: Module, root_only: bool = False) -> list:
        """The FSDP instances in ``module`` (itself included), or only the outermost ones."""
        found = [m for m in module.modules() if isinstance(m, FullyShardedDataParallel)]
        if root_only:
            found = [m for m in found if not any(
                m is not other and m in list(other.modules()) for other in found)]
        return found

    @staticmethod
    def rekey_optim_state_dict(optim_state_dict: dict, optim_state_key_type: OptimStateKeyType,
                               model: Module, optim_input: Any = None,
                               optim: Any = None) -> dict:
        """Re-key an optimizer state dict by parameter name or by index, in the order of
        ``model.named_parameters()`` (the order a plain optimizer over the model uses)."""
        names = [name.replace("_fsdp_wrapped_module.", "")
                 for name, _ in model.named_parameters()]
        by_id = optim_state_key_type == OptimStateKeyType.PARAM_ID
        rename = ({name: i for i, name in enumerate(names)} if by_id
                  else dict(enumerate(names)))

        def key(k: Any) -> Any:
            return rename.get(k, k)

        # NOTE: torch lists each group's re-keyed parameters sorted (by name or by index)
        groups = [dict(g, params=sorted(key(p) for p in g["params"]))
                  for g in optim_state_dict["param_groups"]]
        state = {key(k): v for k, v in optim_state_dict["state"].items()}
        return {"state": state, "param_groups": groups}


# FSDP2 (``fully_shard``) lives in its own module; torch exports it from here too
from gradcheck.ref.distributed.fully_shard import (  # noqa: E402, F401
    CPUOffloadPolicy,
    FSDPModule,
    MixedPrecisionPolicy,
    OffloadPolicy,
    fully_shard,
    register_fsdp_forward_method,
)


def always_wrap_policy(*args: Any, **kwargs: Any) -> bool:
    """Wrap every module."""
    return True


def lambda_auto_wrap_policy(module: Module, recurse: bool, nonwrapped_numel: int,
                            lambda_fn: Any) -> bool:
    """Always descend; wrap a module when ``lambda_fn(module)`` says so."""
    return True if recurse else bool(lambda_fn(module))


def transformer_auto_wrap_policy(module: Module, recurse: bool, nonwrapped_numel: int,
                                 transformer_layer_cls: Any = ()) -> bool:
    """Always descend; wrap the instances of ``transformer_layer_cls``."""
    return True if recurse else isinstance(module, tuple(transformer_layer_cls))


def size_based_auto_wrap_policy(module: Module, recurse: bool, nonwrapped_numel: int,
                                min_num_params: int = int(1e8), force_leaf_modules: Any = None,
                                exclude_wrap_modules: Any = None) -> bool:
    """Descend into, and wrap, modules holding at least ``min_num_params`` unwrapped
    parameters; never into a MultiheadAttention, never wrapping a ModuleList or ModuleDict."""
    leaves = (torch.nn.MultiheadAttention,) if force_leaf_modules is None else tuple(
        force_leaf_modules)
    excluded = (torch.nn.ModuleList, torch.nn.ModuleDict) if exclude_wrap_modules is None \
        else tuple(exclude_wrap_modules)
    large = nonwrapped_numel >= min_num_params
    return large and not isinstance(module, leaves if recurse else excluded)


def _or_policy(module: Module, recurse: bool, nonwrapped_numel: int, policies: Any) -> bool:
    """Wrap when any of ``policies`` would."""
    return any(policy(module=module, recurse=recurse, nonwrapped_numel=nonwrapped_numel)
               for policy in policies)


class ModuleWrapPolicy:
    """Wrap the instances of the given module classes."""

    def __init__(self, module_classes: Any) -> None:
        self._module_classes = tuple(module_classes)

    def __call__(self, module: Module, recurse: bool, *args: Any, **kwargs: Any) -> bool:
        return True if recurse else isinstance(module, self._module_classes)


def _wrap_module() -> Any:
    """``fsdp.wrap`` as a module (code imports its policies from it): the auto-wrap
    policies; over one rank wrapping changes nothing, so ``wrap`` returns its module."""
    import sys
    import types

    module = types.ModuleType(f"{__name__}.wrap", _wrap_module.__doc__)

    @contextlib.contextmanager
    def enable_wrap(*args: Any, **kwargs: Any):
        yield

    module.__dict__.update(
        always_wrap_policy=always_wrap_policy, lambda_auto_wrap_policy=lambda_auto_wrap_policy,
        transformer_auto_wrap_policy=transformer_auto_wrap_policy,
        size_based_auto_wrap_policy=size_based_auto_wrap_policy, _or_policy=_or_policy,
        ModuleWrapPolicy=ModuleWrapPolicy, wrap=lambda module, **kwargs: module,
        enable_wrap=enable_wrap)
    sys.modules[module.__name__] = module
    for alias in ("fully_sharded_data_parallel", "api"):
        sys.modules[f"{__name__}.{alias}"] = sys.modules[__name__]
    return module


wrap = _wrap_module()
fully_sharded_data_parallel = api = __import__("sys").modules[__name__]


def _sharded_scaler():
    from gradcheck.ref.amp import GradScaler

    class ShardedGradScaler(GradScaler):
        """One rank: the ordinary GradScaler."""

    return ShardedGradScaler


ShardedGradScaler = _sharded_scaler()
sharded_grad_scaler = __import__("types").SimpleNamespace(ShardedGradScaler=ShardedGradScaler)
