"""FSDP2's ``fully_shard`` over one rank.

``fully_shard(module)`` changes the module's class to ``FSDP<Class>`` (a subclass of
``FSDPModule`` and the original class) and turns each parameter it manages into a DTensor
sharded on dimension 0 of a one-rank mesh. One rank's shard is the whole parameter, so the
forward, the gradients (DTensors with the parameters' placements) and optimizer steps are
those of the unwrapped module. Mixed precision would change the arithmetic and is refused
when asked for.

>>> import gradcheck.ref as torch
>>> model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Linear(3, 1))
>>> _ = fully_shard(model[0]); _ = fully_shard(model)
>>> type(model).__name__, model[0].weight.placements, isinstance(model, FSDPModule)
('FSDPSequential', (Shard(dim=0),), True)
>>> torch.distributed.destroy_process_group()
"""
from __future__ import annotations

import dataclasses
from typing import Any

from gradcheck import ref
from gradcheck.ref.distributed.device_mesh import DeviceMesh, init_device_mesh
from gradcheck.ref.distributed.tensor.api import DTensor, distribute_tensor
from gradcheck.ref.distributed.tensor.placement_types import Shard


@dataclasses.dataclass(frozen=True)
class MixedPrecisionPolicy:
    param_dtype: Any = None
    reduce_dtype: Any = None
    output_dtype: Any = None
    cast_forward_inputs: bool = True


@dataclasses.dataclass
class OffloadPolicy:
    """No offloading (the default)."""


@dataclasses.dataclass
class CPUOffloadPolicy(OffloadPolicy):
    """Parameters already live on the CPU here."""

    pin_memory: bool = True


class _Done:
    def wait(self) -> None:
        """Nothing is in flight over one rank."""


class FSDPModule:
    """The mixin ``fully_shard`` adds; over one rank its communication controls change
    nothing, so they record their setting and return."""

    def reshard(self) -> None:
        """Parameters stay as their (whole) shards."""

    def unshard(self, async_op: bool = False) -> _Done | None:
        return _Done() if async_op else None

    def _set(self, name: str, value: Any) -> None:
        self.__dict__.setdefault("_fsdp_settings", {})[name] = value

    def set_requires_gradient_sync(self, requires_gradient_sync: bool, *,
                                   recurse: bool = True) -> None:
        self._set("requires_gradient_sync", requires_gradient_sync)

    def set_reshard_after_forward(self, reshard_after_forward: bool, recurse: bool = True
                                  ) -> None:
        self._set("reshard_after_forward", reshard_after_forward)

    def set_reshard_after_backward(self, reshard_after_backward: bool, *,
                                   recurse: bool = True) -> None:
        self._set("reshard_after_backward", reshard_after_backward)

    def set_is_last_backward(self, is_last_backward: bool) -> None:
        self._set("is_last_backward", is_last_backward)

    def set_requires_all_reduce(self, requires_all_reduce: bool, *, recurse: bool = True
                                ) -> None:
        self._set("requires_all_reduce", requires_all_reduce)

    def set_modules_to_forward_prefetch(self, modules: list) -> None:
        self._set("modules_to_forward_prefetch", list(modules))

    def set_modules_to_backward_prefetch(self, modules: list) -> None:
        self._set("modules_to_backward_prefetch", list(modules))

    def set_gradient_divide_factor(self, factor: float) -> None:
        # torch divides the summed gradient by this factor, so anything but 1 (the world
        # size here) changes the gradient; refused rather than silently ignored
        if factor != 1:
            raise NotImplementedError("FSDPModule.set_gradient_divide_factor with a factor "
                                      "other than 1 is not available in gradcheck.ref")

    def set_post_optim_event(self, event: Any) -> None:
        self._set("post_optim_event", event)


_CLASSES: dict = {}


def _fsdp_class(cls: type) -> type:
    if issubclass(cls, FSDPModule):
        return cls
    if cls not in _CLASSES:
        _CLASSES[cls] = type(f"FSDP{cls.__name__}", (FSDPModule, cls),
                             {"__module__": __name__})
    return _CLASSES[cls]


def _shard_parameters(module: Any, mesh: DeviceMesh, ignored: set) -> None:
    """Every parameter not already a DTensor (nested fully_shard calls own theirs)."""
    for owner in module.modules():
        for name, param in list(owner._parameters.items()):
            if param is None or isinstance(param, DTensor) or id(param) in ignored:
                continue
            owner.register_parameter(name, ref.nn.Parameter(
                distribute_tensor(param, mesh, [Shard(0)]), requires_grad=param.requires_grad))


def fully_shard(module: Any, *, mesh: DeviceMesh | None = None,
                reshard_after_forward: Any = None, shard_placement_fn: Any = None,
                mp_policy: MixedPrecisionPolicy = MixedPrecisionPolicy(),
                offload_policy: OffloadPolicy = OffloadPolicy(), ignored_params: Any = None
                ) -> Any:
    """Shard ``module``'s parameters over ``mesh`` (a one-rank mesh of the world by default)
    and make it an ``FSDPModule``; returns the same module."""
    changes = {k: v for k, v in dataclasses.asdict(mp_policy).items()
               if k != "cast_forward_inputs" and v is not None}
    if changes:
        raise NotImplementedError(f"fully_shard(mp_policy=MixedPrecisionPolicy({changes})) is "
                                  f"not available in gradcheck.ref: it would compute in "
                                  f"another dtype; cast the model instead")
    if shard_placement_fn is not None:
        raise NotImplementedError("fully_shard(shard_placement_fn=...) is not available in "
                                  "gradcheck.ref: parameters are sharded on dimension 0")
    modules = list(module) if isinstance(module, (list, tuple)) else [module]
    mesh = mesh or init_device_mesh("cpu", (1,))
    ignored = {id(p) for p in ignored_params or ()}
    for each in modules:
        _shard_parameters(each, mesh, ignored)
        each.__class__ = _fsdp_class(type(each))
    return module


def register_fsdp_forward_method(module: Any, method_name: str) -> None:
    """FSDP2 wraps ``method_name`` in its unshard/reshard hooks: nothing to do over one rank."""
    if not callable(getattr(module, method_name, None)):
        raise ValueError(f"{type(module)} does not have a method {method_name}")
