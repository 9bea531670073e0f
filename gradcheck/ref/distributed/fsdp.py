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


MixedPrecisionPolicy = MixedPrecision


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


FSDPModule = FullyShardedDataParallel


def fully_shard(module: Module, *args: Any, **kwargs: Any) -> Module:
    """FSDP2's in-place API: with one rank the module is already 'fully sharded'."""
    return module


class _Wrap:
    """``fsdp.wrap``: the auto-wrap policies (nothing is wrapped over one rank)."""

    @staticmethod
    def transformer_auto_wrap_policy(module: Module, recurse: bool, nonwrapped_numel: int,
                                     transformer_layer_cls: Any = ()) -> bool:
        return False

    @staticmethod
    def size_based_auto_wrap_policy(module: Module, recurse: bool, nonwrapped_numel: int,
                                    min_num_params: int = int(1e8), **kwargs: Any) -> bool:
        return False

    ModuleWrapPolicy = staticmethod(lambda module_classes: None)

    @staticmethod
    def wrap(module: Module, **kwargs: Any) -> Module:
        return module

    @staticmethod
    @contextlib.contextmanager
    def enable_wrap(*args: Any, **kwargs: Any):
        yield


wrap = _Wrap
fully_sharded_data_parallel = __import__("sys").modules[__name__]


def _sharded_scaler():
    from gradcheck.ref.amp import GradScaler

    class ShardedGradScaler(GradScaler):
        """One rank: the ordinary GradScaler."""

    return ShardedGradScaler


ShardedGradScaler = _sharded_scaler()
sharded_grad_scaler = __import__("types").SimpleNamespace(ShardedGradScaler=ShardedGradScaler)
