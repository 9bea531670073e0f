"""The functional namespace (``torch.exp``, ``torch.sum``, ...) and the Tensor methods built on it.

Every differentiable op goes through ``dispatch.apply`` with its row of the derivatives table;
this module only normalises arguments (dims, dtypes, scalars, indices) torch's way.
"""
from __future__ import annotations

import builtins
from collections import namedtuple

import numpy as np

from gradcheck.ref import dtypes as dt
from gradcheck.ref import grad_mode
from gradcheck.ref.broadcast import broadcast_shapes, mismatch_error
from gradcheck.ref.devices import module_of
from gradcheck.ref.dispatch import apply
from gradcheck.ref.tensors import Tensor, _dim, _make, check_inplace

from gradcheck.ref.derivatives import TABLE  # noqa: E402  (derivatives imports this module)

__all__ = ["broadcast_shapes"]

return_max = namedtuple("max", ["values", "indices"])
return_min = namedtuple("min", ["values", "indices"])
_NUMBER = (int, float, bool, np.number, np.bool_)


# ----- argument normalisation ----------------------------------------------------------------
def _wrap(array) -> Tensor:
    return _make(array)


def _const(value, like: Tensor, np_dtype) -> Tensor:
    xp = module_of(like._data)
    return _make(xp.asarray(value, dtype=np_dtype))


def _cast(t: Tensor, d: dt.dtype) -> Tensor:
    return t if t._data.dtype == d.np else apply(TABLE["to"], t, dtype=d.np)


def _pair(a, b):
    """Two Tensors of torch's promoted dtype from Tensor/scalar operands."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        if a._data.dtype == b._data.dtype:
            return a, b
        d = dt.result_type(a, b)
        return _cast(a, d), _cast(b, d)
    t, s, swap = (a, b, False) if isinstance(a, Tensor) else (b, a, True)
    if not isinstance(s, _NUMBER):
        if isinstance(s, np.ndarray):
            s = _make(s)
            return _pair(s, t) if swap else _pair(t, s)
        return NotImplemented, None
    kind = t._data.dtype.kind
    if kind == "f" and not isinstance(s, (bool, np.bool_)):
        c = _const(s, t, t._data.dtype)
    else:
        d = dt.result_type(t, s)
        t = _cast(t, d)
        c = _const(s, t, d.np)
    return (c, t) if swap else (t, c)


def _float(t: Tensor) -> Tensor:
    """Integer inputs of float functions (exp, log, ...) become the default float dtype."""
    return t if t._data.dtype.kind == "f" else _cast(t, dt.get_default_dtype())


def _dims(dim, ndim: int):
    """None, an int or a sequence of ints -> None or a sorted tuple of non-negative dims."""
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        if len(dim) == 0:
            return None
        return tuple(sorted(_dim(d, ndim) for d in dim))
    return (_dim(dim, ndim),)


def _shape_args(args) -> tuple:
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(int(s) for s in args[0])
    return tuple(int(s) for s in args)


def is_basic_index(index) -> bool:
    return not builtins.any(isinstance(i, np.ndarray) or type(i).__module__.startswith("cupy")
                   for i in index)


def _normalise_index(index):
    if not isinstance(index, tuple):
        index = (index,)
    out = []
    for i in index:
        if isinstance(i, Tensor):
            i = i._data
            if i.dtype.kind == "f":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        elif isinstance(i, list):
            i = np.asarray(i)
        out.append(i)
    return tuple(out)


# ----- elementwise ----------------------------------------------------------------------------
def _binary_op(name):
    op = TABLE[name]

    def fn(input, other, *, out=None):  # noqa: A002 - torch names
        a, b = _pair(input, other)
        if a is NotImplemented:
            return NotImplemented
        return apply(op, a, b)

    fn.__name__ = name
    fn.__doc__ = f"torch.{name} with broadcasting and torch's type promotion."
    return fn


mul = multiply = _binary_op("mul")
maximum = _binary_op("maximum")
minimum = _binary_op("minimum")
_sub = _binary_op("sub")
_add = _binary_op("add")


def add(input, other, *, alpha=1):  # noqa: A002
    """input + alpha * other.

    >>> from gradcheck.ref import tensor
    >>> add(tensor([1.0]), tensor([2.0]), alpha=3)
    tensor([7.])
    """
    if alpha != 1:
        other = mul(other, alpha)
    return _add(input, other)


def sub(input, other, *, alpha=1):  # noqa: A002
    """input - alpha * other."""
    bools = builtins.sum(1 for v in (input, other) if isinstance(v, (bool, np.bool_)) or (
        isinstance(v, Tensor) and v._data.dtype == np.bool_))
    if bools == 2:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if bools == 1:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    if alpha != 1:
        other = mul(other, alpha)
    return _sub(input, other)


subtract = sub


def div(input, other, *, rounding_mode=None):  # noqa: A002
    """True division (integers divide into the default float dtype), or floor/trunc division."""
    a, b = _pair(input, other)
    if a is NotImplemented:
        return NotImplemented
    if rounding_mode is not None:
        with grad_mode.no_grad():
            q = np.floor_divide(a._data, b._data) if rounding_mode == "floor" else np.trunc(
                a._data / b._data).astype(a._data.dtype)
        return _make(np.asarray(q))
    if a._data.dtype.kind != "f":
        a, b = _float(a), _float(b)
    return apply(TABLE["div"], a, b)


divide = true_divide = div


def pow(input, exponent):  # noqa: A001 - torch name
    """input ** exponent (either side may be a Python number)."""
    if isinstance(input, Tensor) and isinstance(exponent, _NUMBER) and not isinstance(
        exponent, (bool, np.bool_)
    ):
        if input._data.dtype.kind != "f" and isinstance(exponent, float):
            input = _float(input)
        return apply(TABLE["pow_scalar"], input, exponent=exponent)
    if not isinstance(input, Tensor) and isinstance(exponent, Tensor):
        exponent = _float(exponent) if isinstance(input, float) else exponent
        return apply(TABLE["rpow_scalar"], exponent, base=input)
    a, b = _pair(input, exponent)
    return apply(TABLE["pow"], a, b)


def matmul(input, other):  # noqa: A002
    """Matrix product with numpy/torch broadcasting rules for 1-D and batched operands.

    >>> from gradcheck.ref import ones
    >>> matmul(ones(2, 3), ones(3)).tolist()
    [3.0, 3.0]
    """
    a, b = _pair(input, other)
    return apply(TABLE["matmul"], a, b)


mm = bmm = matmul


def _unary_op(name, floating=True):
    op = TABLE[name]

    def fn(input):  # noqa: A002
        return apply(op, _float(input) if floating else input)

    fn.__name__ = name
    fn.__doc__ = f"Elementwise torch.{name}."
    return fn


exp = _unary_op("exp")
log = _unary_op("log")
log1p = _unary_op("log1p")
expm1 = _unary_op("expm1")
sqrt = _unary_op("sqrt")
rsqrt = _unary_op("rsqrt")
sin = _unary_op("sin")
cos = _unary_op("cos")
tan = _unary_op("tan")
tanh = _unary_op("tanh")
sigmoid = _unary_op("sigmoid")
reciprocal = _unary_op("reciprocal")
neg = negative = _unary_op("neg", floating=False)
abs = absolute = _unary_op("abs", floating=False)  # noqa: A001
relu = _unary_op("relu", floating=False)
sign = _unary_op("sign", floating=False)
floor = _unary_op("floor", floating=False)
ceil = _unary_op("ceil", floating=False)
round = _unary_op("round", floating=False)  # noqa: A001
trunc = _unary_op("trunc", floating=False)


def square(input):  # noqa: A002
    return pow(input, 2)


def clamp(input, min=None, max=None):  # noqa: A002
    """Clip to [min, max]; the gradient passes where min <= input <= max.

    >>> from gradcheck.ref import tensor
    >>> clamp(tensor([-1.0, 0.5, 2.0]), 0, 1)
    tensor([0.0000, 0.5000, 1.0000])
    """
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = input
        if min is not None:
            out = maximum(out, min)
        if max is not None:
            out = minimum(out, max)
        return out
    if input._data.dtype.kind != "f" and isinstance(min, float) | isinstance(max, float):
        input = _float(input)
    return apply(TABLE["clamp"], input, min=min, max=max)


clip = clamp


def where(condition, input=None, other=None):  # noqa: A002
    """Elementwise ``input if condition else other`` (scalars allowed)."""
    if input is None and other is None:
        return tuple(_make(i) for i in np.nonzero(condition._data))
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        input = _const(input, condition, dt.result_type(input, other).np)
    a, b = _pair(input, other)
    cond = condition if condition._data.dtype.kind == "b" else _make(condition._data.astype(bool))
    return apply(TABLE["where"], cond, a, b)


def masked_fill(input, mask, value):  # noqa: A002
    """A copy of ``input`` with ``value`` where ``mask`` is True."""
    if isinstance(value, Tensor):
        value = value.item()
    if mask._data.shape != input._data.shape:
        shape = broadcast_shapes(input._data.shape, mask._data.shape)
        if shape != input._data.shape:
            raise mismatch_error(input._data.shape, mask._data.shape)
    return apply(TABLE["masked_fill"], input, mask, value=value)


def softmax(input, dim, dtype=None):  # noqa: A002
    """softmax along ``dim``, computed stably."""
    x = _float(input) if dtype is None else _cast(input, dt.as_dtype(dtype))
    return apply(TABLE["softmax"], x, dim=_dim(dim, x._data.ndim))


def log_softmax(input, dim, dtype=None):  # noqa: A002
    """log(softmax) along ``dim``, computed stably."""
    x = _float(input) if dtype is None else _cast(input, dt.as_dtype(dtype))
    return apply(TABLE["log_softmax"], x, dim=_dim(dim, x._data.ndim))


# ----- reductions -----------------------------------------------------------------------------
def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001, A002
    """Sum over ``dim`` (all dims when None).

    >>> from gradcheck.ref import ones
    >>> sum(ones(2, 3), dim=1)
    tensor([3., 3.])
    """
    if dtype is not None:
        input = _cast(input, dt.as_dtype(dtype))
    dims = _dims(dim, input._data.ndim)
    return apply(TABLE["sum" if dims else "sum_all"], input, dim=dims, keepdim=keepdim)


def mean(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """Mean over ``dim`` (all dims when None); integer inputs are an error, as in torch."""
    if dtype is not None:
        input = _cast(input, dt.as_dtype(dtype))
    if input._data.dtype.kind != "f":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or "
            f"complex dtype. Got: {input.dtype._tensor_type.replace('Tensor', '')}"
        )
    dims = _dims(dim, input._data.ndim)
    return apply(TABLE["mean" if dims else "mean_all"], input, dim=dims, keepdim=keepdim)


def amax(input, dim=(), keepdim=False):  # noqa: A002
    return apply(TABLE["amax"], input, dim=_dims(dim, input._data.ndim), keepdim=keepdim)


def amin(input, dim=(), keepdim=False):  # noqa: A002
    return apply(TABLE["amin"], input, dim=_dims(dim, input._data.ndim), keepdim=keepdim)


def _extreme(name, input, dim, keepdim, other):
    if isinstance(dim, Tensor):
        other, dim = dim, None
    if other is not None:
        return maximum(input, other) if name == "max" else minimum(input, other)
    if dim is None:
        if input._data.size == 0:
            raise RuntimeError(
                f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument."
            )
        return amax(input) if name == "max" else amin(input)
    d = _dim(dim, input._data.ndim)
    if not input._data.ndim:
        return (return_max if name == "max" else return_min)(input.clone(), _make(np.asarray(0)))
    arg = np.argmax if name == "max" else np.argmin
    idx = np.expand_dims(arg(input._data, axis=d), d)
    values = apply(TABLE[f"{name}_dim"], input, dim=d, keepdim=keepdim, indices=idx)
    indices = _make(idx if keepdim else idx.squeeze(axis=d))
    return (return_max if name == "max" else return_min)(values, indices)


def max(input, dim=None, keepdim=False, *, other=None):  # noqa: A001, A002
    """Full max, ``(values, indices)`` along ``dim``, or elementwise max with a tensor."""
    return _extreme("max", input, dim, keepdim, other)


def min(input, dim=None, keepdim=False, *, other=None):  # noqa: A001, A002
    """Full min, ``(values, indices)`` along ``dim``, or elementwise min with a tensor."""
    return _extreme("min", input, dim, keepdim, other)


def argmax(input, dim=None, keepdim=False):  # noqa: A002
    if dim is None:
        return _make(np.asarray(np.argmax(input._data), dtype=np.int64))
    d = _dim(dim, input._data.ndim)
    return _make(np.asarray(np.argmax(input._data, axis=d, keepdims=keepdim), dtype=np.int64))


def argmin(input, dim=None, keepdim=False):  # noqa: A002
    if dim is None:
        return _make(np.asarray(np.argmin(input._data), dtype=np.int64))
    d = _dim(dim, input._data.ndim)
    return _make(np.asarray(np.argmin(input._data, axis=d, keepdims=keepdim), dtype=np.int64))


def _correction(unbiased, correction) -> int:
    if correction is not None:
        return correction
    return 1 if unbiased is None or unbiased else 0


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    """Variance with Bessel's correction by default (``correction=1``)."""
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    return apply(TABLE["var"], _float(input), dim=_dims(dim, input._data.ndim),
                 correction=_correction(unbiased, correction), keepdim=keepdim)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    """Standard deviation with Bessel's correction by default."""
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    return apply(TABLE["std"], _float(input), dim=_dims(dim, input._data.ndim),
                 correction=_correction(unbiased, correction), keepdim=keepdim)


def logsumexp(input, dim, keepdim=False):  # noqa: A002
    """log(sum(exp(input))) over ``dim``, computed stably."""
    return apply(TABLE["logsumexp"], _float(input), dim=_dims(dim, input._data.ndim),
                 keepdim=keepdim)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):  # noqa: A002
    """Vector p-norm over ``dim`` (all elements when None)."""
    x = _float(input)
    dims = _dims(dim, x._data.ndim)
    if p in ("fro", 2, 2.0):
        return apply(TABLE["norm"], x, dim=dims, keepdim=keepdim)
    if p in (float("inf"), "inf"):
        return amax(abs(x), dims or (), keepdim)
    if p == 1:
        return sum(abs(x), dims, keepdim)
    return pow(sum(pow(abs(x), p), dims, keepdim), 1.0 / p)


def all(input, dim=None, keepdim=False):  # noqa: A001, A002
    axis = None if dim is None else _dim(dim, input._data.ndim)
    return _make(np.asarray(np.all(input._data, axis=axis, keepdims=keepdim)))


def any(input, dim=None, keepdim=False):  # noqa: A001, A002
    axis = None if dim is None else _dim(dim, input._data.ndim)
    return _make(np.asarray(np.any(input._data, axis=axis, keepdims=keepdim)))


def cumsum(input, dim):  # noqa: A002
    """Cumulative sum along ``dim`` (built from cat of partial sums is too slow; uses a mask)."""
    d = _dim(dim, input._data.ndim)
    n = input._data.shape[d]
    tri = _const(np.tril(np.ones((n, n))), input, input._data.dtype)
    moved = transpose(input, d, -1)
    return transpose(matmul(moved, tri.mT), d, -1)


# ----- comparisons and logic (no gradient) ------------------------------------------------------
def _compare(ufunc):
    def fn(input, other):  # noqa: A002
        a, b = _pair(input, other)
        if a is NotImplemented:
            return NotImplemented
        try:
            return _make(np.asarray(ufunc(a._data, b._data)))
        except ValueError:
            raise mismatch_error(a._data.shape, b._data.shape) from None

    fn.__name__ = ufunc.__name__
    return fn


eq = _compare(np.equal)
ne = not_equal = _compare(np.not_equal)
lt = less = _compare(np.less)
le = less_equal = _compare(np.less_equal)
gt = greater = _compare(np.greater)
ge = greater_equal = _compare(np.greater_equal)
logical_and = _compare(np.logical_and)
logical_or = _compare(np.logical_or)
logical_xor = _compare(np.logical_xor)


def logical_not(input):  # noqa: A002
    return _make(np.logical_not(input._data))


def _bitwise(ufunc):
    def fn(input, other):  # noqa: A002
        a, b = _pair(input, other)
        if a is NotImplemented:
            return NotImplemented
        return _make(np.asarray(ufunc(a._data, b._data)))

    return fn


bitwise_and = _bitwise(np.bitwise_and)
bitwise_or = _bitwise(np.bitwise_or)
bitwise_xor = _bitwise(np.bitwise_xor)


def isnan(input):  # noqa: A002
    return _make(np.isnan(input._data))


def isinf(input):  # noqa: A002
    return _make(np.isinf(input._data))


def isfinite(input):  # noqa: A002
    return _make(np.isfinite(input._data))


def equal(input, other) -> bool:  # noqa: A002
    """True when both have the same shape and elements."""
    return input.shape == other.shape and bool(np.array_equal(input._data, other._data))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:  # noqa: A002
    """Elementwise |input - other| <= atol + rtol * |other|, for all elements."""
    return bool(np.allclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    return _make(np.isclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


# ----- shape ops --------------------------------------------------------------------------------
def reshape(input, *shape):  # noqa: A002
    """A tensor with the same elements in a new shape (-1 infers one dimension)."""
    shape = _shape_args(shape)
    return apply(TABLE["reshape"], input, shape=shape)


view = reshape


def flatten(input, start_dim=0, end_dim=-1):  # noqa: A002
    """Merge dims start_dim..end_dim into one."""
    shape = input._data.shape
    if not shape:
        return reshape(input, 1)
    s, e = _dim(start_dim, len(shape)), _dim(end_dim, len(shape))
    return reshape(input, shape[:s] + (-1 if 0 not in shape[s:e + 1] else 0,) + shape[e + 1:])


def unflatten(input, dim, sizes):  # noqa: A002
    d = _dim(dim, input._data.ndim)
    shape = input._data.shape
    return reshape(input, shape[:d] + tuple(sizes) + shape[d + 1:])


def transpose(input, dim0, dim1):  # noqa: A002
    """Swap two dims (a view)."""
    n = input._data.ndim
    return apply(TABLE["transpose"], input, dim0=_dim(dim0, n), dim1=_dim(dim1, n))


swapaxes = transpose


def t(input):  # noqa: A002
    """Transpose of a <= 2-D tensor."""
    if input._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input._data.ndim}D")
    return transpose(input, 0, 1) if input._data.ndim == 2 else input.view(input.shape)


def permute(input, *dims):  # noqa: A002
    """Reorder dims (a view)."""
    dims = _shape_args(dims)
    n = input._data.ndim
    if len(dims) != n:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            "length of the desired ordering of dimensions i.e. input.dim() = "
            f"{n} is not equal to len(dims) = {len(dims)}"
        )
    return apply(TABLE["permute"], input, dims=tuple(_dim(d, n) for d in dims))


def squeeze(input, dim=None):  # noqa: A002
    """Drop size-1 dims (only ``dim`` when given; a dim whose size is not 1 is kept)."""
    shape = input._data.shape
    if dim is None:
        dims = tuple(i for i, s in enumerate(shape) if s == 1)
    else:
        dims = tuple(d for d in (_dims(dim, len(shape)) or ()) if shape[d] == 1)
    return apply(TABLE["squeeze"], input, dim=dims)


def unsqueeze(input, dim):  # noqa: A002
    """Insert a size-1 dim at ``dim``."""
    return apply(TABLE["unsqueeze"], input, dim=_dim(dim, input._data.ndim + 1))


def expand(input, *sizes):  # noqa: A002
    """Broadcast to ``sizes`` without copying (-1 keeps a dim)."""
    return apply(TABLE["expand"], input, shape=_shape_args(sizes))


def broadcast_to(input, shape):  # noqa: A002
    return expand(input, *shape)


def repeat(input, *sizes):  # noqa: A002
    """Tile the tensor ``sizes[i]`` times along each dim."""
    sizes = _shape_args(sizes)
    x = reshape(input, (1,) * (len(sizes) - input._data.ndim) + input._data.shape)
    inter, target = [], []
    for r, s in zip(sizes, x._data.shape):
        inter += [1, s]
        target += [r, s]
    out_shape = tuple(r * s for r, s in zip(sizes, x._data.shape))
    return reshape(expand(reshape(x, inter), target), out_shape)


def cat(tensors, dim=0):
    """Join tensors along an existing dim."""
    tensors = [t for t in tensors if not (t._data.ndim == 1 and t._data.shape[0] == 0)] or list(
        tensors)
    d = dt.result_type(*tensors) if len({t._data.dtype for t in tensors}) > 1 else None
    if d is not None:
        tensors = [_cast(t, d) for t in tensors]
    return apply(TABLE["cat"], *tensors, dim=_dim(dim, tensors[0]._data.ndim))


concat = concatenate = cat


def stack(tensors, dim=0):
    """Join tensors along a new dim."""
    tensors = list(tensors)
    d = dt.result_type(*tensors) if len({t._data.dtype for t in tensors}) > 1 else None
    if d is not None:
        tensors = [_cast(t, d) for t in tensors]
    return apply(TABLE["stack"], *tensors, dim=_dim(dim, tensors[0]._data.ndim + 1))


def getitem(input, index):  # noqa: A002
    """``input[index]`` with slices, ints, None, Ellipsis, integer arrays and boolean masks."""
    index = _normalise_index(index)
    op = TABLE["getitem_view"] if is_basic_index(index) else TABLE["getitem"]
    return apply(op, input, index=index)


def narrow(input, dim, start, length):  # noqa: A002
    d = _dim(dim, input._data.ndim)
    return getitem(input, (slice(None),) * d + (slice(start, start + length),))


def select(input, dim, index):  # noqa: A002
    d = _dim(dim, input._data.ndim)
    return getitem(input, (slice(None),) * d + (index,))


def unbind(input, dim=0):  # noqa: A002
    d = _dim(dim, input._data.ndim)
    return tuple(select(input, d, i) for i in range(input._data.shape[d]))


def split(tensor, split_size_or_sections, dim=0):
    """Pieces of ``split_size`` (or the listed sizes) along ``dim``."""
    d = _dim(dim, tensor._data.ndim)
    n = tensor._data.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        sizes = [builtins.min(step, n - s) for s in range(0, n, step)]
    else:
        sizes = list(split_size_or_sections)
    out, start = [], 0
    for size in sizes:
        out.append(narrow(tensor, d, start, size))
        start += size
    return tuple(out)


def chunk(input, chunks, dim=0):  # noqa: A002
    n = input._data.shape[_dim(dim, input._data.ndim)]
    return split(input, -(-n // chunks), dim)


def gather(input, dim, index):  # noqa: A002
    """out[i][j] = input[index[i][j]][j] (for dim=0), the op behind cross_entropy."""
    return apply(TABLE["gather"], input, index, dim=_dim(dim, input._data.ndim))


def scatter_add(input, dim, index, src):  # noqa: A002
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim``."""
    return apply(TABLE["scatter_add"], input, index, src, dim=_dim(dim, input._data.ndim))


def index_select(input, dim, index):  # noqa: A002
    d = _dim(dim, input._data.ndim)
    return getitem(input, (slice(None),) * d + (index,))


def index_put(input, index, values):  # noqa: A002
    """A copy of ``input`` with ``values`` written at ``index``."""
    index = _normalise_index(index)
    return apply(TABLE["index_put"], input, _cast(values, input.dtype), index=index)


def index_backward(grad, shape, index):
    """Scatter ``grad`` into zeros of ``shape`` at ``index`` (the backward of indexing)."""
    return apply(TABLE["index_backward"], grad, shape=shape, index=index)


def zeros_like_shape(like: Tensor, shape) -> Tensor:
    xp = module_of(like._data)
    return _make(xp.zeros(shape, dtype=like._data.dtype))


def tril(input, diagonal=0):  # noqa: A002
    mask = np.tril(np.ones(input._data.shape[-2:], dtype=bool), diagonal)
    return where(_make(mask), input, 0.0 if input._data.dtype.kind == "f" else 0)


def triu(input, diagonal=0):  # noqa: A002
    mask = np.triu(np.ones(input._data.shape[-2:], dtype=bool), diagonal)
    return where(_make(mask), input, 0.0 if input._data.dtype.kind == "f" else 0)


def outer(input, vec2):  # noqa: A002
    return mul(unsqueeze(input, 1), vec2)


def dot(input, other):  # noqa: A002
    return matmul(input, other)


def clone(input, *, memory_format=None):  # noqa: A002
    """A copy that stays in the graph."""
    return apply(TABLE["clone"], input)


def numel(input) -> int:  # noqa: A002
    return int(input._data.size)


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def is_floating_point(input) -> bool:  # noqa: A002
    return input._data.dtype.kind == "f"

