"""The analytic side of full mode: the Jacobian of the backward under test, row by row.

Rows come from one-hot grad_outputs, in one batched backward where the framework allows;
an elementwise backward is recognised from two VJPs and needs no more.
"""
from __future__ import annotations

import numpy as np

from gradcheck.checks import numeric as num
from gradcheck.checks.target import BATCH_ELEMENTS, Target


def analytic_rows(target: Target, outputs: list[int] | None = None) -> list[list[np.ndarray]]:
    """Analytic Jacobian J[i][k] (n_i, m_k) for each differentiable input i, from one-hot VJPs
    (or from two VJPs when the backward is elementwise).

    >>> from gradcheck.checks.adapters import adapter_for
    >>> t = Target(adapter_for((np.ones(3),), fn=lambda x: 2 * x, wrt=None,
    ...                        vjp=lambda g, x: (2 * g,)))
    >>> analytic_rows(t)[0][0].tolist()
    [[2.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 2.0]]
    """
    if target.batch and (outputs is None or list(outputs) == list(range(len(target.f0)))):
        diagonal = _diagonal_rows(target)
        if diagonal is not None:
            return diagonal
    outputs = list(range(len(target.f0))) if outputs is None else outputs
    jac = [[np.zeros((target.x[i].size, target.f0[k].size)) for k in range(len(target.f0))]
           for i in target.diff]
    widest = max([target.x[i].size for i in target.diff] + [f.size for f in target.f0])
    for k in outputs:
        m = target.f0[k].size
        chunk = max(2, BATCH_ELEMENTS // max(1, widest))
        for start in range(0, m, chunk):
            picked = np.arange(start, min(m, start + chunk))
            rows = np.zeros((len(picked), m))
            rows[np.arange(len(picked)), picked] = 1.0
            grads = target.vjp_rows(k, rows.reshape((len(picked),) + target.f0[k].shape))
            for pos, g in enumerate(grads):
                if g is not None:
                    flat = np.asarray(g, dtype=np.float64).reshape(len(picked), -1)
                    jac[pos][k][:, picked] = flat.T
    return jac


def _diagonal_rows(target: Target) -> list[list[np.ndarray]] | None:
    """The analytic Jacobian from two VJPs when the backward is elementwise, else None.

    With one output and inputs of its size, the backward is elementwise exactly when
    ``J^T w = (J^T 1) * w`` for every ``w``; one random ``w`` decides it, since an off-diagonal
    entry would have to cancel against that draw. Off-diagonal entries below about 1e3 eps of
    the grad dtype times the largest diagonal entry could pass as zero; they are far below
    every tolerance of the rule.
    """
    if len(target.f0) != 1 or target.f0[0].size < 16 or np.iscomplexobj(target.f0[0]) or any(
            d.startswith("complex") for d in target.grad_dtypes):
        return None
    m = target.f0[0].size
    if any(target.x[i].size != m for i in target.diff):
        return None
    w = np.random.default_rng(m).standard_normal(target.f0[0].shape)
    ones, mixed = target.vjp([np.ones(target.f0[0].shape)]), target.vjp([w])
    jac = []
    for pos, (d, g) in enumerate(zip(ones, mixed)):
        if (d is None) != (g is None):
            return None
        block = np.zeros((m, m))
        if d is not None:
            d, g = np.asarray(d, np.float64).ravel(), np.asarray(g, np.float64).ravel()
            expected = d * w.ravel()
            # NOTE: a backward that cancels (mish near its minimum) rounds relative to the
            # terms it combines; the block's largest entry stands for them.
            scale = np.abs(d) + float(np.max(np.abs(d), initial=0.0))
            tol = 1e3 * num.dtype_eps(target.grad_dtypes[pos]) * np.abs(w.ravel()) * scale
            if not np.all(np.abs(g - expected) <= tol):  # NOTE: NaN also ends up here
                return None
            block[np.arange(m), np.arange(m)] = d
        jac.append([block])
    return jac
