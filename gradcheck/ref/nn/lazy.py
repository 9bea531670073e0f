"""Lazy modules, as torch builds them: parameters start as ``UninitializedParameter`` (no
shape yet), a forward pre-hook (``_infer_parameters``) calls ``initialize_parameters`` with
the first input, and once nothing is left uninitialized the module becomes its
``cls_to_become`` (``LazyLinear`` becomes ``Linear``). A parameter is materialized in place,
so an optimizer made before the first forward keeps holding it.

>>> import gradcheck.ref as torch
>>> layer = torch.nn.LazyLinear(3)
>>> isinstance(layer.weight, UninitializedParameter), layer.has_uninitialized_params()
(True, True)
>>> _ = layer(torch.ones(2, 4)); type(layer).__name__, tuple(layer.weight.shape)
('Linear', (3, 4))
"""
from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from gradcheck import ref as torch
from gradcheck.ref.nn.linear import Linear
from gradcheck.ref.nn.module import Module
from gradcheck.ref.nn.parameter import Parameter


class UninitializedParameter(Parameter):
    """A parameter whose shape is not known yet; ``materialize(shape)`` gives it one."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device: Any = None, dtype: Any = None):
        data = torch.empty(0, dtype=dtype or torch.get_default_dtype())
        return torch.Tensor._make_subclass(cls, data, requires_grad)

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        """Give the parameter ``shape`` (uninitialized values) and make it a Parameter."""
        dtype = (dtype or self.dtype).np
        self._data = np.zeros(tuple(shape) if not isinstance(shape, int) else (shape,),
                               dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self) -> Any:
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. "
                           "This error usually happens in `load_state_dict` when trying to "
                           "load an uninitialized parameter into an initialized one. Call "
                           "`forward` to initialize the parameters before accessing their "
                           "attributes.")

    def __repr__(self) -> str:
        return "<UninitializedParameter>"


def is_lazy(param: Any) -> bool:
    return isinstance(param, UninitializedParameter)


class _LazyProtocol(Protocol):
    """What a lazy module provides (for type checkers)."""

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None: ...

    def has_uninitialized_params(self) -> bool: ...


class LazyModuleMixin:
    """Mix into a Module whose parameters are inferred from its first input."""

    cls_to_become: type | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters)

    def has_uninitialized_params(self) -> bool:
        return any(is_lazy(p) for p in self.parameters()) or any(
            is_lazy(b) for b in self.buffers())

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{type(self).__name__}")

    @staticmethod
    def _infer_parameters(module: Any, args: tuple, kwargs: Any = None) -> None:
        """Initialize from the first input; once complete, drop the hook and change class."""
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {type(module).__name__} has not been fully initialized")
        module._initialize_hook.remove()
        del module._initialize_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose ``in_features`` is read from the first input."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        Module.__init__(self)
        self.in_features, self.out_features = 0, out_features
        self.weight = UninitializedParameter(dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(dtype=dtype)
        else:
            self.register_parameter("bias", None)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Any) -> None:  # noqa: A002
        if self.has_uninitialized_params():
            with torch.no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
