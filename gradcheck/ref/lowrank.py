"""``torch.svd_lowrank``: a randomized truncated SVD (Halko, Martinsson and Tropp), written
with the engine's ops as torch writes it, so it is differentiable where ``linalg.qr`` and
``linalg.svd`` are. The random test matrix comes from the engine's generator, so the factors
differ from torch's draw by draw; for a matrix of rank at most ``q`` both recover it exactly,
with the same singular values.

>>> import gradcheck.ref as torch
>>> a = torch.outer(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 0.0, 1.0]))
>>> u, s, v = torch.svd_lowrank(a, q=2)
>>> round(s[0].item(), 4), torch.allclose(u @ torch.diag(s) @ v.mT, a, atol=1e-5)
(5.2915, True)
"""
from __future__ import annotations

from typing import Any

from gradcheck import ref as torch

Tensor = Any


def _orthonormal(x: Tensor) -> Tensor:
    return torch.linalg.qr(x)[0]


def get_approximate_basis(A: Tensor, q: int, niter: int | None = 2,  # noqa: N803
                          M: Tensor | None = None) -> Tensor:  # noqa: N803
    """An orthonormal basis (m x q) whose span approximates the range of ``A - M``."""
    niter = 2 if niter is None else niter
    dtype = A.dtype if A.is_floating_point() or A.is_complex() else torch.float32
    test_matrix = torch.randn(A.shape[-1], q, dtype=dtype)

    def minus_m(product: Tensor, factor: Tensor, m_side: Tensor | None) -> Tensor:
        return product if m_side is None else product - torch.matmul(m_side, factor)

    basis = _orthonormal(minus_m(torch.matmul(A, test_matrix), test_matrix, M))
    for _ in range(niter):
        basis = _orthonormal(minus_m(torch.matmul(A.mH, basis), basis,
                                     None if M is None else M.mH))
        basis = _orthonormal(minus_m(torch.matmul(A, basis), basis, M))
    return basis


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2,  # noqa: N803
                M: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:  # noqa: N803
    """U, S, V with ``A - M ≈ U diag(S) V^H``, of rank ``q``."""
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.size())  # noqa: N806 - torch's argument name
    wide = m < n
    if wide:
        A, M = A.mH, None if M is None else M.mH  # noqa: N806
    basis = get_approximate_basis(A, q, niter=niter, M=M)
    projected = torch.matmul(basis.mH, A)
    if M is not None:
        projected = projected - torch.matmul(basis.mH, M)
    u, s, vh = torch.linalg.svd(projected, full_matrices=False)
    u, v = basis.matmul(u), vh.mH
    return (v, s, u) if wide else (u, s, v)
