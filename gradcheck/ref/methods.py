"""Tensor methods: operators, functional ops as methods, conversions, and in-place ops.

In-place ops follow torch: they bump the version counter, refuse leaves that require grad in
grad mode, and when a graph is being recorded they re-point the tensor's ``grad_fn`` at the
op so later backward passes see the edit.
"""
from __future__ import annotations

import numpy as np

from gradcheck.ref import devices as dev
from gradcheck.ref import dtypes as dt
from gradcheck.ref import grad_mode, ops
from gradcheck.ref.broadcast import mismatch_error
from gradcheck.ref.dispatch import apply
from gradcheck.ref.graph import Node
from gradcheck.ref.tensors import Tensor, _make, check_inplace


def _swap(fn):
    def reflected(self, other):
        return fn(other, self)

    return reflected


def _rsub(self, other):
    return ops.sub(other, self)


def _rdiv(self, other):
    return ops.div(other, self)


def _rpow(self, other):
    return ops.pow(other, self)


def _rmatmul(self, other):
    return ops.matmul(other, self)


def _eq(self, other):
    result = ops.eq(self, other)
    return False if result is NotImplemented else result


def _ne(self, other):
    result = ops.ne(self, other)
    return True if result is NotImplemented else result


# ----- conversions ------------------------------------------------------------------------------
def to(self, *args, **kwargs):
    """Move/cast: ``to(dtype)``, ``to(device)``, ``to(device, dtype)`` or ``to(other)``."""
    target_dtype = kwargs.get("dtype")
    target_device = kwargs.get("device")
    for arg in args:
        if isinstance(arg, Tensor):
            target_dtype, target_device = arg.dtype, arg.device
        elif isinstance(arg, dt.dtype):
            target_dtype = arg
        elif arg is not None:
            target_device = arg
    out = self
    if target_device is not None:
        target_device = dev.as_device(target_device)
        if target_device != self.device:
            out = _move(out, target_device)
    if target_dtype is not None:
        out = ops._cast(out, dt.as_dtype(target_dtype))
    if kwargs.get("copy") and out is self:
        out = ops.clone(self)
    return out


def _move(t: Tensor, target) -> Tensor:
    moved = _make(dev.to_device(t._data, target))
    if t._rg and grad_mode._enabled[0]:
        # NOTE: cross-device copies keep the graph: the gradient is moved back in backward.
        from gradcheck.ref.graph import Node

        def rule(ctx, g):
            return (_make(dev.to_device(g._data, dev.device_of(t._data))),)

        moved.grad_fn = Node("ToCopyBackward0", rule, (t,))
        moved._rg = True
    return moved


def _caster(d):
    def fn(self, memory_format=None):
        return ops._cast(self, d)

    return fn


def type_as(self, other):
    return ops._cast(self, other.dtype)


def type_(self, dtype=None, non_blocking=False):
    """``t.type()`` names the tensor type (``'torch.FloatTensor'``); ``t.type(d)`` casts."""
    if dtype is None:
        return f"torch.{self.dtype._tensor_type}"
    if isinstance(dtype, str):
        dtype = {d._tensor_type: d for d in dt.ALL}[dtype.replace("torch.", "")]
    return ops._cast(self, dt.as_dtype(dtype))


def stride(self, dim=None):
    """Strides in elements, like torch (numpy counts bytes)."""
    strides = tuple(s // self._data.itemsize for s in self._data.strides)
    return strides if dim is None else strides[dim]


def get_device(self) -> int:
    return -1 if self.device.type == "cpu" else (self.device.index or 0)


def cpu(self):
    return to(self, "cpu")


def cuda(self, device=None):
    return to(self, dev.device("cuda", device if isinstance(device, int) else None))


def contiguous(self, memory_format=None):
    return self if self._data.flags.c_contiguous else ops.clone(self)


def is_contiguous(self, memory_format=None):
    return bool(self._data.flags.c_contiguous)


def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    from gradcheck.ref.creation import tensor

    return tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                  requires_grad=requires_grad)


def _new(factory):
    def fn(self, *size, dtype=None, device=None, requires_grad=False):
        return factory(*size, dtype=dtype or self.dtype, device=device or self.device,
                       requires_grad=requires_grad)

    return fn


def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
    from gradcheck.ref.creation import full

    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


def expand_as(self, other):
    return ops.expand(self, other.shape)


def view_as(self, other):
    return ops.reshape(self, other.shape)


def reshape_as(self, other):
    return ops.reshape(self, other.shape)


# ----- in-place machinery -----------------------------------------------------------------------
def _needs_graph(self, args) -> bool:
    if not grad_mode._enabled[0]:
        return False
    return self._rg or any(isinstance(a, Tensor) and a._rg for a in args)


def _cast_error(result_dtype, self):
    return RuntimeError(
        f"result type {result_dtype._tensor_type.replace('Tensor', '')} can't be cast to the "
        f"desired output type {self.dtype._tensor_type.replace('Tensor', '')}"
    )


def _write(self, result: Tensor) -> None:
    """Store ``result`` into self's storage (so views and aliases see the edit)."""
    if result._data.dtype.kind == "f" and self._data.dtype.kind != "f":
        raise _cast_error(result.dtype, self)
    try:
        np.copyto(self._data, result._data, casting="unsafe")
    except ValueError as exc:
        raise _inplace_error(self, result, exc) from None


def _inplace_error(self, other, exc):
    if "read-only" in str(exc):
        return RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation."
        )
    return RuntimeError(
        f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
        f"{list(np.broadcast_shapes(self._data.shape, other._data.shape)) if _broadcasts(self, other) else list(other._data.shape)}"  # noqa: E501
    )


def _broadcasts(a, b) -> bool:
    try:
        np.broadcast_shapes(a._data.shape, b._data.shape)
    except ValueError:
        return False
    return True


def inplace(self, fn, *args, **kwargs):
    """Apply out-of-place ``fn(self, *args)`` and write the result into self, torch's way."""
    check_inplace(self)
    if _needs_graph(self, args):
        # The old value becomes the op's input; copy it because the op may have saved it.
        old = _make(self._data.copy(), grad_fn=self.grad_fn)
        result = fn(old, *args, **kwargs)
        if result._data.shape != self._data.shape:
            raise _inplace_error(self, result, ValueError())
        _write(self, result)
        self.grad_fn = result.grad_fn
        self._rg = True
        self._retains_grad = False
        if self._view is not None:
            _rebase(self)
    else:
        result = fn(self, *args, **kwargs)
        if result._data.shape != self._data.shape:
            raise _inplace_error(self, result, ValueError())
        _write(self, result)
    self._vc[0] += 1
    return self


def _fast(ufunc):
    """A no-graph fast path for add_/sub_/mul_/div_ (the optimizer hot path)."""

    def fn(self, other, *, alpha=1):
        if _needs_graph(self, (other,)):
            return None
        o = other._data if isinstance(other, Tensor) else other
        if alpha != 1:
            o = o * alpha
        try:
            ufunc(self._data, o, out=self._data, casting="same_kind")
        except TypeError:
            raise _cast_error(dt.result_type(self, other), self) from None
        except ValueError as exc:
            raise _inplace_error(self, other if isinstance(other, Tensor) else _make(
                np.asarray(o)), exc) from None
        self._vc[0] += 1
        return self

    return fn


_fast_add, _fast_sub, _fast_mul, _fast_div = (
    _fast(np.add), _fast(np.subtract), _fast(np.multiply), _fast(np.true_divide))


def add_(self, other, *, alpha=1):
    """self += alpha * other."""
    check_inplace(self)
    out = _fast_add(self, other, alpha=alpha)
    return inplace(self, ops.add, other, alpha=alpha) if out is None else out


def sub_(self, other, *, alpha=1):
    check_inplace(self)
    out = _fast_sub(self, other, alpha=alpha)
    return inplace(self, ops.sub, other, alpha=alpha) if out is None else out


def mul_(self, other):
    check_inplace(self)
    out = _fast_mul(self, other)
    return inplace(self, ops.mul, other) if out is None else out


def div_(self, other, *, rounding_mode=None):
    check_inplace(self)
    if rounding_mode is None and self._data.dtype.kind == "f":
        out = _fast_div(self, other)
        if out is not None:
            return out
    return inplace(self, ops.div, other, rounding_mode=rounding_mode)


def zero_(self):
    """Fill with zeros in place."""
    check_inplace(self)
    self._data[...] = 0
    if _needs_graph(self, ()):
        self.grad_fn = ops.mul(_make(self._data.copy(), grad_fn=self.grad_fn), 0).grad_fn
    self._vc[0] += 1
    return self


def fill_(self, value):
    check_inplace(self)
    v = value.item() if isinstance(value, Tensor) else value
    if isinstance(value, Tensor) and _needs_graph(self, (value,)):
        return inplace(self, lambda s, val: ops.expand(ops._cast(val, s.dtype), s.shape), value)
    self._data[...] = v
    if _needs_graph(self, ()):
        self.grad_fn = ops.mul(_make(self._data.copy(), grad_fn=self.grad_fn), 0).grad_fn
    self._vc[0] += 1
    return self


def copy_(self, src, non_blocking=False):
    """Copy ``src`` (broadcast, cast, moved) into self; the gradient flows to ``src``."""
    check_inplace(self)
    src_t = src if isinstance(src, Tensor) else _make(np.asarray(src))
    if src_t.device != self.device:
        src_t = _move(src_t, self.device)
    if _needs_graph(self, (src_t,)):
        return inplace(self, lambda s, v: ops.expand(ops._cast(v, s.dtype), s.shape), src_t)
    try:
        np.copyto(self._data, dev.to_device(src_t._data, self.device), casting="unsafe")
    except ValueError as exc:
        raise _inplace_error(self, src_t, exc) from None
    self._vc[0] += 1
    return self


def clamp_(self, min=None, max=None):  # noqa: A002
    return inplace(self, ops.clamp, min, max)


def addcmul_(self, tensor1, tensor2, *, value=1):
    """self += value * tensor1 * tensor2."""
    return add_(self, ops.mul(tensor1, tensor2), alpha=value)


def addcdiv_(self, tensor1, tensor2, *, value=1):
    """self += value * tensor1 / tensor2."""
    return add_(self, ops.div(tensor1, tensor2), alpha=value)


def lerp_(self, end, weight):
    """self += weight * (end - self)."""
    return add_(self, ops.mul(ops.sub(end, self), weight))


def lerp(self, end, weight):
    return ops.add(self, ops.mul(ops.sub(end, self), weight))


def addcmul(self, tensor1, tensor2, *, value=1):
    return ops.add(self, ops.mul(ops.mul(tensor1, tensor2), value))


def addcdiv(self, tensor1, tensor2, *, value=1):
    return ops.add(self, ops.mul(ops.div(tensor1, tensor2), value))


def masked_fill_(self, mask, value):
    return inplace(self, ops.masked_fill, mask, value)


def setitem(self, index, value) -> None:
    """``self[index] = value``; recorded in the graph when grad mode needs it."""
    check_inplace(self)
    value_t = value if isinstance(value, Tensor) else ops._const(value, self, self._data.dtype)
    if _needs_graph(self, (value_t,)):
        inplace(self, ops.index_put, index, value_t)
        return
    norm = ops._normalise_index(index)
    try:
        self._data[norm] = value_t._data
    except IndexError as exc:
        raise IndexError(str(exc).replace("axis", "dimension")) from None
    except ValueError as exc:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(value_t.shape)} cannot "
                           f"be broadcast to indexing result ({exc})") from None
    self._vc[0] += 1


def _copy_slices(ctx, g):
    """Backward of writing a view back into its base: the base keeps the gradient outside the
    view, the new view value receives the gradient inside it."""
    grad_base = grad_view = None
    if ctx.needs_input_grad[0]:
        mask = np.ones(g._data.shape, dtype=g._data.dtype)
        ctx.view_op.forward(mask, **ctx.view_attrs)[...] = 0  # a numpy view into mask
        grad_base = ops.mul(g, _make(mask))
    if ctx.needs_input_grad[1]:
        grad_view = apply(ctx.view_op, g, **ctx.view_attrs)
    return grad_base, grad_view


def _rebase(view: Tensor) -> None:
    """After an in-place edit of ``view``, give its base (and the base's bases) a history that
    includes the edit, then make the view a fresh view of the new base (torch's CopySlices)."""
    base, op, attrs = view._view
    old_base = _make(base._data, grad_fn=base.grad_fn)
    old_base._rg = base._rg
    node = Node("CopySlices", _copy_slices, (old_base, view))
    node.view_op, node.view_attrs = op, attrs
    base.grad_fn = node
    base._rg = True
    base._retains_grad = False
    if base._view is not None:
        _rebase(base)
    view.grad_fn = apply(op, base, **attrs).grad_fn


def _inplace_of(fn):
    def method(self, *args, **kwargs):
        return inplace(self, fn, *args, **kwargs)

    return method


def _max_method(self, dim=None, keepdim=False):
    return ops.max(self, dim, keepdim)


def _min_method(self, dim=None, keepdim=False):
    return ops.min(self, dim, keepdim)


def _where_method(self, condition, other):
    return ops.where(condition, self, other)


def _T(self):  # noqa: N802
    return ops.permute(self, *reversed(range(self._data.ndim)))


def _mT(self):  # noqa: N802
    return ops.transpose(self, -2, -1)


def _shape_method(fn):
    def method(self, *shape):
        return fn(self, *shape)

    return method


def _neg_check(self):
    if self._data.dtype == np.bool_:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
            "invert a mask, use the `~` or `logical_not()` operator instead."
        )
    return ops.neg(self)


def _invert(self):
    if self._data.dtype == np.bool_:
        return ops.logical_not(self)
    return _make(np.invert(self._data))


def attach() -> None:
    """Install the operators and methods on Tensor (run once when the package is imported)."""
    from gradcheck.ref import creation, random

    methods = {
        "__add__": ops.add, "__radd__": _swap(ops.add), "__sub__": ops.sub, "__rsub__": _rsub,
        "__mul__": ops.mul, "__rmul__": _swap(ops.mul), "__truediv__": ops.div,
        "__rtruediv__": _rdiv, "__pow__": ops.pow, "__rpow__": _rpow, "__matmul__": ops.matmul,
        "__rmatmul__": _rmatmul, "__neg__": _neg_check, "__pos__": lambda self: self,
        "__abs__": ops.abs, "__invert__": _invert,
        "__floordiv__": lambda a, b: ops.div(a, b, rounding_mode="floor"),
        "__rfloordiv__": lambda a, b: ops.div(b, a, rounding_mode="floor"),
        "__mod__": lambda a, b: ops.sub(a, ops.mul(ops.div(a, b, rounding_mode="floor"), b)),
        "__eq__": _eq, "__ne__": _ne, "__lt__": ops.lt, "__le__": ops.le, "__gt__": ops.gt,
        "__ge__": ops.ge, "__and__": ops.bitwise_and, "__or__": ops.bitwise_or,
        "__xor__": ops.bitwise_xor, "__rand__": _swap(ops.bitwise_and),
        "__ror__": _swap(ops.bitwise_or),
        "__getitem__": ops.getitem, "__setitem__": setitem,
        "__iadd__": add_, "__isub__": sub_, "__imul__": mul_, "__itruediv__": div_,
        "to": to, "type_as": type_as, "type": type_, "stride": stride,
        "get_device": get_device, "cpu": cpu, "cuda": cuda, "contiguous": contiguous,
        "is_contiguous": is_contiguous, "float": _caster(dt.float32),
        "double": _caster(dt.float64), "half": _caster(dt.float16), "long": _caster(dt.int64),
        "int": _caster(dt.int32), "bool": _caster(dt.bool_), "new_tensor": new_tensor,
        "new_zeros": _new(creation.zeros), "new_ones": _new(creation.ones),
        "new_empty": _new(creation.empty), "new_full": new_full, "expand_as": expand_as,
        "view_as": view_as, "reshape_as": reshape_as,
        "add_": add_, "sub_": sub_, "mul_": mul_, "div_": div_, "zero_": zero_, "fill_": fill_,
        "copy_": copy_, "clamp_": clamp_, "clip_": clamp_, "addcmul_": addcmul_,
        "addcdiv_": addcdiv_, "lerp_": lerp_, "lerp": lerp, "addcmul": addcmul,
        "addcdiv": addcdiv, "masked_fill_": masked_fill_,
        "uniform_": random.uniform_, "normal_": random.normal_, "bernoulli_": random.bernoulli_,
        "max": _max_method, "min": _min_method, "where": _where_method,
        "T": property(_T), "mT": property(_mT), "H": property(_T), "mH": property(_mT),
        "view": _shape_method(ops.reshape), "reshape": _shape_method(ops.reshape),
        "multiply": ops.mul, "divide": ops.div, "true_divide": ops.div,
    }
    same_name = (
        "exp log log1p expm1 sqrt rsqrt sin cos tan tanh sigmoid reciprocal neg abs relu sign "
        "floor ceil round trunc square clamp clip maximum minimum pow matmul masked_fill softmax "
        "log_softmax sum mean amax amin argmax argmin var std logsumexp norm all any cumsum eq ne "
        "lt le gt ge logical_not logical_and logical_or isnan isinf isfinite flatten unflatten "
        "transpose t permute squeeze unsqueeze expand repeat narrow select unbind split chunk "
        "gather scatter_add index_select clone equal allclose isclose tril triu outer dot add sub "
        "mul div mm bmm swapaxes broadcast_to sort argsort topk nonzero"
    ).split()
    for name in same_name:
        methods.setdefault(name, getattr(ops, name))
    for name in ("exp", "log", "sqrt", "abs", "neg", "sigmoid", "tanh", "relu", "sin", "cos",
                 "pow", "reciprocal", "floor", "ceil", "round", "sign", "log1p", "expm1",
                 "rsqrt", "square"):
        methods[name + "_"] = _inplace_of(getattr(ops, name))
    for name, fn in methods.items():
        setattr(Tensor, name, fn)
    Tensor.__rpow__ = _rpow
    Tensor.__array_priority__ = 1000  # numpy scalars defer to Tensor's reflected operators


_ = mismatch_error
