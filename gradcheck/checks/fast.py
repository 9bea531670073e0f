"""Fast mode: Gaussian probe pairs per (input, output) block, exact re-check on suspicion.

For each probe, input i is moved along w = u * max(1, |x|) (u standard normal) and output k is
weighed by v (standard normal): the finite-difference <v, J w> must match <J^T v, w> from the
VJP. A block whose probes disagree, or whose probe line crosses a kink, is re-checked entry by
entry with full mode, so a failure is reported exactly as full mode would report it.
"""
from __future__ import annotations

import math

import numpy as np

from gradcheck.checks import numeric as num
from gradcheck.checks.full import (
    Screen,
    analytic_rows,
    compare_block,
    directional_differences,
    numeric_columns,
)
from gradcheck.checks.result import GradcheckResult
from gradcheck.checks.target import Target

DEFAULT_PROBES = 4
MISS_RATIO = 100.0  # the reported miss chance is for an entry wrong by 100x the probe tolerance


def product_normal_cdf(c: float) -> float:
    """P(|Z1 * Z2| < c) for independent standard normals Z1, Z2.

    >>> round(product_normal_cdf(1.0), 3)
    0.791
    """
    if c <= 0:
        return 0.0
    # P(|Z1| < c/|Z2|) averaged over Z2; log grid because the integrand turns over at z ~ c.
    z = np.geomspace(1e-16, 12.0, 6000)
    erf = np.array([math.erf(c / (zi * math.sqrt(2))) for zi in z])
    density = 2 * np.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    y = density * erf
    return float(min(1.0, np.sum((y[1:] + y[:-1]) * np.diff(z)) / 2 + 2 * 0.3989 * z[0]))


def miss_probability(error: float, tolerance: float, probes: int) -> float:
    """Chance that ``probes`` probe pairs all miss one Jacobian entry wrong by ``error``.

    The probe sees error * v_a * u_b * s_b with s_b >= 1, so it misses when
    |v_a u_b| < (1 + 1/K) * tolerance / error, independently per probe.

    >>> miss_probability(1.0, 1e-6, 4) < 1e-15
    True
    """
    if error <= 0:
        return 1.0
    c = (1 + 1 / num.SAFETY) * tolerance / error
    return product_normal_cdf(c) ** probes


def run_fast(result: GradcheckResult, target: Target, probes: int, seed: int,
             atol, rtol) -> None:
    """Probe every block; re-check the suspicious ones column by column."""
    rng = np.random.default_rng(seed)
    n_out = len(target.f0)
    suspicious: set[tuple[int, int]] = set()
    worst_tol = np.zeros((len(target.diff), n_out))
    for _ in range(probes):
        ws = {i: rng.standard_normal(target.x[i].shape) * np.maximum(1.0, np.abs(target.x[i]))
              for i in target.diff}
        vs = [rng.standard_normal(f.shape) for f in target.f0]
        directional = {i: _directional(target, i, ws[i]) for i in target.diff}
        for k in range(n_out):
            gos = [np.zeros_like(f) for f in target.f0]
            gos[k] = vs[k]
            grads = target.vjp(gos)
            for pos, i in enumerate(target.diff):
                g = np.zeros(target.x[i].shape) if grads[pos] is None else grads[pos]
                ok, tol, err, rel = _probe_agrees(target, pos, i, k, g, ws[i], vs[k],
                                                  directional[i], atol, rtol)
                result.max_abs_error = max(result.max_abs_error, err)
                result.max_rel_error = max(result.max_rel_error, rel)
                worst_tol[pos, k] = max(worst_tol[pos, k], tol)
                if not ok:
                    suspicious.add((pos, k))
    result.probes = probes
    tol_max = float(worst_tol.max(initial=0.0))
    result.miss_error = MISS_RATIO * tol_max if tol_max > 0 else 1e-12
    result.miss_probability = miss_probability(result.miss_error, tol_max, probes)
    _recheck(result, target, sorted(suspicious), atol, rtol)


def _directional(target: Target, i: int, w: np.ndarray):
    """Directional derivatives J_k w for every output k, with estimates and a kink flag."""
    found = directional_differences(target, i, w[None], np.cbrt(target.eval_eps))
    return [(d[0], e[0], bool((gap > floor).any())) for d, e, gap, floor in found]


def _probe_agrees(target, pos, i, k, g, w, v, directional, atol, rtol):
    d, e, kink = directional[k]
    numeric = float(np.dot(v.ravel(), d))
    g = np.asarray(g, dtype=np.float64).ravel()
    analytic = float(np.dot(g, w.ravel()))
    t = np.cbrt(target.eval_eps)
    if atol is not None or rtol is not None:
        # An entrywise bound |E_ab| <= atol + rtol*|J_ab| bounds |v^T E w| by the l1 norms.
        tol = (atol or 0.0) * np.abs(v).sum() * np.abs(w).sum() + (rtol or 0.0) * abs(numeric)
    else:
        # NOTE: x + t*w is rounded when stored, moving the probe by up to eps*|x| per element;
        # that shifts the quotient by up to eps * sum|g x| / t.
        direction_rounding = target.eval_eps * float(np.abs(g * target.x[i].ravel()).sum()) / t
        estimate = float(np.dot(np.abs(v.ravel()), e)) + 2 * direction_rounding
        grad_eps = num.dtype_eps(target.grad_dtypes[pos]) * float(target.amplification[k].max())
        s = np.maximum(1.0, np.abs(target.x[i].ravel()))
        natural = float(np.abs(v.ravel() * target.f0[k].ravel()).sum() * np.abs(w.ravel() / s).sum())
        sizes = float(np.abs(g * w.ravel()).sum() + abs(numeric))
        tol = num.SAFETY * estimate + num.DTYPE_ROUNDING * grad_eps * (sizes + natural)
        tol = max(tol, num.SAFETY * float(np.sqrt(target.eval_eps)) * sizes)  # digits floor
    err = abs(analytic - numeric)
    agrees = not kink and err <= tol
    return agrees, tol, err, err / max(abs(numeric), 1e-300)


def _recheck(result: GradcheckResult, target: Target, blocks, atol, rtol) -> None:
    if not blocks:
        return
    outputs = sorted({k for _, k in blocks})
    jac = analytic_rows(target, outputs)
    columns = {}
    for pos, k in blocks:
        i = target.diff[pos]
        if i not in columns:
            mine = sorted({kk for pp, kk in blocks if pp == pos})
            columns[i] = numeric_columns(target, i, screen=Screen(pos, jac[pos], mine, atol, rtol))
        result.rechecked_blocks.append((target.output_names[k], target.input_names[i]))
        compare_block(result, target, pos, k, jac[pos][k], columns[i], atol, rtol)
