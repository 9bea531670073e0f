"""``torch.linalg`` and the matrix functions at ``torch.*``: inverse, determinants, solve,
Cholesky, norms, decompositions, and the products ``mv``, ``addmm``, ``tensordot``.

Rows added to the derivatives table: ``inv`` (-A^-T g A^-T), ``det`` (g det A^-T),
``slogdet`` (g A^-T on the log), ``solve`` (gB = A^-T g, gA = -gB X^T), ``cholesky``
(torch's Phi rule) and the spectra ``svdvals``/``eigvalsh``. The factorisations themselves
(``qr``, ``svd``, ``eigh``) are computed, but differentiating through their factors raises
NotImplementedError naming the function. Batched inputs (``(*, n, n)``) work throughout.

>>> import gradcheck.ref as torch
>>> a = torch.tensor([[2.0, 1.0], [1.0, 3.0]], requires_grad=True)
>>> torch.linalg.det(a).backward(); a.grad
tensor([[ 3., -1.],
        [-1.,  2.]])
"""
from __future__ import annotations

import numpy as np

from gradcheck.ref import assemble, creation, grad_mode, ops
from gradcheck.ref.arguments import _float
from gradcheck.ref.derivatives import TABLE
from gradcheck.ref.dispatch import Op, apply
from gradcheck.ref.tensors import Tensor, _make


class LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: a matrix without the property the function needs."""


def _mT(t: Tensor) -> Tensor:  # noqa: N802
    return t.transpose(-2, -1)


def _square(name: str, a: Tensor) -> None:
    if a._data.ndim < 2 or a._data.shape[-1] != a._data.shape[-2]:
        raise RuntimeError(f"linalg.{name}: A must be batches of square matrices, but they are "
                           f"{a._data.shape[-2] if a._data.ndim > 1 else 1} by "
                           f"{a._data.shape[-1] if a._data.ndim else 1} matrices")


def _inv_rule(ctx, g):
    inverse = ctx.result
    return (-(_mT(inverse) @ g @ _mT(inverse)),)


def _det_rule(ctx, g):
    (a,) = ctx.saved_tensors
    det = ctx.result
    return ((g * det).unsqueeze(-1).unsqueeze(-1) * _mT(inv(a)),)


def _logabsdet_forward(a):
    return np.linalg.slogdet(a)[1]


def _logabsdet_rule(ctx, g):
    (a,) = ctx.saved_tensors
    return (g.unsqueeze(-1).unsqueeze(-1) * _mT(inv(a)),)


def _solve_forward(a, b, vector=False):
    return np.linalg.solve(a, b[..., None])[..., 0] if vector else np.linalg.solve(a, b)


def _solve_rule(ctx, g):
    (a,) = ctx.saved_tensors
    x = ctx.result
    if ctx.vector:
        g, x = g.unsqueeze(-1), x.unsqueeze(-1)
    gb = solve(_mT(a), g)
    ga = -(gb @ _mT(x)) if ctx.needs_input_grad[0] else None
    return ga, (gb.squeeze(-1) if ctx.vector else gb)


def _cholesky_forward(a, upper=False):
    try:
        low = np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        order = next(k for k in range(1, a.shape[-1] + 1) if not _factorable(a[..., :k, :k]))
        raise LinAlgError("linalg.cholesky: The factorization could not be completed because "
                          f"the input is not positive-definite (the leading minor of order "
                          f"{order} is not positive-definite).") from None
    return np.swapaxes(low, -1, -2).copy() if upper else low


def _factorable(a) -> bool:
    try:
        np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        return False
    return True


def _cholesky_rule(ctx, g):
    """torch's rule: gA = L^-H Phi(L^H gL) L^-1, symmetrised (Phi: lower triangle, halved
    diagonal)."""
    low = _mT(ctx.result) if ctx.upper else ctx.result
    g = _mT(g) if ctx.upper else g
    phi = (_mT(low) @ g).tril()
    phi = phi - 0.5 * assemble.diag_embed(ops.diagonal(phi, 0, -2, -1))
    low_inv = inv(low)
    grad = _mT(low_inv) @ phi @ low_inv
    return (0.5 * (grad + _mT(grad)),)


def _spectrum_rule(vectors_of):
    def rule(ctx, g):
        left, right = vectors_of(ctx)
        return (left @ (g.unsqueeze(-1) * right),)

    return rule


def _svdvals_forward(a):
    return np.linalg.svd(a, compute_uv=False)


def _svd_vectors(ctx):
    (a,) = ctx.saved_tensors
    u, _, vh = np.linalg.svd(a._data, full_matrices=False)
    return _make(u), _make(vh)


def _eigh_vectors(ctx):
    (a,) = ctx.saved_tensors
    _, v = np.linalg.eigh(a._data)
    return _make(v), _make(np.swapaxes(v, -1, -2).copy())


TABLE.update({
    "inv": Op("LinalgInvExBackward0", np.linalg.inv, _inv_rule, (), saves_output=True),
    "det": Op("LinalgDetBackward0", np.linalg.det, _det_rule, (0,), saves_output=True),
    "logabsdet": Op("LinalgSlogdetBackward0", _logabsdet_forward, _logabsdet_rule, (0,)),
    "solve": Op("LinalgSolveExBackward0", _solve_forward, _solve_rule, (0,), saves_output=True),
    "cholesky": Op("LinalgCholeskyExBackward0", _cholesky_forward, _cholesky_rule, (),
                   saves_output=True),
    "svdvals": Op("LinalgSvdBackward0", _svdvals_forward, _spectrum_rule(_svd_vectors), (0,)),
    "eigvalsh": Op("LinalgEighBackward0", lambda a: np.linalg.eigvalsh(a),
                   _spectrum_rule(_eigh_vectors), (0,)),
})


def inv(A: Tensor) -> Tensor:  # noqa: N803 - torch's argument name
    """The inverse of each square matrix."""
    _square("inv", A)
    try:
        return apply(TABLE["inv"], _float(A))
    except np.linalg.LinAlgError:
        raise LinAlgError("linalg.inv: The diagonal element 1 is zero, the inversion could not "
                          "be completed because the input matrix is singular.") from None


inverse = inv


def det(A: Tensor) -> Tensor:  # noqa: N803
    _square("det", A)
    return apply(TABLE["det"], _float(A))


def slogdet(A: Tensor) -> tuple[Tensor, Tensor]:  # noqa: N803
    """(sign, log|det|); the gradient flows through the second."""
    _square("slogdet", A)
    A = _float(A)
    sign = _make(np.linalg.slogdet(A._data)[0].astype(A._data.dtype))
    return sign, apply(TABLE["logabsdet"], A)


def logdet(A: Tensor) -> Tensor:  # noqa: N803
    """log det A: NaN for a negative determinant, -inf for a singular matrix."""
    sign, logabs = slogdet(A)
    return ops.where(sign < 0, float("nan"), logabs)


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:  # noqa: N803
    """X with A X = B (B a vector or a batch of matrices)."""
    if not left:
        return _mT(solve(_mT(A), _mT(B)))
    _square("solve", A)
    vector = B._data.ndim == A._data.ndim - 1
    return apply(TABLE["solve"], _float(A), _float(B), vector=vector)


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:  # noqa: N803
    _square("cholesky", A)
    return apply(TABLE["cholesky"], _float(A), upper=upper)


def svdvals(A: Tensor) -> Tensor:  # noqa: N803
    return apply(TABLE["svdvals"], _float(A))


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:  # noqa: N803
    _square("eigvalsh", A)
    return apply(TABLE["eigvalsh"], _float(A))


def _factors(name: str, inputs: tuple, arrays: tuple) -> tuple:
    """Factors as constants; refusing to pretend they have a gradient."""
    if grad_mode.is_grad_enabled() and any(t.requires_grad for t in inputs):
        raise NotImplementedError(f"differentiating torch.linalg.{name} is not available in "
                                  "gradcheck.ref; call it on .detach() (or use svdvals/eigvalsh "
                                  "for the spectrum, which are differentiable)")
    return tuple(_make(np.ascontiguousarray(a)) for a in arrays)


def qr(A: Tensor, mode: str = "reduced") -> tuple[Tensor, Tensor]:  # noqa: N803
    q, r = np.linalg.qr(_float(A)._data, mode="complete" if mode == "complete" else "reduced")
    return _factors("qr", (A,), (q, r))


def svd(A: Tensor, full_matrices: bool = True) -> tuple[Tensor, Tensor, Tensor]:  # noqa: N803
    return _factors("svd", (A,), np.linalg.svd(_float(A)._data, full_matrices=full_matrices))


def eigh(A: Tensor, UPLO: str = "L") -> tuple[Tensor, Tensor]:  # noqa: N803
    return _factors("eigh", (A,), np.linalg.eigh(_float(A)._data, UPLO=UPLO))


def torch_svd(input: Tensor, some: bool = True, compute_uv: bool = True):  # noqa: A002
    """The deprecated ``torch.svd``: (U, S, V) with V, not V^H."""
    u, s, vh = svd(input, full_matrices=not some)
    return u, s, _mT(vh).contiguous()


def pinv(A: Tensor, *, rcond: float | None = None, hermitian: bool = False) -> Tensor:  # noqa: N803
    return _factors("pinv", (A,), (np.linalg.pinv(_float(A)._data,
                                                  **({} if rcond is None else {"rcond": rcond})),))[0]


def matrix_rank(A: Tensor, *args, **kwargs) -> Tensor:  # noqa: N803
    return _make(np.asarray(np.linalg.matrix_rank(A._data), dtype=np.int64))


def vector_norm(x: Tensor, ord: float = 2, dim=None, keepdim: bool = False,  # noqa: A002
                *, dtype=None) -> Tensor:
    """The ``ord``-norm of the flattened tensor, or along ``dim``."""
    if dtype is not None:
        x = x.to(dtype)
    return ops.norm(_float(x), p=ord, dim=dim, keepdim=keepdim)


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False) -> Tensor:  # noqa: N803
    """Frobenius ('fro'), nuclear ('nuc') or spectral (2, -2) norms of each matrix."""
    if ord == "fro":
        return ops.norm(_float(A), p=2, dim=dim, keepdim=keepdim)
    moved = ops.movedim(_float(A), dim, (-2, -1))
    values = svdvals(moved)
    if ord == "nuc":
        out = values.sum(-1)
    elif ord in (2, -2):
        out = values.amax(-1) if ord == 2 else values.amin(-1)
    else:
        raise NotImplementedError(f"torch.linalg.matrix_norm(ord={ord!r}) is not available in "
                                  "gradcheck.ref; use 'fro', 'nuc', 2 or -2")
    if keepdim:
        for d in sorted(x % A._data.ndim for x in dim):
            out = out.unsqueeze(d)
    return out


def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: N803
    """``vector_norm`` for vectors (or ``ord=None``), ``matrix_norm`` for a pair of dims."""
    if isinstance(ord, str) or (dim is not None and not isinstance(dim, int) and len(dim) == 2
                                and ord is not None):
        return matrix_norm(A, ord, dim if dim is not None else (-2, -1), keepdim)
    if ord is None and dim is None and A._data.ndim == 2:
        return matrix_norm(A, "fro", (-2, -1), keepdim)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:  # noqa: A002
    """The cross product of 3-vectors along ``dim``."""
    a = ops.movedim(input, dim, -1)
    b = ops.movedim(other, dim, -1)
    if a._data.shape[-1] != 3 or b._data.shape[-1] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{input._data.shape[dim]} and {other._data.shape[dim]}")
    x1, y1, z1 = a.unbind(-1)
    x2, y2, z2 = b.unbind(-1)
    out = ops.stack([y1 * z2 - z1 * y2, z1 * x2 - x1 * z2, x1 * y2 - y1 * x2], -1)
    return ops.movedim(out, -1, dim)


def torch_cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:  # noqa: A002
    """``torch.cross``: without ``dim``, the first dim of size 3 (torch's deprecated rule)."""
    if dim is None:
        dim = next(i for i, n in enumerate(input._data.shape) if n == 3)
    return cross(input, other, dim=dim)


def matrix_power(A: Tensor, n: int) -> Tensor:  # noqa: N803
    _square("matrix_power", A)
    if n < 0:
        return matrix_power(inv(A), -n)
    if n == 0:
        return creation.eye(A._data.shape[-1], dtype=A.dtype).expand(A.shape).clone()
    out = A
    for _ in range(n - 1):
        out = out @ A
    return out


def mv(input: Tensor, vec: Tensor) -> Tensor:  # noqa: A002
    if input._data.ndim != 2 or vec._data.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {vec._data.ndim}, "
                           f"{input._data.ndim}, {vec._data.ndim}")
    return ops.matmul(input, vec)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:  # noqa: A002
    """beta * input + alpha * (mat1 @ mat2)."""
    product = ops.matmul(mat1, mat2)
    return _scaled(input, beta) + _scaled(product, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:  # noqa: A002
    return _scaled(input, beta) + _scaled(ops.matmul(batch1, batch2), alpha)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:  # noqa: A002
    return _scaled(input, beta) + _scaled(mv(mat, vec), alpha)


def _scaled(t: Tensor, factor) -> Tensor:
    if factor == 1:
        return t
    if factor == 0:  # torch ignores input (even NaN) when beta is 0
        return creation.zeros_like(t)
    return t * factor


def tensordot(a: Tensor, b: Tensor, dims=2) -> Tensor:
    """Contract the last ``dims`` dims of a with the first of b (or the listed dims)."""
    if isinstance(dims, int):
        dims_a = list(range(a._data.ndim - dims, a._data.ndim))
        dims_b = list(range(dims))
    else:
        dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
    dims_a = [d % a._data.ndim for d in dims_a]
    dims_b = [d % b._data.ndim for d in dims_b]
    keep_a = [d for d in range(a._data.ndim) if d not in dims_a]
    keep_b = [d for d in range(b._data.ndim) if d not in dims_b]
    size = int(np.prod([a._data.shape[d] for d in dims_a]))
    left = a.permute(*keep_a, *dims_a).reshape(-1, size)
    right = b.permute(*dims_b, *keep_b).reshape(size, -1)
    shape = [a._data.shape[d] for d in keep_a] + [b._data.shape[d] for d in keep_b]
    return (left @ right).reshape(shape)


def inner(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    if input._data.ndim == 0 or other._data.ndim == 0:
        return input * other
    return tensordot(input, other, ([-1], [-1]))
