"""Fast mode: a grid of random probes per output, exact re-check on suspicion.

P directions move every input at once, ``w_p = u_p * max(1, |x|)`` (u standard normal), and
P weights ``v_q`` (standard normal) weigh each output. For every pair (p, q) the
finite-difference ``<v_q, J w_p>`` must match ``sum_i <J_i^T v_q, w_p>``: P directional
derivatives (two points each, two more only where those cannot settle them) and P VJPs per
output give P x P comparisons. The blocks of an output whose probes disagree, or whose probe
line crosses a kink, are re-checked entry by entry with full mode, so a failure is reported
exactly as full mode would report it. miss.py gives the chance that all of them miss an
error.

>>> import numpy as np
>>> from gradcheck.checks import check_grad
>>> r = check_grad(np.sin, np.linspace(0, 1, 50), vjp=lambda g, x: (g * np.cos(x),), mode="fast")
>>> r.passed, r.evaluations["forward_points"]  # x, then x +/- t w for two directions
(True, 5)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gradcheck.checks import numeric as num
from gradcheck.checks.compare import compare_block
from gradcheck.checks.full import Screen, analytic_rows, jacobian_size_problem, numeric_columns
from gradcheck.checks.ladder import resolution_limit, settle
from gradcheck.checks.miss import miss_probability
from gradcheck.checks.result import GradcheckResult
from gradcheck.checks.target import Target

DEFAULT_PROBES = 2
MISS_RATIO = 100.0  # the reported miss chance is for an entry wrong by 100x the probe tolerance


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
             atol, rtol, first: tuple | None = None) -> None:
    """Compare every output along a grid of probes; re-check the blocks of an output whose
    probes disagree, column by column.

    Costs 2P points (4P where the first two per direction cannot settle a probe) and P VJPs
    per output, whatever the number and size of the inputs. ``first`` may hold a VJP
    already made, (grad_outputs, grads), for a single output: the first weight's.
    """
    rng = np.random.default_rng(seed)
    live = [pos for pos, i in enumerate(target.diff) if target.x[i].size]
    dirs = {pos: _Directions.draw(rng, target.x[target.diff[pos]], probes) for pos in live}
    vs = [rng.standard_normal((probes, f.size)) for f in target.f0]
    if not dirs:
        return
    t = float(np.cbrt(target.eval_eps))
    reuse = first is not None and len(target.f0) == 1
    if reuse:
        vs[0][0] = np.asarray(first[0][0], np.float64).ravel()
    sides = []
    for k, f in enumerate(target.f0):
        grads = []
        for q in range(probes):
            if reuse and q == 0:
                grads.append(first[1])
                continue
            gos = [np.zeros_like(g) for g in target.f0]
            gos[k] = vs[k][q].reshape(f.shape)
            grads.append(target.vjp(gos))
        sides.append(_ProbeSides.of(target, k, grads, dirs, vs[k], t))
    plus, minus = joint_points(target, dirs, (t, -t), range(probes))
    worst_tol, definite = 0.0, False
    suspicious: set[tuple[int, int]] = set()
    for k in range(len(target.f0)):
        fp = np.stack([out[k] for out in plus])
        fm = np.stack([out[k] for out in minus])
        found = _probes_settle(target, k, sides[k], vs[k], fp, fm, t, atol, rtol)
        redo = np.nonzero(~found[0].all(axis=1))[0]
        if redo.size:
            half_plus, half_minus = joint_points(target, dirs, (t / 2, -t / 2), redo)
            d, e, gap, floor = num.central_difference(
                target.f0[k].ravel(), fp[redo], fm[redo],
                np.stack([out[k] for out in half_plus]),
                np.stack([out[k] for out in half_minus]), np.full(len(redo), t),
                target.eval_eps)
            again = _probes_agree(target, sides[k].rows(redo), vs[k], d, e,
                                  (gap > floor).any(axis=1), atol, rtol)
            for array, redone in zip(found, again):
                array[redo] = redone
        ok, tol, err, rel, sure = found
        definite |= bool(sure.any())
        result.max_abs_error = max(result.max_abs_error, float(np.max(err)))
        result.max_rel_error = max(result.max_rel_error, float(np.max(rel)))
        worst_tol = max(worst_tol, float(np.max(tol)))
        if not ok.all():
            suspicious.update((pos, k) for pos in live)
    result.probes = probes
    result.miss_error = MISS_RATIO * worst_tol if worst_tol > 0 else 1e-12
    result.miss_probability = miss_probability(result.miss_error, worst_tol, probes)
    _recheck(result, target, sorted(suspicious), atol, rtol, definite)


def joint_points(target: Target, dirs: dict[int, _Directions], scales, directions) -> list:
    """For each scale, per listed direction p, the flattened outputs at x + scale * w_p
    (every input moved by its own ``dirs[pos].w[p]``)."""
    points, labels = [], []
    for scale in scales:
        for p in directions:
            arrays = list(target.x)
            for pos, d in dirs.items():
                i = target.diff[pos]
                arrays[i] = target.x[i] + scale * d.w[p].reshape(target.x[i].shape)
            points.append(arrays)
            labels.append(f"of fast-mode probe direction {p} (every input moved by "
                          f"{scale:.3g} times a random direction)")
    found = target.evaluate_many(points, labels)
    n = len(found) // len(scales)
    return [[[o.ravel() for o in out] for out in found[s * n:(s + 1) * n]]
            for s in range(len(scales))]


@dataclass
class _ProbeSides:
    """The analytic side of one output's probes and the sizes their tolerances need:
    arrays over (direction p, weight q), or over weights q alone."""

    analytic: np.ndarray  # sum_i <J_i^T v_q, w_p>
    sizes: np.ndarray  # sum_i sum_j |g_qj w_pj|
    rounding: np.ndarray  # (q,): eps sum_i sum_j |g_qj x_j| / t, as x + t w is rounded
    natural: np.ndarray  # sum_o |v_qo f_o| * sum_i sum_j |u_pj|
    w_l1: np.ndarray  # (p,)
    grad_eps: float

    @classmethod
    def of(cls, target: Target, k: int, grads: list, dirs, vs: np.ndarray,
           t: float) -> _ProbeSides:
        """From the VJPs ``grads[q]`` (one grad per differentiable input) of the weights."""
        weights, directions = len(grads), len(next(iter(dirs.values())).w)
        analytic, sizes = np.zeros((directions, weights)), np.zeros((directions, weights))
        rounding, natural = np.zeros(weights), np.zeros((directions, weights))
        w_l1, grad_eps = np.zeros(directions), 0.0
        v_f0 = np.abs(vs) @ num.finite_abs(target.f0[k].ravel())
        for pos, dr in dirs.items():
            if any(g[pos] is not None for g in grads):
                g = np.stack([np.zeros(dr.abs_x.shape) if grad[pos] is None else
                              np.asarray(grad[pos], np.float64).ravel() for grad in grads])
                analytic += dr.w @ g.T
                abs_g = np.abs(g)
                sizes += np.abs(dr.w) @ abs_g.T
                # NOTE: x + t*w is rounded when stored, moving the probe by up to eps*|x| per
                # element; that shifts the quotient by up to eps * sum|g x| / t.
                rounding += target.eval_eps * (abs_g @ dr.abs_x) / t
            w_l1 += dr.w_l1
            natural += dr.u_l1[:, None] * v_f0[None, :]
            grad_eps = max(grad_eps, num.dtype_eps(target.grad_dtypes[pos]))
        grad_eps *= float(target.amplification[k].max(initial=1.0))
        return cls(analytic, sizes, rounding, natural, w_l1, grad_eps)

    def rows(self, directions: np.ndarray) -> _ProbeSides:
        """The probes of the given directions only."""
        return _ProbeSides(self.analytic[directions], self.sizes[directions], self.rounding,
                           self.natural[directions], self.w_l1[directions], self.grad_eps)


def _tolerance(target: Target, sides: _ProbeSides, vs, numeric, estimate, atol, rtol):
    """The probes' tolerances: the documented rule, or the bound from atol/rtol."""
    sizes = sides.sizes + np.abs(numeric)
    if atol is not None or rtol is not None:
        # An entrywise bound |E_ab| <= atol + rtol*|J_ab| bounds |v^T E w| by the l1 norms.
        return ((atol or 0.0) * np.outer(sides.w_l1, np.abs(vs).sum(axis=1))
                + (rtol or 0.0) * np.abs(numeric))
    tol = num.SAFETY * estimate + num.DTYPE_ROUNDING * sides.grad_eps * (sizes + sides.natural)
    return np.maximum(tol, num.SAFETY * float(np.sqrt(target.eval_eps)) * sizes)  # digits floor


def _probes_settle(target, k, sides: _ProbeSides, vs, fp, fm, t, atol, rtol):
    """The first look at the probes of output k, from x +/- t w_p alone: per (p, q)
    (settled, tol, err, rel), settled where the plain quotient agrees within the tolerance
    at estimate zero and the line shows no hint of a kink (the others take the five-point
    rule; none is a definite disagreement yet). The same rule as full mode's first phase
    (docs/checks.md)."""
    f0 = target.f0[k].ravel()
    d = (fp - fm) / (2 * t)
    # NOTE: the second difference is t f''(w, w) where f is smooth and a visible part of
    # the jump in slope where the line crosses a kink; sqrt(t) (|d| + max |d|) sits between
    # the two for any curvature below 1/sqrt(t) times the slope.
    gap = np.abs(fp - 2 * f0 + fm) / t
    floor = np.sqrt(t) * (np.abs(d) + np.max(np.abs(d), axis=1, initial=0.0)[:, None])
    floor += num.quotient_rounding(target.eval_eps, (fp, fm, f0), t)
    numeric = d @ vs.T
    tol = _tolerance(target, sides, vs, numeric, 0.0, atol, rtol)
    err = np.abs(sides.analytic - numeric)
    settled = (gap <= floor).all(axis=1)[:, None] & (err <= tol)
    return (settled, tol, err, err / np.maximum(np.abs(numeric), 1e-300),
            np.zeros(settled.shape, bool))


def _probes_agree(target, sides: _ProbeSides, vs, d, e, kink, atol, rtol):
    """Per (p, q) of the given directions (agrees, tol, err, rel, definite) by the five-point
    rule: <v_q, J w_p> by differences against <J^T v_q, w_p>, both summed over the inputs;
    definite where the pair is resolved, crosses no kink, and disagrees."""
    numeric = d @ vs.T
    estimate = e @ np.abs(vs).T + 2 * sides.rounding[None, :]
    tol = _tolerance(target, sides, vs, numeric, estimate, atol, rtol)
    # NOTE: a probe whose error estimate is a visible part of what it measures cannot
    # vouch for the blocks; the entry-by-entry re-check decides (or says it cannot).
    if atol is None and rtol is None:
        unresolved = ~(num.SAFETY * estimate
                       <= resolution_limit(target.eval_eps) * (sides.sizes + np.abs(numeric)))
    else:
        unresolved = np.zeros(numeric.shape, bool)
    err = np.abs(sides.analytic - numeric)
    agrees = ~kink[:, None] & ~unresolved & (err <= tol)
    definite = ~kink[:, None] & ~unresolved & ~(err <= tol)
    return agrees, tol, err, err / np.maximum(np.abs(numeric), 1e-300), definite


def _recheck(result: GradcheckResult, target: Target, blocks, atol, rtol,
             definite: bool = True) -> None:
    """Re-check the suspicious blocks entry by entry; where they are too large for that, a
    definite disagreement fails the check and a doubtful one (a kink on the line, an
    unresolved probe) makes it inconclusive."""
    if not blocks:
        return
    too_large = jacobian_size_problem(target, blocks)
    if too_large:
        reason = (f"the blocks cannot be re-checked entry by entry: {too_large.split(';')[0]}")
        if definite:
            result.passed = False
            result.problems.append(f"probes disagree (largest error "
                                   f"{result.max_abs_error:.3g}) and {reason}")
        else:
            result.unchecked.append(f"probes cross a kink or cannot resolve the gradient, and "
                                    f"{reason}; check a smaller input, or pass atol=/rtol=")
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
