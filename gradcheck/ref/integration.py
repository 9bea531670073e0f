"""Numerical integration and differentiation of sampled values: ``trapezoid`` (``trapz``),
``cumulative_trapezoid`` and ``gradient``, as compositions of differentiable slices.

>>> import gradcheck.ref as torch
>>> torch.trapezoid(torch.tensor([1.0, 2.0, 3.0]))
tensor(4.)
>>> torch.gradient(torch.tensor([1.0, 4.0, 9.0, 16.0]))
(tensor([3., 4., 6., 7.]),)
"""
from __future__ import annotations

from gradcheck.ref import ops
from gradcheck.ref.arguments import _float
from gradcheck.ref.tensors import Tensor


def _ends(y: Tensor, dim: int) -> tuple[Tensor, Tensor]:
    """``y`` without its last and without its first sample along ``dim``."""
    n = y.shape[dim]
    return y.narrow(dim, 0, n - 1), y.narrow(dim, 1, n - 1)


def _spacings(x: Tensor, y: Tensor, dim: int) -> Tensor:
    """The gaps between sample points, shaped to broadcast against slices of ``y``."""
    if x.dim() == 1:
        gaps = x[1:] - x[:-1]
        return gaps.reshape([-1 if d == dim % y.dim() else 1 for d in range(y.dim())])
    low, high = _ends(x, dim)
    return high - low


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None,
              dim: int = -1) -> Tensor:
    """The trapezoidal rule along ``dim``: samples at ``x``, or ``dx`` apart (default 1)."""
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments: "
                        "give x or dx, not both")
    y = _float(y) if x is None else y
    if y.shape[dim] == 0:
        return ops.sum(y, dim=dim)
    low, high = _ends(y, dim)
    if isinstance(x, Tensor):
        return ops.sum(_spacings(x, y, dim) * (low + high), dim=dim) / 2
    step = 1.0 if x is None and dx is None else (dx if dx is not None else x)
    return step * ops.sum(low + high, dim=dim) / 2


def trapz(y: Tensor, x=None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """The older name: ``trapz(y, x, dim=...)`` or ``trapz(y, dx=..., dim=...)``."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None,
                         dim: int = -1) -> Tensor:
    """The running trapezoidal integral: one value fewer than ``y`` along ``dim``."""
    y = _float(y) if x is None else y
    low, high = _ends(y, dim)
    if isinstance(x, Tensor):
        return ops.cumsum(_spacings(x, y, dim) * (low + high) / 2, dim=dim)
    step = 1.0 if dx is None else dx
    return ops.cumsum(step * (low + high) / 2, dim=dim)


def _dims(dim, ndim: int) -> list[int]:
    if dim is None:
        return list(range(ndim))
    return [d % ndim for d in ((dim,) if isinstance(dim, int) else dim)]


def _uniform_gradient(f: Tensor, h: float, dim: int, edge_order: int) -> Tensor:
    n = f.shape[dim]

    def at(start: int, length: int = 1) -> Tensor:
        return f.narrow(dim, start % n, length)

    interior = (at(2, n - 2) - at(0, n - 2)) / (2 * h)
    if edge_order == 1:
        first, last = (at(1) - at(0)) / h, (at(-1) - at(-2)) / h
    else:
        first = (-1.5 * at(0) + 2 * at(1) - 0.5 * at(2)) / h
        last = (0.5 * at(-3) - 2 * at(-2) + 1.5 * at(-1)) / h
    return ops.cat([first, interior, last], dim=dim)


def _coordinate_gradient(f: Tensor, x: Tensor, dim: int, edge_order: int) -> Tensor:
    """Second-order differences on uneven samples (numpy's and torch's formula)."""
    n = f.shape[dim]
    shape = [-1 if d == dim else 1 for d in range(f.dim())]
    gaps = (x[1:] - x[:-1]).reshape(shape)

    def at(t: Tensor, start: int, length: int = 1) -> Tensor:
        return t.narrow(dim, start % t.shape[dim], length)

    left, right = at(gaps, 0, n - 2), at(gaps, 1, n - 2)
    interior = (left ** 2 * at(f, 2, n - 2) + (right ** 2 - left ** 2) * at(f, 1, n - 2)
                - right ** 2 * at(f, 0, n - 2)) / (left * right * (left + right))
    if edge_order == 1:
        first = (at(f, 1) - at(f, 0)) / at(gaps, 0)
        last = (at(f, -1) - at(f, -2)) / at(gaps, -1)
    else:
        first = _second_order_edge(at(f, 0), at(f, 1), at(f, 2), at(gaps, 0), at(gaps, 1))
        last = -_second_order_edge(at(f, -1), at(f, -2), at(f, -3), at(gaps, -1), at(gaps, -2))
    return ops.cat([first, interior, last], dim=dim)


def _second_order_edge(f0, f1, f2, h1, h2) -> Tensor:
    a = -(2 * h1 + h2) / (h1 * (h1 + h2))
    b = (h1 + h2) / (h1 * h2)
    c = -h1 / (h2 * (h1 + h2))
    return a * f0 + b * f1 + c * f2


def gradient(input: Tensor, *, spacing=1, dim=None, edge_order: int = 1) -> tuple:  # noqa: A002
    """Central differences inside, one-sided differences of ``edge_order`` at the ends; one
    tensor per dimension in ``dim``. ``spacing`` is one number, one per dimension, or one
    coordinate tensor per dimension."""
    if edge_order not in (1, 2):
        raise RuntimeError(f"torch.gradient only supports edge_order=1 and edge_order=2. "
                           f"but got edge_order={edge_order}")
    f = _float(input)
    dims = _dims(dim, f.dim())
    steps = spacing if isinstance(spacing, (list, tuple)) else [spacing] * len(dims)
    if len(steps) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                           f"it's spacing and dim arguments to have the same length, but "
                           f"got a spacing argument of length {len(steps)} and a dim argument "
                           f"of length {len(dims)}.")
    results = []
    for d, step in zip(dims, steps):
        if f.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
        if isinstance(step, Tensor):
            results.append(_coordinate_gradient(f, step, d, edge_order))
        else:
            results.append(_uniform_gradient(f, float(step), d, edge_order))
    return tuple(results)


FUNCTIONS = {"trapezoid": trapezoid, "trapz": trapz,
             "cumulative_trapezoid": cumulative_trapezoid, "gradient": gradient}
