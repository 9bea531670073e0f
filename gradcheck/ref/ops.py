"""The functional namespace (``torch.exp``, ``torch.add``, ...): elementwise ops and comparisons.

Every differentiable op goes through ``dispatch.apply`` with its row of the derivatives table;
reductions and shape ops live in ``reductions`` and ``shapes`` and are re-exported at the end,
so ``ops`` is the one namespace that ``methods`` and ``__init__`` read.
"""
from __future__ import annotations

import builtins

import string

import numpy as np

from gradcheck.ref import dtypes as dt
from gradcheck.ref import grad_mode
from gradcheck.ref.broadcast import broadcast_shapes, mismatch_error
from gradcheck.ref.devices import as_array, device_of
from gradcheck.ref.dispatch import apply
from gradcheck.ref.tensors import Tensor, _dim, _make
from gradcheck.ref.arguments import _NUMBER, _cast, _const, _float, _pair

from gradcheck.ref.derivatives import TABLE, f_ordered  # noqa: E402,I001  (imports this module)

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
    """input - alpha * other.

    >>> import gradcheck.ref as torch
    >>> torch.sub(torch.tensor([5.0]), torch.tensor([2.0]), alpha=2)
    tensor([1.])
    """
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
    """True division (integers divide into the default float dtype), or floor/trunc division.

    >>> import gradcheck.ref as torch
    >>> torch.div(torch.tensor([3, 4]), 2), torch.div(torch.tensor([7.0]), 2, rounding_mode='floor')
    (tensor([1.5000, 2.0000]), tensor([3.]))
    """
    a, b = _pair(input, other)
    if a is NotImplemented:
        return NotImplemented
    if rounding_mode is not None:
        if a._data.dtype.kind in "biu" and b._data.dtype.kind in "biu" and not b._data.all():
            raise RuntimeError(f"ZeroDivisionError: integer division by zero in div("
                               f"rounding_mode={rounding_mode!r}); divide floats instead")
        with grad_mode.no_grad(), np.errstate(all="ignore"):  # torch is silent on x/0 here
            q = np.floor_divide(a._data, b._data) if rounding_mode == "floor" else np.trunc(
                a._data / b._data).astype(a._data.dtype)
        return _make(np.asarray(q))
    if a._data.dtype.kind != "f":
        a, b = _float(a), _float(b)
    return apply(TABLE["div"], a, b)


divide = true_divide = div


def pow(input, exponent):  # noqa: A001 - torch name
    """input ** exponent (either side may be a Python number).

    >>> import gradcheck.ref as torch
    >>> torch.pow(torch.tensor([2.0, 3.0]), 2), torch.pow(2, torch.tensor([3.0]))
    (tensor([4., 9.]), tensor([8.]))
    """
    if isinstance(input, Tensor) and isinstance(exponent, _NUMBER) and not isinstance(
        exponent, (bool, np.bool_)
    ):
        if input._data.dtype.kind != "f" and isinstance(exponent, float):
            input = _float(input)
        if input._data.dtype.kind in "iu" and exponent < 0:
            raise RuntimeError(f"Integers to negative integer powers are not allowed: "
                               f"{input.dtype} tensor ** {exponent}; convert the tensor with "
                               f".float() first")
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
    return apply(TABLE["matmul"], a, b, a_f=f_ordered(a._data), b_f=f_ordered(b._data))


mm = bmm = matmul


def linear(input, weight, bias=None):  # noqa: A002
    """``input @ weight.T + bias`` as one node (what nn.Linear computes).

    >>> from gradcheck.ref import ones
    >>> linear(ones(2, 3), ones(4, 3), ones(4)).tolist()
    [[4.0, 4.0, 4.0, 4.0], [4.0, 4.0, 4.0, 4.0]]
    """
    if bias is None:
        x, w = _pair(input, weight)
        return apply(TABLE["linear_no_bias"], x, w)
    x, w = _pair(input, weight)
    x, b = _pair(x, bias)
    w, b = _pair(w, b)
    return apply(TABLE["linear"], x, w, b)


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


def einsum(equation: str, *operands):
    """Einstein summation, e.g. ``einsum("bij,bjk->bik", a, b)``; ``...`` broadcasts.

    >>> from gradcheck.ref import ones
    >>> einsum("ij,j->i", ones(2, 3), ones(3)).tolist()
    [3.0, 3.0]
    >>> einsum("...ij,jk->...ik", ones(5, 2, 3), ones(3, 4)).shape
    torch.Size([5, 2, 4])
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    d = dt.result_type(*operands) if len({o._data.dtype for o in operands}) > 1 else None
    tensors = [_cast(o, d) for o in operands] if d is not None else list(operands)
    if "..." in equation:
        equation, tensors = _einsum_spell_out(equation.replace(" ", ""), tensors)
    return apply(TABLE["einsum"], *tensors, equation=equation)


def _einsum_spell_out(equation: str, tensors: list):
    """Replace ``...`` by explicit letters, broadcasting the operands' ellipsis dims with
    differentiable ``expand``s, so the einsum node and its backward see plain letters."""
    lhs, arrow, out = equation.partition("->")
    subs = lhs.split(",")
    if len(subs) != len(tensors):
        raise RuntimeError(f"einsum(): {len(subs)} subscripts given for {len(tensors)} operands")
    counts = []
    for sub, operand in zip(subs, tensors):
        named = len(sub.replace("...", ""))
        counts.append(operand._data.ndim - named if "..." in sub else 0)
        if counts[-1] < 0:
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({named}) is more than the "
                f"number of dimensions ({operand._data.ndim}) for operand {len(counts) - 1}"
            )
    spare = [c for c in string.ascii_letters if c not in equation]
    width = builtins.max(counts)
    letters = "".join(spare[:width])
    ellipses = [operand._data.shape[sub.index("..."):sub.index("...") + n]
                for sub, operand, n in zip(subs, tensors, counts) if "..." in sub]
    try:
        batch = np.broadcast_shapes(*ellipses)
    except ValueError:
        raise RuntimeError(f"einsum(): the dims covered by '...' do not broadcast together: "
                           f"{[list(e) for e in ellipses]} in {equation!r}; make them equal "
                           f"or 1") from None
    new_subs, new_tensors = [], []
    for sub, operand, n in zip(subs, tensors, counts):
        if "..." in sub:
            at = sub.index("...")
            if operand._data.shape[at:at + n] != batch[width - n:] or n < width:
                shape = operand._data.shape
                operand = operand.reshape(*shape[:at], *([1] * (width - n)), *shape[at:])
                operand = operand.expand(*shape[:at], *batch, *shape[at + n:])
            sub = sub.replace("...", letters)
        new_subs.append(sub)
        new_tensors.append(operand)
    if not arrow:  # implicit output: the ellipsis dims, then the letters seen once, sorted
        plain = lhs.replace("...", "").replace(",", "")
        out = "..." + "".join(sorted(c for c in set(plain) if plain.count(c) == 1))
    out = out.replace("...", letters)
    return ",".join(new_subs) + "->" + out, new_tensors


def move(input, device):  # noqa: A002
    """A copy on ``device`` that stays in the graph (``Tensor.to(device)``).

    >>> import gradcheck.ref as torch
    >>> torch.ops.move(torch.ones(1), torch.device("cpu")).device
    device(type='cpu')
    """
    source = device_of(input._data)
    if source == device:
        return input
    return apply(TABLE["to_device"], input, device=device, source=source)


def square(input):  # noqa: A002
    """Elementwise input ** 2.

    >>> import gradcheck.ref as torch
    >>> torch.square(torch.tensor([3.0]))
    tensor([9.])
    """
    return pow(input, 2)


def clamp(input, min=None, max=None):  # noqa: A002, F811 - torch argument names
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
    """Elementwise ``input if condition else other`` (scalars allowed).

    >>> import gradcheck.ref as torch
    >>> torch.where(torch.tensor([True, False]), torch.tensor([1.0, 2.0]), 0.0)
    tensor([1., 0.])
    """
    if input is None and other is None:
        return tuple(_make(i) for i in np.nonzero(condition._data))
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        input = _const(input, condition, dt.result_type(input, other).np)
    a, b = _pair(input, other)
    cond = condition if condition._data.dtype.kind == "b" else _make(condition._data.astype(bool))
    return apply(TABLE["where"], cond, a, b)


def masked_fill(input, mask, value):  # noqa: A002
    """A copy of ``input`` with ``value`` where ``mask`` is True.

    >>> import gradcheck.ref as torch
    >>> torch.masked_fill(torch.tensor([1.0, 2.0]), torch.tensor([False, True]), -1.0)
    tensor([ 1., -1.])
    """
    if isinstance(value, Tensor):
        value = value.item()
    if mask._data.shape != input._data.shape:
        shape = broadcast_shapes(input._data.shape, mask._data.shape)
        if shape != input._data.shape:
            raise mismatch_error(input._data.shape, mask._data.shape)
    return apply(TABLE["masked_fill"], input, mask, value=value)


def softmax(input, dim, dtype=None):  # noqa: A002
    """softmax along ``dim``, computed stably.

    >>> import gradcheck.ref as torch
    >>> torch.softmax(torch.tensor([0.0, 0.0]), dim=0)
    tensor([0.5000, 0.5000])
    """
    x = _float(input) if dtype is None else _cast(input, dt.as_dtype(dtype))
    return apply(TABLE["softmax"], x, dim=_dim(dim, x._data.ndim))


def log_softmax(input, dim, dtype=None):  # noqa: A002
    """log(softmax) along ``dim``, computed stably.

    >>> import gradcheck.ref as torch
    >>> torch.log_softmax(torch.tensor([0.0, 0.0]), dim=0)
    tensor([-0.6931, -0.6931])
    """
    x = _float(input) if dtype is None else _cast(input, dt.as_dtype(dtype))
    return apply(TABLE["log_softmax"], x, dim=_dim(dim, x._data.ndim))


# ----- comparisons and logic (no gradient) ------------------------------------------------------
def _compare(ufunc, ordered=False):
    def fn(input, other):  # noqa: A002
        a, b = _pair(input, other)
        if a is NotImplemented:
            return NotImplemented
        if ordered:
            dt.refuse_complex_order(ufunc.__name__, a, error=NotImplementedError)
        try:
            return _make(as_array(ufunc(a._data, b._data)))
        except ValueError:
            raise mismatch_error(a._data.shape, b._data.shape) from None

    fn.__name__ = ufunc.__name__
    return fn


eq = _compare(np.equal)
ne = not_equal = _compare(np.not_equal)
lt = less = _compare(np.less, ordered=True)
le = less_equal = _compare(np.less_equal, ordered=True)
gt = greater = _compare(np.greater, ordered=True)
ge = greater_equal = _compare(np.greater_equal, ordered=True)
logical_and = _compare(np.logical_and)
logical_or = _compare(np.logical_or)
logical_xor = _compare(np.logical_xor)


def logical_not(input):  # noqa: A002
    """Elementwise not (a bool tensor).

    >>> import gradcheck.ref as torch
    >>> torch.logical_not(torch.tensor([True, False]))
    tensor([False,  True])
    """
    return _make(np.logical_not(input._data))


def _bitwise(ufunc):
    def fn(input, other):  # noqa: A002
        a, b = _pair(input, other)
        if a is NotImplemented:
            return NotImplemented
        for operand in (a, b):
            if operand._data.dtype.kind in "fc":  # numpy: TypeError; torch: NotImplementedError
                raise NotImplementedError(f"{ufunc.__name__} is not implemented for "
                                          f"{operand.dtype}: it needs integer or bool tensors")
        return _make(np.asarray(ufunc(a._data, b._data)))

    return fn


bitwise_and = _bitwise(np.bitwise_and)
bitwise_or = _bitwise(np.bitwise_or)
bitwise_xor = _bitwise(np.bitwise_xor)
bitwise_left_shift = _bitwise(np.left_shift)
bitwise_right_shift = _bitwise(np.right_shift)


def remainder(input, other):  # noqa: A002
    """Python-style remainder (the sign of the divisor), differentiable in ``input``.

    >>> import gradcheck.ref as torch
    >>> torch.remainder(torch.tensor([-3.0, 5.0]), 2)
    tensor([1., 1.])
    """
    return sub(input, mul(div(input, other, rounding_mode="floor"), other))


def fmod(input, other):  # noqa: A002
    """C-style remainder (the sign of the dividend)."""
    return sub(input, mul(div(input, other, rounding_mode="trunc"), other))


def isnan(input):  # noqa: A002
    """Elementwise test for NaN.

    >>> import gradcheck.ref as torch
    >>> torch.isnan(torch.tensor([1.0, float('nan')]))
    tensor([False,  True])
    """
    return _make(np.isnan(input._data))


def isinf(input):  # noqa: A002
    """Elementwise test for +-inf.

    >>> import gradcheck.ref as torch
    >>> torch.isinf(torch.tensor([1.0, float('inf')]))
    tensor([False,  True])
    """
    return _make(np.isinf(input._data))


def isfinite(input):  # noqa: A002
    """Elementwise test for finite values.

    >>> import gradcheck.ref as torch
    >>> torch.isfinite(torch.tensor([1.0, float('inf')]))
    tensor([ True, False])
    """
    return _make(np.isfinite(input._data))


def equal(input, other) -> bool:  # noqa: A002
    """True when both have the same shape and elements.

    >>> import gradcheck.ref as torch
    >>> torch.equal(torch.tensor([1, 2]), torch.tensor([1, 2]))
    True
    """
    return input.shape == other.shape and bool(np.array_equal(input._data, other._data))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:  # noqa: A002
    """Elementwise |input - other| <= atol + rtol * |other|, for all elements.

    >>> import gradcheck.ref as torch
    >>> torch.allclose(torch.tensor([1.0]), torch.tensor([1.0 + 1e-9]))
    True
    """
    return bool(np.allclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """Elementwise allclose.

    >>> import gradcheck.ref as torch
    >>> torch.isclose(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5]))
    tensor([ True, False])
    """
    return _make(np.isclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


def outer(input, vec2):  # noqa: A002
    """Outer product of two vectors.

    >>> import gradcheck.ref as torch
    >>> torch.outer(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0]))
    tensor([[3., 4.],
            [6., 8.]])
    """
    return mul(unsqueeze(input, 1), vec2)


def dot(input, other):  # noqa: A002
    """Dot product of two vectors.

    >>> import gradcheck.ref as torch
    >>> torch.dot(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0]))
    tensor(11.)
    """
    return matmul(input, other)


def clone(input, *, memory_format=None):  # noqa: A002
    """A copy that stays in the graph.

    ``memory_format`` follows torch: ``preserve_format`` (the default) keeps the input's stride
    order (a transposed tensor stays transposed); ``contiguous_format`` gives a row-major copy.

    >>> import gradcheck.ref as torch
    >>> torch.clone(torch.tensor([1.0], requires_grad=True))
    tensor([1.], grad_fn=<CloneBackward0>)
    """
    row_major = memory_format in ("contiguous_format", "channels_last")
    return apply(TABLE["clone"], input, row_major=row_major)


def numel(input) -> int:  # noqa: A002
    """Number of elements.

    >>> import gradcheck.ref as torch
    >>> torch.numel(torch.ones(2, 3))
    6
    """
    return int(input._data.size)


def is_tensor(obj) -> bool:
    """True for engine tensors.

    >>> import gradcheck.ref as torch
    >>> torch.is_tensor(torch.ones(1)), torch.is_tensor([1])
    (True, False)
    """
    return isinstance(obj, Tensor)


def is_floating_point(input) -> bool:  # noqa: A002
    """True for float dtypes.

    >>> import gradcheck.ref as torch
    >>> torch.is_floating_point(torch.ones(1))
    True
    """
    return input._data.dtype.kind == "f"


from gradcheck.ref.reductions import (  # noqa: E402,F401  (they use the ops above)
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    cumsum,
    logsumexp,
    max,
    mean,
    min,
    norm,
    return_max,
    return_min,
    std,
    sum,
    var,
)
from gradcheck.ref.shapes import (  # noqa: E402,F401
    argsort,
    nonzero,
    sort,
    topk,
    broadcast_to,
    cat,
    chunk,
    concat,
    concatenate,
    expand,
    flatten,
    gather,
    getitem,
    index_backward,
    index_put,
    index_select,
    narrow,
    permute,
    repeat,
    reshape,
    scatter_add,
    select,
    split,
    squeeze,
    stack,
    swapaxes,
    t,
    transpose,
    tril,
    triu,
    unbind,
    unflatten,
    unsqueeze,
    view,
)
from gradcheck.ref.cumulative import cummax, cummin, cumprod, prod  # noqa: E402,F401
from gradcheck.ref.rearrange import (  # noqa: E402,F401
    asin,
    acos,
    atan,
    exp2,
    sinh,
    cosh,
    asinh,
    acosh,
    atanh,
    arcsin,
    arccos,
    arctan,
    arcsinh,
    arccosh,
    arctanh,
    bitwise_not,
    diag,
    diagonal,
    masked_select,
    logcumsumexp,
    std_mean,
    var_mean,
    unfold_dim,
    erf,
    flip,
    fliplr,
    flipud,
    log2,
    meshgrid,
    moveaxis,
    movedim,
    repeat_interleave,
    roll,
    scatter,
    scatter_reduce,
)


def __getattr__(name: str) -> object:
    # ``torch.ops.<namespace>``: the operators a script defined with torch.library
    if name.startswith("__"):
        raise AttributeError(name)
    if name == "aten":
        from gradcheck.ref.aten import aten

        return aten
    from gradcheck.ref.library import op_namespace

    return op_namespace(name)
