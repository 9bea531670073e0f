"""``torch.distributed.tensor.DTensor`` on a world of one process.

A DTensor is a global tensor laid out over a device mesh by one placement per mesh
dimension. Every mesh here has one rank, so each rank's local shard is the whole tensor:
``to_local``, ``full_tensor`` and ``redistribute`` move no data, and a DTensor is an engine
tensor sharing storage with its local tensor, carrying its mesh and placements.

What differs from torch: the engine's operators do not propagate placements, so arithmetic
on a DTensor gives a plain Tensor with the right values and gradients, where torch gives a
DTensor. The tensor-parallel styles, which declare their output layouts, wrap their
outputs as torch does.

>>> import gradcheck.ref as torch
>>> from gradcheck.ref.distributed.device_mesh import init_device_mesh
>>> mesh = init_device_mesh("cpu", (1,))
>>> weight = distribute_tensor(torch.ones(2, 3), mesh, [Shard(0)])
>>> weight.placements, weight.to_local().shape
((Shard(dim=0),), torch.Size([2, 3]))
>>> torch.distributed.destroy_process_group()
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gradcheck import ref
from gradcheck.ref.distributed.device_mesh import DeviceMesh
from gradcheck.ref.distributed.tensor.placement_types import Partial, Placement, Replicate, Shard
from gradcheck.ref.tensors import Tensor


def _placements(mesh: DeviceMesh, placements: Sequence[Placement] | None, ndim: int) -> tuple:
    """Torch's checks and normalisation: one placement per mesh dimension, Replicate by
    default, a negative shard dimension counted from the end."""
    if placements is None:
        return (Replicate(),) * mesh.ndim
    placements = tuple(placements)
    if len(placements) != mesh.ndim:
        raise ValueError(f"`placements` must have the same length as `device_mesh.ndim`! "
                         f"Found placements length: {len(placements)}, and device_mesh.ndim: "
                         f"{mesh.ndim}.")
    for placement in placements:
        if not isinstance(placement, Placement):
            raise TypeError(f"placements must be Shard, Replicate or Partial, got "
                            f"{placement!r}")
        if placement.is_shard() and not -ndim <= placement.dim < max(ndim, 1):
            raise IndexError(f"Shard(dim={placement.dim}) is out of range for a tensor with "
                             f"{ndim} dimensions")
    return tuple(Shard(p.dim + ndim) if p.is_shard() and p.dim < 0 else p for p in placements)


def _mesh(mesh: DeviceMesh | None) -> DeviceMesh:
    if mesh is None:
        raise RuntimeError("No device mesh is currently active! Pass device_mesh (for "
                           "example init_device_mesh('cpu', (1,))).")
    return mesh


class DTensor(Tensor):
    """A tensor with a device mesh and one placement per mesh dimension."""

    __slots__ = ()

    @staticmethod
    def _dress(tensor: Tensor, mesh: DeviceMesh, placements: tuple) -> DTensor:
        """Turn ``tensor`` itself into a DTensor (it keeps its storage and its history)."""
        tensor.__class__ = DTensor
        tensor.__dict__["_mesh"] = mesh
        tensor.__dict__["_dt_placements"] = placements
        return tensor

    @staticmethod
    def from_local(local_tensor: Tensor, device_mesh: DeviceMesh | None = None,
                   placements: Sequence[Placement] | None = None, *, run_check: bool = False,
                   shape: Any = None, stride: Any = None) -> DTensor:
        """The DTensor whose local shard is ``local_tensor``; differentiable, as in torch."""
        mesh = _mesh(device_mesh)
        spec = _placements(mesh, placements, local_tensor.dim())
        return DTensor._dress(local_tensor.view_as(local_tensor), mesh, spec)

    @property
    def device_mesh(self) -> DeviceMesh:
        return self.__dict__["_mesh"]

    @property
    def placements(self) -> tuple:
        return self.__dict__["_dt_placements"]

    @property
    def _local_tensor(self) -> Tensor:
        return self.to_local()

    def to_local(self, *, grad_placements: Sequence[Placement] | None = None) -> Tensor:
        """This rank's shard, a plain tensor sharing storage; gradients flow back."""
        return Tensor.view_as(self, self)

    def full_tensor(self, *, grad_placements: Sequence[Placement] | None = None) -> Tensor:
        """The whole tensor: with one rank, the local shard."""
        return self.to_local()

    def redistribute(self, device_mesh: DeviceMesh | None = None,
                     placements: Sequence[Placement] | None = None, *, async_op: bool = False,
                     forward_dtype: Any = None, backward_dtype: Any = None) -> DTensor:
        """The same values under other placements (no data moves between one rank)."""
        mesh = device_mesh or self.device_mesh
        spec = _placements(mesh, placements, self.dim())
        local = self.to_local()
        if forward_dtype is not None:
            local = local.to(forward_dtype)
        return DTensor._dress(local, mesh, spec)

    def detach(self) -> DTensor:
        return DTensor._dress(Tensor.detach(self), self.device_mesh, self.placements)

    @property
    def grad(self) -> DTensor | None:
        # torch keeps a DTensor parameter's gradient a DTensor with its placements
        grad = Tensor.grad.fget(self)
        if grad is not None and not isinstance(grad, DTensor):
            grad = DTensor._dress(grad.detach(), self.device_mesh, self.placements)
            self._grad = grad
        return grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        Tensor.grad.fset(self, value)

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    def __repr__(self) -> str:
        local = Tensor._make_subclass(Tensor, Tensor.detach(self), self.requires_grad and
                                      self.is_leaf)
        return (f"DTensor(local_tensor={local!r}, device_mesh={self.device_mesh!r}, "
                f"placements={self.placements!r})")


def distribute_tensor(tensor: Tensor, device_mesh: DeviceMesh | None = None,
                      placements: Sequence[Placement] | None = None, *,
                      src_data_rank: int | None = 0) -> DTensor:
    """A new leaf DTensor of ``tensor``'s values (the one rank holds every shard)."""
    mesh = _mesh(device_mesh)
    spec = _placements(mesh, placements, tensor.dim())
    if isinstance(tensor, DTensor):
        if tensor.device_mesh != mesh or tensor.placements != spec:
            raise ValueError(f"Cannot distribute a DTensor with device mesh "
                             f"{tensor.device_mesh} and placements {tensor.placements} to a "
                             f"different device mesh {mesh} or placements {spec}.")
        return tensor
    if any(p.is_partial() for p in spec):
        raise ValueError("distribute_tensor does not take Partial placements; use "
                         "DTensor.from_local for a partial tensor")
    # torch scatters shards through a copy, while a replica is the source's own storage
    data = tensor.detach().clone() if any(p.is_shard() for p in spec) else tensor.detach()
    leaf = Tensor._make_subclass(Tensor, data, tensor.requires_grad)
    return DTensor._dress(leaf, mesh, spec)


def _replicate_everything(name: str, module: Any, mesh: DeviceMesh) -> None:
    """distribute_module's default: every parameter and buffer replicated."""
    for key, param in list(module._parameters.items()):
        if param is not None and not isinstance(param, DTensor):
            module.register_parameter(key, ref.nn.Parameter(
                distribute_tensor(param, mesh, [Replicate()] * mesh.ndim)))
    for key, buffer in list(module._buffers.items()):
        if buffer is not None and not isinstance(buffer, DTensor):
            module._buffers[key] = distribute_tensor(buffer, mesh, [Replicate()] * mesh.ndim)


def distribute_module(module: Any, device_mesh: DeviceMesh | None = None,
                      partition_fn: Callable | None = None, input_fn: Callable | None = None,
                      output_fn: Callable | None = None) -> Any:
    """Lay out ``module``'s tensors with ``partition_fn`` (replicated by default) and hook
    ``input_fn``/``output_fn`` around its forward, as torch does."""
    mesh = _mesh(device_mesh)
    partition = partition_fn or _replicate_everything
    for name, submodule in module.named_modules():
        partition(name, submodule, mesh)
    if input_fn is not None:
        module.register_forward_pre_hook(lambda mod, inputs: input_fn(mod, inputs, mesh))
    if output_fn is not None:
        module.register_forward_hook(
            lambda mod, inputs, outputs: output_fn(mod, outputs, mesh))
    return module


__all__ = ["DTensor", "Partial", "Placement", "Replicate", "Shard", "distribute_module",
           "distribute_tensor"]
