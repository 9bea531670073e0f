"""Private names of torch that libraries call directly: the unpickling helpers in
``torch._utils`` (``_rebuild_tensor_v2``, ``_rebuild_parameter``), ``torch._storage_classes``,
``torch._register_device_module``, ``torch._VF`` (the tensor functions, as torch's C
functions table has them) and ``Tensor._cdata`` (an identity of the tensor object,
equal for the same tensor and different for a view, as the address torch hands out).

>>> import gradcheck.ref as torch
>>> x = torch.ones(2)
>>> x._cdata == x._cdata, x._cdata == x.view(2)._cdata
(True, False)
"""
from __future__ import annotations

import sys
import types
from typing import Any


def _cdata(self: Any) -> int:
    return id(self)


def _register_device_module(device_type: str, module: types.ModuleType) -> None:
    """Make ``module`` the runtime module ``torch.<device_type>`` (once per device type)."""
    from gradcheck import ref

    device_type = ref.device(device_type).type
    if hasattr(ref, device_type):
        raise RuntimeError(f"The runtime module of '{device_type}' has already been registered "
                           f"with '{getattr(ref, device_type)}'")
    setattr(ref, device_type, module)
    sys.modules[f"{ref.__name__}.{device_type}"] = module


def _variable_functions(ref: types.ModuleType) -> types.ModuleType:
    """``torch._VF``: ``_VF.name`` is the engine's ``torch.name`` function (torch reaches the
    same C functions through it); names that are not tensor functions are absent."""
    module = types.ModuleType(f"{ref.__name__}._VF", "torch._VF")

    def __getattr__(name: str) -> Any:
        value = getattr(ref, name, None)
        if name.startswith("__") or isinstance(value, (type, types.ModuleType)) or \
                not callable(value):
            raise AttributeError(f"module 'torch._VF' has no attribute '{name}'")
        return value

    module.__getattr__ = __getattr__
    sys.modules[module.__name__] = module
    return module


def install(ref: types.ModuleType) -> None:
    from gradcheck.ref import serialization, storage

    ref._utils._rebuild_tensor_v2 = serialization._rebuild_tensor_v2
    ref._utils._rebuild_parameter = serialization._rebuild_parameter
    ref._storage_classes = {getattr(ref, name) for name in dir(ref)
                            if name.endswith("Storage") and isinstance(getattr(ref, name), type)}
    ref._storage_classes.add(storage.TypedStorage)
    ref._register_device_module = _register_device_module
    ref.Tensor._cdata = property(_cdata)
    ref._VF = _variable_functions(ref)
    from gradcheck.ref import archive_reader

    archive_reader.install(ref)
