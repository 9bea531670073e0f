"""Full mode: every Jacobian entry, numeric (column by column) against analytic (row by row).

Columns come from perturbing one input element at a time, batched where the function allows:
x +/- h for every element, then x +/- h/2 for those the first step cannot settle. Two screens
may come first and send only their suspects here: where the analytic Jacobian is sparse,
several elements share a perturbation (compress.py); otherwise, by default, one forward
difference per element (screen.py). Rows come from analytic.py.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gradcheck.checks import numeric as num
from gradcheck.checks.analytic import analytic_rows
from gradcheck.checks.compare import compare_block, entry_tolerance
from gradcheck.checks.result import GradcheckResult
from gradcheck.checks.target import BATCH_ELEMENTS, Target


SCREEN_MIN_ELEMENTS = 32  # smaller inputs go straight to the two-sided path


@dataclass
class Columns:
    """Numeric Jacobian of every output w.r.t. one input: lists over outputs of (n, m) arrays."""

    numeric: list[np.ndarray]
    estimate: list[np.ndarray]
    kink: list[np.ndarray]
    complex_step: bool = False  # no subtraction, so no half-the-digits floor
    undecided: list[np.ndarray] | None = None  # entries the step ladder could not decide
    frozen: np.ndarray | None = None  # elements whose outputs did not move at the first step


@dataclass
class Screen:
    """What phase 1 needs to accept entries early: the analytic rows of one input."""

    pos: int
    analytic: list[np.ndarray]  # per output k, (n_i, m_k)
    outputs: list[int]
    atol: float | None = None
    rtol: float | None = None
    one_sided: bool = False  # phase 1 by forward differences (see screen.py)


def numeric_columns(target: Target, i: int, method: str = "central", step: float | None = None,
                    screen: Screen | None = None, elements: np.ndarray | None = None) -> Columns:
    """Finite-difference Jacobian columns of input ``i`` (rows: ``elements``, default all).

    With a ``screen``, central differences run in two phases: x +/- h for every element, then
    x +/- h/2 only for elements whose step-h quotient disagrees with the analytic value or
    whose one-sided quotients hint at a kink (the cheap check first, exact on suspicion).
    For all elements, a compressed screen (sparse analytic Jacobian, compress.py) or else the
    forward-difference screen (``screen.one_sided``, screen.py) comes first.
    """
    flat = target.x[i].ravel()
    if elements is None and method == "central" and screen is not None and target.batch:
        # both screens send their suspects back here (they build on this module), hence the
        # late imports
        from gradcheck.checks.compress import column_colors, compressed_columns
        from gradcheck.checks.screen import direction_kink, forward_screened_columns

        colors = column_colors(screen.analytic)
        if colors is not None:
            return compressed_columns(target, i, step, screen, colors)
        # NOTE: the screen costs its kink probe (9 points) and a point per element; the
        # two-sided path costs two points per element, so the screen pays only past a few
        # dozen elements
        if (screen.one_sided and flat.size >= SCREEN_MIN_ELEMENTS
                and not direction_kink(target, i, step)):
            return forward_screened_columns(target, i, step, screen)
    picked = np.arange(flat.size) if elements is None else np.asarray(elements)
    chunk = central_chunk(flat.size, 4 if method == "central" else 1)
    parts = [_columns_chunk(target, i, picked[s:s + chunk], method, step, screen)
             for s in range(0, len(picked), chunk)]
    if not parts:
        empty = [np.zeros((0, f.size)) for f in target.f0]
        return Columns(empty, [e.copy() for e in empty], [np.zeros(e.shape, bool) for e in empty])
    return Columns(*[[np.concatenate([p[f][k] for p in parts]) for k in range(len(target.f0))]
                     for f in range(3)], complex_step=method == "complex")


def central_chunk(size: int, per_point: int = 4) -> int:
    """Elements per batched call when each costs ``per_point`` points of ``size`` values
    (one row is left for x itself)."""
    return max(1, BATCH_ELEMENTS // max(1, per_point * size) - 1)


def steps_for(target: Target, values: np.ndarray, step: float | None,
              factor: np.ndarray | float = 1.0) -> np.ndarray:
    """Central-difference steps for ``values``: the default rule, or ``step * max(1, |x|)``,
    times ``factor`` (per element), made exact."""
    if step is None:
        return num.steps(values, target.eval_eps, target.eval_name, scale=factor)
    return num.steps(values, 1.0, target.eval_name, scale=step * factor)


def _columns_chunk(target: Target, i: int, elements: np.ndarray, method: str, step, screen,
                   f0=None):
    x = target.x[i]
    flat = x.ravel()
    n = len(elements)
    if method == "complex":
        h = num.COMPLEX_STEP * num.input_scale(flat[elements])
        points = np.tile(flat.astype(np.complex128), (n, 1))
        points[np.arange(n), elements] += 1j * h
        outs = target.evaluate_points(i, points.reshape((n,) + x.shape), "complex128")
        cols = []
        for out in outs:
            out = out.reshape(n, -1)
            cols.append(num.complex_step(out.imag, h, np.abs(out.real)))
        return [c[0] for c in cols], [c[1] for c in cols], [np.zeros_like(c[0], bool) for c in cols]
    h = steps_for(target, flat[elements], step)
    # Phase 1: x + h, x - h, and x itself (from the same batched code path as its neighbours).
    outs = perturbed(target, i, elements, (h, -h), with_x=f0 is None)
    f0 = [o[-1] for o in outs] if f0 is None else f0
    fp = [o[:n] for o in outs]
    fm = [o[n:2 * n] for o in outs]
    refine = _needs_second_step(target, i, elements, h, f0, fp, fm, screen)
    numeric, estimate, kink = [], [], []
    for k in range(len(outs)):
        d = (fp[k] - fm[k]) / (2 * h[:, None])
        numeric.append(d)
        rounding = num.quotient_rounding(target.eval_eps, (fp[k], fm[k], f0[k]), h[:, None])
        estimate.append(np.broadcast_to(rounding, d.shape).copy())
        kink.append(np.zeros(d.shape, bool))
    if refine.size:
        r = refine
        half = perturbed(target, i, elements[r], (h[r] / 2, -h[r] / 2), with_x=False)
        for k, out in enumerate(half):
            fp2, fm2 = out[:len(r)], out[len(r):]
            d, e, gap, floor = num.central_difference(
                f0[k], fp[k][r], fm[k][r], fp2, fm2, h[r], target.eval_eps)
            numeric[k][r], estimate[k][r], kink[k][r] = d, e, gap > floor
    return numeric, estimate, kink


def directional_differences(target: Target, i: int, w: np.ndarray, t: float) -> list:
    """Per output k, numeric.central_difference along each direction ``w[d]`` (rows) with
    step ``t``: (derivative, estimate, kink gap, kink floor), each (len(w), m_k)."""
    x, d = target.x[i], len(w)
    points = np.concatenate([x + t * w, x - t * w, x + t / 2 * w, x - t / 2 * w, x[None]])
    found = []
    label = lambda r: f"of the kink probe along random direction {r % d}"  # noqa: E731
    for out in target.evaluate_points(i, points, label=label):
        out = out.reshape(len(points), -1)
        found.append(num.central_difference(
            out[-1], out[:d], out[d:2 * d], out[2 * d:3 * d], out[3 * d:4 * d],
            np.full(d, t), target.eval_eps))
    return found


def perturbed(target: Target, i: int, elements: np.ndarray, deltas, with_x: bool):
    """Outputs (per output k, rows (len(deltas) * n [+ 1], m_k)) at x + delta e_j."""
    x = target.x[i]
    flat = x.ravel()
    n = len(elements)
    rows = len(deltas) * n + (1 if with_x else 0)
    points = np.tile(flat, (rows, 1))
    for j, delta in enumerate(deltas):
        points[j * n + np.arange(n), elements] += delta

    def label(r: int) -> str:
        if r >= len(deltas) * n:
            return "at the given inputs"
        element = int(elements[r % n])
        index = [int(v) for v in np.unravel_index(element, x.shape)]
        step = float(np.broadcast_to(deltas[r // n], (n,))[r % n])
        return f"of column {element} (element {index} moved by {step:+.3g})"

    outs = target.evaluate_points(i, points.reshape((rows,) + x.shape), label=label)
    return [o.reshape(rows, -1) for o in outs]


def _needs_second_step(target, i, elements, h, f0, fp, fm, screen) -> np.ndarray:
    """Indices (into ``elements``) that phase 1 cannot settle."""
    if screen is None:
        return np.arange(len(elements))
    need = np.zeros(len(elements), bool)
    for k in screen.outputs:
        d = (fp[k] - fm[k]) / (2 * h[:, None])
        gap = np.abs(fp[k] - 2 * f0[k] + fm[k]) / h[:, None]
        # NOTE: smooth f gives gap ~ h f''; a kink gives the jump in slope, a visible
        # fraction of the slope itself (the same relative threshold as the kink test).
        kinkish = gap > num.relative_floor(d, target.eval_eps)
        analytic = screen.analytic[k][elements]
        tol = entry_tolerance(target, screen.pos, k, d, 0.0, elements, screen.atol, screen.rtol)
        need |= (kinkish | ~(np.abs(analytic - d) <= tol)).any(axis=1)
    return np.nonzero(need)[0]


# NOTE: full mode holds a few dense copies of the Jacobian (analytic, numeric, estimate);
# past this many entries (256 MB per copy) it refuses instead of asking for terabytes.
MAX_JACOBIAN_ENTRIES = 2**25


def jacobian_size_problem(target: Target, blocks) -> str | None:
    """Why the (pos, k) ``blocks`` are too large to hold entry by entry, or None."""
    sizes = {}
    for pos, k in blocks:
        sizes[pos] = sizes.get(pos, 0) + target.x[target.diff[pos]].size * target.f0[k].size
    total = sum(sizes.values())
    if total <= MAX_JACOBIAN_ENTRIES:
        return None
    inputs = ", ".join(f"{target.input_names[target.diff[p]]} ({target.x[target.diff[p]].size}"
                       " elements)" for p in sizes)
    return (f"the Jacobian has {total:,} entries ({8 * total / 2**30:.1f} GiB per copy) for "
            f"{inputs}; full mode stops at {MAX_JACOBIAN_ENTRIES:,}: use mode='fast' or a "
            "smaller input")


def run_full(result: GradcheckResult, target: Target, method: str, step, atol, rtol,
             one_sided: bool = True) -> None:
    """Compare every block of the Jacobian (``one_sided``: the forward-difference screen);
    with the default step, doubtful elements are retried at other steps (ladder.py)."""
    from gradcheck.checks.ladder import settle  # ladder.py builds on this module

    problem = jacobian_size_problem(target, [(pos, k) for pos in range(len(target.diff))
                                             for k in range(len(target.f0))])
    if problem:
        raise ValueError(problem)
    jac = analytic_rows(target)
    outputs = list(range(len(target.f0)))
    for pos, i in enumerate(target.diff):
        if target.x[i].size == 0:
            continue  # no entries to compare
        screen = Screen(pos, jac[pos], outputs, atol, rtol, one_sided)
        cols = numeric_columns(target, i, method, step, screen)
        if method == "central" and step is None:
            settle(target, pos, jac[pos], cols, outputs, atol, rtol)
        for k in outputs:
            compare_block(result, target, pos, k, jac[pos][k], cols, atol, rtol)
