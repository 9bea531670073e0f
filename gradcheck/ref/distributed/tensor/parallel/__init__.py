"""``torch.distributed.tensor.parallel``: tensor parallelism by plan, over one rank.

``parallelize_module(model, mesh, {"w1": ColwiseParallel(), "w2": RowwiseParallel()})``
lays out the named submodules' parameters as DTensors and hooks their inputs and outputs as
torch does; over a mesh of one rank every shard is the whole tensor, so the model computes
and trains exactly as before.

>>> import gradcheck.ref as torch
>>> mesh = torch.distributed.device_mesh.init_device_mesh("cpu", (1,))
>>> mlp = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
>>> _ = parallelize_module(mlp, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
>>> mlp[0].weight.placements, mlp[2].weight.placements, type(mlp(torch.ones(3, 4))).__name__
((Shard(dim=0),), (Shard(dim=1),), 'Tensor')
>>> torch.distributed.destroy_process_group()
"""
from __future__ import annotations

import contextlib
import warnings
from fnmatch import fnmatch
from typing import Any

from gradcheck.ref.distributed.tensor.parallel.style import (  # noqa: F401
    ColwiseParallel,
    ParallelStyle,
    PrepareModuleInput,
    PrepareModuleOutput,
    RowwiseParallel,
    SequenceParallel,
)


def parallelize_module(module: Any, device_mesh: Any = None, parallelize_plan: Any = None, *,
                       src_data_rank: int | None = 0) -> Any:
    """Apply a style, or a ``{path: style}`` plan whose path atoms may be fnmatch patterns."""
    if device_mesh is None:
        raise RuntimeError("No device mesh is currently active! Pass device_mesh.")
    if parallelize_plan is None:
        warnings.warn("No parallelize_plan is provided and auto-parallel is not supported at "
                      "the moment, so this parallelize_module call will do nothing.",
                      stacklevel=2)
        return module
    if isinstance(parallelize_plan, ParallelStyle):
        parallelize_plan.src_data_rank = src_data_rank
        return parallelize_plan._apply(module, device_mesh)
    if not isinstance(parallelize_plan, dict):
        raise TypeError(f"Expect Union[ParallelStyle, Dict[str, ParallelStyle]] for "
                        f"parallelize_plan, {type(parallelize_plan)} found!")
    for path, style in parallelize_plan.items():
        _apply_at(module, device_mesh, path, style, src_data_rank)
    return module


def _apply_at(module: Any, mesh: Any, path: str, style: Any, src_data_rank: Any) -> None:
    if path == "":
        parallelize_module(module, mesh, style, src_data_rank=src_data_rank)
        return
    token, _, rest = path.partition(".")
    matched = [child for name, child in module.named_children() if fnmatch(name, token)]
    if not matched:
        warnings.warn(f"Parallelize plan key '{path}' could not be resolved: no submodule "
                      f"matching token '{token}' in module {module}, skipping this plan "
                      f"entry.", stacklevel=3)
    for child in matched:
        plan = {rest: style} if rest else style
        parallelize_module(child, mesh, plan, src_data_rank=src_data_rank)


@contextlib.contextmanager
def loss_parallel():
    """Cross-entropy over class-sharded logits: over one rank the shards are the whole
    logits, so the ordinary loss (and its gradient) is already the parallel one."""
    yield
