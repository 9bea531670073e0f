"""`Parameter`: a leaf Tensor that a `Module` registers as trainable when assigned to it."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gradcheck import ref as torch


class _ParameterMeta(type):
    """Like torch's: a tensor subclass wrapped as a parameter (a DTensor) keeps its own type
    and is marked ``_is_param``, and ``isinstance(x, Parameter)`` accepts it."""

    def __instancecheck__(cls, instance: Any) -> bool:
        if super().__instancecheck__(instance):
            return True
        return cls is Parameter and isinstance(instance, torch.Tensor) and \
            instance.__dict__.get("_is_param", False)


class Parameter(torch.Tensor, metaclass=_ParameterMeta):
    """A Tensor subclass sharing `data`'s storage, with `requires_grad=True` by default.

    Example:
        >>> import gradcheck.ref as torch
        >>> p = Parameter(torch.tensor([1.0]))
        >>> p.requires_grad, p.is_leaf
        (True, True)
    """

    def __new__(cls, data: Any = None, requires_grad: bool = True) -> Parameter:
        if data is None:
            data = torch.empty(0)
        if not isinstance(data, torch.Tensor):
            raise TypeError(f"Parameter expects a Tensor as data, got {type(data).__name__}; "
                            "wrap it with torch.tensor(...)")
        if type(data) not in (torch.Tensor, Parameter):
            marked = data.detach().requires_grad_(requires_grad)
            marked._is_param = True
            return marked
        return torch.Tensor._make_subclass(cls, data.detach(), requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict) -> Parameter:
        # like torch: a fresh Parameter of the copied data; attributes set on it are not kept
        if id(self) in memo:
            return memo[id(self)]
        result = Parameter(self.detach().clone(), self.requires_grad)
        if self.grad is not None:
            result.grad = self.grad.detach().clone()
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol: int) -> tuple:
        return (_rebuild_parameter, (self.detach().numpy().copy(), self.requires_grad))


def reset_grads(params: Iterable[torch.Tensor], set_to_none: bool = True) -> None:
    """Reset each tensor's `.grad`: to None, or to zeros cut from any graph with
    `set_to_none=False` (what `Module.zero_grad` and `Optimizer.zero_grad` both do).

    Example:
        >>> import gradcheck.ref as torch
        >>> p = Parameter(torch.ones(2)); p.grad = torch.ones(2)
        >>> reset_grads([p], set_to_none=False); p.grad.tolist()
        [0.0, 0.0]
    """
    for param in params:
        if param.grad is None:
            continue
        if set_to_none:
            param.grad = None
        else:
            if param.grad.grad_fn is not None:
                param.grad = param.grad.detach()
            else:
                param.grad.requires_grad_(False)
            param.grad.zero_()


def _rebuild_parameter(array: Any, requires_grad: bool) -> Parameter:
    return Parameter(torch.from_numpy(array), requires_grad)


class _BufferMeta(type):
    """``isinstance(t, Buffer)`` holds for the tensors ``Buffer(...)`` marked."""

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, torch.Tensor) and getattr(instance, "_is_buffer", False)


class Buffer(metaclass=_BufferMeta):
    """``nn.Buffer(data, persistent=True)``: a tensor that, assigned to a module attribute,
    is registered as a buffer (``persistent=False`` keeps it out of the state_dict).

    >>> import gradcheck.ref as torch
    >>> m = torch.nn.Module(); m.steps = Buffer(torch.zeros(1))
    >>> list(m.state_dict())
    ['steps']
    """

    def __new__(cls, data: Any = None, *, persistent: bool = True) -> Any:
        data = torch.empty(0) if data is None else data
        tensor = data.detach().requires_grad_(data.requires_grad)
        tensor.persistent, tensor._is_buffer = persistent, True
        return tensor


def _uninitialized() -> type:
    from gradcheck.ref.nn.lazy import UninitializedParameter

    return UninitializedParameter


def __getattr__(name: str) -> Any:
    # torch.nn.parameter.UninitializedParameter lives in lazy.py (it needs Module)
    if name == "UninitializedParameter":
        return _uninitialized()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
