"""``torch.distributed.tensor.parallel.style``: the tensor-parallel layouts of a module.

Each style lays out a module's parameters as DTensors and converts its inputs and outputs
around ``forward``, with torch's defaults (``ColwiseParallel``: replicated input, output
sharded on the last dimension; ``RowwiseParallel``: input sharded on the last dimension,
replicated output; both return local tensors unless ``use_local_output=False``). Over one
rank no data moves, so a parallelized module computes what it computed before.

The engine's operators return plain tensors, so an output that is not yet a DTensor is
given the layout the style declares for it; that is what torch's sharding propagation
yields for the modules each style accepts.
"""
from __future__ import annotations

from functools import partial
from typing import Any

from gradcheck import ref
from gradcheck.ref.distributed.tensor.api import DTensor, distribute_module, distribute_tensor
from gradcheck.ref.distributed.tensor.placement_types import Placement, Replicate, Shard


def _as_tuple(layouts: Any, default: tuple) -> tuple:
    if layouts is None:
        return default
    return tuple(layouts) if isinstance(layouts, (tuple, list)) else (layouts,)


def _to_dtensor(value: Any, mesh: Any, layouts: tuple) -> DTensor:
    if isinstance(value, DTensor):
        return value
    return DTensor.from_local(value, mesh, layouts, run_check=False)


def _shard_parameter(module: Any, name: str, mesh: Any, placement: Placement) -> None:
    param = getattr(module, name, None)
    if param is not None:
        module.register_parameter(name, ref.nn.Parameter(
            distribute_tensor(param, mesh, [placement]), requires_grad=param.requires_grad))


class ParallelStyle:
    """The base class: ``_apply(module, device_mesh)`` parallelizes ``module``."""

    src_data_rank: int | None = 0

    def _apply(self, module: Any, device_mesh: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define _apply")


class _LinearStyle(ParallelStyle):
    """What Colwise and Rowwise share: the input and output conversions."""

    kind = ""
    linear: tuple = ()
    embedding: tuple = ()

    def __init__(self, *, input_layouts: Any = None, output_layouts: Any = None,
                 use_local_output: bool = True) -> None:
        self.input_layouts = _as_tuple(input_layouts, self.default_input)
        self.output_layouts = _as_tuple(output_layouts, self.default_output)
        self.desired_input_layouts = self.default_input
        self.use_local_output = use_local_output

    @staticmethod
    def _prepare_input_fn(input_layouts: tuple, desired: tuple, mod: Any, inputs: tuple,
                          device_mesh: Any) -> Any:
        tensor = _to_dtensor(inputs[0], device_mesh, input_layouts)
        if input_layouts != desired:
            tensor = tensor.redistribute(placements=desired, async_op=True)
        return tensor

    @staticmethod
    def _prepare_output_fn(output_layouts: tuple, use_local_output: bool, mod: Any,
                           outputs: Any, device_mesh: Any) -> Any:
        outputs = _to_dtensor(outputs, device_mesh, output_layouts)
        if outputs.placements != output_layouts:
            outputs = outputs.redistribute(placements=output_layouts, async_op=True)
        return outputs.to_local() if use_local_output else outputs

    def _partition(self, placements: tuple, name: str, module: Any, mesh: Any) -> None:
        for param_name, placement in zip(("weight", "bias"), placements):
            _shard_parameter(module, param_name, mesh, placement)

    def _apply(self, module: Any, device_mesh: Any) -> Any:
        if isinstance(module, ref.nn.Linear):
            placements = self.linear
        elif isinstance(module, ref.nn.Embedding):
            placements = self.embedding
            self._embedding_input()
        else:
            raise NotImplementedError(f"{self.kind} currently only support nn.Linear and "
                                      f"nn.Embedding!")
        return distribute_module(
            module, device_mesh, partial(self._partition, placements),
            partial(self._prepare_input_fn, self.input_layouts, self.desired_input_layouts),
            partial(self._prepare_output_fn, self.output_layouts, self.use_local_output))

    def _embedding_input(self) -> None:
        """An embedding takes its indices replicated."""

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(input_layouts={self.input_layouts}, output_layouts="
                f"{self.output_layouts}, use_local_output={self.use_local_output})")


class ColwiseParallel(_LinearStyle):
    """Shard a Linear's output features (an Embedding's embedding dimension)."""

    kind = "ColwiseParallel"
    default_input = (Replicate(),)
    default_output = (Shard(-1),)
    linear = (Shard(0), Shard(0))
    embedding = (Shard(1),)


class RowwiseParallel(_LinearStyle):
    """Shard a Linear's input features (an Embedding's rows); the output is reduced."""

    kind = "RowwiseParallel"
    default_input = (Shard(-1),)
    default_output = (Replicate(),)
    linear = (Shard(1), Replicate())
    embedding = (Shard(0),)

    def _embedding_input(self) -> None:
        self.desired_input_layouts = (Replicate(),)

    def _apply(self, module: Any, device_mesh: Any) -> Any:
        if isinstance(module, ref.nn.Linear):
            self.desired_input_layouts = (Shard(-1),)
        return super()._apply(module, device_mesh)


class SequenceParallel(ParallelStyle):
    """Replicate the parameters (norms, dropout) and shard activations on ``sequence_dim``."""

    def __init__(self, *, sequence_dim: int = 1, use_local_output: bool = False) -> None:
        self.sequence_sharding = (Shard(sequence_dim),)
        self.use_local_output = use_local_output

    @staticmethod
    def _prepare_input_fn(sequence_sharding: tuple, mod: Any, inputs: tuple,
                          device_mesh: Any) -> Any:
        tensor = inputs[0]
        if isinstance(tensor, DTensor):
            if tensor.placements != sequence_sharding:
                tensor = tensor.redistribute(placements=sequence_sharding, async_op=True)
            return tensor
        if isinstance(tensor, ref.Tensor):
            return DTensor.from_local(tensor, device_mesh, sequence_sharding, run_check=False)
        raise ValueError(f"expecting input of {mod} to be a torch.Tensor or DTensor, but got "
                         f"{tensor}")

    @staticmethod
    def _prepare_output_fn(sequence_sharding: tuple, use_local_output: bool, mod: Any,
                           outputs: Any, device_mesh: Any) -> Any:
        # a norm or dropout keeps its input's sequence sharding
        outputs = _to_dtensor(outputs, device_mesh, sequence_sharding)
        return outputs.to_local() if use_local_output else outputs

    def _apply(self, module: Any, device_mesh: Any) -> Any:
        return distribute_module(
            module, device_mesh, None,
            partial(self._prepare_input_fn, self.sequence_sharding),
            partial(self._prepare_output_fn, self.sequence_sharding, self.use_local_output))

    def __repr__(self) -> str:
        return (f"SequenceParallel(sequence_dim={self.sequence_sharding[0].dim}, "
                f"use_local_output={self.use_local_output})")


def _prepare(value: Any, mesh: Any, layout: Placement | None, desired: Placement | None,
             use_local_output: bool) -> Any:
    """One input or output of PrepareModuleInput/Output: to a DTensor of ``layout``, then
    to ``desired``, then back to local when asked."""
    if layout is None:
        return value
    if not isinstance(value, ref.Tensor):
        raise AssertionError("expecting input to be a torch.Tensor!")
    tensor = _to_dtensor(value, mesh, (layout,))
    if desired is not None and (layout,) != (desired,):
        tensor = tensor.redistribute(placements=(desired,))
    return tensor.to_local() if use_local_output else tensor


def _check_lengths(layouts: tuple, desired: tuple, what: str) -> None:
    if len(layouts) != len(desired):
        raise AssertionError(f"input_layouts and desired_input_layouts should have same "
                             f"length! ({what})")


class PrepareModuleInput(ParallelStyle):
    """Convert a module's positional and keyword inputs to DTensors of given layouts."""

    def __init__(self, *, input_layouts: Any = None, desired_input_layouts: Any = None,
                 input_kwarg_layouts: dict | None = None,
                 desired_input_kwarg_layouts: dict | None = None,
                 use_local_output: bool = False) -> None:
        self.input_layouts = _as_tuple(input_layouts, ())
        self.desired_input_layouts = _as_tuple(desired_input_layouts, ())
        self.input_kwarg_layouts = input_kwarg_layouts or {}
        self.desired_input_kwarg_layouts = desired_input_kwarg_layouts or {}
        self.use_local_output = use_local_output
        _check_lengths(self.input_layouts, self.desired_input_layouts, "positional")

    def _prepare_args(self, mod: Any, inputs: tuple, mesh: Any) -> tuple:
        if len(inputs) != len(self.input_layouts):
            raise ValueError("module inputs and input_layouts should have same length!")
        return tuple(_prepare(value, mesh, layout, desired, self.use_local_output)
                     for value, layout, desired in zip(inputs, self.input_layouts,
                                                       self.desired_input_layouts))

    def _apply(self, module: Any, device_mesh: Any) -> Any:
        if self.input_kwarg_layouts:
            # the engine's modules have no keyword-argument forward pre-hooks
            raise NotImplementedError("PrepareModuleInput(input_kwarg_layouts=...) is not "
                                      "available in gradcheck.ref; lay out keyword inputs "
                                      "with DTensor.from_local in forward")
        module.register_forward_pre_hook(
            lambda mod, args: self._prepare_args(mod, args, device_mesh))
        return module

    def __repr__(self) -> str:
        return (f"PrepareModuleInput(input_layouts={self.input_layouts}, desired_input_layouts="
                f"{self.desired_input_layouts}, input_kwarg_layouts={self.input_kwarg_layouts}"
                f", desired_input_kwarg_layouts={self.desired_input_kwarg_layouts}, "
                f"use_local_output={self.use_local_output})")


class PrepareModuleOutput(ParallelStyle):
    """Convert a module's outputs to DTensors of given layouts."""

    def __init__(self, *, output_layouts: Any, desired_output_layouts: Any,
                 use_local_output: bool = True) -> None:
        self.output_layouts = _as_tuple(output_layouts, ())
        self.desired_output_layouts = _as_tuple(desired_output_layouts, ())
        self.use_local_output = use_local_output
        _check_lengths(self.output_layouts, self.desired_output_layouts, "outputs")

    def _prepare_out(self, mod: Any, outputs: Any, mesh: Any) -> Any:
        single = not isinstance(outputs, tuple)
        values = (outputs,) if single else outputs
        if len(values) != len(self.output_layouts):
            raise ValueError("module outputs and output_layouts should have same length!")
        prepared = tuple(_prepare(value, mesh, layout, desired, self.use_local_output)
                         for value, layout, desired in zip(values, self.output_layouts,
                                                           self.desired_output_layouts))
        return prepared[0] if single else prepared

    def _apply(self, module: Any, device_mesh: Any) -> Any:
        module.register_forward_hook(
            lambda mod, inputs, outputs: self._prepare_out(mod, outputs, device_mesh))
        return module
