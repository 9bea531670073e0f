"""``torch._logging.set_logs``: the levels of torch's component loggers.

Each call starts over, as torch's does: every component logger goes back to NOTSET, the
``torch`` logger to ``all`` (WARNING when not given), then each named component's loggers to
its level, in torch's order (``export`` after ``dynamo``, ``modules`` last). The artifact
switches (``graph_code``, ``guards``, ...) are accepted and kept in ``ENABLED_ARTIFACTS``;
the engine compiles nothing, so no artifact is ever logged.

>>> import logging
>>> set_logs(dynamo=logging.DEBUG)
>>> logging.getLogger("torch._dynamo").level
10
>>> set_logs()
"""
from __future__ import annotations

import logging
from typing import Any

_SHAPES = ["torch.fx.experimental.symbolic_shapes", "torch.fx.experimental.sym_node",
           "torch.fx.experimental.recording"]
# the loggers behind each component name, in the order torch applies them
COMPONENTS = {
    "dynamo": ["torch._dynamo", *_SHAPES],
    "aot": ["torch._functorch.aot_autograd", "torch._functorch._aot_autograd"],
    "autograd": ["torch.autograd"],
    "inductor": ["torch._inductor", "torch._inductor.cudagraph_trees"],
    "dynamic": list(_SHAPES),
    "distributed": ["torch.distributed", "torch._dynamo.backends.distributed",
                    "torch.nn.parallel.distributed"],
    "c10d": ["torch.distributed.distributed_c10d", "torch.distributed.rendezvous"],
    "ddp": ["torch.nn.parallel.distributed", "torch._dynamo.backends.distributed"],
    "fsdp": ["torch.distributed.fsdp", "torch.distributed._composable.fsdp"],
    "dtensor": ["torch.distributed._tensor", "torch.distributed.tensor"],
    "onnx": ["torch.onnx"],
    "export": ["torch._dynamo", "torch.export", "torch.export.dynamic_shapes", *_SHAPES,
               "torch._export.converter", "torch._export.non_strict_utils",
               "torch._export.serde.serialize", "torch.fx.experimental.proxy_tensor"],
}
ARTIFACTS = (
    "bytecode", "aot_graphs", "aot_joint_graph", "ddp_graphs", "graph", "graph_code",
    "graph_code_verbose", "graph_breaks", "side_effects", "graph_sizes", "guards", "recompiles",
    "recompiles_verbose", "trace_source", "trace_call", "trace_bytecode", "output_code",
    "kernel_code", "schedule", "perf_hints", "pre_grad_graphs", "post_grad_graphs",
    "ir_pre_fusion", "ir_post_fusion", "onnx_diagnostics", "fusion", "overlap", "cudagraphs",
    "sym_node", "compiled_autograd", "compiled_autograd_verbose", "cudagraph_static_inputs",
    "benchmarking", "autotuning", "incremental", "graph_region_expansion", "inductor_metrics",
    "hierarchical_compile", "compute_dependencies", "caching")
ENABLED_ARTIFACTS: set = set()
_LEVELS = (50, 40, 30, 20, 10, 0)
_TOUCHED: set = {"torch"}


def _checked(name: str, level: Any) -> int:
    if level not in _LEVELS:
        raise ValueError(f"Unrecognized log level for log {name}: {level}, valid level values "
                         f"are: {','.join(str(v) for v in _LEVELS)}")
    return level


def set_logs(*, all: int | None = None, modules: dict | None = None,  # noqa: A002
             **settings: Any) -> None:
    """Set the component loggers' levels (and accept torch's artifact switches)."""
    for name in settings:
        if name not in COMPONENTS and name not in ARTIFACTS:
            raise TypeError(f"set_logs() got an unexpected keyword argument '{name}'")
    levels = {"torch": logging.WARNING if all is None else _checked("torch", all)}
    for name, qnames in COMPONENTS.items():
        if settings.get(name) is not None:
            levels.update(dict.fromkeys(qnames, _checked(name, settings[name])))
    for name, level in (modules or {}).items():
        levels.update(dict.fromkeys(COMPONENTS.get(name, [name]), _checked(name, level)))
    for qname in _TOUCHED | {q for names in COMPONENTS.values() for q in names}:
        logging.getLogger(qname).setLevel(logging.NOTSET)
    for qname, level in levels.items():
        logging.getLogger(qname).setLevel(level)
    _TOUCHED.update(levels)
    ENABLED_ARTIFACTS.clear()
    ENABLED_ARTIFACTS.update(name for name in ARTIFACTS if settings.get(name))
