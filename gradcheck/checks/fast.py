"""Fast mode: Gaussian probe pairs per output, exact re-check on suspicion.

For each probe, every input i is moved at once along w_i = u_i * max(1, |x_i|) (u standard
normal) and output k is weighed by v (standard normal): the finite-difference <v, J w> must
match sum_i <J_i^T v, w_i> from one VJP. The blocks of an output whose probes disagree, or
whose probe line crosses a kink, are re-checked entry by entry with full mode, so a failure
is reported exactly as full mode would report it.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from gradcheck.checks import numeric as num
from gradcheck.checks.full import (
    Screen,
    analytic_rows,
    compare_block,
    jacobian_size_problem,
    numeric_columns,
)
from gradcheck.checks.ladder import resolution_limit, settle
from gradcheck.checks.result import GradcheckResult
from gradcheck.checks.target import Target

DEFAULT_PROBES = 4
MISS_RATIO = 100.0  # the reported miss chance is for an entry wrong by 100x the probe tolerance


@functools.lru_cache(maxsize=64)
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


@dataclass
class _Directions:
    """The probes' directions for one input, flattened: w = u * max(1, |x|), u standard
    normal, with what every probe's tolerance needs from them."""

    w: np.ndarray  # (P, n)
    u_l1: np.ndarray  # (P,): sum |u| = sum |w| / max(1, |x|)
    w_l1: np.ndarray  # (P,)
    abs_x: np.ndarray  # (n,): |x|, 0 where x is not finite

    @classmethod
    def draw(cls, rng: np.random.Generator, x: np.ndarray, probes: int) -> _Directions:
        u = rng.standard_normal((probes, x.size))
        w = u * num.input_scale(x.ravel())
        return cls(w, np.abs(u).sum(axis=1), np.abs(w).sum(axis=1), num.finite_abs(x.ravel()))


def run_fast(result: GradcheckResult, target: Target, probes: int, seed: int,
             atol, rtol) -> None:
    """Probe every output along random directions of all inputs at once; re-check the
    blocks of an output whose probes disagree, column by column.

    A probe moves every differentiable input together (4 points per probe, plus x), so its
    cost does not grow with the number of inputs; each (probe, output) pair costs one VJP.
    """
    rng = np.random.default_rng(seed)
    live = [pos for pos, i in enumerate(target.diff) if target.x[i].size]
    dirs = {pos: _Directions.draw(rng, target.x[target.diff[pos]], probes) for pos in live}
    vs = [rng.standard_normal((probes, f.size)) for f in target.f0]
    if not dirs:
        return
    directional = joint_directional(target, dirs, np.cbrt(target.eval_eps))
    suspicious: set[tuple[int, int]] = set()
    worst_tol = 0.0
    for p in range(probes):
        for k in range(len(target.f0)):
            gos = [np.zeros_like(f) for f in target.f0]
            gos[k] = vs[k][p].reshape(target.f0[k].shape)
            grads = target.vjp(gos)
            ok, tol, err, rel = _probe_agrees(target, k, p, grads, dirs, vs[k][p],
                                              [a[p] for a in directional[k]], atol, rtol)
            result.max_abs_error = max(result.max_abs_error, err)
            result.max_rel_error = max(result.max_rel_error, rel)
            worst_tol = max(worst_tol, tol)
            if not ok:
                suspicious.update((pos, k) for pos in live)
    result.probes = probes
    result.miss_error = MISS_RATIO * worst_tol if worst_tol > 0 else 1e-12
    result.miss_probability = miss_probability(result.miss_error, worst_tol, probes)
    _recheck(result, target, sorted(suspicious), atol, rtol)


def joint_directional(target: Target, dirs: dict[int, _Directions], t: float) -> list:
    """Per output k, numeric.central_difference along each joint direction (probe p moves
    every input by its ``dirs[pos].w[p]``) with step ``t``: (derivative, estimate, kink gap,
    kink floor), each (P, m_k)."""
    probes = len(next(iter(dirs.values())).w)
    rows = []
    for scale in (t, -t, t / 2, -t / 2):
        for p in range(probes):
            arrays = list(target.x)
            for pos, d in dirs.items():
                i = target.diff[pos]
                arrays[i] = target.x[i] + scale * d.w[p].reshape(target.x[i].shape)
            with target.during("forward", None, f"of fast-mode probe {p} (every input moved "
                               f"by {scale:.3g} times a random direction)"):
                rows.append(target.evaluate(arrays))
    rows.append(target.f0)
    found = []
    for k in range(len(target.f0)):
        out = np.stack([r[k].ravel() for r in rows])
        d = probes
        found.append(num.central_difference(
            out[-1], out[:d], out[d:2 * d], out[2 * d:3 * d], out[3 * d:4 * d],
            np.full(d, t), target.eval_eps))
    return found


def _probe_agrees(target, k, p, grads, dirs, v, directional, atol, rtol):
    """Whether probe p of output k agrees: <v, J w> by differences against <J^T v, w>,
    both summed over the inputs."""
    d, e, gap, floor = directional
    kink = bool((gap > floor).any())
    numeric = float(np.dot(v, d))
    t = np.cbrt(target.eval_eps)
    analytic = sizes = rounding = natural = w_l1 = grad_eps = 0.0
    v_f0 = float(np.abs(v) @ num.finite_abs(target.f0[k].ravel()))
    for pos, dr in dirs.items():
        if grads[pos] is not None:
            g = np.asarray(grads[pos], np.float64).ravel()
            analytic += float(g @ dr.w[p])
            abs_g = np.abs(g)
            sizes += float(abs_g @ np.abs(dr.w[p]))
            # NOTE: x + t*w is rounded when stored, moving the probe by up to eps*|x| per
            # element; that shifts the quotient by up to eps * sum|g x| / t.
            rounding += target.eval_eps * float(abs_g @ dr.abs_x) / t
        w_l1 += dr.w_l1[p]
        natural += v_f0 * dr.u_l1[p]
        grad_eps = max(grad_eps, num.dtype_eps(target.grad_dtypes[pos]))
    sizes += abs(numeric)
    unresolved = False
    if atol is not None or rtol is not None:
        # An entrywise bound |E_ab| <= atol + rtol*|J_ab| bounds |v^T E w| by the l1 norms.
        tol = (atol or 0.0) * float(np.abs(v).sum()) * w_l1 + (rtol or 0.0) * abs(numeric)
    else:
        estimate = float(np.abs(v) @ e) + 2 * rounding
        grad_eps *= float(target.amplification[k].max(initial=1.0))
        tol = num.SAFETY * estimate + num.DTYPE_ROUNDING * grad_eps * (sizes + natural)
        tol = max(tol, num.SAFETY * float(np.sqrt(target.eval_eps)) * sizes)  # digits floor
        # NOTE: a probe whose error estimate is a visible part of what it measures cannot
        # vouch for the blocks; the entry-by-entry re-check decides (or says it cannot).
        unresolved = not num.SAFETY * estimate <= resolution_limit(target.eval_eps) * sizes
    err = abs(analytic - numeric)
    agrees = not kink and not unresolved and err <= tol
    return agrees, tol, err, err / max(abs(numeric), 1e-300)


def _recheck(result: GradcheckResult, target: Target, blocks, atol, rtol) -> None:
    if not blocks:
        return
    too_large = jacobian_size_problem(target, blocks)
    if too_large:
        result.passed = False
        result.problems.append(
            f"probes disagree (largest error {result.max_abs_error:.3g}) and the blocks cannot "
            f"be re-checked entry by entry: {too_large.split(';')[0]}")
        return
    outputs = sorted({k for _, k in blocks})
    jac = analytic_rows(target, outputs)
    columns = {}
    for pos, k in blocks:
        i = target.diff[pos]
        if i not in columns:
            mine = sorted({kk for pp, kk in blocks if pp == pos})
            with target.during("forward", i, "re-checking the columns of a block the probes "
                               "disagree on"):
                columns[i] = numeric_columns(target, i,
                                             screen=Screen(pos, jac[pos], mine, atol, rtol))
            settle(target, pos, jac[pos], columns[i], mine, atol, rtol)
        result.rechecked_blocks.append((target.output_names[k], target.input_names[i]))
        compare_block(result, target, pos, k, jac[pos][k], columns[i], atol, rtol)
