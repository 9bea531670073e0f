"""THE derivatives table: every differentiable op, its numpy forward and its backward rule.

Rules are written with Tensor ops (so ``create_graph=True`` differentiates them again) and
may return gradients in the broadcast shape: the engine sums them back to each input's shape.
``ctx.needs_input_grad[i]`` lets a rule skip work for inputs that need no gradient.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from gradcheck.ref import arguments, grad_mode, im2col, ops, scans, special
from gradcheck.ref.broadcast import mismatch_error
from gradcheck.ref.devices import module_of, to_device
from gradcheck.ref.dispatch import Op, apply
from gradcheck.ref.tensors import _make


def _shape_error(exc, a, b, **_):
    return mismatch_error(a.shape, b.shape)


def _power(base, exponent):
    """np.power with torch's rule for integers to negative integer powers, where numpy
    raises: 1 and -1 keep their magnitude, every other base truncates to 0."""
    if np.result_type(base, exponent).kind not in "iu" or not (np.asarray(exponent) < 0).any():
        return np.power(base, exponent)  # a Python base keeps the tensor's dtype (NEP 50)
    powered = np.power(base, np.maximum(exponent, 0))
    base, exponent = np.asarray(base), np.asarray(exponent)
    odd = exponent % 2 == 1
    unit = np.where(base == 1, 1, np.where(base == -1, np.where(odd, -1, 1), 0))
    return np.where(exponent < 0, unit, powered).astype(powered.dtype)


def _binary(name, forward, backward, saves=(0, 1), saves_output=False, saves_when=None):
    return Op(name, forward, backward, saves, saves_output, on_error=_shape_error,
              saves_when=saves_when)


CROSS = ((1,), (0,))  # save input 0 when input 1 needs a grad, and the other way round


# ---- rules on the arrays ---------------------------------------------------------------------
def _on_arrays(raw, rule):
    """``rule`` for the graph, ``raw(ctx, g_array)`` (numpy in, Tensors out) when the backward
    is not recorded: the same arithmetic without one dispatch per step of the rule."""

    def either(ctx, g):
        if grad_mode._enabled[0] or type(g._data) is not np.ndarray:
            return rule(ctx, g)
        return raw(ctx, g._data)

    either.__name__ = rule.__name__ if hasattr(rule, "__name__") else "rule"
    return either


def _result_array(ctx):
    return ctx.result._data


def _tanh_arrays(ctx, g):
    r = _result_array(ctx)
    return (_make(g * (1 - r * r)),)


def _sigmoid_arrays(ctx, g):
    r = _result_array(ctx)
    return (_make(g * r * (1 - r)),)


def _relu_arrays(ctx, g):
    return (_make(g * (_result_array(ctx) > 0).astype(g.dtype)),)


def _exp_arrays(ctx, g):
    return (_make(g * _result_array(ctx)),)


def _softmax_arrays(ctx, g):
    r = _result_array(ctx)
    return (_make(r * (g - (g * r).sum(axis=ctx.dim, keepdims=True))),)


def _log_softmax_arrays(ctx, g):
    r = _result_array(ctx)
    return (_make(g - np.exp(r) * g.sum(axis=ctx.dim, keepdims=True)),)


def _mul_arrays(ctx, g):
    a, b = ctx.saved_tensors
    for t in (a, b):
        if t is not None and t._data.dtype != g.dtype:  # torch's promotion: the Tensor rule
            return _mul(ctx, _make(g))
    return (_make(g * b._data) if ctx.needs_input_grad[0] else None,
            _make(g * a._data) if ctx.needs_input_grad[1] else None)


def _cat_arrays(ctx, g):
    grads, start, dim = [], 0, ctx.dim % g.ndim
    for shape, _ in ctx.in_meta:
        stop = start + shape[dim]
        grads.append(_make(g[(slice(None),) * dim + (slice(start, stop),)]))
        start = stop
    return tuple(grads)


def _stack_arrays(ctx, g):
    dim = ctx.dim % g.ndim
    return tuple(_make(g[(slice(None),) * dim + (i,)]) for i in range(len(ctx.in_meta)))


# ---- helpers used by several rules ---------------------------------------------------------
def _keep(g, dims, ndim, keepdim):
    """Re-insert the reduced dims of ``g`` so it broadcasts against the input."""
    if keepdim or dims is None and g.ndim == ndim:
        return g
    if dims is None:
        return g.reshape((1,) * ndim)
    for d in sorted(x % ndim for x in dims):
        g = g.unsqueeze(d)
    return g


def _count(shape, dims) -> int:
    if dims is None:
        return math.prod(shape)
    return math.prod([shape[d] for d in dims])


def _where(cond, a, b):
    return ops.where(cond, a, b)


def _mask(cond, like):
    """A 0/1 constant of ``like``'s dtype: piecewise-constant factors need no graph of their own."""
    return _make(cond._data.astype(like._data.dtype))


# ---- binary arithmetic ----------------------------------------------------------------------
def _mul(ctx, g):
    a, b = ctx.saved_tensors
    return (g * b if ctx.needs_input_grad[0] else None, g * a if ctx.needs_input_grad[1] else None)


def _div(ctx, g):
    a, b = ctx.saved_tensors
    ga = g / b if ctx.needs_input_grad[0] else None
    gb = -g * a / (b * b) if ctx.needs_input_grad[1] else None
    return ga, gb


def _pow(ctx, g):
    a, b = ctx.saved_tensors
    ga = gb = None
    if ctx.needs_input_grad[0]:
        # NOTE: torch defines d(a**b)/da as 0 where b == 0, even at a == 0.
        ga = _where(b == 0, 0.0, g * b * a ** (b - 1))
    if ctx.needs_input_grad[1]:
        # NOTE: at a == 0 with b >= 0 torch uses 0 instead of log(0) * 0 = nan.
        gb = _where((a == 0) & (b >= 0), 0.0, g * ctx.result * a.log())
    return ga, gb


def _pow_scalar_forward(a, exponent):
    # NOTE: torch's CPU kernel computes these exponents of floats by multiplication and
    # sqrt, not pow(); so do we (and libm's pow takes ~45 ns an element against ~0.4 ns)
    if a.dtype.kind == "f" and type(a) is np.ndarray:
        if exponent == 2:
            return a * a
        if exponent == 3:
            return a * a * a
        if exponent == 0.5:
            return np.sqrt(a)
        if exponent == -0.5:
            return 1 / np.sqrt(a)
        if exponent == -1:
            return 1 / a
        if exponent == -2:
            return 1 / (a * a)
    return a ** exponent


def _pow_scalar(ctx, g):
    (a,) = ctx.saved_tensors
    e = ctx.exponent
    if e == 0:
        return (g * 0,)
    return (g * e * a ** (e - 1),)


def _rpow_scalar(ctx, g):
    if ctx.base == 0:
        # NOTE: torch masks 0 ** x to a zero gradient where x >= 0 (result is 0 or 1 there)
        # instead of 0 * log(0) = nan.
        r = ctx.result
        return (_where(r <= 1, 0.0, g * r * float("-inf")),)
    return (g * ctx.result * float(np.log(ctx.base)),)


def _maximum(ctx, g):
    a, b = ctx.saved_tensors
    half = g / 2
    ga = _where(a > b, g, _where(a == b, half, 0.0))
    gb = _where(b > a, g, _where(a == b, half, 0.0))
    return ga, gb


def _minimum(ctx, g):
    a, b = ctx.saved_tensors
    half = g / 2
    ga = _where(a < b, g, _where(a == b, half, 0.0))
    gb = _where(b < a, g, _where(a == b, half, 0.0))
    return ga, gb


def _matmul(ctx, g):
    a, b = ctx.saved_tensors  # a is saved only when b needs a grad, and b only when a does
    a_nd, b_nd = len(ctx.in_meta[0][0]), len(ctx.in_meta[1][0])
    if not grad_mode._enabled[0] and type(g._data) is np.ndarray:
        g2 = g._data.reshape(1, 1) if g.ndim == 0 else g._data
        if g.ndim and a_nd == 1:
            g2 = g2[..., None, :]
        if g.ndim and b_nd == 1:
            g2 = g2[..., None]
        return _matmul_arrays(ctx, g2, a, b, a_nd, b_nd)
    g2 = g.unsqueeze(-1).unsqueeze(-1) if g.ndim == 0 else g
    if g.ndim and a_nd == 1:
        g2 = g2.unsqueeze(-2)
    if g.ndim and b_nd == 1:
        g2 = g2.unsqueeze(-1)
    ga = gb = None
    # NOTE: each gradient is produced in its input's memory layout. `x @ W.t()` makes W.t() an
    # F-ordered view; a C-ordered gradient for it would be transposed back into a strided
    # array whose later copies cost ~15x a plain memcpy.
    if ctx.needs_input_grad[0]:
        b2 = b.unsqueeze(-1) if b_nd == 1 else b
        ga = (b2 @ g2.mT).mT if ctx.a_f and g2.ndim == 2 else g2 @ b2.mT
        ga = ga.squeeze(-2) if a_nd == 1 else ga
    if ctx.needs_input_grad[1]:
        a2 = a.unsqueeze(0) if a_nd == 1 else a
        gb = (g2.mT @ a2).mT if ctx.b_f and g2.ndim == 2 else a2.mT @ g2
        gb = gb.squeeze(-1) if b_nd == 1 else gb
    return ga, gb


def _matmul_arrays(ctx, g2, a, b, a_nd, b_nd):
    """``_matmul`` on the arrays when the backward is not recorded (the same products)."""
    ga = gb = None
    if ctx.needs_input_grad[0]:
        b2 = b._data[:, None] if b_nd == 1 else b._data
        if ctx.a_f and g2.ndim == 2:
            ga = (b2 @ g2.swapaxes(-1, -2)).swapaxes(-1, -2)
        else:
            ga = g2 @ b2.swapaxes(-1, -2)
        ga = _make(ga.squeeze(-2) if a_nd == 1 else ga)
    if ctx.needs_input_grad[1]:
        a2 = a._data[None] if a_nd == 1 else a._data
        if ctx.b_f and g2.ndim == 2:
            gb = (g2.swapaxes(-1, -2) @ a2).swapaxes(-1, -2)
        else:
            gb = a2.swapaxes(-1, -2) @ g2
        gb = _make(gb.squeeze(-1) if b_nd == 1 else gb)
    return ga, gb


def f_ordered(array) -> bool:
    """True for a 2-D array laid out column-major only (e.g. the transpose of a C array)."""
    if array.ndim != 2:
        return False
    flags = array.flags
    return flags.f_contiguous and not flags.c_contiguous


def _linear(ctx, g):
    x, w = ctx.saved_tensors
    if not grad_mode._enabled[0] and type(g._data) is np.ndarray:
        return _linear_arrays(ctx, g._data, x, w)
    gx = g @ w if ctx.needs_input_grad[0] else None
    gw = None
    if ctx.needs_input_grad[1]:
        # flatten any batch dims so the weight gradient is one C-ordered GEMM
        gw = g.reshape(-1, g.shape[-1]).mT @ x.reshape(-1, x.shape[-1])
    gb = g if len(ctx.needs_input_grad) > 2 and ctx.needs_input_grad[2] else None
    return (gx, gw, gb)[:len(ctx.needs_input_grad)]


def _linear_arrays(ctx, g, x, w):
    """The same rule on the arrays, when the backward is not recorded (no create_graph):
    three GEMM/reduction calls instead of about eight dispatched ops."""
    need = ctx.needs_input_grad
    g2 = g.reshape(-1, g.shape[-1])
    gx = _make(g @ w._data) if need[0] else None
    gw = _make(g2.T @ x._data.reshape(-1, x.shape[-1])) if need[1] else None
    if len(need) == 2:
        return gx, gw
    return gx, gw, (_make(np.add.reduce(g2, axis=0)) if need[2] else None)


def _linear_forward(x, w, b=None):
    out = x @ w.T
    if b is not None:
        out += b  # NOTE: in place on the fresh product: one pass fewer than `x @ w.T + b`
    return out


def _linear_error(exc, x, w, b=None):
    return RuntimeError(
        f"mat1 and mat2 shapes cannot be multiplied ({math.prod(x.shape[:-1])}x{x.shape[-1]} "
        f"and {w.shape[1]}x{w.shape[0]})"
    )




def _matmul_error(exc, a, b, **_):
    if a.ndim == 1 and b.ndim == 1:
        return RuntimeError(
            f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] to "
            f"have the same number of elements, but got {a.shape[0]} and {b.shape[0]} elements "
            "respectively"
        )
    if a.ndim == 0 or b.ndim == 0:
        return RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and "
            f"{b.ndim}D"
        )
    rows = int(np.prod(a.shape[:-1])) if a.ndim > 1 else 1
    mat2 = (b.shape[-2], b.shape[-1]) if b.ndim > 1 else (b.shape[0], 1)
    if a.shape[-1] == mat2[0]:
        return mismatch_error(a.shape[:-2], b.shape[:-2])
    return RuntimeError(
        f"mat1 and mat2 shapes cannot be multiplied ({rows}x{a.shape[-1]} and "
        f"{mat2[0]}x{mat2[1]})"
    )


def _matmul_forward(a, b, a_f=False, b_f=False):
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("0-d matmul")
    return np.matmul(a, b)


# ---- elementwise unary ----------------------------------------------------------------------
def _unary(name, forward, backward, saves_input=True, saves_output=False):
    return Op(name, forward, backward, (0,) if saves_input else (), saves_output)


def _clone_forward(a, row_major=False):
    # preserve_format, like torch's empty_like: the copy keeps the input's stride order
    return a.copy(order="C" if row_major else "K")


def _x(ctx):
    return ctx.saved_tensors[0]


def _abs(ctx, g):
    x = _x(ctx)
    if x._data.dtype.kind == "c":  # g * z / |z|: the complex rule lives with complex numbers
        from gradcheck.ref.complex_numbers import abs_grad

        return (abs_grad(x, g),)
    return (g * x.sign(),)


def _clamp_forward(a, min=None, max=None):  # noqa: A002 - torch's argument names
    return np.clip(a, min, max)


def _clamp(ctx, g):
    a = _x(ctx)
    inside = None
    if ctx.min is not None:
        inside = a >= ctx.min
    if ctx.max is not None:
        upper = a <= ctx.max
        inside = upper if inside is None else inside & upper
    return (g * _mask(inside, g) if inside is not None else g,)


def _sigmoid_forward(a):
    # NOTE: written as exp(-|a|) so that large |a| neither overflows nor loses precision.
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1 / (1 + e), e / (1 + e)).astype(a.dtype, copy=False)


def _softmax_forward(a, dim):
    shifted = a - a.max(axis=dim, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=dim, keepdims=True)


def _log_softmax_forward(a, dim):
    shifted = a - a.max(axis=dim, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))


def _softmax(ctx, g):
    r = ctx.result
    return (r * (g - (g * r).sum(ctx.dim, keepdim=True)),)


def _log_softmax(ctx, g):
    r = ctx.result
    return (g - r.exp() * g.sum(ctx.dim, keepdim=True),)


def _logsumexp_forward(a, dim, keepdim):
    if a.size == 0:
        return np.log(np.exp(a).sum(axis=dim, keepdims=keepdim))
    m = a.max(axis=dim, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)  # NOTE: keeps all -inf rows at -inf instead of nan
    out = np.log(np.exp(a - m).sum(axis=dim, keepdims=True)) + m
    return out if keepdim else out.squeeze(axis=dim)


def _logsumexp(ctx, g):
    a = _x(ctx)
    r = _keep(ctx.result, ctx.dim, a.ndim, ctx.keepdim)
    return (_keep(g, ctx.dim, a.ndim, ctx.keepdim) * (a - r).exp(),)


# ---- reductions -----------------------------------------------------------------------------
def _spread(g, shape):
    """``g`` broadcast to ``shape`` as a fresh array (cheaper than a strided view when small)."""
    from gradcheck.ref.dispatch import apply

    return apply(TABLE["spread"], g, shape=shape)


def _spread_forward(g, shape):
    if type(g) is not np.ndarray or math.prod(shape) > 4096:
        return np.broadcast_to(g, shape)
    out = np.empty(shape, dtype=g.dtype)
    out[...] = g
    return out


def _sum(ctx, g):
    shape = ctx.in_meta[0][0]
    return (_spread(_keep(g, ctx.dim, len(shape), ctx.keepdim), shape),)


def _mean(ctx, g):
    shape = ctx.in_meta[0][0]
    n = _count(shape, ctx.dim)
    return (_spread(_keep(g, ctx.dim, len(shape), ctx.keepdim) / n, shape),)


def _sum_forward(a, dim, keepdim, dtype=None):
    if dtype is None and a.dtype.kind in "biu" and a.dtype != np.int64:
        dtype = np.int64  # torch sums bool and small ints into int64
    if type(a) is np.ndarray:  # the ufunc directly skips numpy's Python-level sum wrapper
        return np.add.reduce(a, axis=dim, dtype=dtype, keepdims=keepdim)
    return a.sum(axis=dim, keepdims=keepdim, dtype=dtype)


def _extreme(ctx, g):
    a = _x(ctx)
    r = _keep(ctx.result, ctx.dim, a.ndim, ctx.keepdim)
    hit = _mask(a == r, g)
    # NOTE: ties share the gradient evenly, as torch does for amax/amin and full max/min.
    share = hit / hit.sum(ctx.dim, keepdim=True)
    return (_keep(g, ctx.dim, a.ndim, ctx.keepdim) * share,)


def _dof_check(a, dim, correction, name):
    n = a.size if dim is None else math.prod([a.shape[d] for d in dim])
    if n - correction <= 0:
        warnings.warn(
            f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the "
            "reduction factor (input numel divided by output numel).", UserWarning, stacklevel=4)
        return False
    return True


def _var_std_forward(name):
    """The forward of ``var`` or ``std``: numpy's, after torch's degrees-of-freedom warning."""

    def forward(a, dim, correction, keepdim):
        spread = getattr(a, name)  # ndarray.var or ndarray.std
        if _dof_check(a, dim, correction, name):
            return spread(axis=dim, ddof=correction, keepdims=keepdim)
        # torch has already warned; numpy's own divide-by-zero warnings would be noise.
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            return spread(axis=dim, ddof=correction, keepdims=keepdim)

    return forward


def _var(ctx, g):
    a = _x(ctx)
    n = _count(a.shape, ctx.dim)
    centered = a - a.mean(ctx.dim, keepdim=True)
    # NOTE: with n <= correction torch divides by zero and gets nan; say so without 0 * inf.
    dof = n - ctx.correction
    factor = 2.0 / dof if dof > 0 else float("nan")
    return (_keep(g, ctx.dim, a.ndim, ctx.keepdim) * centered * factor,)


def _std(ctx, g):
    a = _x(ctx)
    n = _count(a.shape, ctx.dim)
    centered = a - a.mean(ctx.dim, keepdim=True)
    r = _keep(ctx.result, ctx.dim, a.ndim, ctx.keepdim)
    # NOTE: torch masks the gradient to 0 where the std is 0 (instead of 0/0).
    zero = r == 0
    scale = _where(zero, 0.0, _keep(g, ctx.dim, a.ndim, ctx.keepdim) / _where(zero, 1.0, r))
    dof = n - ctx.correction
    return (scale * centered * (1.0 / dof if dof > 0 else float("nan")),)


def _norm_forward(a, dim, keepdim):
    # NOTE: scale by the largest magnitude first, or squares of tiny values underflow to 0.
    if a.size == 0:
        return np.sqrt((a * a).sum(axis=dim, keepdims=keepdim))
    scale = np.abs(a).max(axis=dim, keepdims=True)
    scale = np.where(scale == 0, 1, scale)
    out = np.sqrt(((a / scale) ** 2).sum(axis=dim, keepdims=True)) * scale
    return out if keepdim else out.squeeze(axis=dim) if dim is not None else out.reshape(())


def _norm(ctx, g):
    a = _x(ctx)
    r = _keep(ctx.result, ctx.dim, a.ndim, ctx.keepdim)
    # NOTE: torch's subgradient of the 2-norm at 0 is 0, not 0/0.
    zero = r == 0
    return (_keep(g, ctx.dim, a.ndim, ctx.keepdim) * _where(zero, 0.0, a / _where(zero, 1.0, r)),)


def _select_forward(a, dim, keepdim, indices):
    out = np.take_along_axis(a, indices, axis=dim)
    return out if keepdim else out.squeeze(axis=dim)


def _select(ctx, g):
    shape = ctx.in_meta[0][0]
    idx = arguments._wrap(ctx.indices)
    g = g if ctx.keepdim else g.unsqueeze(ctx.dim)
    # each output slot has exactly one index, so a plain scatter (no accumulation) suffices
    return (arguments.zeros_like_shape(g, shape).scatter(ctx.dim, idx, g),)


# ---- shape and indexing ---------------------------------------------------------------------
def _reshape_error(exc, a, shape):
    return RuntimeError(f"shape '{list(shape)}' is invalid for input of size {a.numel()}")


def _view_forward(a, shape):
    try:
        return a.reshape(shape, copy=False)  # numpy >= 2.1 refuses instead of copying
    except TypeError:  # older numpy: assigning .shape refuses to copy
        out = a.view()
        try:
            out.shape = shape
        except AttributeError as exc:
            raise ValueError("Unable to avoid creating a copy") from exc
        return out


def _view_error(exc, a, shape):
    if "copy" not in str(exc):
        return _reshape_error(exc, a, shape)
    return RuntimeError(
        "view size is not compatible with input tensor's size and stride (at least one dimension "
        "spans across two contiguous subspaces). Use .reshape(...) instead."
    )


def _back_to_shape(ctx, g):
    return (g.reshape(ctx.in_meta[0][0]),)


def _identity(ctx, g):
    return (g,)


def _expand_error(exc, a, shape):
    tgt = list(shape)
    for i in range(1, min(a.ndim, len(shape)) + 1):
        if a.shape[-i] not in (1, shape[-i]) and shape[-i] != -1:
            d = len(shape) - i
            return RuntimeError(
                f"The expanded size of the tensor ({shape[-i]}) must match the existing size "
                f"({a.shape[-i]}) at non-singleton dimension {d}.  Target sizes: {tgt}.  "
                f"Tensor sizes: {list(a.shape)}"
            )
    return RuntimeError(f"expand: cannot expand {list(a.shape)} to {tgt}")


def _expand_forward(a, shape):
    lead = len(shape) - a.ndim
    shape = tuple(a.shape[i - lead] if s == -1 else s for i, s in enumerate(shape))
    return np.broadcast_to(a, shape)


def _index_error(exc, a, index):
    msg = str(exc).replace("axis", "dimension")
    return IndexError(msg)


def _getitem(ctx, g):
    return (ops.index_backward(g, ctx.in_meta[0][0], ctx.index),)


def _getitem_advanced(ctx, g):
    ctx.saved_tensors  # noqa: B018 - torch keeps the indices as saved tensors: check not freed
    return _getitem(ctx, g)


def _index_backward_forward(g, shape, index):
    xp = module_of(g)  # numpy, or CuPy for a cuda tensor's gradient
    out = xp.zeros(shape, dtype=g.dtype)
    if arguments.is_basic_index(index):
        out[index] = g
    else:
        xp.add.at(out, index, g)
    return out


def _index_backward(ctx, g):
    return (g[ctx.index],)


def _index_put_forward(a, v, index):
    out = a.copy()
    out[index] = v
    return out


def _index_put(ctx, g):
    index = ctx.index
    ga = gv = None
    if ctx.needs_input_grad[0]:
        ga = ops.index_put(g, index, arguments.zeros_like_shape(g, ()))
    if ctx.needs_input_grad[1]:
        gv = g[index]
    return ga, gv


def _cat(ctx, g):
    grads, start = [], 0
    for shape, _ in ctx.in_meta:
        stop = start + shape[ctx.dim]
        grads.append(g.narrow(ctx.dim, start, stop - start))
        start = stop
    return tuple(grads)


def _stack(ctx, g):
    return tuple(g.select(ctx.dim, i) for i in range(len(ctx.in_meta)))


def _cat_error(exc, *tensors, dim):
    ref = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.ndim != len(ref):
            return RuntimeError(
                f"Tensors must have same number of dimensions: got {len(ref)} and {t.ndim}"
            )
        for d, (x, y) in enumerate(zip(ref, t.shape)):
            if d != dim % len(ref) and x != y:
                return RuntimeError(
                    f"Sizes of tensors must match except in dimension {dim}. Expected size {x} "
                    f"but got size {y} for tensor number {i} in the list."
                )
    return RuntimeError(str(exc))


def _stack_error(exc, *tensors, dim):
    for i, t in enumerate(tensors):
        if t.shape != tensors[0].shape:
            return RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(tensors[0].shape)} at "
                f"entry 0 and {list(t.shape)} at entry {i}"
            )
    return RuntimeError(str(exc))


def _where_forward(c, a, b):
    return np.where(c, a, b)


def _where_rule(ctx, g):
    (c,) = ctx.saved_tensors
    ga = _where(c, g, 0.0) if ctx.needs_input_grad[1] else None
    gb = _where(c, 0.0, g) if ctx.needs_input_grad[2] else None
    return None, ga, gb


def _where_error(exc, c, a, b):
    try:
        ops.broadcast_shapes(c.shape, a.shape, b.shape)
    except RuntimeError as err:
        return err
    return RuntimeError(str(exc))


def _masked_fill_forward(a, mask, value):
    return np.where(mask, np.asarray(value, dtype=a.dtype), a)


def _masked_fill(ctx, g):
    (mask,) = ctx.saved_tensors
    return _where(mask, 0.0, g), None


def _gather_forward(a, index, dim):
    # torch lets index be smaller than input in the other dims; numpy wants them to broadcast.
    trimmed = a[tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(index.shape))]
    return np.take_along_axis(trimmed, index, axis=dim)


def _gather(ctx, g):
    (index,) = ctx.saved_tensors
    shape = ctx.in_meta[0][0]
    return arguments.zeros_like_shape(g, shape).scatter_add(ctx.dim, index, g), None


def _scatter_add_forward(a, index, src, dim):
    xp = module_of(a)  # numpy, or CuPy for a cuda tensor's array (its add.at needs CuPy indices)
    out = a.copy()
    idx = list(np.indices(index.shape, sparse=True)) if xp is np else [
        xp.arange(n).reshape([n if k == d else 1 for k in range(index.ndim)])
        for d, n in enumerate(index.shape)]
    idx[dim] = index
    xp.add.at(out, tuple(idx), src[tuple(slice(0, s) for s in index.shape)])
    return out


def _scatter_add(ctx, g):
    (index,) = ctx.saved_tensors
    gs = g.gather(ctx.dim, index) if ctx.needs_input_grad[2] else None
    return g, None, gs


def _einsum_parse(equation: str, n: int):
    if "..." in equation:
        raise NotImplementedError("einsum with '...' is not supported by gradcheck.ref yet")
    lhs, arrow, out = equation.replace(" ", "").partition("->")
    subs = lhs.split(",")
    if len(subs) != n:
        raise RuntimeError(f"einsum(): {len(subs)} subscripts given for {n} operands")
    if not arrow:  # implicit output: letters seen once, sorted
        out = "".join(sorted(c for c in set(lhs.replace(",", "")) if lhs.count(c) == 1))
    return subs, out


def _einsum_error(exc, *arrays, equation):
    """torch's einsum messages for the mistakes numpy reports in its own words."""
    lhs, arrow, out = equation.replace(" ", "").partition("->")
    sizes = {}
    for i, (sub, a) in enumerate(zip(lhs.split(","), arrays)):
        if len(sub) != a.ndim:
            return RuntimeError(
                f"einsum(): the number of subscripts in the equation ({len(sub)}) does not match "
                f"the number of dimensions ({a.ndim}) for operand {i} and no ellipsis was given")
        for letter, size in zip(sub, a.shape):
            seen = sizes.setdefault(letter, size)
            if seen != size and 1 not in (seen, size):
                return RuntimeError(
                    f"einsum(): subscript {letter} has size {size} for operand {i} which does "
                    f"not broadcast with previously seen size {seen}")
    for letter in out if arrow else "":
        if letter not in sizes:
            return RuntimeError(f"einsum(): output subscript {letter} does not appear in the "
                                "equation for any input operand")
    return RuntimeError(f"einsum(): {exc}")


def _onto_diagonals(grad, target: str, shape):
    """The gradient of an operand that repeats a letter (``"ii"``): ``grad`` has one axis per
    distinct letter; it lands on the diagonal of each repeat, zero elsewhere."""
    first = {}
    for axis, c in enumerate(target):
        if c not in first:
            first[c] = axis
            continue
        grad = grad.unsqueeze(axis)
        size = shape[axis]
        eye = module_of(grad._data).eye(size, dtype=grad._data.dtype)
        grad = grad * _make(eye.reshape([size if k in (first[c], axis) else 1
                                         for k in range(grad.dim())]))
    return grad


def _einsum(ctx, g):
    operands = ctx.saved_tensors
    subs, out = _einsum_parse(ctx.equation, len(operands))
    grads = []
    for i, target in enumerate(subs):
        if not ctx.needs_input_grad[i]:
            grads.append(None)
            continue
        others = [s for j, s in enumerate(subs) if j != i]
        known = set(out).union(*others)
        letters = "".join(dict.fromkeys(target))  # a repeated letter (a diagonal) once
        kept = "".join(c for c in letters if c in known)
        eq = ",".join([out] + others) + "->" + kept
        grad = ops.einsum(eq, g, *[o for j, o in enumerate(operands) if j != i])
        # letters summed away inside this operand alone: the gradient is constant along them
        for axis, c in enumerate(letters):
            if c not in known:
                grad = grad.unsqueeze(axis)
        shape = ctx.in_meta[i][0]
        if len(letters) != len(target):
            grad = _onto_diagonals(grad, target, shape)
        grads.append(grad.expand(*shape) if grad.shape != shape else grad)
    return tuple(grads)


def _copy_slices(ctx, g):
    """Writing a view back into its base (torch's CopySlices): the base keeps the gradient
    outside the view, the view's new value receives the gradient inside it."""
    grad_base = grad_view = None
    if ctx.needs_input_grad[0] and g._data.dtype.kind == "c":
        from gradcheck.ref.complex_numbers import outside_view  # a view may hold one part

        grad_base = outside_view(g, ctx.view_op, ctx.view_attrs)
    elif ctx.needs_input_grad[0]:
        mask = module_of(g._data).ones(g._data.shape, dtype=g._data.dtype)
        ctx.view_op.forward(mask, **ctx.view_attrs)[...] = 0  # a view into mask
        grad_base = g * _make(mask)
    if ctx.needs_input_grad[1]:
        grad_view = apply(ctx.view_op, g, **ctx.view_attrs)
    return grad_base, grad_view


def _to_device(ctx, g):
    return (apply(TABLE["to_device"], g, device=ctx.source, source=ctx.device),)


# ---- windows, padding, scans (kernels in im2col.py and scans.py) ------------------------
def _unfold(ctx, g):
    return (apply(TABLE["fold"], g, size=ctx.in_meta[0][0], kernel=ctx.kernel,
                  dilation=ctx.dilation, padding=ctx.padding, stride=ctx.stride,
                  grid=ctx.grid),)


def _fold(ctx, g):
    return (apply(TABLE["unfold"], g, kernel=ctx.kernel, dilation=ctx.dilation,
                  padding=ctx.padding, stride=ctx.stride, grid=ctx.grid),)


def _plane_gather(ctx, g):
    return (apply(TABLE["plane_scatter"], g, index=ctx.index, size=ctx.in_meta[0][0][2:],
                  unique=ctx.unique),)


def _plane_scatter(ctx, g):
    return (apply(TABLE["plane_gather"], g, index=ctx.index, out_hw=ctx.in_meta[0][0][2:],
                  unique=ctx.unique),)


def _batch_norm_forward(x, mean, var, dims, eps):
    return (x - mean) * (1.0 / np.sqrt(var + eps))


def _batch_norm(ctx, g):
    # d/dx of (x - mean) * rstd with batch statistics: rstd * (g - mean(g) - xhat mean(g xhat))
    x, _, var = ctx.saved_tensors
    xhat, dims = ctx.result, ctx.dims
    if grad_mode.is_grad_enabled():  # create_graph: rstd as a differentiable function of x
        var = x.var(dims, keepdim=True, unbiased=False)
    rstd = (var + ctx.eps).rsqrt()
    inner = g - g.mean(dims, keepdim=True) - xhat * (g * xhat).mean(dims, keepdim=True)
    return rstd * inner, None, None


def _pad(ctx, g):
    # the adjoint of padding is padding by the negated widths: crop what was added
    return (apply(TABLE["pad"], g, widths=tuple((-b, -a) for b, a in ctx.widths), value=0.0),)


def _prod(ctx, g):
    # NOTE: the product of the *other* elements, from exclusive cumulative products on both
    # sides, so zeros in the input give torch's exact gradient instead of 0/0.
    a = _x(ctx)
    flat = a.reshape(-1) if ctx.dim is None else a
    d = 0 if ctx.dim is None else ctx.dim
    one = arguments.zeros_like_shape(flat.narrow(d, 0, 1), flat.narrow(d, 0, 1).shape) + 1
    n = flat.shape[d]
    left = ops.cat([one, flat.narrow(d, 0, n - 1).cumprod(d)], d)
    right = ops.cat([one, flat.flip(d).narrow(d, 0, n - 1).cumprod(d)], d).flip(d)
    g = g if ctx.dim is None else _keep(g, (d,), a.ndim, ctx.keepdim)
    return ((g * left * right).reshape(a.shape),)


def _cumprod(ctx, g):
    a, d = _x(ctx), ctx.dim
    if not (a == 0).any().item():
        return ((g * ctx.result).flip(d).cumsum(d).flip(d) / a,)
    # NOTE: with zeros, grad_i = sum_{j>=i} g_j * prod_{k<=j, k!=i} a_k, built from an n x n
    # table of partial products (row i, column j: product over i < k <= j) instead of a / 0.
    n = a.shape[d]
    moved = a.movedim(d, -1)
    upper = _make(np.triu(np.ones((n, n), dtype=bool), 1))
    table = ops.where(upper, moved.unsqueeze(-2), 1.0).cumprod(-1)
    lower = ops.cat([arguments.zeros_like_shape(moved, moved.shape[:-1] + (1,)) + 1,
                     moved.narrow(-1, 0, n - 1).cumprod(-1)], -1)
    upto = _make(np.triu(np.ones((n, n), dtype=g._data.dtype)))  # j >= i
    inner = (table * upto * g.movedim(d, -1).unsqueeze(-2)).sum(-1)
    return ((lower * inner).movedim(-1, d),)


def _logcumsumexp_forward(a, dim):
    return np.logaddexp.accumulate(a, axis=dim) if a.ndim else a.copy()


def _logcumsumexp(ctx, g):
    """grad_j = sum_{i >= j} g_i exp(x_j - out_i), summed in log space as a reversed
    logcumsumexp, the positive and negative parts of g apart (exp(x) alone overflows).
    Like torch, a part's zeros are the lowest finite log, not -inf, so that no inf - inf
    reaches a higher-order gradient."""
    x, out, d = _x(ctx), ctx.result, ctx.dim
    if x.dim() == 0:
        return (g,)
    log_size = g.abs().log()
    lowest = float(np.finfo(g._data.dtype).min)

    def part(chosen):
        logs = ops.where(chosen, log_size, lowest) - out
        return (x + apply(TABLE["logcumsumexp"], logs.flip(d), dim=d).flip(d)).exp()

    return (part(g > 0) - part(g < 0),)


def _running_extreme(ctx, g):
    shape = ctx.in_meta[0][0]
    return (arguments.zeros_like_shape(g, shape).scatter_add(ctx.dim, _make(ctx.indices), g),)


def _scatter_forward(a, index, src, dim):
    out = a.copy()
    where = scans.scatter_index(index, dim)
    out[where] = src if src.ndim == 0 else src[tuple(slice(0, s) for s in index.shape)]
    return out


def _scatter(ctx, g):
    (index,) = ctx.saved_tensors
    ga = g.scatter(ctx.dim, index, 0.0) if ctx.needs_input_grad[0] else None
    gs = g.gather(ctx.dim, index) if len(ctx.needs_input_grad) > 2 and \
        ctx.needs_input_grad[2] else None
    return (ga, None, gs)[:len(ctx.needs_input_grad)]


def _scatter_reduce(ctx, g):
    a, index, src = ctx.saved_tensors
    reduce, dim = ctx.reduce, ctx.dim
    # torch reads only the leading index-shaped block of src; the rest gets zero gradient
    src_shape = ctx.in_meta[2][0]
    used = src[tuple(slice(0, s) for s in index.shape)]

    def to_src(grad):
        widths = tuple((0, full - part) for full, part in zip(src_shape, index.shape))
        return apply(TABLE["pad"], grad, widths=widths, value=0.0)

    if reduce in ("sum", "mean"):
        ga, gs = g, g.gather(dim, index)
        if reduce == "mean":
            counts = _make(np.zeros(a.shape, dtype=g._data.dtype)).scatter_add(
                dim, index, _make(np.ones(index.shape, dtype=g._data.dtype))) + int(
                ctx.include_self)
            counts = _mask(counts > 0, counts) * counts + _mask(counts == 0, counts)
            ga, gs = g / counts, (g / counts).gather(dim, index)
        if not ctx.include_self:
            ga = g.scatter(dim, index, 0.0)
        return ga, None, to_src(gs)
    if reduce in ("amax", "amin"):
        # NOTE: ties share the gradient evenly between every element equal to the result
        r = ctx.result
        hit_a = _mask(a == r, g) if ctx.include_self else g * 0
        hit_s = _mask(used == r.gather(dim, index), g)
        count = hit_a.scatter_add(dim, index, hit_s)
        share = g / count
        return share * hit_a, None, to_src(share.gather(dim, index) * hit_s)
    raise NotImplementedError(f"scatter_reduce backward for reduce='{reduce}' is not in "
                              "gradcheck.ref; use 'sum', 'mean', 'amax' or 'amin'")


def _leaky_relu_forward(a, slope):
    return np.where(a > 0, a, a * slope)


def _leaky_relu(ctx, g):
    # the slope is piecewise constant in the input: a constant factor, no graph of its own;
    # in place (LeakyReluBackward1) the result is saved, whose sign is the input's
    a = ctx.result if ctx.name().endswith("1") else _x(ctx)
    factor = np.where(a._data > 0, 1.0, ctx.slope).astype(g._data.dtype, copy=False)
    return (g * _make(factor),)


_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def _gelu_forward(a, approximate):
    if approximate == "tanh":
        return 0.5 * a * (1 + np.tanh(_SQRT_2_OVER_PI * (a + 0.044715 * a ** 3)))
    return a * 0.5 * (1 + special.erf(a / math.sqrt(2)))


def _gelu(ctx, g):
    a = _x(ctx)
    if ctx.approximate == "tanh":
        inner = _SQRT_2_OVER_PI * (a + 0.044715 * a ** 3)
        t = inner.tanh()
        dinner = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * a * a)
        return (g * (0.5 * (1 + t) + 0.5 * a * (1 - t * t) * dinner),)
    cdf = 0.5 * (1 + (a / math.sqrt(2)).erf())
    pdf = (-0.5 * a * a).exp() / math.sqrt(2 * math.pi)
    return (g * (cdf + a * pdf),)


TABLE = {
    "add": _binary("AddBackward0", np.add, lambda ctx, g: (g, g), saves=()),
    "sub": _binary("SubBackward0", np.subtract, lambda ctx, g: (g, -g), saves=()),
    "mul": _binary("MulBackward0", np.multiply, _on_arrays(_mul_arrays, _mul),
                   saves_when=CROSS),
    "div": _binary("DivBackward0", np.true_divide, _div, saves_when=((1,), (0, 1))),
    "pow": _binary("PowBackward1", _power, _pow, saves_output=True),
    "maximum": _binary("MaximumBackward0", np.maximum, _maximum),
    "minimum": _binary("MinimumBackward0", np.minimum, _minimum),
    "matmul": Op("MmBackward0", _matmul_forward, _matmul, (0, 1), on_error=_matmul_error,
                 saves_when=CROSS),
    "linear": Op("AddmmBackward0", _linear_forward, _linear, (0, 1), on_error=_linear_error,
                 saves_when=CROSS),
    "linear_no_bias": Op("MmBackward0", _linear_forward, _linear, (0, 1),
                         on_error=_linear_error, saves_when=CROSS),
    "pow_scalar": _unary("PowBackward0", _pow_scalar_forward, _pow_scalar),
    "rpow_scalar": _unary("PowBackward2", lambda a, base: _power(base, a), _rpow_scalar,
                          saves_input=False, saves_output=True),
    "neg": _unary("NegBackward0", np.negative, lambda ctx, g: (-g,), saves_input=False),
    "exp": _unary("ExpBackward0", np.exp, _on_arrays(_exp_arrays, lambda ctx, g: (
        g * ctx.result,)), False, True),
    "log": _unary("LogBackward0", np.log, lambda ctx, g: (g / _x(ctx),)),
    "log1p": _unary("Log1PBackward0", np.log1p, lambda ctx, g: (g / (_x(ctx) + 1),)),
    "expm1": _unary("Expm1Backward0", np.expm1, lambda ctx, g: (g * (ctx.result + 1),), False,
                    True),
    "sqrt": _unary("SqrtBackward0", np.sqrt, lambda ctx, g: (g / (2 * ctx.result),), False, True),
    "rsqrt": _unary("RsqrtBackward0", lambda a: 1 / np.sqrt(a),
                    lambda ctx, g: (-0.5 * g * ctx.result ** 3,), False, True),
    "abs": _unary("AbsBackward0", np.abs, _abs),
    "sin": _unary("SinBackward0", np.sin, lambda ctx, g: (g * _x(ctx).cos(),)),
    "cos": _unary("CosBackward0", np.cos, lambda ctx, g: (-g * _x(ctx).sin(),)),
    "tan": _unary("TanBackward0", np.tan, lambda ctx, g: (g * (1 + ctx.result ** 2),), False,
                  True),
    "tanh": _unary("TanhBackward0", np.tanh, _on_arrays(_tanh_arrays, lambda ctx, g: (
        g * (1 - ctx.result ** 2),)), False, True),
    "sigmoid": _unary("SigmoidBackward0", _sigmoid_forward, _on_arrays(
        _sigmoid_arrays, lambda ctx, g: (g * ctx.result * (1 - ctx.result),)), False, True),
    "relu": _unary("ReluBackward0", lambda a: np.maximum(a, 0), _on_arrays(
        _relu_arrays, lambda ctx, g: (g * _mask(ctx.result > 0, g),)), False, True),
    "reciprocal": _unary("ReciprocalBackward0", np.reciprocal,
                         lambda ctx, g: (-g * ctx.result * ctx.result,), False, True),
    "clamp": _unary("ClampBackward1", _clamp_forward, _clamp),
    "sign": _unary("SignBackward0", np.sign, lambda ctx, g: (g * 0,), False),
    "floor": _unary("FloorBackward0", np.floor, lambda ctx, g: (g * 0,), False),
    "ceil": _unary("CeilBackward0", np.ceil, lambda ctx, g: (g * 0,), False),
    "round": _unary("RoundBackward0", np.round, lambda ctx, g: (g * 0,), False),
    "trunc": _unary("TruncBackward0", np.trunc, lambda ctx, g: (g * 0,), False),
    "softmax": _unary("SoftmaxBackward0", _softmax_forward,
                      _on_arrays(_softmax_arrays, _softmax), False, True),
    "log_softmax": _unary("LogSoftmaxBackward0", _log_softmax_forward,
                          _on_arrays(_log_softmax_arrays, _log_softmax), False, True),
    "logsumexp": _unary("LogsumexpBackward0", _logsumexp_forward, _logsumexp, True, True),
    "to": _unary("ToCopyBackward0", lambda a, dtype: a.astype(dtype), _identity, False),
    "clone": _unary("CloneBackward0", _clone_forward, _identity, False),
    "sum": _unary("SumBackward1", _sum_forward, _sum, False),
    "sum_all": _unary("SumBackward0", _sum_forward, _sum, False),
    "mean": _unary("MeanBackward1", lambda a, dim, keepdim: a.mean(axis=dim, keepdims=keepdim),
                   _mean, False),
    "mean_all": _unary("MeanBackward0", lambda a, dim, keepdim: a.mean(axis=dim, keepdims=keepdim),
                       _mean, False),
    "amax": _unary("AmaxBackward0", lambda a, dim, keepdim: a.max(axis=dim, keepdims=keepdim),
                   _extreme, True, True),
    "amin": _unary("AminBackward0", lambda a, dim, keepdim: a.min(axis=dim, keepdims=keepdim),
                   _extreme, True, True),
    "max_dim": _unary("MaxBackward0", _select_forward, _select, False),
    "min_dim": _unary("MinBackward0", _select_forward, _select, False),
    "var": _unary("VarBackward0", _var_std_forward("var"), _var),
    "std": _unary("StdBackward0", _var_std_forward("std"), _std, True, True),
    "norm": _unary("NormBackward1", _norm_forward, _norm, True, True),
    "reshape": Op("ViewBackward0", lambda a, shape: a.reshape(shape), _back_to_shape, view=True,
                  on_error=_reshape_error),
    "view": Op("ViewBackward0", _view_forward, _back_to_shape, view=True, on_error=_view_error),
    "transpose": Op("TransposeBackward0", lambda a, dim0, dim1: a.swapaxes(dim0, dim1),
                    lambda ctx, g: (g.transpose(ctx.dim0, ctx.dim1),), view=True),
    "permute": Op("PermuteBackward0", lambda a, dims: a.transpose(dims),
                  lambda ctx, g: (g.permute(*np.argsort(ctx.dims).tolist()),), view=True),
    "expand": Op("ExpandBackward0", _expand_forward, _identity, view=True,
                 on_error=_expand_error),
    "spread": Op("ExpandBackward0", _spread_forward, _identity),
    "copy_slices": Op("CopySlices", None, _copy_slices),
    "to_device": Op("ToCopyBackward0", lambda a, device, source: to_device(a, device), _to_device),
    "einsum": Op("EinsumBackward0", lambda *arrays, equation: np.einsum(equation, *arrays),
                 _einsum, saves="all", on_error=_einsum_error),
    "squeeze": Op("SqueezeBackward0", lambda a, dim: a.squeeze(axis=dim), _back_to_shape,
                  view=True),
    "unsqueeze": Op("UnsqueezeBackward0", lambda a, dim: np.expand_dims(a, dim), _back_to_shape,
                    view=True),
    "getitem": Op("IndexBackward0", lambda a, index: a[index], _getitem_advanced,
                  on_error=_index_error),
    "getitem_view": Op("SliceBackward0", lambda a, index: a[index], _getitem, view=True,
                       on_error=_index_error),
    "index_backward": Op("IndexBackwardBackward0", _index_backward_forward, _index_backward),
    "index_put": Op("IndexPutBackward0", _index_put_forward, _index_put, on_error=_index_error),
    "cat": Op("CatBackward0", lambda *arrays, dim: np.concatenate(arrays, axis=dim),
              _on_arrays(_cat_arrays, _cat),
              on_error=_cat_error),
    "stack": Op("StackBackward0", lambda *arrays, dim: np.stack(arrays, axis=dim),
                _on_arrays(_stack_arrays, _stack),
                on_error=_stack_error),
    "where": Op("WhereBackward0", _where_forward, _where_rule, (0,), on_error=_where_error),
    "masked_fill": Op("MaskedFillBackward0", _masked_fill_forward, _masked_fill, (1,),
                      on_error=_where_error),
    "gather": Op("GatherBackward0", _gather_forward, _gather, (1,)),
    "scatter_add": Op("ScatterAddBackward0", _scatter_add_forward, _scatter_add, (1,)),
    "unfold": Op("Im2ColBackward0", im2col.unfold, _unfold),
    "fold": Op("Col2ImBackward0", im2col.fold, _fold),
    "pad": Op("ConstantPadNdBackward0", im2col.pad, _pad),
    "batch_norm": Op("NativeBatchNormBackward0", _batch_norm_forward, _batch_norm, "all",
                     saves_output=True),
    "plane_gather": Op("MaxPool2DWithIndicesBackward0", im2col.plane_gather, _plane_gather),
    "plane_scatter": Op("MaxPool2DWithIndicesBackwardBackward0", im2col.plane_scatter,
                        _plane_scatter),
    "erf": _unary("ErfBackward0", special.erf,
                  lambda ctx, g: (g * (2 / math.sqrt(math.pi)) * (-_x(ctx) ** 2).exp(),)),
    "asin": _unary("AsinBackward0", np.arcsin, lambda ctx, g: (g * (1 - _x(ctx) ** 2).rsqrt(),)),
    "acos": _unary("AcosBackward0", np.arccos,
                   lambda ctx, g: (-g * (1 - _x(ctx) ** 2).rsqrt(),)),
    "atan": _unary("AtanBackward0", np.arctan, lambda ctx, g: (g / (1 + _x(ctx) ** 2),)),
    "sinh": _unary("SinhBackward0", np.sinh, lambda ctx, g: (g * _x(ctx).cosh(),)),
    "cosh": _unary("CoshBackward0", np.cosh, lambda ctx, g: (g * _x(ctx).sinh(),)),
    "asinh": _unary("AsinhBackward0", np.arcsinh,
                    lambda ctx, g: (g * (_x(ctx) ** 2 + 1).rsqrt(),)),
    "acosh": _unary("AcoshBackward0", np.arccosh,
                    lambda ctx, g: (g * (_x(ctx) ** 2 - 1).rsqrt(),)),
    "atanh": _unary("AtanhBackward0", np.arctanh, lambda ctx, g: (g / (1 - _x(ctx) ** 2),)),
    "exp2": _unary("Exp2Backward0", np.exp2,
                   lambda ctx, g: (g * ctx.result * math.log(2),), False, True),
    "log2": _unary("Log2Backward0", np.log2, lambda ctx, g: (g / (_x(ctx) * math.log(2)),)),
    "gelu": _unary("GeluBackward0", _gelu_forward, _gelu),
    "leaky_relu": _unary("LeakyReluBackward0", _leaky_relu_forward, _leaky_relu),
    "leaky_relu_": _unary("LeakyReluBackward1", _leaky_relu_forward, _leaky_relu, False, True),
    "prod": _unary("ProdBackward1", lambda a, dim, keepdim: np.prod(a, axis=dim,
                                                                  keepdims=keepdim), _prod),
    "flip": _unary("FlipBackward0", lambda a, dims: np.flip(a, dims).copy(),
                   lambda ctx, g: (g.flip(*ctx.dims),), False),
    "roll": _unary("RollBackward0", lambda a, shifts, dims: np.roll(a, shifts, dims),
                   lambda ctx, g: (g.roll(tuple(-s for s in ctx.shifts), ctx.dims),), False),
    "cumprod": _unary("CumprodBackward0", lambda a, dim: np.cumprod(a, axis=dim), _cumprod,
                      True, True),
    "logcumsumexp": _unary("LogcumsumexpBackward0", _logcumsumexp_forward, _logcumsumexp,
                           True, True),
    "running_extreme": _unary("CummaxBackward0", lambda a, dim, indices: np.take_along_axis(
        a, indices, axis=dim), _running_extreme, False),
    "scatter": Op("ScatterBackward0", lambda a, index, src, dim: _scatter_forward(a, index, src,
                                                                                  dim),
                  _scatter, (1,)),
    "scatter_value": Op("ScatterBackward1", lambda a, index, dim, value: _scatter_forward(
        a, index, np.asarray(value, dtype=a.dtype), dim), _scatter, (1,)),
    "scatter_reduce": Op("ScatterReduceBackward0", lambda a, index, src, dim, reduce,
                         include_self: scans.scatter_reduce(a, dim, index, src, reduce,
                                                            include_self),
                         _scatter_reduce, "all", saves_output=True),
}

# The fused rows (layer norm, attention, LSTM/GRU layers, convolutions, class-index losses):
# composites run as one node, their rules in fused_*.py; listed here, as "fused_<name>", so
# that this table names every differentiable op the engine records.
from gradcheck.ref.fused import FUSED  # noqa: E402

TABLE.update({f"fused_{name}": row for name, row in FUSED.items()})
