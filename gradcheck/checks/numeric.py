"""The numerical rule, in one place: steps, difference quotients, error estimates, tolerances.

Everything here works on numpy float64 arrays. The exact rule is documented in docs/checks.md;
the constants below are the ones that document refers to.
"""
from __future__ import annotations

import numpy as np

# Machine epsilon per dtype name (bfloat16 is not a numpy dtype).
DTYPE_EPS = {
    "float64": float(np.finfo(np.float64).eps),
    "float32": float(np.finfo(np.float32).eps),
    "float16": float(np.finfo(np.float16).eps),
    "bfloat16": 2.0**-7,
    "complex128": float(np.finfo(np.float64).eps),
    "complex64": float(np.finfo(np.float32).eps),
    "complex32": float(np.finfo(np.float16).eps),
}
SAFETY = 8.0  # K: the tolerance is K times the finite-difference error estimate
ROUNDING = 64.0  # C: rounding of the difference quotient is C * eps * max|f| / h
DTYPE_ROUNDING = 64.0  # R: an analytic gradient in dtype d may be off by R * eps_d * scale
COMPLEX_STEP = 1e-20  # relative step of the complex-step derivative
TAYLOR_FIT = 0.35  # largest log-residual of a remainder that still follows one power of t


def dtype_eps(name: str) -> float:
    """Machine epsilon for a dtype name; unknown names are treated as float64.

    >>> dtype_eps("float32") > dtype_eps("float64")
    True
    """
    return DTYPE_EPS.get(name, DTYPE_EPS["float64"])


def input_scale(x: np.ndarray) -> np.ndarray:
    """``max(1, |x|)`` per element, 1 where ``x`` is not finite.

    NOTE: an input of -inf (a mask in a softmax) stays -inf when perturbed; a step of inf
    would make it NaN, and every tolerance built from its size NaN with it.

    >>> input_scale(np.array([0.5, -3.0, -np.inf])).tolist()
    [1.0, 3.0, 1.0]
    """
    x = np.asarray(x)
    return np.where(np.isfinite(x), np.maximum(1.0, np.abs(x)), 1.0)


def finite_abs(a: np.ndarray) -> np.ndarray:
    """``|a|`` with inf and NaN read as 0: the sizes of infinite outputs carry no scale.

    >>> finite_abs(np.array([-2.0, np.inf])).tolist()
    [2.0, 0.0]
    """
    a = np.abs(np.asarray(a))
    return np.where(np.isfinite(a), a, 0.0)


def steps(x: np.ndarray, eval_eps: float, eval_dtype: str = "float64", scale: float = 1.0):
    """Per-element central-difference steps h = cbrt(eps) * max(1, |x|), made exact.

    >>> float(steps(np.array([1000.0]), 2.0**-52)[0]) > float(steps(np.array([0.1]), 2.0**-52)[0])
    True
    """
    x = np.asarray(x, dtype=np.float64)
    h = scale * np.cbrt(eval_eps) * input_scale(x)
    # NOTE: x + h is rounded when it is stored; dividing by the nominal h instead of the step
    # actually taken adds an error of eps*|x|/h to every quotient. Use the representable step.
    dtype = np.dtype(eval_dtype) if eval_dtype in ("float16", "float32") else np.float64
    with np.errstate(invalid="ignore"):  # inf - inf for infinite x; the step stays h there
        exact = (x.astype(dtype) + h.astype(dtype)).astype(np.float64) - x.astype(dtype)
    return np.where(exact > 0, exact, h)


def quotient_rounding(eval_eps: float, values, h):
    """Rounding of difference quotients with step ``h`` of f whose samples are ``values``.

    >>> float(quotient_rounding(2.0**-52, [np.array([2.0])], 1.0)) == 128 * 2.0**-52
    True
    """
    return ROUNDING * eval_eps * finite_max(values) / h


def finite_max(values) -> float:
    """The largest finite ``|a|`` over the arrays in ``values`` (0 for none).

    >>> finite_max([np.array([1.0, -np.inf]), np.array([-3.0])])
    3.0
    """
    found = 0.0
    for a in values:
        # NOTE: the plain maximum is one pass; the masked one only where it is not finite
        biggest = float(np.max(np.abs(a), initial=0.0))
        if not np.isfinite(biggest):
            biggest = float(np.max(finite_abs(a), initial=0.0))
        found = max(found, biggest)
    return found


def relative_floor(d: np.ndarray, eval_eps: float) -> np.ndarray:
    """cbrt(eps) * (|d| + largest |d| of its column): below it a slope change is noise, not a kink.

    >>> relative_floor(np.array([[1.0], [-3.0]]), 1.0).ravel().tolist()
    [4.0, 6.0]
    """
    column_scale = np.max(np.abs(d), axis=0, keepdims=True)
    return np.cbrt(eval_eps) * (np.abs(d) + column_scale)


def central_difference(f0, fp, fm, fp2, fm2, h, eval_eps, row_groups=None):
    """Derivative, its error estimate and the kink statistic from four evaluations per step.

    ``fp``/``fm`` are f(x +/- h) and ``fp2``/``fm2`` are f(x +/- h/2), shaped (n, m) for n
    perturbed elements and m output elements; ``f0`` is f(x), shape (m,); ``h`` has shape (n,)
    or (n, m). Returns (numeric, estimate, kink_gap, kink_floor), each (n, m). For compressed
    rows (several input elements per row), ``row_groups`` (n, m) names the input element of
    each entry, and the per-element noise median runs over those groups instead of rows.

    >>> f = np.exp; x = 0.3; h = np.array([1e-5])
    >>> val = lambda d: f(np.array([[x + d]]))
    >>> num, est, gap, floor = central_difference(
    ...     f(np.array([x])), val(1e-5), val(-1e-5), val(5e-6), val(-5e-6), h, 2.0**-52)
    >>> bool(abs(num[0, 0] - np.exp(x)) < 1e-9 and (gap < floor).all())
    True
    """
    h = np.asarray(h, dtype=np.float64)
    h = h[:, None] if h.ndim == 1 else h
    d_h = (fp - fm) / (2 * h)
    d_half = (fp2 - fm2) / h
    # Richardson: the O(h^2) truncation terms of d_h and d_half cancel.
    numeric = (4 * d_half - d_h) / 3
    # NOTE: rounding inside f is relative to the magnitudes it combines, which an output
    # element that nearly cancels (a softmax VJP, say) does not show; the largest value of
    # the whole output is the closest visible proxy.
    rounding = quotient_rounding(eval_eps, (fp, fm, fp2, fm2, f0), h)
    spread = np.abs(d_h - d_half)
    floor = relative_floor(numeric, eval_eps)
    # NOTE: rounding inside f (a long sum, a nearly cancelling VJP) scales with the sizes of
    # the terms it combines, not with |f|, and it can be nearly the same at x +/- h and
    # x +/- h/2, so neither the rounding term nor the spread need show it. The fourth
    # difference of the five samples (~ (h/2)^4 f^(4) where f is smooth) exposes it; it is
    # capped at the kink threshold so that a kink is not mistaken for noise.
    fourth = np.abs(fp - 4 * fp2 + 6 * f0 - 4 * fm2 + fm) / h
    fourth = np.minimum(fourth, floor)

    def per_element(a):
        if row_groups is None:
            return _typical_nonzero(a.T, axis=0).T
        return _typical_nonzero_grouped(a, row_groups)

    noise = np.maximum(
        np.maximum(_typical_nonzero(spread, axis=0), per_element(spread)),
        np.maximum(_typical_nonzero(fourth, axis=0), per_element(fourth)),
    )
    estimate = spread + 2 * noise + rounding
    # One-sided quotients: their gap is O(h) f'' where f is smooth and does not shrink at a
    # kink. 2*gap(h/2) - gap(h) removes the O(h) part, leaving ~0 (smooth) or the jump.
    gap_h = (fp - 2 * f0 + fm) / h
    gap_half = (fp2 - 2 * f0 + fm2) / (h / 2)
    kink_gap = np.abs(2 * gap_half - gap_h)
    kink_floor = SAFETY * (estimate + 5 * (rounding + noise))
    # NOTE: a real kink changes the slope by a visible fraction of it; a jump below the
    # relative step size is evaluation noise (inexact library tanh, say), not a kink.
    kink_floor = np.maximum(kink_floor, floor)
    return numeric, estimate, kink_gap, kink_floor


def _typical_nonzero(a: np.ndarray, axis=None):
    """Median of the nonzero entries along axis 0 (0 where all are zero), shape (1, m);
    elements that do not touch an output give exactly zero spread and say nothing about its
    noise. With axis=None, the median over all nonzero entries."""
    if axis is None:
        nonzero = a[a > 0]
        return np.float64(np.median(nonzero)) if nonzero.size else np.float64(0.0)
    # NOTE: vectorised lower median: sort with zeros turned into +inf so that they sort last.
    counts = np.sum(a > 0, axis=0)
    ordered = np.sort(np.where(a > 0, a, np.inf), axis=0)
    middle = np.maximum(counts - 1, 0) // 2
    med = np.take_along_axis(ordered, middle[None, :], axis=0)[0]
    return np.where(counts > 0, med, 0.0)[None, :]


def _typical_nonzero_grouped(a: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Lower median of the nonzero entries sharing a group id, returned per entry (0 where the
    group has no nonzero entry)."""
    flat, ids = a.ravel(), groups.ravel()
    keep = np.nonzero(flat > 0)[0]
    out = np.zeros(flat.shape)
    if keep.size == 0:
        return out.reshape(a.shape)
    order = keep[np.lexsort((flat[keep], ids[keep]))]
    unique, start, count = np.unique(ids[order], return_index=True, return_counts=True)
    medians = flat[order[start + (count - 1) // 2]]
    slot = np.searchsorted(unique, ids)
    slot = np.minimum(slot, len(unique) - 1)
    found = unique[slot] == ids
    out[found] = medians[slot[found]]
    return out.reshape(a.shape)


def tolerance(numeric, estimate, grad_eps, scale, atol=None, rtol=None, eval_eps=None):
    """Allowed |analytic - numeric| per element; explicit atol/rtol replace the estimate.

    ``scale`` is the size an entry's analytic rounding is relative to (see docs/checks.md);
    with ``eval_eps``, no tolerance is below the half-the-digits floor.

    >>> float(tolerance(np.array([2.0]), np.array([0.0]), 2.0**-52, 2.0, atol=0.1)[0])
    0.1
    """
    numeric = np.abs(np.asarray(numeric, dtype=np.float64))
    if atol is not None or rtol is not None:
        return (atol or 0.0) + (rtol or 0.0) * numeric
    sizes = numeric + scale
    tol = (DTYPE_ROUNDING * grad_eps) * sizes
    tol += SAFETY * np.asarray(estimate)
    if eval_eps is not None:
        # NOTE: a function that cancels heavily (a saturated softmax's VJP) is computed to
        # fewer digits than any visible magnitude suggests; no finite-difference check can
        # promise more than about half the digits of the block's largest entry.
        sizes *= SAFETY * np.sqrt(eval_eps)
        np.maximum(tol, sizes, out=tol)
    return tol


def complex_step(f_imag: np.ndarray, h: np.ndarray, f_abs: np.ndarray):
    """Complex-step derivative Im f(x + ih) / h and its (rounding-only) error estimate.

    >>> num, est = complex_step(np.array([[1e-20]]), np.array([1e-20]), np.array([[1.0]]))
    >>> float(num[0, 0])
    1.0
    """
    h = np.asarray(h, dtype=np.float64)[:, None]
    numeric = f_imag / h
    # NOTE: no subtraction, so no cancellation: the truncation error is O(h^2) ~ 1e-40
    # relative and only the rounding of f itself remains.
    estimate = ROUNDING * DTYPE_EPS["float64"] * (np.abs(numeric) + f_abs)
    return numeric, estimate


def taylor_order(phi0: float, phis: np.ndarray, ts: np.ndarray, slope: float, eval_eps: float):
    """Observed order of |phi(t) - phi(0) - t*slope| as t shrinks: ~2 if slope is right.

    Remainders at the rounding floor carry no information and are dropped. Returns None when
    fewer than three remainders are above the floor (a linear function, for instance), when
    they do not follow one power of t (then no order describes them), or when that power is
    below 0.5 (they do not fall with t: noise).

    >>> ts = 0.1 * 0.5 ** np.arange(6)
    >>> round(taylor_order(0.0, np.sin(ts), ts, 1.0, 2.0**-52))
    3
    """
    remainder = np.abs(phis - phi0 - ts * slope)
    floor = 1e3 * eval_eps * (abs(phi0) + np.abs(phis) + np.abs(ts * slope))
    keep = remainder > floor
    if keep.sum() < 3:
        return None
    log_t, log_r = np.log(ts[keep]), np.log(remainder[keep])
    fit = np.polyfit(log_t, log_r, 1)
    # NOTE: a right slope whose remainder mixes t^2 and t^3 terms, or a wrong one at the
    # crossover of t and t^2, bends the log-log line; a bent line has no single order.
    if np.max(np.abs(np.polyval(fit, log_t) - log_r)) > TAYLOR_FIT:
        return None
    # NOTE: remainders that do not fall with t are rounding noise, not a first-order term
    if fit[0] < 0.5:
        return None
    return float(fit[0])
