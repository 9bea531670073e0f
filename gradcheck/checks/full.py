"""Full mode: every Jacobian entry, numeric (column by column) against analytic (row by row).

Columns come from perturbing one input element at a time (4 evaluations each, batched where the
function allows); rows come from one VJP per output element with a one-hot grad_output.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gradcheck.checks import numeric as num
from gradcheck.checks.result import GradcheckResult, Mismatch
from gradcheck.checks.target import BATCH_ELEMENTS, Target


@dataclass
class Columns:
    """Numeric Jacobian of every output w.r.t. one input: lists over outputs of (n, m) arrays."""

    numeric: list[np.ndarray]
    estimate: list[np.ndarray]
    kink: list[np.ndarray]
    complex_step: bool = False  # no subtraction, so no half-the-digits floor


def numeric_columns(target: Target, i: int, method: str = "central", step: float | None = None,
                    elements: np.ndarray | None = None) -> Columns:
    """Finite-difference Jacobian columns of input ``i`` (all elements, or those listed)."""
    flat = target.x[i].ravel()
    picked = np.arange(flat.size) if elements is None else np.asarray(elements)
    per_point = 4 if method == "central" else 1
    chunk = max(1, BATCH_ELEMENTS // max(1, per_point * flat.size) - 1)
    parts = [_columns_chunk(target, i, picked[s:s + chunk], method, step)
             for s in range(0, len(picked), chunk)]
    return Columns(*[[np.concatenate([p[f][k] for p in parts]) for k in range(len(target.f0))]
                     for f in range(3)], complex_step=method == "complex")


def _columns_chunk(target: Target, i: int, elements: np.ndarray, method: str, step):
    x = target.x[i]
    flat = x.ravel()
    n = len(elements)
    if method == "complex":
        h = num.COMPLEX_STEP * np.maximum(1.0, np.abs(flat[elements]))
        points = np.tile(flat.astype(np.complex128), (n, 1))
        points[np.arange(n), elements] += 1j * h
        outs = target.evaluate_points(i, points.reshape((n,) + x.shape), "complex128")
        cols = []
        for k, out in enumerate(outs):
            out = out.reshape(n, -1)
            cols.append(num.complex_step(out.imag, h, np.abs(out.real)))
        return [c[0] for c in cols], [c[1] for c in cols], [np.zeros_like(c[0], bool) for c in cols]
    if step is None:
        h = num.steps(flat[elements], target.eval_eps, target.eval_name)
    else:
        h = num.steps(flat[elements], 1.0, target.eval_name, scale=step)
    points = np.tile(flat, (4 * n + 1, 1))
    for j, delta in enumerate((h, -h, h / 2, -h / 2)):
        points[j * n + np.arange(n), elements] += delta
    # The last row is x itself: f(x) from the same (batched) code path as its neighbours.
    outs = target.evaluate_points(i, points.reshape((4 * n + 1,) + x.shape))
    numeric, estimate, kink = [], [], []
    for k, out in enumerate(outs):
        out = out.reshape(4 * n + 1, -1)
        fp, fm, fp2, fm2 = out[:-1].reshape(4, n, -1)
        d, e, gap, floor = num.central_difference(out[-1], fp, fm, fp2, fm2, h, target.eval_eps)
        numeric.append(d)
        estimate.append(e)
        kink.append(gap > floor)
    return numeric, estimate, kink


def analytic_rows(target: Target, outputs: list[int] | None = None) -> list[list[np.ndarray]]:
    """Analytic Jacobian J[i][k] (n_i, m_k) for each differentiable input i, from one-hot VJPs."""
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


def compare_block(result: GradcheckResult, target: Target, pos: int, k: int,
                  analytic: np.ndarray, cols: Columns, atol=None, rtol=None) -> None:
    """Judge one (output k, input diff[pos]) block and record mismatches, kinks and errors."""
    i = target.diff[pos]
    numeric, estimate, kink = cols.numeric[k], cols.estimate[k], cols.kink[k]
    grad_eps = num.dtype_eps(target.grad_dtypes[pos]) * target.amplification[k].ravel()[None, :]
    block_scale = float(np.max(np.abs(numeric), initial=0.0))
    # NOTE: a backward's rounding is relative to the quantities it combines, which can dwarf
    # the entry itself (1 - tanh^2 near saturation): |f_o| / max(1, |x_j|) stands for them.
    natural = np.abs(target.f0[k].ravel())[None, :] / np.maximum(1.0, np.abs(
        target.x[i].ravel()))[:, None]
    scale = np.maximum(block_scale, natural)
    floor_eps = None if cols.complex_step else target.eval_eps
    tol = num.tolerance(numeric, estimate, grad_eps, scale, atol, rtol, floor_eps)
    err = np.abs(analytic - numeric)
    rel = err / np.maximum(np.abs(numeric), max(1e-8 * block_scale, 1e-300))
    smooth = ~kink
    bad = smooth & ~(err <= tol)  # NOTE: written so that NaN counts as a mismatch
    in_name, out_name = target.input_names[i], target.output_names[k]
    in_shape, out_shape = target.x[i].shape, target.f0[k].shape
    for e in np.unique(np.nonzero(kink)[0]):
        point = (in_name, tuple(int(v) for v in np.unravel_index(e, in_shape)))
        if point not in result.nondifferentiable:
            result.nondifferentiable.append(point)
    if smooth.any():
        result.max_abs_error = max(result.max_abs_error, float(np.nanmax(np.where(smooth, err, 0))))
        result.max_rel_error = max(result.max_rel_error, float(np.nanmax(np.where(smooth, rel, 0))))
    if not bad.any():
        return
    result.passed = False
    result.mismatch_counts[(out_name, in_name)] = int(bad.sum())
    order = np.argsort(-(err / np.maximum(tol, 1e-300))[bad], kind="stable")
    rows, cols_ = np.nonzero(bad)
    # keep the worst one first, then the first few in index order
    keep = sorted(set([int(order[0])] + list(range(min(4, len(rows))))))
    for j in keep:
        e, o = rows[j], cols_[j]
        result.mismatches.append(Mismatch(
            output=out_name, input=in_name,
            out_index=tuple(int(v) for v in np.unravel_index(o, out_shape)),
            index=tuple(int(v) for v in np.unravel_index(e, in_shape)),
            analytic=float(analytic[e, o]), numeric=float(numeric[e, o]),
            abs_error=float(err[e, o]), rel_error=float(rel[e, o]),
            tolerance=float(tol[e, o]), estimate=float(estimate[e, o]),
        ))


def run_full(result: GradcheckResult, target: Target, method: str, step, atol, rtol) -> None:
    """Compare every block of the Jacobian."""
    jac = analytic_rows(target)
    for pos, i in enumerate(target.diff):
        cols = numeric_columns(target, i, method, step)
        for k in range(len(target.f0)):
            compare_block(result, target, pos, k, jac[pos][k], cols, atol, rtol)
