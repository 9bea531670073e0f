"""``torch.xpu`` and ``torch.mps``: the accelerators a CPU build of torch reports as absent.
Queries answer as it does (not available, no devices); anything that needs the device raises
torch's "not compiled" error at the call.

>>> import gradcheck.ref as torch
>>> torch.xpu.is_available(), torch.xpu.device_count(), torch.mps.is_available()
(False, 0, False)
"""
from __future__ import annotations

import types
from typing import Any


def _accelerator(name: str) -> types.ModuleType:
    module = types.ModuleType(f"gradcheck.ref.{name}", f"torch.{name} on a CPU-only build.")

    def missing(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"Torch not compiled with {name.upper()} enabled")

    module.is_available = lambda: False
    module.device_count = lambda: 0
    module.is_initialized = lambda: False
    module.manual_seed = module.manual_seed_all = module.seed = lambda *a, **k: None
    module.empty_cache = lambda: None
    module.memory_allocated = module.max_memory_allocated = module.memory_reserved = \
        lambda *a, **k: 0
    for fn in ("synchronize", "current_device", "set_device", "get_device_name",
               "get_device_properties", "get_rng_state", "set_rng_state", "Stream", "Event"):
        setattr(module, fn, missing)
    module.__getattr__ = lambda attr: missing if not attr.startswith("_") else (
        _ for _ in ()).throw(AttributeError(attr))
    return module


xpu = _accelerator("xpu")
mps = _accelerator("mps")
