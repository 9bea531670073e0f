"""``torch._inductor`` and ``torch._functorch``: the config modules of torch's compiler with
every flag and default of torch 2.13 (``compiler_flags``), nested sections included
(``config.triton.cudagraphs``), ``fresh_inductor_cache`` and ``cudagraph_mark_step_begin``.
Nothing compiles here (``torch.compile`` runs eagerly), so the flags only hold values, a
fresh cache has nothing in it, and there are no CUDA graphs to start a step of.

>>> import gradcheck.ref as torch
>>> torch._inductor.config.coordinate_descent_tuning
False
>>> with torch._inductor.config.patch({"triton.cudagraphs": True}):
...     torch._inductor.config.triton.cudagraphs
True
"""
from __future__ import annotations

import contextlib
import os
import sys
import types
from typing import Any, Iterator

from gradcheck.ref.compile_config import ConfigModule
from gradcheck.ref.compiler import cudagraph_mark_step_begin
from gradcheck.ref.compiler_flags import FUNCTORCH, INDUCTOR


def _machine_flags() -> dict:
    """The flags torch derives from the machine, by torch's rules (environment first)."""
    if "TORCHINDUCTOR_COMPILE_THREADS" in os.environ:
        threads = int(os.environ["TORCHINDUCTOR_COMPILE_THREADS"])
    elif sys.platform == "win32":
        threads = 1
    else:
        cpus = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                else os.cpu_count() or 1)
        threads = min(32, cpus)
    cutlass = os.path.realpath(os.environ.get("TORCHINDUCTOR_CUTLASS_DIR", os.path.join(
        os.path.dirname(__file__), "..", "third_party", "cutlass")))
    return {"compile_threads": threads, "cuda.cutlass_dir": cutlass,
            "cutlass.cutlass_dir": cutlass,
            "xpu.cutlass_dir": os.path.realpath(os.environ.get("TORCHINDUCTOR_CUTLASS_DIR", ""))}


def _environment_flags() -> dict:
    """The functorch flags whose default torch reads from the environment: aliasing in a
    custom op is an error under CI (``CI`` set), a warning elsewhere, unless forced."""
    forced = os.environ.get("TORCHINDUCTOR_ERROR_ON_CUSTOM_OP_ALIASING")
    if forced is None:
        return {"error_on_custom_op_aliasing": bool(os.getenv("CI"))}
    return {"error_on_custom_op_aliasing": {"1": True, "0": False}.get(forced, forced)}


config = ConfigModule("torch._inductor.config", {**INDUCTOR, **_machine_flags()}, {})
functorch_config = ConfigModule("torch._functorch.config", {**FUNCTORCH, **_environment_flags()}, {})


@contextlib.contextmanager
def fresh_inductor_cache(cache_entries: dict | None = None, dir: str | None = None,  # noqa: A002
                         delete: bool = True) -> Iterator[None]:
    """A clean compile cache for the block: the engine caches no compiled code, so it is
    always clean and ``cache_entries`` stays empty."""
    yield


def _module(name: str, **members: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(members)
    sys.modules[name] = module
    return module


def install(ref: types.ModuleType) -> None:
    """``torch._inductor`` (with ``config`` and ``utils``) and ``torch._functorch.config``."""
    prefix = ref.__name__
    this = sys.modules[__name__]
    this.utils = _module(f"{__name__}.utils", fresh_inductor_cache=fresh_inductor_cache,
                         fresh_cache=fresh_inductor_cache)
    sys.modules[f"{__name__}.config"] = config
    ref._inductor = this
    functorch = _module(f"{prefix}._functorch", config=functorch_config)
    sys.modules[f"{prefix}._functorch.config"] = functorch_config
    ref._functorch = functorch
