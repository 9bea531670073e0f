"""The forward-difference screen of full mode: one point per element, exact on suspicion.

Phase 1 of a dense input evaluates ``f(x + h_f e_j)`` for every element (and ``f(x)``), with
``h_f = 16 sqrt(eps) * max(1, |x_j|)``, and settles the elements whose forward quotient agrees
with the analytic row within half of the exact rule's estimate-free tolerance. Only the
others (the suspects) go through the two-sided path of full.py (x +/- h, then x +/- h/2).
A one-sided quotient cannot see a kink at ``x`` whose analytic value is the probed side's
slope, so two random two-sided directional probes look for kinks first; if they see one, the
whole input takes the two-sided path. The rule and its argument are in docs/checks.md.
"""
from __future__ import annotations

import numpy as np

from gradcheck.checks import compare, full
from gradcheck.checks import numeric as num
from gradcheck.checks.target import Target

FORWARD_STEP = 16.0  # h_f = FORWARD_STEP * sqrt(eps) * max(1, |x_j|)
SCREEN_SHARE = 0.5  # an element is settled when |A - D_f| <= SCREEN_SHARE * T0
RETRY = 4.0  # suspects within RETRY times the screen tolerance get a second, 4x smaller step
# NOTE: the points of one call are n copies of x; a few megabytes stay in cache and reuse
# their pages, where one 2**21-element batch (16 MB) spends more in page faults than in f.
SCREEN_BATCH_ELEMENTS = 2**19
KINK_DIRECTIONS = 2  # random directions of the kink probe
KINK_SEED = 20240917  # fixed: the probe must not depend on the user's seed


def forward_steps(target: Target, values: np.ndarray) -> np.ndarray:
    """Forward-difference steps ``16 sqrt(eps) max(1, |x|)`` in the evaluation dtype, made exact.

    >>> from gradcheck.checks.adapters import adapter_for
    >>> t = Target(adapter_for((np.ones(2),), fn=np.sin, vjp=lambda g, x: (g * np.cos(x),)))
    >>> bool(abs(forward_steps(t, np.array([4.0]))[0] / 4 - 2.0**-22) < 1e-12)
    True
    """
    # NOTE: the forward quotient's truncation error is h_f f''/2 and its rounding about
    # rho / h_f, where rho, the rounding inside f, grows with the terms f combines (a dense
    # sum of n terms: about sqrt(n) eps |f|). sqrt(eps) balances the two for a short f; the
    # factor 16 keeps rho / h_f under the screen tolerance for sums of thousands of terms.
    # A curved f then gets suspects, which only cost the two-sided path (docs/checks.md).
    relative = FORWARD_STEP * np.sqrt(target.eval_eps) / np.cbrt(target.eval_eps)
    return num.steps(values, target.eval_eps, target.eval_name, scale=relative)


def direction_kink(target: Target, i: int, step: float | None) -> bool:
    """Whether two-sided probes along random directions see a kink of ``f`` near ``x``.

    Along ``w = u * max(1, |x|)`` (``u`` standard normal) the five-point kink statistic of
    numeric.central_difference is computed per output element; any entry above its floor
    means some element may sit at a kink, and the caller then screens two-sided.

    >>> from gradcheck.checks.adapters import adapter_for
    >>> relu = lambda x: np.maximum(x, 0) @ np.ones((3, 2))
    >>> vjp = lambda g, x: ((x > 0) * (np.ones((3, 2)) @ g),)
    >>> direction_kink(Target(adapter_for((np.array([0.0, 1, 2]),), fn=relu, vjp=vjp)), 0, None)
    True
    """
    x = target.x[i]
    rng = np.random.default_rng(KINK_SEED)
    w = rng.standard_normal((KINK_DIRECTIONS,) + x.shape) * num.input_scale(x)
    t = np.cbrt(target.eval_eps) if step is None else step
    return any(bool((gap > floor).any())
               for _, _, gap, floor in full.directional_differences(target, i, w, t))


def forward_screened_columns(target: Target, i: int, step, screen: full.Screen) -> full.Columns:
    """Numeric columns of input ``i``: forward quotients where they settle an element, the
    two-sided rule for every suspect."""
    flat = target.x[i].ravel()
    n = flat.size
    h = forward_steps(target, flat)
    elements = np.arange(n)
    f0, fp = _forward_points(target, i, h, elements, with_x=True)
    numeric, estimate = _forward_quotients(target, f0, fp, h)
    kink = [np.zeros(d.shape, bool) for d in numeric]
    # NOTE: a curved f makes h_f f''/2 the larger error; a 4x smaller step cuts it by 4 (and
    # raises the rounding part by 4). Only near misses are worth the extra point: a wrong
    # entry or a kink is far beyond the tolerance at any step.
    scales, excess, judged = _block_scales(numeric), _excess(target, screen, numeric), None
    retry = np.nonzero((excess > 1) & (excess <= RETRY))[0]
    if retry.size:
        _, fq = _forward_points(target, i, h[retry] / 4, retry, with_x=False)
        d, e = _forward_quotients(target, f0, fq, h[retry] / 4)
        for k in range(len(numeric)):
            numeric[k][retry], estimate[k][retry] = d[k], e[k]
    settled = np.ones(n, bool)
    if not retry.size:
        judged = excess
    # NOTE: refining suspects can lower a block's largest |numeric|, hence the tolerance of
    # the settled entries; judge again until every settled entry passes at the final scale
    # (tolerances grow with that scale, so a scale that did not shrink needs no new look).
    while True:
        if judged is None:
            scales = _block_scales(numeric)
            judged = _excess(target, screen, numeric)
        suspects = np.nonzero(settled & (judged > 1))[0]
        if suspects.size == 0:
            return full.Columns(numeric, estimate, kink)
        settled[suspects] = False
        chunk = full.central_chunk(n)
        for s in range(0, len(suspects), chunk):
            part = suspects[s:s + chunk]
            d, e, g = full._columns_chunk(target, i, part, "central", step, screen, f0=f0)
            for k in range(len(numeric)):
                numeric[k][part], estimate[k][part], kink[k][part] = d[k], e[k], g[k]
        if (_block_scales(numeric) < scales).any():
            judged = None


def _block_scales(numeric: list[np.ndarray]) -> np.ndarray:
    """The largest |numeric| of each block, which the tolerance of its entries grows with."""
    return np.array([np.max(np.abs(d), initial=0.0) for d in numeric])


def _forward_points(target: Target, i: int, h: np.ndarray, elements: np.ndarray, with_x: bool):
    """f(x) (with ``with_x``, else None) and f(x + h_j e_j) for the given elements, in
    batches of bounded size."""
    size = target.x[i].size
    chunk = max(1, SCREEN_BATCH_ELEMENTS // max(1, size) - 1)
    f0, parts = None, []
    for s in range(0, len(elements), chunk):
        part = slice(s, s + chunk)
        outs = full.perturbed(target, i, elements[part], (h[part],), with_x=with_x)
        if with_x:
            f0, with_x = [o[-1] for o in outs], False
        parts.append([o[:len(elements[part])] for o in outs])
    fp = [np.concatenate([p[k] for p in parts]) for k in range(len(parts[0]))]
    return f0, fp


def _forward_quotients(target: Target, f0, fp, h):
    """Per output: (f(x + h e_j) - f(x)) / h and its rounding estimate, rows per element."""
    numeric, estimate = [], []
    for k in range(len(fp)):
        numeric.append((fp[k] - f0[k]) / h[:, None])
        rounding = num.quotient_rounding(target.eval_eps, (fp[k], f0[k]), h[:, None])
        estimate.append(np.broadcast_to(rounding, numeric[k].shape).copy())
    return numeric, estimate


def _excess(target: Target, screen: full.Screen, numeric: list[np.ndarray]) -> np.ndarray:
    """Per element: the largest |analytic - numeric| over the screen tolerance (inf for NaN);
    above 1 the element is a suspect."""
    n = len(numeric[0])
    elements = np.arange(n)
    worst = np.zeros(n)
    for k in screen.outputs:
        tol = compare.entry_tolerance(target, screen.pos, k, numeric[k], 0.0, elements,
                                   screen.atol, screen.rtol)
        tol *= SCREEN_SHARE
        np.maximum(tol, 1e-300, out=tol)  # err 0 at tolerance 0 agrees, anything else not
        ratio = np.abs(screen.analytic[k] - numeric[k])
        ratio /= tol
        if ratio.shape[1]:
            np.fmax(worst, ratio.max(axis=1), out=worst)
            # NOTE: a NaN on either side makes its element a suspect
            worst[np.isnan(ratio).any(axis=1)] = np.inf
    return worst
