"""Reordering and scattering: ``flip``, ``roll``, ``movedim``, ``meshgrid``, ``scatter``,
``scatter_reduce``, and the pointwise ``erf`` and ``log2``.

>>> import gradcheck.ref as torch
>>> torch.roll(torch.tensor([1, 2, 3]), 1)
tensor([3, 1, 2])
"""
from __future__ import annotations

import numpy as np

from gradcheck.ref import shapes
from gradcheck.ref.arguments import _float
from gradcheck.ref.derivatives import TABLE
from gradcheck.ref.dispatch import apply
from gradcheck.ref.tensors import Tensor, _dim


def _dim_list(dims, ndim):
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = tuple(dims[0])
    return tuple(_dim(d, max(ndim, 1)) for d in dims)


def flip(input, *dims):  # noqa: A002
    """Reverse the order of elements along ``dims``.

    >>> import gradcheck.ref as torch
    >>> torch.flip(torch.tensor([1, 2, 3]), [0])
    tensor([3, 2, 1])
    """
    normalised = _dim_list(dims, input._data.ndim)
    for i, d in enumerate(normalised):
        if d in normalised[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    if input._data.ndim == 0:
        return input.clone()
    return apply(TABLE["flip"], input, dims=normalised)


def fliplr(input):  # noqa: A002
    """Flip along dim 1."""
    return flip(input, 1)


def flipud(input):  # noqa: A002
    """Flip along dim 0."""
    return flip(input, 0)


def roll(input, shifts, dims=None):  # noqa: A002
    """Shift elements circularly along ``dims`` (the flattened tensor when ``dims`` is None)."""
    shifts = tuple(shifts) if isinstance(shifts, (list, tuple)) else (shifts,)
    if dims is None and len(shifts) != 1:
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
    if dims is None:
        flat = apply(TABLE["roll"], input.reshape(-1), shifts=shifts, dims=(0,))
        return flat.reshape(input.shape)
    dims = tuple(dims) if isinstance(dims, (list, tuple)) else (dims,)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    return apply(TABLE["roll"], input, shifts=shifts, dims=_dim_list(dims, input._data.ndim))


def movedim(input, source, destination):  # noqa: A002
    """Move dims ``source`` to positions ``destination``, keeping the others in order."""
    ndim = input._data.ndim
    source = [source] if isinstance(source, int) else list(source)
    destination = [destination] if isinstance(destination, int) else list(destination)
    src = [_dim(s, ndim) for s in source]
    dst = [_dim(d, ndim) for d in destination]
    rest = iter([d for d in range(ndim) if d not in src])
    placed = dict(zip(dst, src))
    order = [placed[i] if i in placed else next(rest) for i in range(ndim)]
    return shapes.permute(input, *order)


moveaxis = movedim


def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 1-D tensors (torch's default ``indexing="ij"``)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    indexing = indexing or "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    tensors = [t.reshape(-1) for t in tensors]
    sizes = [t.shape[0] for t in tensors]
    if indexing == "xy" and len(tensors) >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    grids = []
    for i, t in enumerate(tensors):
        axis = i
        if indexing == "xy" and len(tensors) >= 2 and i < 2:
            axis = 1 - i
        shape = [1] * len(tensors)
        shape[axis] = -1
        grids.append(t.reshape(shape).expand(*sizes))
    return tuple(grids)


def scatter(input, dim, index, src=None, *, value=None, reduce=None):  # noqa: A002
    """A copy of ``input`` with ``src`` (a tensor or a number) written at ``index`` along dim.

    >>> import gradcheck.ref as torch
    >>> torch.zeros(3).scatter(0, torch.tensor([2]), torch.tensor([5.0]))
    tensor([0., 0., 5.])
    """
    d = _dim(dim, input._data.ndim)
    shapes.check_scatter(index, input, d, src, "scatter")
    if src is None:
        src = value
    if reduce is not None:
        mode = {"add": "sum", "multiply": "prod"}[reduce]
        source = src if isinstance(src, Tensor) else input.new_full(index.shape, src)
        return scatter_reduce(input, d, index, source, mode)
    if isinstance(src, Tensor):
        return apply(TABLE["scatter"], input, index, src, dim=d)
    return apply(TABLE["scatter_value"], input, index, dim=d, value=src)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):  # noqa: A002
    """Fold ``src`` into a copy of ``input`` at ``index`` with sum, prod, mean, amax or amin."""
    d = _dim(dim, input._data.ndim)
    shapes.check_scatter(index, input, d, src, "scatter_reduce")
    return apply(TABLE["scatter_reduce"], input, index, src, dim=d, reduce=reduce,
                 include_self=include_self)


def erf(input):  # noqa: A002
    """The error function."""
    return apply(TABLE["erf"], _float(input))


def log2(input):  # noqa: A002
    """Base-2 logarithm."""
    return apply(TABLE["log2"], _float(input))


def _pointwise(name):
    def fn(input):  # noqa: A002
        return apply(TABLE[name], _float(input))

    fn.__name__, fn.__doc__ = name, f"Elementwise torch.{name}."
    return fn


asin, acos, atan, exp2 = (_pointwise(n) for n in ("asin", "acos", "atan", "exp2"))
sinh, cosh, asinh, acosh, atanh = (_pointwise(n) for n in ("sinh", "cosh", "asinh", "acosh",
                                                           "atanh"))
arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh


def bitwise_not(input):  # noqa: A002
    """~x: logical not for bool, two's complement for integers."""
    return ~input


def diagonal(input, offset=0, dim1=0, dim2=1):  # noqa: A002
    """The diagonal of the (dim1, dim2) planes, as a new last dim (gathered, differentiable)."""
    if _dim(dim1, input._data.ndim) == _dim(dim2, input._data.ndim):
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    moved = movedim(input, (dim1, dim2), (-2, -1))
    rows, cols = moved.shape[-2], moved.shape[-1]
    start_r, start_c = max(-offset, 0), max(offset, 0)
    n = max(min(rows - start_r, cols - start_c), 0)
    i = np.arange(n)
    return moved[(Ellipsis, Tensor(list(i + start_r)).long(), Tensor(list(i + start_c)).long())]


def diag(input, diagonal=0):  # noqa: A002
    """A 1-D input becomes a diagonal matrix; a 2-D input gives its diagonal."""
    if input.dim() == 2:
        return globals()["diagonal"](input, diagonal)
    n = input.shape[0] + abs(diagonal)
    rows = np.arange(input.shape[0]) + max(-diagonal, 0)
    cols = np.arange(input.shape[0]) + max(diagonal, 0)
    out = input.new_zeros(n, n)
    index = Tensor(list(rows * n + cols)).long()
    return out.reshape(-1).scatter(0, index, input).reshape(n, n)


def masked_select(input, mask):  # noqa: A002
    """The elements where ``mask`` is True, as a 1-D tensor (they broadcast first)."""
    shape = np.broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    return input.expand(*shape)[mask.expand(*shape)]


def logcumsumexp(input, dim):  # noqa: A002
    """log(cumsum(exp(x))) along ``dim``, as a running ``logaddexp`` (exact for any spread).

    >>> import gradcheck.ref as torch
    >>> torch.logcumsumexp(torch.tensor([0.0, 100.0]), 0)
    tensor([  0., 100.])
    """
    if not input.is_floating_point():
        raise NotImplementedError(f"logcumsumexp is not implemented for {input.dtype}: convert "
                                  f"the input with .float() first")
    return apply(TABLE["logcumsumexp"], input, dim=_dim(dim, max(input._data.ndim, 1)))


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    """(std, mean) in one call."""
    return (input.std(dim, unbiased, keepdim, correction=correction),
            input.mean(dim, keepdim=keepdim))


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    """(var, mean) in one call."""
    return (input.var(dim, unbiased, keepdim, correction=correction),
            input.mean(dim, keepdim=keepdim))


def unfold_dim(input, dimension, size, step):  # noqa: A002
    """``Tensor.unfold``: windows of ``size`` every ``step`` along ``dimension``, as a new
    last dim."""
    d = _dim(dimension, input._data.ndim)
    length = input.shape[d] if input._data.ndim else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is "
                           f"{size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    starts = range(0, input.shape[d] - size + 1, step)
    pieces = [input.narrow(d, s, size).unsqueeze(d) for s in starts]
    from gradcheck.ref import shapes as shape_ops

    return movedim(shape_ops.cat(pieces, d), d + 1, -1)


def repeat_interleave(input, repeats, dim=None, *, output_size=None):  # noqa: A002
    """Repeat each element ``repeats`` times along ``dim`` (the flattened tensor if None)."""
    if dim is None:
        input, dim = input.reshape(-1), 0
    d = _dim(dim, input._data.ndim)
    if isinstance(repeats, Tensor) and repeats.numel() > 1:
        index = np.repeat(np.arange(input.shape[d]), repeats._data)
        return input.index_select(d, Tensor(index.tolist()).long())
    count = int(repeats.item() if isinstance(repeats, Tensor) else repeats)
    shape = list(input.shape)
    expanded = input.unsqueeze(d + 1).expand(*shape[:d + 1], count, *shape[d + 1:])
    return expanded.flatten(d, d + 1)


from gradcheck.ref.reductions import _axis_alias  # noqa: E402

std_mean, var_mean = _axis_alias(std_mean), _axis_alias(var_mean)
