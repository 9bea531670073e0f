"""Keyed and parameter containers: ``ModuleDict``, ``ParameterList`` and ``ParameterDict``.

Each registers what it holds, so ``parameters()``, ``state_dict()`` and optimizers see it;
the keys of a ParameterList are its indices, as in torch.

Example:
    >>> import gradcheck.ref as torch
    >>> heads = ModuleDict({"a": torch.nn.Linear(2, 2), "b": torch.nn.Linear(2, 1)})
    >>> sorted(heads.keys()), len(list(heads.parameters()))
    (['a', 'b'], 4)
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from gradcheck.ref.nn.module import Module
from gradcheck.ref.nn.parameter import Parameter


class ModuleDict(Module):
    """An ordered dict of registered modules."""

    def __init__(self, modules: Mapping[str, Module] | Iterable | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def pop(self, key: str) -> Module:
        return self._modules.pop(key)

    def clear(self) -> None:
        self._modules.clear()

    def update(self, modules: Mapping[str, Module] | Iterable) -> None:
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for key, module in pairs:
            self[key] = module


def _as_parameter(value: Any) -> Any:
    from gradcheck.ref.tensors import Tensor

    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


class ParameterList(Module):
    """A list of registered parameters (plain tensors are wrapped as Parameters)."""

    def __init__(self, values: Iterable | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __getitem__(self, index: int) -> Any:
        if isinstance(index, slice):
            return ParameterList(list(self)[index])
        if not -self._size <= index < self._size:
            raise IndexError(f"index {index} is out of range")
        return self._parameters[str(index % self._size)]

    def __setitem__(self, index: int, value: Any) -> None:
        self.register_parameter(str(index % self._size), _as_parameter(value))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return (self._parameters[str(i)] for i in range(self._size))

    def append(self, value: Any) -> ParameterList:
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable) -> ParameterList:
        for value in values:
            self.append(value)
        return self


class ParameterDict(Module):
    """An ordered dict of registered parameters."""

    def __init__(self, parameters: Mapping | Iterable | None = None) -> None:
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        return self._parameters[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.register_parameter(key, _as_parameter(value))

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[str]:
        return iter(self._parameters)

    def __contains__(self, key: str) -> bool:
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()

    def update(self, parameters: Mapping | Iterable) -> None:
        pairs = parameters.items() if isinstance(parameters, Mapping) else parameters
        for key, value in pairs:
            self[key] = value
