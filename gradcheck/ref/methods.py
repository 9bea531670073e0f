"""Tensor methods: operators, the functional ops as methods, and conversions.

``attach()`` installs them on Tensor when the package is imported; the in-place methods come
from ``inplace``.
"""
from __future__ import annotations

import numpy as np

from gradcheck.ref import arguments, ops
from gradcheck.ref import devices as dev
from gradcheck.ref import dtypes as dt
from gradcheck.ref.inplace import (
    add_,
    addcdiv_,
    addcmul_,
    clamp_,
    copy_,
    div_,
    fill_,
    inplace,
    lerp_,
    masked_fill_,
    mul_,
    setitem,
    sub_,
    zero_,
)
from gradcheck.ref.tensors import Tensor, _make


def _swap(fn):
    def reflected(self, other):
        return fn(other, self)

    return reflected


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
            out = ops.move(out, target_device)
    if target_dtype is not None:
        out = arguments._cast(out, dt.as_dtype(target_dtype))
    if kwargs.get("copy") and out is self:
        out = ops.clone(self)
    return out


def _caster(d):
    def fn(self, memory_format=None):
        return arguments._cast(self, d)

    return fn


def type_as(self, other):
    return arguments._cast(self, other.dtype)


def type_(self, dtype=None, non_blocking=False):
    """``t.type()`` names the tensor type (``'torch.FloatTensor'``); ``t.type(d)`` casts."""
    if dtype is None:
        return f"torch.{self.dtype._tensor_type}"
    if isinstance(dtype, str):
        dtype = {d._tensor_type: d for d in dt.ALL}[dtype.replace("torch.cuda.", "").replace(
            "torch.", "")]
    dtype = getattr(dtype, "dtype", dtype)  # a legacy type such as torch.FloatTensor
    return arguments._cast(self, dt.as_dtype(dtype))


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
    # like torch: the tensor itself when already row-major, else a row-major copy in the graph
    if self._data.flags.c_contiguous:
        return self
    return ops.clone(self, memory_format="contiguous_format")


def is_contiguous(self, memory_format=None):
    return bool(self._data.flags.c_contiguous)


def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    from gradcheck.ref.creation import tensor

    return tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                  requires_grad=requires_grad)


def _new(factory):
    def fn(self, *size, dtype=None, device=None, requires_grad=False, **keywords):
        # NOTE: torch also takes the shape as a keyword: x.new_ones(size=(), dtype=...)
        if "size" in keywords:
            size = (keywords.pop("size"),)
        if keywords:
            raise TypeError(f"new_*() got an unexpected keyword argument '{next(iter(keywords))}'")
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


def lerp(self, end, weight):
    return ops.add(self, ops.mul(ops.sub(end, self), weight))


def addcmul(self, tensor1, tensor2, *, value=1):
    return ops.add(self, ops.mul(ops.mul(tensor1, tensor2), value))


def addcdiv(self, tensor1, tensor2, *, value=1):
    return ops.add(self, ops.mul(ops.div(tensor1, tensor2), value))



def _inplace_of(fn):
    def method(self, *args, **kwargs):
        return inplace(self, fn, *args, **kwargs)

    return method


def _max_method(self, dim=None, keepdim=False, *, axis=None):
    return ops.max(self, dim if axis is None else axis, keepdim)


def _min_method(self, dim=None, keepdim=False, *, axis=None):
    return ops.min(self, dim if axis is None else axis, keepdim)


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
        "__add__": ops.add, "__radd__": _swap(ops.add), "__sub__": ops.sub,
        "__rsub__": _swap(ops.sub), "__mul__": ops.mul, "__rmul__": _swap(ops.mul),
        "__truediv__": ops.div, "__rtruediv__": _swap(ops.div), "__pow__": ops.pow,
        "__rpow__": _swap(ops.pow), "__matmul__": ops.matmul, "__rmatmul__": _swap(ops.matmul),
        "__neg__": _neg_check, "__pos__": lambda self: self, "__abs__": ops.abs,
        "__invert__": _invert,
        "__floordiv__": lambda a, b: ops.div(a, b, rounding_mode="floor"),
        "__rfloordiv__": lambda a, b: ops.div(b, a, rounding_mode="floor"),
        "__mod__": ops.remainder, "__rmod__": _swap(ops.remainder),
        "__rxor__": _swap(ops.bitwise_xor), "__lshift__": ops.bitwise_left_shift,
        "__rshift__": ops.bitwise_right_shift, "__rlshift__": _swap(ops.bitwise_left_shift),
        "__rrshift__": _swap(ops.bitwise_right_shift),
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
        "int": _caster(dt.int32), "bool": _caster(dt.bool_), "byte": _caster(dt.uint8),
        "char": _caster(dt.int8), "short": _caster(dt.int16), "new_tensor": new_tensor,
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
        "view": _shape_method(ops.view), "reshape": _shape_method(ops.reshape),
        "multiply": ops.mul, "divide": ops.div, "true_divide": ops.div,
        "unfold": ops.unfold_dim,
    }
    same_name = (
        "exp log log1p expm1 sqrt rsqrt sin cos tan tanh sigmoid reciprocal neg abs relu sign "
        "floor ceil round trunc square clamp clip maximum minimum pow matmul masked_fill softmax "
        "log_softmax sum mean amax amin argmax argmin var std logsumexp norm all any cumsum eq ne "
        "lt le gt ge logical_not logical_and logical_or isnan isinf isfinite flatten unflatten "
        "transpose t permute squeeze unsqueeze expand repeat narrow select unbind split chunk "
        "gather scatter_add index_select clone equal allclose isclose tril triu outer dot add sub "
        "mul div mm bmm swapaxes broadcast_to sort argsort topk nonzero prod cumprod cummax "
        "cummin flip fliplr flipud roll movedim moveaxis scatter scatter_reduce erf log2 "
        "remainder fmod bitwise_and bitwise_or bitwise_xor bitwise_left_shift "
        "bitwise_right_shift asin acos atan exp2 sinh cosh asinh acosh atanh arcsin arccos "
        "arctan arcsinh arccosh arctanh bitwise_not diag diagonal masked_select logcumsumexp "
        "repeat_interleave"
    ).split()
    for name in same_name:
        methods.setdefault(name, getattr(ops, name))
    for name in ("exp", "log", "sqrt", "abs", "neg", "sigmoid", "tanh", "relu", "sin", "cos",
                 "pow", "reciprocal", "floor", "ceil", "round", "sign", "log1p", "expm1",
                 "rsqrt", "square", "erf", "log2", "scatter", "scatter_reduce", "flip"):
        methods[name + "_"] = _inplace_of(getattr(ops, name))
    from gradcheck.ref import indexed

    for name in ("index_fill", "index_add", "index_copy"):
        methods[name] = getattr(indexed, name)
        methods[name + "_"] = getattr(indexed, name + "_")
    for name, fn in methods.items():
        setattr(Tensor, name, fn)
    Tensor.__array_priority__ = 1000  # numpy scalars defer to Tensor's reflected operators

