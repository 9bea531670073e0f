"""``torch.nn.utils.parametrize``: a parameter computed from another by modules.

As in torch, registering a parametrization moves the tensor to
``module.parametrizations[name].original`` (through the parametrization's ``right_inverse``
when it has one; the Parameter object itself is kept, so optimizers holding it still work),
changes the module's class to ``Parametrized<Class>`` with a property ``name`` that runs the
parametrizations on ``original`` at every access (or once per ``cached()`` block), and
``remove_parametrizations`` undoes it.

>>> import gradcheck.ref as torch
>>> class Symmetric(torch.nn.Module):
...     def forward(self, x):
...         return x.triu() + x.triu(1).mT
>>> layer = torch.nn.Linear(2, 2)
>>> _ = register_parametrization(layer, "weight", Symmetric())
>>> type(layer).__name__, sorted(layer.state_dict())
('ParametrizedLinear', ['bias', 'parametrizations.weight.original'])
>>> bool((layer.weight == layer.weight.T).all())
True
"""
from __future__ import annotations

import contextlib
from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.nn.container import ModuleList
from gradcheck.ref.nn.containers_dict import ModuleDict
from gradcheck.ref.nn.module import Module
from gradcheck.ref.nn.parameter import Parameter

_cache: dict | None = None  # (id(module), name) -> value, inside cached()


@contextlib.contextmanager
def cached():
    """Compute each parametrized tensor once inside the block."""
    global _cache
    outer = _cache
    _cache = {} if outer is None else outer
    try:
        yield
    finally:
        _cache = outer


def _set_original(original: Any, value: Any) -> None:
    """Give ``original`` new contents, keeping the object (torch's ``set_``)."""
    with torch.no_grad():
        original.data = value.detach().clone()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, in order, and the ``original`` they start from."""

    def __init__(self, modules: list, original: Any, unsafe: bool = False) -> None:
        super().__init__(modules)
        self.unsafe = unsafe
        with torch.no_grad():
            value = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
        if value is not original:
            _set_original(original, value)
        if isinstance(original, Parameter):
            self.register_parameter("original", original)
        else:
            self.register_buffer("original", original)

    def right_inverse(self, value: Any) -> None:
        """What assigning ``module.<name> = value`` does: store its preimage in ``original``."""
        with torch.no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       "implement right_inverse.")
                value = module.right_inverse(value)
            _set_original(self.original, value)

    def forward(self) -> Any:
        value = self[0](self.original)
        for module in list(self)[1:]:
            value = module(value)
        return value


def _property(name: str) -> property:
    def get(self: Module) -> Any:
        if _cache is None:
            return self.parametrizations[name]()
        key = (id(self), name)
        if key not in _cache:
            _cache[key] = self.parametrizations[name]()
        return _cache[key]

    def set_(self: Module, value: Any) -> None:
        self.parametrizations[name].right_inverse(value)

    return property(get, set_)


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` be ``parametrization(original)``."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        module.parametrizations[tensor_name].append(parametrization)
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    original = getattr(module, tensor_name)
    parametrizations = ParametrizationList([parametrization], original, unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        cls = type(module)
        module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {})
        module.parametrizations = ModuleDict()
    setattr(type(module), tensor_name, _property(tensor_name))
    module.parametrizations[tensor_name] = parametrizations
    return module


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Put ``tensor_name`` back as a plain parameter: its current value, or ``original``."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    original = module.parametrizations[tensor_name].original
    if leave_parametrized:
        with torch.no_grad():
            value = getattr(module, tensor_name)
        _set_original(original, value)
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    if isinstance(original, Parameter):
        module.register_parameter(tensor_name, original)
    else:
        module.register_buffer(tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type(module).__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before parametrizations changed it."""
    return type(module).__bases__[0] if is_parametrized(module) else type(module)
