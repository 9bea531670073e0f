"""Full mode: every Jacobian entry, numeric (column by column) against analytic (row by row).

Columns come from perturbing one input element at a time, batched where the function allows:
x +/- h for every element, then x +/- h/2 for those the first step cannot settle. Rows come
from one-hot grad_outputs, in one batched backward where the framework allows.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gradcheck.checks import numeric as num
from gradcheck.checks.compress import Grouping, column_colors
from gradcheck.checks.result import GradcheckResult, Mismatch
from gradcheck.checks.target import BATCH_ELEMENTS, Target


@dataclass
class Columns:
    """Numeric Jacobian of every output w.r.t. one input: lists over outputs of (n, m) arrays."""

    numeric: list[np.ndarray]
    estimate: list[np.ndarray]
    kink: list[np.ndarray]
    complex_step: bool = False  # no subtraction, so no half-the-digits floor


@dataclass
class Screen:
    """What phase 1 needs to accept entries early: the analytic rows of one input."""

    pos: int
    analytic: list[np.ndarray]  # per output k, (n_i, m_k)
    outputs: list[int]
    atol: float | None = None
    rtol: float | None = None


def numeric_columns(target: Target, i: int, method: str = "central", step: float | None = None,
                    screen: Screen | None = None, elements: np.ndarray | None = None) -> Columns:
    """Finite-difference Jacobian columns of input ``i`` (rows: ``elements``, default all).

    With a ``screen``, central differences run in two phases: x +/- h for every element, then
    x +/- h/2 only for elements whose step-h quotient disagrees with the analytic value or
    whose one-sided quotients hint at a kink (the cheap check first, exact on suspicion).
    Where the analytic Jacobian is sparse, a compressed screen (see compress.py) comes first.
    """
    flat = target.x[i].ravel()
    if elements is None and method == "central" and screen is not None and target.batch:
        colors = column_colors(screen.analytic)
        if colors is not None:
            return _compressed_columns(target, i, step, screen, colors)
    picked = np.arange(flat.size) if elements is None else np.asarray(elements)
    per_point = 4 if method == "central" else 1
    chunk = max(1, BATCH_ELEMENTS // max(1, per_point * flat.size) - 1)
    parts = [_columns_chunk(target, i, picked[s:s + chunk], method, step, screen)
             for s in range(0, len(picked), chunk)]
    if not parts:
        empty = [np.zeros((0, f.size)) for f in target.f0]
        return Columns(empty, [e.copy() for e in empty], [np.zeros(e.shape, bool) for e in empty])
    return Columns(*[[np.concatenate([p[f][k] for p in parts]) for k in range(len(target.f0))]
                     for f in range(3)], complex_step=method == "complex")


def _steps(target: Target, values: np.ndarray, step: float | None) -> np.ndarray:
    if step is None:
        return num.steps(values, target.eval_eps, target.eval_name)
    return num.steps(values, 1.0, target.eval_name, scale=step)


@dataclass
class _Packed:
    """One output's view of a compressed input: (colour, output element) arrays."""

    fp: np.ndarray
    fm: np.ndarray
    f0: np.ndarray
    owners: np.ndarray  # the element each entry is attributed to, -1: the whole colour
    h: np.ndarray  # the owner's step (the colour's smallest where there is no owner)
    s: np.ndarray  # max(1, |x_j|) of the owner (the colour's largest where none)
    analytic: np.ndarray
    numeric: np.ndarray
    estimate: np.ndarray
    kink: np.ndarray
    rounding: np.ndarray  # (n, 1): 64 eps F / h_j, the estimate of unattributed entries


def _compressed_columns(target: Target, i: int, step, screen: Screen, colors) -> Columns:
    """Both phases with one perturbation per colour; suspects re-checked element by element.

    Each (colour, output element) quotient belongs to the colour's owner of that output
    element (the one element the backward says it depends on); where there is none, to every
    element of the colour, since any of them may be the dependency the backward missed.
    Entries the full rule still rejects, and kinks, are re-checked per element so that
    reports name the exact entry. Everything up to the end works on (colours, m) arrays.
    """
    x = target.x[i]
    flat = x.ravel()
    groups = Grouping(colors)
    h = _steps(target, flat, step)
    dirs = groups.directions(h)
    c = groups.count
    outs = target.evaluate_points(i, np.concatenate([flat + dirs, flat - dirs, flat[None]])
                                  .reshape((2 * c + 1,) + x.shape))
    size = np.maximum(1.0, np.abs(flat))
    h_min = np.minimum.reduceat(h[groups.order], groups.starts)[:, None]
    s_max = np.maximum.reduceat(size[groups.order], groups.starts)[:, None]
    packed = []
    refine = np.zeros(c, bool)
    for k, out in enumerate(outs):
        out = out.reshape(2 * c + 1, -1)
        fp, fm, f0 = out[:c], out[c:2 * c], out[-1]
        owners = groups.owners(screen.analytic[k])
        safe = np.maximum(owners, 0)
        owned = owners >= 0
        step_co = np.where(owned, h[safe], h_min)
        quotient = (fp - fm) / (2 * step_co)
        f_max = max(float(np.max(np.abs(a), initial=0.0)) for a in (fp, fm, f0))
        p = _Packed(fp, fm, f0, owners, step_co, np.where(owned, size[safe], s_max),
                    np.where(owned, screen.analytic[k][safe, np.arange(out.shape[1])], 0.0),
                    quotient, num.ROUNDING * target.eval_eps * f_max / step_co,
                    np.zeros(quotient.shape, bool),
                    (num.ROUNDING * target.eval_eps * f_max / h)[:, None])
        packed.append(p)
        if k not in screen.outputs:
            continue
        gap = np.abs(fp - 2 * f0 + fm) / step_co
        column_scale = np.max(np.abs(quotient), axis=0, keepdims=True)
        # NOTE: the same kink hint and first-pass tolerance as the per-element screen.
        kinkish = gap > np.cbrt(target.eval_eps) * (np.abs(quotient) + column_scale)
        tol = _tolerance_at(target, screen.pos, k, quotient, 0.0, p.s, screen.atol, screen.rtol)
        refine |= (kinkish | ~(np.abs(quotient - p.analytic) <= tol)).any(axis=1)
    if refine.any():
        _refine_colors(target, i, groups, h, np.nonzero(refine)[0], packed)
    rechecked = _recheck_suspects(target, i, step, screen, groups, h, packed)
    return _unpack(groups, h, packed, rechecked)


def _refine_colors(target, i, groups, h, picked, packed) -> None:
    """Phase 2 for the colours in ``picked``: x +/- h/2 along their directions."""
    x = target.x[i]
    half = groups.directions(h)[picked] / 2
    flat = x.ravel()
    outs = target.evaluate_points(i, np.concatenate([flat + half, flat - half])
                                  .reshape((2 * len(picked),) + x.shape))
    n = len(flat)
    for k, out in enumerate(outs):
        out = out.reshape(2 * len(picked), -1)
        p = packed[k]
        # NOTE: per-element noise medians run over the entries of one owner, as they would in
        # the uncompressed Jacobian; a colour without owner counts as one pseudo-element.
        element = np.where(p.owners >= 0, p.owners, n + np.arange(groups.count)[:, None])
        d, e, gap, floor = num.central_difference(
            p.f0, p.fp[picked], p.fm[picked], out[:len(picked)], out[len(picked):],
            p.h[picked], target.eval_eps, row_groups=element[picked])
        p.numeric[picked], p.estimate[picked], p.kink[picked] = d, e, gap > floor


def _recheck_suspects(target, i, step, screen, groups, h, packed):
    """Entries still rejected (or kinks) go back to the per-element check: first the owner's
    column; where that column does not reproduce the colour's quotient, an element the
    backward calls independent moved that output, so the whole colour."""
    n = len(groups.colors)
    owner_suspects = np.zeros(n, bool)
    color_suspects = np.zeros(groups.count, bool)
    pending = []
    for k in screen.outputs:
        p = packed[k]
        tol = _tolerance_at(target, screen.pos, k, p.numeric, p.estimate, p.s, screen.atol,
                            screen.rtol)
        bad = p.kink | ~(np.abs(p.numeric - p.analytic) <= tol)
        if not bad.any():
            continue
        owned = bad & (p.owners >= 0)
        owner_suspects[p.owners[owned]] = True
        color_suspects |= (bad & (p.owners < 0)).any(axis=1)
        pending.append((k, owned, tol))
    first = np.nonzero(owner_suspects)[0]
    cols = numeric_columns(target, i, "central", step, screen, elements=first)
    where = np.full(n, -1)
    where[first] = np.arange(len(first))
    for k, owned, tol in pending:
        p = packed[k]
        cs, os = np.nonzero(owned)
        js = p.owners[cs, os]
        exact = cols.numeric[k][where[js], os]
        moved = (p.fp[cs, os] - p.fm[cs, os]) / 2
        explained = cols.kink[k][where[js], os] | (
            np.abs(moved - exact * h[js]) / h[js] <= tol[cs, os])
        color_suspects[cs[~explained]] = True
    second = np.setdiff1d(groups.members(np.nonzero(color_suspects)[0]), first)
    more = numeric_columns(target, i, "central", step, screen, elements=second)
    return [(first, cols), (second, more)]


def _unpack(groups, h, packed, rechecked) -> Columns:
    """(n, m) columns: attributed entries from the packed arrays, the rest exactly the
    analytic zero, and the re-checked elements' own columns."""
    n = len(groups.colors)
    numeric, estimate, kink = [], [], []
    for k, p in enumerate(packed):
        m = p.numeric.shape[1]
        nu, es, ki = np.zeros((n, m)), np.empty((n, m)), np.zeros((n, m), bool)
        es[:] = p.rounding
        owned = p.owners >= 0
        cs, os = np.nonzero(owned)
        js = p.owners[cs, os]
        nu[js, os], es[js, os], ki[js, os] = p.numeric[cs, os], p.estimate[cs, os], p.kink[cs, os]
        if not owned.all():
            free = ~owned[groups.colors]
            ratio = (p.h[groups.colors] / h[:, None])[free]  # the colour's step over h_j
            nu[free] = p.numeric[groups.colors][free] * ratio
            es[free] = p.estimate[groups.colors][free] * ratio
            ki[free] = p.kink[groups.colors][free]
        numeric.append(nu)
        estimate.append(es)
        kink.append(ki)
    for picked, found in rechecked:
        for k in range(len(packed)):
            numeric[k][picked] = found.numeric[k]
            estimate[k][picked] = found.estimate[k]
            kink[k][picked] = found.kink[k]
    return Columns(numeric, estimate, kink)


def _columns_chunk(target: Target, i: int, elements: np.ndarray, method: str, step, screen):
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
    h = _steps(target, flat[elements], step)
    # Phase 1: x + h, x - h, and x itself (from the same batched code path as its neighbours).
    outs = _perturbed(target, i, elements, (h, -h), with_x=True)
    f0 = [o[-1] for o in outs]
    fp = [o[:n] for o in outs]
    fm = [o[n:2 * n] for o in outs]
    refine = _needs_second_step(target, i, elements, h, f0, fp, fm, screen)
    numeric, estimate, kink = [], [], []
    for k in range(len(outs)):
        d = (fp[k] - fm[k]) / (2 * h[:, None])
        f_max = max(float(np.max(np.abs(a), initial=0.0)) for a in (fp[k], fm[k], f0[k]))
        numeric.append(d)
        rounding = num.ROUNDING * target.eval_eps * f_max / h[:, None]
        estimate.append(np.broadcast_to(rounding, d.shape).copy())
        kink.append(np.zeros(d.shape, bool))
    if refine.size:
        r = refine
        half = _perturbed(target, i, elements[r], (h[r] / 2, -h[r] / 2), with_x=False)
        for k, out in enumerate(half):
            fp2, fm2 = out[:len(r)], out[len(r):]
            d, e, gap, floor = num.central_difference(
                f0[k], fp[k][r], fm[k][r], fp2, fm2, h[r], target.eval_eps)
            numeric[k][r], estimate[k][r], kink[k][r] = d, e, gap > floor
    return numeric, estimate, kink


def _perturbed(target: Target, i: int, elements: np.ndarray, deltas, with_x: bool):
    """Outputs (per output k, rows (len(deltas) * n [+ 1], m_k)) at x + delta e_j."""
    x = target.x[i]
    flat = x.ravel()
    n = len(elements)
    rows = len(deltas) * n + (1 if with_x else 0)
    points = np.tile(flat, (rows, 1))
    for j, delta in enumerate(deltas):
        points[j * n + np.arange(n), elements] += delta
    outs = target.evaluate_points(i, points.reshape((rows,) + x.shape))
    return [o.reshape(rows, -1) for o in outs]


def _needs_second_step(target, i, elements, h, f0, fp, fm, screen) -> np.ndarray:
    """Indices (into ``elements``) that phase 1 cannot settle."""
    if screen is None:
        return np.arange(len(elements))
    need = np.zeros(len(elements), bool)
    for k in screen.outputs:
        d = (fp[k] - fm[k]) / (2 * h[:, None])
        gap = np.abs(fp[k] - 2 * f0[k] + fm[k]) / h[:, None]
        column_scale = np.max(np.abs(d), axis=0, keepdims=True)
        # NOTE: smooth f gives gap ~ h f''; a kink gives the jump in slope, a visible
        # fraction of the slope itself (the same relative threshold as the kink test).
        kinkish = gap > np.cbrt(target.eval_eps) * (np.abs(d) + column_scale)
        analytic = screen.analytic[k][elements]
        tol = entry_tolerance(target, screen.pos, k, d, 0.0, elements, screen.atol, screen.rtol)
        need |= (kinkish | ~(np.abs(analytic - d) <= tol)).any(axis=1)
    return np.nonzero(need)[0]


def entry_tolerance(target: Target, pos: int, k: int, numeric, estimate, elements,
                    atol=None, rtol=None, floor: bool = True):
    """The tolerance of the documented rule for entries (elements x output k) of one block."""
    i = target.diff[pos]
    s = np.maximum(1.0, np.abs(target.x[i].ravel()[elements]))[:, None]
    return _tolerance_at(target, pos, k, numeric, estimate, s, atol, rtol, floor)


def _tolerance_at(target: Target, pos: int, k: int, numeric, estimate, s, atol=None, rtol=None,
                  floor: bool = True, outs=None, block_scale=None):
    """entry_tolerance with the input sizes ``s = max(1, |x_j|)`` given per entry; with
    ``outs``, the entries are a flat list and ``outs`` holds their output elements."""
    amplification = target.amplification[k].ravel()
    f0 = np.abs(target.f0[k].ravel())
    if outs is None:
        amplification, f0 = amplification[None, :], f0[None, :]
    else:
        amplification, f0 = amplification[outs], f0[outs]
    grad_eps = num.dtype_eps(target.grad_dtypes[pos]) * amplification
    if block_scale is None:
        block_scale = float(np.max(np.abs(numeric), initial=0.0))
    # NOTE: a backward's rounding is relative to the quantities it combines, which can dwarf
    # the entry itself (1 - tanh^2 near saturation): |f_o| / max(1, |x_j|) stands for them.
    scale = np.maximum(block_scale, f0 / s)
    return num.tolerance(numeric, estimate, grad_eps, scale, atol, rtol,
                         target.eval_eps if floor else None)


def analytic_rows(target: Target, outputs: list[int] | None = None) -> list[list[np.ndarray]]:
    """Analytic Jacobian J[i][k] (n_i, m_k) for each differentiable input i, from one-hot VJPs."""
    if outputs is None and target.batch:
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
    if len(target.f0) != 1 or target.f0[0].size < 16:
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


def compare_block(result: GradcheckResult, target: Target, pos: int, k: int,
                  analytic: np.ndarray, cols: Columns, atol=None, rtol=None) -> None:
    """Judge one (output k, input diff[pos]) block and record mismatches, kinks and errors."""
    i = target.diff[pos]
    numeric_block, kink_block = cols.numeric[k], cols.kink[k]
    block_scale = float(np.max(np.abs(numeric_block), initial=0.0))
    # Entries where both sides are exactly zero have zero error and cannot mismatch; judging
    # only the rest keeps sparse Jacobians (elementwise ops) cheap. NaN != 0, so it stays.
    rows, outs = np.nonzero((numeric_block != 0) | (analytic != 0) | kink_block)
    numeric, estimate = numeric_block[rows, outs], cols.estimate[k][rows, outs]
    analytic_, kink = analytic[rows, outs], kink_block[rows, outs]
    size = np.maximum(1.0, np.abs(target.x[i].ravel()))[rows]
    tol = _tolerance_at(target, pos, k, numeric, estimate, size, atol, rtol,
                        floor=not cols.complex_step, outs=outs, block_scale=block_scale)
    err = np.abs(analytic_ - numeric)
    rel = err / np.maximum(np.abs(numeric), max(1e-8 * block_scale, 1e-300))
    smooth = ~kink
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


def run_full(result: GradcheckResult, target: Target, method: str, step, atol, rtol) -> None:
    """Compare every block of the Jacobian."""
    jac = analytic_rows(target)
    outputs = list(range(len(target.f0)))
    for pos, i in enumerate(target.diff):
        screen = Screen(pos, jac[pos], outputs, atol, rtol)
        cols = numeric_columns(target, i, method, step, screen)
        for k in outputs:
            compare_block(result, target, pos, k, jac[pos][k], cols, atol, rtol)
