"""Small top-level functions real code calls: ``dist``, ``randint_like``, ``frombuffer``,
``logspace``, ``kron``, ``fill``, ``asarray``, ``empty_strided``, ``detach``, ``real``, the
in-place list ops ``_foreach_add_``/``_foreach_mul_``/``_foreach_sub_``, and
``linalg.solve_triangular``.

>>> import gradcheck.ref as torch
>>> torch.kron(torch.tensor([1, 2]), torch.tensor([1, 10]))
tensor([ 1, 10,  2, 20])
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gradcheck.ref import creation, ops, random
from gradcheck.ref import dtypes as dt
from gradcheck.ref.tensors import Tensor


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:  # noqa: A002
    return (input - other).norm(p)


def randint_like(input: Tensor, low: int = 0, high: int | None = None, *,  # noqa: A002
                 dtype=None, generator=None, **kwargs: Any) -> Tensor:
    if high is None:
        low, high = 0, low
    return random.randint(low, high, tuple(input.shape), dtype=dtype or input.dtype,
                          generator=generator)


def frombuffer(buffer: Any, *, dtype, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    array = np.frombuffer(buffer, dtype=dt.as_dtype(dtype).np, count=count, offset=offset)
    return creation.from_numpy(array.copy()).requires_grad_(requires_grad)


def logspace(start: float, end: float, steps: int, base: float = 10.0, *, dtype=None,
             **kwargs: Any) -> Tensor:
    exponents = creation.linspace(start, end, steps, dtype=dt.float64)
    return creation.tensor(np.power(base, exponents.numpy()),
                           dtype=dtype or dt.get_default_dtype())


def kron(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """The Kronecker product, as an outer product reshaped (differentiable)."""
    a, b = input, other
    ndim = max(a.dim(), b.dim())
    a = a.reshape((1,) * (ndim - a.dim()) + tuple(a.shape))
    b = b.reshape((1,) * (ndim - b.dim()) + tuple(b.shape))
    left = a.reshape(*[s for n in a.shape for s in (n, 1)])
    right = b.reshape(*[s for n in b.shape for s in (1, n)])
    return (left * right).reshape(*[x * y for x, y in zip(a.shape, b.shape)])


def fill(input: Tensor, value: Any) -> Tensor:  # noqa: A002
    return ops.clone(input).fill_(value)


def asarray(obj: Any, *, dtype=None, device=None, copy: bool | None = None,
            requires_grad: bool = False) -> Tensor:
    if isinstance(obj, Tensor) and not copy:
        return obj if dtype is None else obj.to(dtype)
    return creation.as_tensor(obj, dtype=dtype).requires_grad_(requires_grad) if \
        requires_grad else creation.as_tensor(obj, dtype=dtype)


def empty_strided(size, stride, *, dtype=None, **kwargs: Any) -> Tensor:
    return creation.empty(*size, dtype=dtype)


def detach(input: Tensor) -> Tensor:  # noqa: A002
    return input.detach()


def real(input: Tensor) -> Tensor:  # noqa: A002
    return input


def _foreach(method: str):
    def apply(tensors: list, other: Any, **kwargs: Any) -> None:
        others = other if isinstance(other, (list, tuple)) else [other] * len(tensors)
        for t, o in zip(tensors, others):
            getattr(t, method)(o, **kwargs)

    return apply


_foreach_add_, _foreach_sub_ = _foreach("add_"), _foreach("sub_")
_foreach_mul_, _foreach_div_ = _foreach("mul_"), _foreach("div_")


def _foreach_zero_(tensors: list) -> None:
    for t in tensors:
        t.zero_()


def _foreach_norm(tensors: list, ord: float = 2) -> tuple:  # noqa: A002
    return tuple(t.norm(ord) for t in tensors)


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,  # noqa: N803
                     unitriangular: bool = False) -> Tensor:
    """X with A X = B for a triangular A (the other triangle is ignored, as in torch)."""
    from gradcheck.ref import linalg

    T = A.triu() if upper else A.tril()  # noqa: N806
    if unitriangular:
        eye = creation.eye(A.shape[-1], dtype=A.dtype)
        T = T * (1 - eye) + eye  # noqa: N806
    return linalg.solve(T, B, left=left)


def _check(cond: Any, message: Any = None) -> None:
    """torch._check: RuntimeError with ``message()`` when ``cond`` is False."""
    if not bool(cond):
        raise RuntimeError(str(message()) if message is not None else
                           "Expected cond to be True, but got False. (Could this error message "
                           "be improved? If so, please report an enhancement request to "
                           "PyTorch.)")


def _check_is_size(i: Any, message: Any = None, *, max: Any = None) -> None:  # noqa: A002
    """torch._check_is_size: ``i`` is a non-negative size (at most ``max``)."""
    _check(i >= 0, message)
    if max is not None:
        _check(i <= max, message)


def frobenius_norm(input: Any, dim: Any, keepdim: bool = False) -> Any:  # noqa: A002
    """sqrt of the sum of squares over ``dim`` (torch's ``frobenius_norm``)."""
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return (input * input).sum(dims, keepdim=keepdim).sqrt()
