"""``torch.ops.aten``: ATen operators with aten's argument layout, run by the engine's ops.

Only the overloads listed in ``_SCHEMAS`` exist here (what training code and tensor
subclasses call by name); each is the engine's op behind torch's schema, so values, views
and gradients are the engine's. An overload the engine lacks is an AttributeError, as a
name torch lacks is.

>>> import gradcheck.ref as torch
>>> torch.ops.aten.view.default(torch.arange(6.0), [2, 3]).shape
torch.Size([2, 3])
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Torch's schema text for each overload the engine provides (``aten::name.overload(...)``).
_SCHEMAS = {
    "view": {
        "default": "aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)",
        "dtype": "aten::view.dtype(Tensor(a) self, ScalarType dtype) -> Tensor(a)"},
    "clone": {"default": "aten::clone(Tensor self, *, MemoryFormat? memory_format=None) -> "
                         "Tensor"},
    "detach": {"default": "aten::detach(Tensor(a) self) -> Tensor(a)"},
    "alias": {"default": "aten::alias(Tensor(a) self) -> Tensor(a)"},
    "_to_copy": {"default": "aten::_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? "
                            "layout=None, Device? device=None, bool? pin_memory=None, bool "
                            "non_blocking=False, MemoryFormat? memory_format=None) -> Tensor"},
    "copy": {"default": "aten::copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor"},
    "copy_": {"default": "aten::copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> "
                         "Tensor(a!)"},
    "select": {"int": "aten::select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)"},
    "slice": {"Tensor": "aten::slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, "
                        "SymInt? end=None, SymInt step=1) -> Tensor(a)"},
    "isin": {
        "Tensor_Tensor": "aten::isin.Tensor_Tensor(Tensor elements, Tensor test_elements, *, "
                         "bool assume_unique=False, bool invert=False) -> Tensor",
        "Tensor_Tensor_out": "aten::isin.Tensor_Tensor_out(Tensor elements, Tensor "
                             "test_elements, *, bool assume_unique=False, bool invert=False, "
                             "Tensor(a!) out) -> Tensor(a!)"},
    "native_batch_norm": {
        "default": "aten::native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, "
                   "Tensor? running_mean, Tensor? running_var, bool training, float momentum, "
                   "float eps) -> (Tensor, Tensor, Tensor)"},
    "native_batch_norm_backward": {
        "default": "aten::native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? "
                   "weight, Tensor? running_mean, Tensor? running_var, Tensor? save_mean, "
                   "Tensor? save_invstd, bool train, float eps, bool[3] output_mask) -> "
                   "(Tensor, Tensor, Tensor)"},
    "_foreach_maximum_": {
        "Scalar": "aten::_foreach_maximum_.Scalar(Tensor(a!)[] self, Scalar scalar) -> ()",
        "List": "aten::_foreach_maximum_.List(Tensor(a!)[] self, Tensor[] other) -> ()",
        "ScalarList": "aten::_foreach_maximum_.ScalarList(Tensor(a!)[] self, Scalar[] "
                      "scalars) -> ()"},
}


def _torch() -> Any:
    import gradcheck.ref as torch

    return torch


def _to_copy(self: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
             pin_memory: Any = None, non_blocking: bool = False,
             memory_format: Any = None) -> Any:
    return self.to(device=device, dtype=dtype, copy=True)


def _copy(self: Any, src: Any, non_blocking: bool = False) -> Any:
    # functional copy_: self's dtype and shape, src's values. Torch has no derivative for it
    # (backward raises), so the engine records none either.
    with _torch().no_grad():
        return src.to(self.dtype).expand(self.shape).clone()


def _slice(self: Any, dim: int = 0, start: int | None = None, end: int | None = None,
           step: int = 1) -> Any:
    dim = dim % max(self.dim(), 1)
    return self[(slice(None),) * dim + (slice(start, end, step),)]


def _isin(elements: Any, test_elements: Any, *, assume_unique: bool = False,
          invert: bool = False) -> Any:
    return _torch().isin(elements, test_elements, assume_unique=assume_unique, invert=invert)


def _isin_out(elements: Any, test_elements: Any, *, assume_unique: bool = False,
              invert: bool = False, out: Any) -> Any:
    result = _isin(elements, test_elements, assume_unique=assume_unique, invert=invert)
    out.resize_(result.shape)
    return out.copy_(result)


def _native_batch_norm(input: Any, weight: Any, bias: Any, running_mean: Any,  # noqa: A002
                       running_var: Any, training: bool, momentum: float,
                       eps: float) -> tuple:
    torch = _torch()
    output = torch.nn.functional.batch_norm(input, running_mean, running_var, weight, bias,
                                            training, momentum, eps)
    if not training:
        empty = input.new_empty(0)
        return output, empty, empty.clone()
    dims = [0] + list(range(2, input.dim()))
    with torch.no_grad():
        mean = input.mean(dims)
        invstd = (input.var(dims, unbiased=False) + eps).rsqrt()
    return output, mean, invstd


def _native_batch_norm_backward(grad_out: Any, input: Any, weight: Any,  # noqa: A002
                                running_mean: Any, running_var: Any, save_mean: Any,
                                save_invstd: Any, train: bool, eps: float,
                                output_mask: Any) -> tuple:
    # the gradient of batch_norm's forward, taken by the engine's own backward pass
    torch = _torch()
    x = input.detach().requires_grad_()
    channels = input.shape[1]
    w = (weight.detach() if weight is not None else input.new_ones(channels)).requires_grad_()
    b = input.new_zeros(channels).requires_grad_()
    stats = [None if s is None else s.detach().clone() for s in (running_mean, running_var)]
    with torch.enable_grad():
        out = torch.nn.functional.batch_norm(x, stats[0], stats[1], w, b, train, 0.0, eps)
        grads = torch.autograd.grad(out, (x, w, b), grad_out)
    return tuple(g if keep else None for g, keep in zip(grads, output_mask))


def _foreach_maximum_(self: list, other: Any) -> None:
    _torch()._foreach_maximum_(self, other)


_KERNELS: dict[tuple[str, str], Callable] = {
    ("view", "default"): lambda self, size: self.view(size),
    ("view", "dtype"): lambda self, dtype: self.view(dtype),
    ("clone", "default"): lambda self, *, memory_format=None: self.clone(),
    ("detach", "default"): lambda self: self.detach(),
    ("alias", "default"): lambda self: self.view(self.shape),
    ("_to_copy", "default"): _to_copy,
    ("copy", "default"): _copy,
    ("copy_", "default"): lambda self, src, non_blocking=False: self.copy_(src),
    ("select", "int"): lambda self, dim, index: self.select(dim, index),
    ("slice", "Tensor"): _slice,
    ("isin", "Tensor_Tensor"): _isin,
    ("isin", "Tensor_Tensor_out"): _isin_out,
    ("native_batch_norm", "default"): _native_batch_norm,
    ("native_batch_norm_backward", "default"): _native_batch_norm_backward,
    ("_foreach_maximum_", "Scalar"): _foreach_maximum_,
    ("_foreach_maximum_", "List"): _foreach_maximum_,
    ("_foreach_maximum_", "ScalarList"): _foreach_maximum_,
}


class OpOverload:
    """``torch.ops.aten.name.overload``: one schema, one kernel."""

    def __init__(self, packet: OpOverloadPacket, overload: str) -> None:
        self.overloadpacket = packet
        self._overloadname = overload
        self._schema = _SCHEMAS[packet._op][overload]
        self._kernel = _KERNELS[packet._op, overload]
        self.__name__ = f"{packet._op}.{overload}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._kernel(*args, **kwargs)

    def name(self) -> str:
        suffix = "" if self._overloadname == "default" else f".{self._overloadname}"
        return f"aten::{self.overloadpacket._op}{suffix}"

    def __str__(self) -> str:
        return f"aten.{self.__name__}"

    def __repr__(self) -> str:
        return (f"<OpOverload(op='aten.{self.overloadpacket._op}', "
                f"overload='{self._overloadname}')>")


class OpOverloadPacket:
    """``torch.ops.aten.name``: its overloads as attributes; calling it picks ``default``."""

    def __init__(self, op: str) -> None:
        self._op = op
        self.__name__ = op

    def overloads(self) -> list[str]:
        return list(_SCHEMAS[self._op])

    def __getattr__(self, overload: str) -> OpOverload:
        if overload.startswith("__") or overload not in _SCHEMAS[self._op]:
            raise AttributeError(f"The underlying op of 'aten.{self._op}' has no overload "
                                 f"name '{overload}'")
        return OpOverload(self, overload)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        first = next(iter(_SCHEMAS[self._op]))
        return getattr(self, first)(*args, **kwargs)

    def __str__(self) -> str:
        return f"aten.{self._op}"

    def __repr__(self) -> str:
        return f"<OpOverloadPacket(op='aten.{self._op}')>"


class _AtenNamespace:
    """``torch.ops.aten``."""

    name = "aten"

    def __getattr__(self, op: str) -> OpOverloadPacket:
        if op not in _SCHEMAS:
            raise AttributeError(f"'_OpNamespace' 'aten' object has no attribute '{op}'")
        return OpOverloadPacket(op)

    def __repr__(self) -> str:
        return "<module 'torch.ops.aten' from 'torch.ops'>"


aten = _AtenNamespace()
