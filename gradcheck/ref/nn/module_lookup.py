"""The ``nn.Module`` methods that look members up by dotted name and the remaining dtype
casts: ``get_submodule``, ``get_parameter``, ``get_buffer``, ``register_module``, ``half``,
``bfloat16``, ``type``, ``share_memory``. A mixin of ``Module``.

Example:
    >>> import gradcheck.ref as torch
    >>> net = torch.nn.Sequential(torch.nn.Linear(2, 3))
    >>> net.get_parameter("0.bias").shape
    torch.Size([3])
"""
from __future__ import annotations

from typing import Any


class ModuleLookup:
    def get_submodule(self, target: str) -> Any:
        module = self
        for part in target.split(".") if target else ():
            if part not in module._modules:
                raise AttributeError(f"{type(module).__name__} has no attribute `{part}`")
            module = module._modules[part]
        return module

    def _member(self, target: str, store: str, kind: str) -> Any:
        owner_name, _, name = target.rpartition(".")
        owner = self.get_submodule(owner_name)
        if name not in owner.__dict__[store]:
            raise AttributeError(f"{type(owner).__name__} has no {kind} `{name}`")
        return owner.__dict__[store][name]

    def get_parameter(self, target: str) -> Any:
        return self._member(target, "_parameters", "parameter")

    def get_buffer(self, target: str) -> Any:
        return self._member(target, "_buffers", "buffer")

    def register_module(self, name: str, module: Any) -> None:
        self.add_module(name, module)

    def half(self) -> Any:
        from gradcheck import ref as torch

        return self.to(torch.float16)

    def bfloat16(self) -> Any:
        from gradcheck import ref as torch

        return self.to(torch.bfloat16)

    def type(self, dst_type: Any) -> Any:  # noqa: A003 - torch's name
        return self.to(getattr(dst_type, "dtype", dst_type))

    def share_memory(self) -> Any:
        return self
