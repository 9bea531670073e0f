"""Complex numbers: a complex tensor's parts, building one, and torch's gradient convention.

torch gives a real loss L of z = x + iy the gradient dL/dx + i dL/dy (twice the conjugate
Wirtinger derivative). For a holomorphic op w = f(z) that is conj(f'(z)) * grad_w, so every
rule written for real numbers that multiplies the grad by an operand is right for complex
numbers once run as conj(rule(conj(grad))): ``holomorphic`` wraps the table's rows that way.
The ops that are not holomorphic (real, imag, conj, abs, angle, polar, complex,
view_as_real, view_as_complex) have their own rules below.
"""
from __future__ import annotations

import numpy as np

from gradcheck.ref import dtypes as dt
from gradcheck.ref import graph
from gradcheck.ref.arguments import _float
from gradcheck.ref.derivatives import TABLE
from gradcheck.ref.dispatch import COMPLEX_ROWS, Op, apply
from gradcheck.ref.tensors import Tensor, _make

# rows whose real-number rule is right for complex numbers under conj(rule(conj(grad)))
HOLOMORPHIC = (
    "add", "sub", "mul", "div", "neg", "pow_scalar", "rpow_scalar", "exp", "log", "sqrt",
    "reciprocal", "sin", "cos", "tanh", "matmul", "linear", "linear_no_bias", "einsum", "clone",
    "sum", "sum_all", "mean", "mean_all", "reshape", "view", "transpose", "permute", "expand",
    "spread", "squeeze", "unsqueeze", "getitem", "getitem_view", "index_backward",
    "index_put", "cat", "stack", "where", "masked_fill", "flip", "roll", "pad", "gather",
    "scatter_add",
)
# rows that meet complex tensors with rules of their own (casts and abs)
_OTHER_ROWS = ("to", "to_device", "abs")


def _complex_dtype_of(t: Tensor) -> dt.dtype:
    return dt.as_dtype(t.dtype).to_complex()


def as_complex(t: Tensor) -> Tensor:
    """``t`` cast to its complex dtype (a differentiable cast; complex tensors pass)."""
    if t._data.dtype.kind == "c":
        return t
    t = _float(t)
    return apply(TABLE["to"], t, dtype=_complex_dtype_of(t).np)


# ---- the parts of a complex number --------------------------------------------------------
def _real_rule(ctx, g):
    return (as_complex(g),)


def _imag_rule(ctx, g):
    return (as_complex(g) * 1j,)


def _conj_rule(ctx, g):
    return (conj(g),)


REAL = Op("RealBackward0", lambda a: a.real, _real_rule, view=True)
IMAG = Op("ImagBackward0", lambda a: a.imag, _imag_rule, view=True)
CONJ = Op("ConjBackward0", np.conj, _conj_rule)


def real(input: Tensor) -> Tensor:  # noqa: A002 - torch's argument names
    """The real part, a view of a complex tensor (a real tensor is its own real part).

    >>> import gradcheck.ref as torch
    >>> torch.real(torch.tensor([1 + 2j]))
    tensor([1.])
    """
    return apply(REAL, input) if input._data.dtype.kind == "c" else input


def imag(input: Tensor) -> Tensor:  # noqa: A002
    """The imaginary part, a view of a complex tensor; torch's error for a real one."""
    if input._data.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return apply(IMAG, input)


def conj(input: Tensor) -> Tensor:  # noqa: A002
    """The complex conjugate (a copy here: torch's lazy conjugate bit is not modelled)."""
    return apply(CONJ, input) if input._data.dtype.kind == "c" else input


def _sgn(z: Tensor) -> Tensor:
    """z / |z|, and 0 at 0 (torch.sgn), composed of differentiable ops."""
    magnitude = apply(TABLE["abs"], z)
    zero = _make(magnitude._data == 0)
    safe = as_complex(magnitude.masked_fill(zero, 1.0))
    return (z / safe).masked_fill(zero, 0.0)


def sgn(input: Tensor) -> Tensor:  # noqa: A002
    """torch.sgn: z / |z| for complex tensors (0 at 0), the sign for real ones."""
    return _sgn(input) if input._data.dtype.kind == "c" else input.sign()


def _angle_rule(ctx, g):
    (z,) = ctx.saved_tensors
    magnitude = apply(TABLE["abs"], z)
    zero = _make(magnitude._data == 0)
    # d angle = Im(dz / z): the grad is g * i z / |z|^2, and 0 at 0 as in torch
    squared = as_complex(magnitude.masked_fill(zero, 1.0) ** 2)
    return ((as_complex(g) * z * 1j / squared).masked_fill(zero, 0.0),)


ANGLE = Op("AngleBackward0", lambda a: np.angle(a).astype(a.real.dtype), _angle_rule, (0,))


def angle(input: Tensor) -> Tensor:  # noqa: A002
    """The argument in (-pi, pi]; for a real tensor 0 or pi (NaN passes through)."""
    if input._data.dtype.kind != "c":
        from gradcheck.ref import pointwise

        return pointwise.angle(input)
    return apply(ANGLE, input)


def abs_grad(z: Tensor, g: Tensor) -> Tensor:
    """The grad of |z| for complex z: g * z / |z| (0 at 0); the abs row calls it."""
    return as_complex(g) * _sgn(z)


# ---- building complex tensors ---------------------------------------------------------------
def _check_parts(name: str, a: Tensor, b: Tensor) -> None:
    kinds = {a.dtype, b.dtype}
    if len(kinds) != 1 or not kinds <= {dt.float32, dt.float64}:
        raise RuntimeError(f"torch.{name}: expected both inputs to be float32 or float64 "
                           f"tensors of one dtype, but got {a.dtype} and {b.dtype} (float16 "
                           f"would need complex32, which numpy lacks)")


def _complex_forward(re, im):
    out = np.empty(np.broadcast_shapes(re.shape, im.shape), dtype=np.result_type(re, 1j))
    out.real, out.imag = re, im
    return out


def _complex_rule(ctx, g):
    return real(g), imag(g)


COMPLEX = Op("ComplexBackward0", _complex_forward, _complex_rule)


def complex(real: Tensor, imag: Tensor) -> Tensor:  # noqa: A001 - torch's name
    """real + i imag, broadcasting the two float tensors (torch.complex).

    >>> import gradcheck.ref as torch
    >>> torch.complex(torch.tensor([1.0]), torch.tensor([-2.0]))
    tensor([1.-2.j])
    """
    _check_parts("complex", real, imag)
    return apply(COMPLEX, real, imag)


def _polar_forward(r, theta):
    out = np.empty(np.broadcast_shapes(r.shape, theta.shape), dtype=np.result_type(r, 1j))
    out.real, out.imag = r * np.cos(theta), r * np.sin(theta)
    return out


def _polar_rule(ctx, g):
    r, theta = ctx.saved_tensors
    unit = apply(POLAR, _make(np.ones_like(theta._data)), theta)
    along = g * conj(unit)  # the grad in the frame of the point: radial and tangential parts
    return real(along), r * imag(along)


POLAR = Op("PolarBackward0", _polar_forward, _polar_rule, (0, 1))


def polar(abs: Tensor, angle: Tensor) -> Tensor:  # noqa: A002 - torch's argument names
    """abs * (cos(angle) + i sin(angle)) (torch.polar)."""
    _check_parts("polar", abs, angle)
    return apply(POLAR, abs, angle)


# ---- real views of complex storage ----------------------------------------------------------
def real_pairs(a: np.ndarray) -> np.ndarray:
    """A float view of complex ``a`` with a last axis of (real, imaginary), any strides."""
    parts = a.real  # a view with a's strides; the imaginary part sits one float further on
    return np.lib.stride_tricks.as_strided(parts, a.shape + (2,), parts.strides
                                           + (parts.itemsize,))


def complex_of_pairs(a: np.ndarray) -> np.ndarray:
    """The complex view of a float array whose contiguous last axis holds (real, imaginary)."""
    return a.view(np.result_type(a, 1j))[..., 0]


_as_real_forward = real_pairs
_as_complex_forward = complex_of_pairs


def _as_real_rule(ctx, g):
    return (complex(g[..., 0], g[..., 1]),)


def _as_complex_rule(ctx, g):
    return (view_as_real(g),)


AS_REAL = Op("ViewAsRealBackward0", _as_real_forward, _as_real_rule, view=True)
AS_COMPLEX = Op("ViewAsComplexBackward0", _as_complex_forward, _as_complex_rule, view=True)


def view_as_real(input: Tensor) -> Tensor:  # noqa: A002
    """A real view of a complex tensor, with a last dimension of 2 (real, imaginary).

    >>> import gradcheck.ref as torch
    >>> torch.view_as_real(torch.tensor([1 + 2j]))
    tensor([[1., 2.]])
    """
    if input._data.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return apply(AS_REAL, input)


def view_as_complex(input: Tensor) -> Tensor:  # noqa: A002
    """A complex view of a float tensor whose last dimension holds (real, imaginary)."""
    data = input._data
    if data.dtype not in (np.float32, np.float64):
        raise RuntimeError(f"view_as_complex is only supported for float and double tensors, "
                           f"but got a tensor of scalar type: {input.dtype}")
    if data.ndim == 0 or data.shape[-1] != 2:
        raise RuntimeError(f"Tensor must have a last dimension of size 2, got shape "
                           f"{list(data.shape)}")
    if data.strides[-1] != data.itemsize:
        raise RuntimeError("Tensor must have a last dimension with stride 1; call "
                           ".contiguous() first")
    if any(s % (2 * data.itemsize) for s, n in zip(data.strides[:-1], data.shape) if n > 1):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last "
                           "dimension; call .contiguous() first")
    return apply(AS_COMPLEX, input)


def is_complex(input: Tensor) -> bool:  # noqa: A002
    """True for complex64 and complex128 tensors."""
    return input._data.dtype.kind == "c"


def outside_view(g: Tensor, view_op: Op, attrs: dict) -> Tensor:
    """The part of a complex grad that a view of its base does not cover (CopySlices): the
    view may hold only the real or imaginary part, so each part is masked on its own."""
    mask = np.full(g._data.shape, 1 + 1j, dtype=g._data.dtype)
    view_op.forward(mask, **attrs)[...] = 0  # a view into mask
    return complex(real(g) * _make(mask.real.copy()), imag(g) * _make(mask.imag.copy()))


# ---- registration ----------------------------------------------------------------------------
def holomorphic(rule):
    """The rule of a holomorphic row, for a complex grad: conj(rule(conj(grad)))."""

    def run(ctx, g):
        grads = rule(ctx, conj(g))
        if type(grads) is not tuple:
            grads = (grads,)
        return tuple(None if x is None else conj(x) for x in grads)

    return run


def _setter(part):
    """``z.real = x`` writes x into that part of z, as torch does."""

    def assign(self, value) -> None:
        part(self).copy_(value)

    return assign


def _cast_to(dtype: dt.dtype):
    def method(self, memory_format=None):
        return self.to(dtype)

    return method


OWN_ROWS = (REAL, IMAG, CONJ, ANGLE, COMPLEX, POLAR, AS_REAL, AS_COMPLEX)
FUNCTIONS = {"real": real, "imag": imag, "conj": conj, "conj_physical": conj, "sgn": sgn,
             "angle": angle, "complex": complex, "polar": polar, "view_as_real": view_as_real,
             "view_as_complex": view_as_complex, "is_complex": is_complex,
             "resolve_conj": lambda input: input, "is_conj": lambda input: False}


def install(namespace: dict) -> None:
    """Register the rows and rules, put the functions in ``namespace`` and on Tensor."""
    for name in HOLOMORPHIC:
        graph.COMPLEX_RULES[TABLE[name].backward] = holomorphic(TABLE[name].backward)
        COMPLEX_ROWS.add(id(TABLE[name]))
    for row in OWN_ROWS + tuple(TABLE[name] for name in _OTHER_ROWS):
        COMPLEX_ROWS.add(id(row))
    graph.COMPLEX_RULES["real"] = real
    namespace.update(FUNCTIONS)
    Tensor.real = property(real, _setter(real))
    Tensor.imag = property(imag, _setter(imag))
    for name in ("conj", "conj_physical", "sgn", "angle", "resolve_conj", "is_conj"):
        setattr(Tensor, name, FUNCTIONS[name])
    Tensor.cfloat = _cast_to(dt.complex64)
    Tensor.cdouble = _cast_to(dt.complex128)

