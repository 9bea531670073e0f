"""``nn.utils.skip_init``: build a module without running its initialisation. Torch builds it
on the meta device and allocates empty memory; here the module is built normally with the
random generator's state put back afterwards, so, as in torch, making it draws no random
numbers (its values are unspecified either way).

>>> import gradcheck.ref as torch
>>> state = torch.get_rng_state()
>>> layer = skip_init(torch.nn.Linear, 3, 2)
>>> torch.equal(torch.get_rng_state(), state), tuple(layer.weight.shape)
(True, (2, 3))
"""
from __future__ import annotations

import inspect
from typing import Any


def skip_init(module_cls: type, *args: Any, **kwargs: Any) -> Any:
    from gradcheck import ref

    if not (isinstance(module_cls, type) and issubclass(module_cls, ref.nn.Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    state = ref.get_rng_state()
    try:
        return module_cls(*args, **kwargs)
    finally:
        ref.set_rng_state(state)
