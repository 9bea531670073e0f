"""The step ladder: entries that one step cannot settle are tried again at other steps.

The default step ``h = eps^(1/3) max(1, |x|)`` balances truncation against rounding for a
smooth function computed to its dtype's precision. Two kinds of function defeat it:

- one that rounds inside (float32 arithmetic on float64 inputs, a quantisation): its outputs
  barely move, or not at all, under ``h``, and the quotients are rounding noise. Larger steps
  see past the rounding; Richardson extrapolation keeps their truncation error small.
- one with a kink or a steep bend within ``h`` of ``x``: the stencil straddles it. Smaller
  steps leave it outside.

So every element whose column holds an entry that looks like a kink, is not resolved (its
error estimate is a visible fraction of the entries), or fails in a function that rounds
more coarsely than its dtype (or whose outputs did not move at all) is evaluated again at
``h * LADDER`` (the five-point rule of numeric.central_difference at each step, with the
function's measured rounding, ``effective_eps``), and each of its entries keeps the step
with the smallest relative error estimate. A passing entry that stays unresolved at every
step, or whose values at two resolving steps disagree, is reported as inconclusive instead
of passed (compare.compare_block).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gradcheck.checks import compare, full
from gradcheck.checks import numeric as num
from gradcheck.checks.target import Target

LADDER = (1 / 512, 1 / 64, 1 / 8, 16.0, 256.0, 4096.0)  # multiples of the default step
RESOLUTION = 1e-4  # an entry is resolved when SAFETY * E <= this fraction of |N| + S
NOISE_STEPS = (8e-3, 1e-3, 1.25e-4)  # relative steps of the noise probe (effective_eps)
NOISE_SEED = 20240918  # fixed: the probe must not depend on the user's seed
NOISY = 16.0  # a function whose measured rounding exceeds its dtype's this much is noisy


def resolution_limit(eval_eps: float) -> float:
    """The largest ``SAFETY * E / (|N| + S)`` of a resolved entry.

    ``1e-4`` when the function is evaluated in float64. A function that only runs in a lower
    precision cannot do better than its own rounding, ``64 eps^(2/3)`` relative at the
    default step, so the limit is four times the tolerance that rounding gives.

    >>> resolution_limit(2.0**-52)
    0.0001
    >>> round(resolution_limit(2.0**-23), 3)
    0.05
    """
    return max(RESOLUTION, 4 * num.SAFETY * num.ROUNDING * eval_eps ** (2 / 3))


def unresolved(target: Target, estimate, numeric, scale) -> np.ndarray:
    """Entries whose error estimate is too large a part of their size ``|N| + scale``.

    NOTE: sizes below ``sqrt(eps)`` (a block of underflowing values, say) count as
    ``sqrt(eps)``: the dtype's own rounding is then the whole estimate, and nothing is
    there to resolve."""
    limit = resolution_limit(target.eval_eps)
    size = np.maximum(num.finite_abs(numeric) + scale, np.sqrt(target.eval_eps))
    with np.errstate(invalid="ignore"):
        return ~(num.SAFETY * estimate <= limit * size)


def effective_eps(target: Target) -> float:
    """The relative rounding of the function's outputs, measured: ``eval_eps``, unless the
    function rounds more coarsely inside (float32 arithmetic on float64 input, say).

    Along a seeded random direction ``w = u * max(1, |x|)``, the fourth difference of the
    five points ``f(x + c d w)``, ``c = -2..2``, is about ``d^4`` times the fourth derivative
    where ``f`` is smooth, about ``d`` times the jump in slope at a kink within ``2 d``, and
    independent of ``d`` where it is rounding noise. It is taken at the three ``NOISE_STEPS``
    (each 8 times the next): an output element whose fourth difference does not shrink from
    one to the next is noisy there, and the median over all output elements (zero for those
    that are not noisy) of that fourth difference relative to ``|f|`` is the function's
    rounding (the largest of the two pairs: a coarse rounding swallows the smallest step
    whole). It is measured once per check, the first time the ladder runs (12 evaluations).
    """
    found = getattr(target, "effective_eps", None)
    if found is not None:
        return found
    rng = np.random.default_rng(NOISE_SEED)
    ws = {i: rng.standard_normal(target.x[i].shape) * num.input_scale(target.x[i])
          for i in target.diff}
    fourth = []
    with target.during("forward", None, "of the noise probe (every input moved along a "
                       "random direction)"):
        for d in NOISE_STEPS:
            s = [target.evaluate([x if i not in ws else x + c * d * ws[i]
                                  for i, x in enumerate(target.x)]) for c in (-2, -1, 1, 2)]
            fourth.append(np.concatenate([
                np.abs(s[0][k] - 4 * s[1][k] + 6 * f - 4 * s[2][k] + s[3][k]).ravel()
                for k, f in enumerate(target.f0)]))
    size = np.concatenate([num.finite_abs(f).ravel() for f in target.f0])
    size = np.maximum(size, 1e-3 * float(np.max(size, initial=0.0)))
    level = 0.0
    for large, small in zip(fourth, fourth[1:]):
        with np.errstate(invalid="ignore", divide="ignore"):
            noisy = (small >= 0.25 * large) & (size > 0) & np.isfinite(small)
            relative = np.where(noisy, small / (4 * np.where(size > 0, size, 1.0)), 0.0)
        level = max(level, float(np.median(relative)) if relative.size else 0.0)
    target.effective_eps = max(target.eval_eps, level)
    return target.effective_eps


def settle(target: Target, pos: int, analytic: list[np.ndarray], cols: full.Columns,
           outputs: list[int], atol=None, rtol=None) -> None:
    """Retry the doubtful elements of input ``diff[pos]`` at the ladder's steps; update
    ``cols`` in place and set ``cols.undecided`` (per output, entries whose values at two
    resolving steps disagree) and ``cols.frozen`` (elements whose outputs did not move)."""
    i = target.diff[pos]
    flat = target.x[i].ravel()
    sizes = num.input_scale(flat)[:, None]
    doubtful, failing = np.zeros(flat.size, bool), np.zeros(flat.size, bool)
    for k in outputs:
        _mark(target, pos, k, analytic[k], cols, sizes, atol, rtol, doubtful, failing)
    cols.undecided = [np.zeros(d.shape, bool) for d in cols.numeric]
    # NOTE: a failure that the first step resolves, with no kink in sight, is a failure
    # unless the function rounds more coarsely than its dtype (measured once, 12 points);
    # only then can its estimate be wrong, and only then is it tried at other steps.
    if failing.any() and effective_eps(target) > NOISY * target.eval_eps:
        doubtful |= failing
    elements = np.nonzero(doubtful)[0]
    if not elements.size:
        return
    cols.frozen = _frozen(cols, analytic, outputs, elements)
    h0 = full.steps_for(target, flat[elements], None)[:, None]
    eps = effective_eps(target)
    # NOTE: the first step's estimates assumed the dtype's rounding; the function's own
    # (measured) rounding may be far coarser
    first = [_Step.given(cols.numeric[k][elements], np.maximum(
        cols.estimate[k][elements], num.quotient_rounding(eps, [target.f0[k]], h0)),
        cols.kink[k][elements], h0) for k in range(len(cols.numeric))]
    tried = [first] + [_at_scale(target, i, elements, scale, eps) for scale in LADDER]
    for k in range(len(cols.numeric)):
        found = _choose(target, pos, k, analytic[k][elements], [t[k] for t in tried],
                        sizes[elements], atol, rtol, judge=k in outputs)
        cols.numeric[k][elements], cols.estimate[k][elements] = found[0], found[1]
        cols.kink[k][elements], cols.undecided[k][elements] = found[2], found[3]


@dataclass
class _Step:
    """One step's five-point results for the doubtful entries of one output, (n, m) each."""

    numeric: np.ndarray
    estimate: np.ndarray
    kink: np.ndarray
    h: np.ndarray  # (n, 1)
    still: np.ndarray  # all five samples equal

    @classmethod
    def given(cls, numeric, estimate, kink, h) -> _Step:
        """The default step's results; a quotient of exactly zero counts as not moving."""
        return cls(numeric, estimate, kink, h, numeric == 0)


class _Verdict:
    """Per entry: the tolerance, whether the entry is within it (``ok``) and resolved, and
    the scale its resolution was judged at."""

    def __init__(self, tol, ok, unresolved_, scale):
        self.tol, self.ok, self.unresolved, self.scale = tol, ok, unresolved_, scale


def _mark(target, pos, k, analytic, cols, sizes, atol, rtol, doubtful, failing) -> None:
    """Mark the elements of output k's block that are doubtful or fail. Only entries with
    something to compare are judged (as compare.compare_block judges them): both sides
    exactly zero is neither a failure nor unresolved, and sparse blocks stay cheap."""
    numeric, kink = cols.numeric[k], cols.kink[k]
    block_scale = num.finite_max([numeric])
    judged = (numeric != 0) | (analytic != 0) | kink
    if judged.all():  # a dense block: flat views instead of gathered copies
        rows = np.repeat(np.arange(judged.shape[0]), judged.shape[1])
        outs = np.tile(np.arange(judged.shape[1]), judged.shape[0])
        n, a = numeric.ravel(), analytic.ravel()
        e, kk = cols.estimate[k].ravel(), kink.ravel()
    else:
        rows, outs = np.nonzero(judged)
        n, a = numeric[rows, outs], analytic[rows, outs]
        e, kk = cols.estimate[k][rows, outs], kink[rows, outs]
    if atol is None and rtol is None and not cols.complex_step:
        # NOTE: most entries pass by a wide margin; the tolerance is never below
        # 8 sqrt(eps) (|N| + block scale) and the resolution size never below |N| + block
        # scale, so a cheap look at those bounds leaves only the close calls to judge
        size = np.abs(n) + block_scale
        with np.errstate(invalid="ignore"):
            close = ~(np.abs(a - n) <= num.SAFETY * np.sqrt(target.eval_eps) * size)
            close |= ~(num.SAFETY * e <= resolution_limit(target.eval_eps) * size)
        close |= kk
        rows, outs, n, a, e, kk = (v[close] for v in (rows, outs, n, a, e, kk))
    s = sizes[rows, 0]
    tol = compare.tolerance_at(target, pos, k, n, e, s, atol, rtol, outs=outs,
                               block_scale=block_scale)
    with np.errstate(invalid="ignore"):
        ok = np.abs(a - n) <= tol
    loose = atol is not None or rtol is not None
    scale = compare.entry_scale(target, k, s, outs, block_scale, whole_output=True)
    unresolved_ = False if loose else unresolved(target, e, n, scale)
    doubtful[rows[kk | unresolved_ | (~ok & (n == 0) & (a != 0))]] = True
    failing[rows[~ok]] = True


def _judge(target, pos, k, analytic, numeric, estimate, sizes, atol, rtol,
           block_scale=None) -> _Verdict:
    scale = compare.entry_scale(target, k, sizes, block_scale=block_scale, numeric=numeric,
                                whole_output=True)
    tol = compare.tolerance_at(target, pos, k, numeric, estimate, sizes, atol, rtol,
                               block_scale=block_scale)
    with np.errstate(invalid="ignore"):
        ok = np.abs(analytic - numeric) <= tol
    loose = (atol is not None or rtol is not None)
    unresolved_ = np.zeros(ok.shape, bool) if loose else unresolved(target, estimate, numeric,
                                                                     scale)
    return _Verdict(tol, ok, unresolved_, scale)


def _at_scale(target: Target, i: int, elements: np.ndarray, scale: float,
              eps: float) -> list[_Step]:
    """Per output, the five-point results of the elements at ``scale`` times the default
    step (x +/- h, x +/- h/2 and x, from one batched path), for a function that rounds to
    ``eps``."""
    flat = target.x[i].ravel()
    h = num.steps(flat[elements], target.eval_eps, target.eval_name, scale=scale)
    n = len(elements)
    with target.during("forward", i, f"retrying {n} column(s) at {scale:g} times the step"):
        outs = full.perturbed(target, i, elements, (h, -h, h / 2, -h / 2), with_x=True)
    found = []
    with np.errstate(invalid="ignore", over="ignore"):
        for out in outs:
            fp, fm, fp2, fm2, f0 = (out[:n], out[n:2 * n], out[2 * n:3 * n],
                                    out[3 * n:4 * n], out[-1])
            d, e, gap, floor = num.central_difference(f0, fp, fm, fp2, fm2, h, eps)
            still = (fp == f0) & (fm == f0) & (fp2 == f0) & (fm2 == f0)
            found.append(_Step(d, e, gap > floor, h[:, None], still))
    return found


def _choose(target, pos, k, analytic, tried: list[_Step], sizes, atol, rtol, judge: bool):
    """Per entry: a kink where a step below the default sees one (and the smallest step does
    not resolve the entry without one); else the step whose estimate is smallest relative to
    the entry's size among those that resolve it; else the least unresolved. Returns
    (numeric, estimate, kink, undecided), where undecided entries have values at two
    resolving steps that disagree beyond both tolerances. ``tried[0]`` is the default step.
    """
    numeric = np.stack([t.numeric for t in tried])
    kink = np.stack([t.kink for t in tried])
    # NOTE: a step that moved no output where the backward says one should was rounded
    # away; its quotient says nothing (unless no step moves them: then the function does
    # not depend on the input at this scale, and zero is its derivative).
    still = np.stack([t.still for t in tried]) & (analytic != 0)[None]
    moves = ~np.stack([t.still for t in tried])[1:].all(axis=0)
    estimate = np.where(still & moves[None], np.inf, np.stack([t.estimate for t in tried]))
    block_scale = num.finite_max([tried[0].numeric])
    estimate = _consistent(target, numeric, estimate, sizes, k, block_scale)
    verdicts = [_judge(target, pos, k, analytic, numeric[c], estimate[c], sizes, atol, rtol,
                       block_scale) for c in range(len(tried))]
    # NOTE: the entry's size is the same at every step, so the smallest estimate is the
    # smallest relative one (a step's own garbage value must not make its error look small)
    finite = np.isfinite(numeric) & np.isfinite(estimate)
    score = np.where(finite, estimate, np.inf)
    precise = np.stack([~v.unresolved for v in verdicts]) & finite
    resolved = precise & ~kink
    # NOTE: noise can look like a kink at one step; a kink at x (or nearer to x than the
    # smallest step) shows at a step below the default too, and counts unless the smallest
    # step resolves the entry without one.
    small = [c + 1 for c, scale in enumerate(LADDER) if scale < 1]
    seen = np.stack([kink[c] & np.isfinite(numeric[c]) for c in small])
    at_kink = seen.any(axis=0) & ~resolved[small[0]]
    first_kink = np.array(small)[np.argmax(seen, axis=0)]
    # resolved steps first, then unresolved ones, then unresolved ones that see a kink
    tier = np.where(resolved, 0, np.where(kink, 2, 1))
    score = np.where(tier == tier.min(axis=0)[None], score, np.inf)
    best = np.where(at_kink, first_kink, np.argmin(score, axis=0))
    pick = lambda a: np.take_along_axis(a, best[None], axis=0)[0]  # noqa: E731
    chosen = (pick(numeric), pick(estimate), at_kink)
    if not judge:
        return (*chosen, np.zeros(best.shape, bool))
    # NOTE: two steps that resolve an entry must agree on its value within their
    # tolerances; where they do not, one of their estimates is wrong and neither can be
    # trusted. (A coarser step that only passes a small error within its looser tolerance
    # agrees with the finer one: that is not a contradiction.)
    tol = np.stack([v.tol for v in verdicts])
    with np.errstate(invalid="ignore"):
        low = np.max(np.where(resolved, numeric - tol, -np.inf), axis=0)
        high = np.min(np.where(resolved, numeric + tol, np.inf), axis=0)
    changes = (low > high) & ~at_kink
    return (*chosen, changes)


def _consistent(target, numeric, estimate, sizes, k, block_scale) -> np.ndarray:
    """Estimates no smaller than each step's distance to the median of the steps that claim
    to resolve the entry.

    NOTE: a function that rounds inside gives quotients that are noise, and the spread of
    two steps can vanish by chance, so one step's own estimate may be far too small. Steps
    that are right agree with each other within their estimates; one that is off from the
    others by more than its estimate has that much error.
    """
    scale = compare.entry_scale(target, k, sizes, block_scale=block_scale, whole_output=True)
    claims = ~unresolved(target, estimate, numeric, scale[None]) & np.isfinite(numeric)
    enough = claims.sum(axis=0) >= 3
    if not enough.any():
        return estimate
    middle = np.nanmedian(np.where(claims, numeric, np.nan)[:, enough], axis=0)
    gap = np.zeros(estimate.shape)
    gap[:, enough] = np.abs(numeric[:, enough] - middle[None])
    return np.where(claims & enough[None], np.maximum(estimate, gap), estimate)


def _frozen(cols: full.Columns, analytic, outputs, elements) -> np.ndarray:
    """Elements whose outputs did not move at all under the first step although the
    backward says they should."""
    still = np.ones(len(elements), bool)
    moves = np.zeros(len(elements), bool)
    for k in outputs:
        still &= ~(cols.numeric[k][elements] != 0).any(axis=1)
        moves |= (analytic[k][elements] != 0).any(axis=1)
    out = np.zeros(cols.numeric[0].shape[0], bool)
    out[elements] = still & moves
    return out
