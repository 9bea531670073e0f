"""``repr`` of tensors in torch's format (exact for small tensors, summarised for big ones)."""
from __future__ import annotations

import builtins
import math

import numpy as np

from gradcheck.ref import dtypes as dt

_INDENT = len("tensor(")
_EDGE = 3  # elements kept at each end of a summarised dimension
_THRESHOLD = 1000
_LINEWIDTH = 80


def _float_formatter(values: np.ndarray):
    """torch's _Formatter: the format and width come from the nonzero finite values only."""
    finite = values[np.isfinite(values)]
    nonzero = finite[finite != 0]
    int_mode = bool(np.all(nonzero == np.ceil(nonzero)))
    sci = False
    if nonzero.size:
        magnitudes = np.abs(nonzero)
        hi, lo = float(magnitudes.max()), float(magnitudes.min())
        sci = hi / lo > 1000.0 or hi > 1.0e8 or (not int_mode and lo < 1.0e-4)

    def fmt(v: float) -> str:
        if not math.isfinite(v):
            return str(v)
        if sci:
            return f"{v:.4e}"
        return f"{v:.0f}." if int_mode else f"{v:.4f}"

    width = max((len(fmt(v)) for v in nonzero.tolist()), default=1)
    return fmt, width


def _complex_formatter(sample: np.ndarray):
    """torch formats the real and imaginary parts with one formatter each: ``1.+2.j``."""
    real, real_width = _float_formatter(sample.real.astype(np.float64))
    imag, imag_width = _float_formatter(sample.imag.astype(np.float64))

    def fmt(v: complex) -> str:
        imag_part = (imag(v.imag).rjust(imag_width) + "j").lstrip()
        sign = "" if imag_part[0] in "+-" else "+"
        return real(v.real).rjust(real_width) + sign + imag_part

    # the width counts the "j"; each element is exactly as wide as ``fmt`` pads it
    return fmt, real_width + imag_width + 1


def _scalar_formatter(array: np.ndarray):
    """Returns (format one value, common width)."""
    sample = _sample(array).ravel()
    if array.dtype.kind == "c":
        fmt, width = _complex_formatter(sample)
        return fmt, width
    if array.dtype.kind == "f":
        fmt, width = _float_formatter(sample.astype(np.float64))
    else:
        fmt = str if array.dtype.kind == "b" else (lambda v: str(int(v)))
        width = max((len(fmt(v)) for v in sample.tolist()), default=1)
    return (lambda v: fmt(v).rjust(width)), width


def _sample(array: np.ndarray) -> np.ndarray:
    """The elements that will be printed (only the edges when summarising)."""
    if array.size <= _THRESHOLD:
        return array
    for axis in range(array.ndim):
        if array.shape[axis] > 2 * _EDGE:
            idx = list(range(_EDGE)) + list(range(array.shape[axis] - _EDGE, array.shape[axis]))
            array = np.take(array, idx, axis=axis)
    return array


def _vector(array, fmt, width: int, indent: int, summarise: bool) -> str:
    # torch wraps vectors to its 80-column line width, counting ", " after each element
    per_line = builtins.max(1, (_LINEWIDTH - indent) // (width + 2))
    n = array.shape[0]
    if summarise and n > 2 * _EDGE:
        data = ([fmt(v) for v in array[:_EDGE].tolist()] + [" ..."]
                + [fmt(v) for v in array[-_EDGE:].tolist()])
    else:
        data = [fmt(v) for v in array.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _format(array: np.ndarray, fmt, width: int, indent: int, summarise: bool) -> str:
    if array.ndim == 0:
        return fmt(array.item())
    if array.ndim == 1:
        return _vector(array, fmt, width, indent, summarise)
    size = array.shape[0]
    if summarise and size > 2 * _EDGE:
        index = list(range(_EDGE)) + [None] + list(range(size - _EDGE, size))
    else:
        index = list(range(size))
    parts = ["..." if i is None else _format(array[i], fmt, width, indent + 1, summarise)
             for i in index]
    sep = "," + "\n" * (array.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(parts) + "]"


def _with_suffixes(body: str, suffixes: list) -> str:
    """Append ``, suffix`` items, moving one to a new line when it would pass column 80."""
    out = [body]
    last_line = len(body) - body.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > _LINEWIDTH:
            out.append(",\n" + " " * _INDENT + suffix)
            last_line = _INDENT + len(suffix)
        else:
            out.append(", " + suffix)
            last_line += len(suffix) + 2
    return "".join(out) + ")"


def tensor_repr(t) -> str:
    """torch's repr, e.g. ``tensor([1., 2.], requires_grad=True)``.

    >>> from gradcheck.ref import tensor
    >>> tensor([1.5, 2.0])
    tensor([1.5000, 2.0000])
    """
    array = t._data if t.device.type == "cpu" else t._data.get()
    suffix = []
    if array.size == 0:
        body = "[]"
        if array.shape != (0,):
            suffix.append(f"size={tuple(array.shape)}")
    else:
        fmt, width = _scalar_formatter(array)
        body = _format(array, fmt, width, _INDENT, array.size > _THRESHOLD)
    if t.device.type != "cpu":
        suffix.append(f"device='{t.device.type}:{t.device.index or 0}'")
    if t.dtype not in (dt.get_default_dtype(), dt.int64, dt.bool_,
                       dt._COMPLEX_OF[dt.get_default_dtype()]):
        suffix.append(f"dtype={t.dtype!r}")
    if t.grad_fn is not None:
        suffix.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffix.append("requires_grad=True")
    return _with_suffixes("tensor(" + body, suffix)
