"""Judging entries: the tolerance of the documented rule, and one block's comparison.

Every path that produces numeric columns (full.py, screen.py, compress.py, ladder.py) ends
here: ``compare_block`` records the mismatches, kinks, NaN entries and entries the finite
differences could not resolve, and ``tolerance_at`` is the rule of docs/checks.md.
"""
from __future__ import annotations

import numpy as np

from gradcheck.checks import numeric as num
from gradcheck.checks.result import GradcheckResult, Mismatch
from gradcheck.checks.target import Target


def entry_tolerance(target: Target, pos: int, k: int, numeric, estimate, elements,
                    atol=None, rtol=None, floor: bool = True):
    """The tolerance of the documented rule for entries (elements x output k) of one block."""
    i = target.diff[pos]
    s = num.input_scale(target.x[i].ravel()[elements])[:, None]
    return tolerance_at(target, pos, k, numeric, estimate, s, atol, rtol, floor)


def entry_scale(target: Target, k: int, s, outs=None, block_scale=None, numeric=None,
                whole_output: bool = False):
    """``S = max(block scale, |f_o| / s_j)``: the size an entry's rounding is relative to.

    With ``whole_output``, ``|f_o|`` is the largest over output k: the scale that the
    resolution of the finite differences is judged against (ladder.unresolved), where an
    output element that happens to be zero (floor(0.5)) must not make every error large."""
    f0 = num.finite_abs(target.f0[k].ravel())
    if whole_output:
        f0 = np.full(f0.shape, float(np.max(f0, initial=0.0)))
    f0 = f0[None, :] if outs is None else f0[outs]
    if block_scale is None:
        block_scale = num.finite_max([numeric])
    # NOTE: a backward's rounding is relative to the quantities it combines, which can dwarf
    # the entry itself (1 - tanh^2 near saturation): |f_o| / max(1, |x_j|) stands for them.
    return np.maximum(block_scale, f0 / s)


def tolerance_at(target: Target, pos: int, k: int, numeric, estimate, s, atol=None, rtol=None,
                  floor: bool = True, outs=None, block_scale=None):
    """entry_tolerance with the input sizes ``s = max(1, |x_j|)`` given per entry; with
    ``outs``, the entries are a flat list and ``outs`` holds their output elements."""
    amplification = target.amplification[k].ravel()
    amplification = amplification[None, :] if outs is None else amplification[outs]
    grad_eps = num.dtype_eps(target.grad_dtypes[pos]) * amplification
    scale = entry_scale(target, k, s, outs, block_scale, numeric)
    return num.tolerance(numeric, estimate, grad_eps, scale, atol, rtol,
                         target.eval_eps if floor else None)


def compare_block(result: GradcheckResult, target: Target, pos: int, k: int,
                  analytic: np.ndarray, cols, atol=None, rtol=None) -> None:
    """Judge one (output k, input diff[pos]) block and record mismatches, kinks, entries
    the finite differences could not resolve, and errors."""
    # ladder.py builds on full.py and this module, hence the late import
    from gradcheck.checks.ladder import resolution_limit, unresolved

    i = target.diff[pos]
    numeric_block, kink_block = cols.numeric[k], cols.kink[k]
    block_scale = num.finite_max([numeric_block])
    # Entries where both sides are exactly zero have zero error and cannot mismatch; judging
    # only the rest keeps sparse Jacobians (elementwise ops) cheap. NaN != 0, so it stays.
    judged = (numeric_block != 0) | (analytic != 0) | kink_block
    size = num.input_scale(target.x[i].ravel())
    undecided_block = cols.undecided[k] if cols.undecided is not None else None
    if judged.all():  # a dense block: flat views instead of gathered copies
        n, m = judged.shape
        rows, outs = np.repeat(np.arange(n), m), np.tile(np.arange(m), n)
        numeric, estimate = numeric_block.ravel(), cols.estimate[k].ravel()
        analytic_, kink = analytic.ravel(), kink_block.ravel()
        undecided = None if undecided_block is None else undecided_block.ravel()
        tol = tolerance_at(target, pos, k, numeric_block, cols.estimate[k], size[:, None],
                           atol, rtol, floor=not cols.complex_step,
                           block_scale=block_scale).ravel()
    else:
        rows, outs = np.nonzero(judged)
        numeric, estimate = numeric_block[rows, outs], cols.estimate[k][rows, outs]
        analytic_, kink = analytic[rows, outs], kink_block[rows, outs]
        undecided = None if undecided_block is None else undecided_block[rows, outs]
        tol = tolerance_at(target, pos, k, numeric, estimate, size[rows], atol, rtol,
                           floor=not cols.complex_step, outs=outs, block_scale=block_scale)
    err = np.abs(analytic_ - numeric)
    rel = err / np.maximum(np.abs(numeric), max(1e-8 * block_scale, 1e-300))
    smooth = ~kink
    if target.nan_elements:
        # NOTE: with a NaN input, NaN entries are what it propagates (0 * NaN in a VJP, too),
        # not a verdict on the backward; they are counted and reported apart.
        nan = np.isnan(numeric) | np.isnan(analytic_)
        _count(result.nan_entries, (target.output_names[k], target.input_names[i]),
               int((nan & smooth).sum()))
        smooth &= ~nan
    if undecided is not None:
        smooth &= ~undecided
    bad = smooth & ~(err <= tol)  # NOTE: written so that NaN counts as a mismatch
    in_name, out_name = target.input_names[i], target.output_names[k]
    in_shape, out_shape = target.x[i].shape, target.f0[k].shape
    for e in np.unique(rows[kink]):
        point = (in_name, tuple(int(v) for v in np.unravel_index(e, in_shape)))
        if point not in result.nondifferentiable:
            result.nondifferentiable.append(point)
    if smooth.any():
        result.max_abs_error = max(result.max_abs_error, float(np.nanmax(np.where(smooth, err, 0))))
        result.max_rel_error = max(result.max_rel_error, float(np.nanmax(np.where(smooth, rel, 0))))
    if atol is None and rtol is None and not cols.complex_step:
        # NOTE: the resolution size is at least |N| + the block's scale: entries resolved
        # at that size need no closer look, which spares dense blocks a few passes
        with np.errstate(invalid="ignore"):
            close = ~(num.SAFETY * estimate <= resolution_limit(target.eval_eps) * (
                np.abs(numeric) + block_scale))
        loose = np.zeros(numeric.shape, bool)
        near = np.nonzero(close & smooth & ~bad)[0]
        scale = np.zeros(numeric.shape)
        if near.size:
            scale[near] = entry_scale(target, k, size[rows[near]], outs[near], block_scale,
                                      whole_output=True)
            loose[near] = unresolved(target, estimate[near], numeric[near], scale[near])
        if undecided is not None:
            loose |= undecided & ~kink
            missing = loose & (scale == 0)
            scale[missing] = entry_scale(target, k, size[rows[missing]], outs[missing],
                                         block_scale, whole_output=True)
        _record_unresolved(result, (out_name, in_name), loose, estimate, numeric, scale, rows,
                           cols.frozen)
    if not bad.any():
        return
    result.passed = False
    result.mismatch_counts[(out_name, in_name)] = int(bad.sum())
    order = np.argsort(-(err / np.maximum(tol, 1e-300))[bad], kind="stable")
    rows, cols_ = rows[bad], outs[bad]
    err, rel, tol, numeric, estimate = err[bad], rel[bad], tol[bad], numeric[bad], estimate[bad]
    # keep the worst one first, then the first few in index order
    keep = sorted(set([int(order[0])] + list(range(min(4, len(rows))))))
    for j in keep:
        e, o = rows[j], cols_[j]
        result.mismatches.append(Mismatch(
            output=out_name, input=in_name,
            out_index=tuple(int(v) for v in np.unravel_index(o, out_shape)),
            index=tuple(int(v) for v in np.unravel_index(e, in_shape)),
            analytic=float(analytic[e, o]), numeric=float(numeric[j]),
            abs_error=float(err[j]), rel_error=float(rel[j]),
            tolerance=float(tol[j]), estimate=float(estimate[j]),
        ))


def _count(counts: dict, key, n: int) -> None:
    if n:
        counts[key] = counts.get(key, 0) + n


def _record_unresolved(result, block, loose, estimate, numeric, scale, rows, frozen) -> None:
    """Count the passing entries the finite differences could not resolve, with the largest
    relative error estimate among them and whether their outputs never moved."""
    if not loose.any():
        return
    ratio = num.SAFETY * estimate[loose] / (num.finite_abs(numeric[loose]) + scale[loose])
    still = 0 if frozen is None else int(frozen[np.unique(rows[loose])].sum())
    seen = result.unresolved.get(block, {"entries": 0, "worst": 0.0, "frozen": 0})
    seen["entries"] += int(loose.sum())
    seen["worst"] = max(seen["worst"], float(np.nanmax(ratio, initial=0.0)))
    seen["frozen"] += still
    result.unresolved[block] = seen
