"""Pick the adapter for a set of inputs without importing frameworks that are not in use.

>>> import numpy as np
>>> adapter_for([np.ones(2)], fn=np.sin, vjp=lambda g, x: (g * np.cos(x),)).name
'numpy'
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

from gradcheck.checks.adapters.base import Adapter

# module-name prefix of an input's type -> (adapter module, class)
_FRAMEWORKS = {
    "torch": ("gradcheck.checks.adapters.torch_", "TorchAdapter"),
    "jax": ("gradcheck.checks.adapters.jax_", "JaxAdapter"),
    "gradcheck": ("gradcheck.checks.adapters.ref_", "RefAdapter"),
    "numpy": ("gradcheck.checks.adapters.numpy_", "NumpyAdapter"),
}


def framework_of(x: Any) -> str:
    """The framework an input belongs to, from its type's module ('numpy' for plain values)."""
    root = type(x).__module__.split(".")[0]
    if root == "gradcheck" and not type(x).__module__.startswith("gradcheck.ref"):
        return "numpy"
    if root == "jaxlib":  # jax.Array's concrete type lives in jaxlib
        return "jax"
    return root if root in _FRAMEWORKS else "numpy"


def adapter_for(
    inputs: Sequence[Any], *, fn: Callable, wrt: Sequence[int] | None = None,
    vjp: Callable | None = None,
) -> Adapter:
    """Build the adapter for ``inputs``; mixing frameworks is an error that names both."""
    found = {framework_of(x) for x in inputs}
    tensors = found - {"numpy"}
    if len(tensors) > 1:
        raise TypeError(
            f"inputs mix frameworks {sorted(tensors)}; pass tensors of a single framework"
        )
    name = tensors.pop() if tensors else "numpy"
    module, cls = _FRAMEWORKS[name]
    adapter_cls = getattr(importlib.import_module(module), cls)
    if name == "numpy":
        return adapter_cls(fn, inputs, wrt, vjp=vjp)
    if vjp is not None:
        raise TypeError(f"vjp= is only for plain numpy functions; {name} computes its own VJP")
    return adapter_cls(fn, inputs, wrt)
