"""Column compression: perturb several input elements at once where no output sees two of them.

When the analytic Jacobian is sparse (an elementwise op, a row-wise op, a weight that feeds
only some outputs), input elements that touch disjoint sets of output elements can share one
perturbation: x +/- sum_{j in c} h_j e_j for each colour c. Every output element then sees at
most one element the backward says it depends on (its "owner"), so the directional quotient
gives that entry directly. Both phases of full mode run on these (colour, output element)
pairs; any pair the full rule rejects, or that looks like a kink, sends its owner (or, when
the disagreement cannot come from the owner, the whole colour) back to the per-element check
in full.py, so that every report names an exact entry.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gradcheck.checks import compare, full
from gradcheck.checks import numeric as num

# Compression must save at least this factor of points to be worth a screen.
MIN_GAIN = 4
# How many colourings of the form ``j mod C`` to try before giving up.
TRIALS = 24
JITTER_SEED = 20240919  # fixed: the steps must not depend on the user's seed


def column_colors(analytic: list[np.ndarray]) -> np.ndarray | None:
    """A colour per input element such that no output element depends (analytically) on two
    elements of one colour; None when the Jacobian is too dense for that to pay off.

    ``analytic`` holds one (n, m_k) block per output k.

    >>> column_colors([np.eye(6)]).tolist()
    [0, 0, 0, 0, 0, 0]
    >>> column_colors([np.ones((6, 2))]) is None
    True
    """
    n = analytic[0].shape[0]
    pattern = np.concatenate([a != 0 for a in analytic], axis=1)  # NaN counts as nonzero
    rows, outs = np.nonzero(pattern)
    degree = int(np.max(np.bincount(outs, minlength=1), initial=0)) if outs.size else 0
    if n < 2 or degree * MIN_GAIN > n:
        return None
    m = pattern.shape[1]
    for count in range(max(1, degree), max(1, degree) + TRIALS):
        if count * MIN_GAIN > n:
            break
        colors = np.arange(n) % count
        # NOTE: valid iff every (output element, colour) pair holds at most one nonzero.
        hits = np.bincount(outs * count + colors[rows], minlength=m * count)
        if hits.max(initial=0) <= 1:
            return colors
    return None


class Grouping:
    """Colours sorted into contiguous runs, so that per-colour reductions are ``reduceat``."""

    def __init__(self, colors: np.ndarray):
        self.colors = colors
        self.count = int(colors.max()) + 1
        self.order = np.argsort(colors, kind="stable")
        self.starts = np.searchsorted(colors[self.order], np.arange(self.count))

    def directions(self, h: np.ndarray, picked: np.ndarray) -> np.ndarray:
        """(len(picked), n): row r is sum_{j in colour picked[r]} h_j e_j."""
        slot = np.full(self.count, -1)
        slot[picked] = np.arange(len(picked))
        members = np.nonzero(slot[self.colors] >= 0)[0]
        out = np.zeros((len(picked), len(self.colors)))
        out[slot[self.colors[members]], members] = h[members]
        return out

    def any(self, flags: np.ndarray) -> np.ndarray:
        """(C, m): whether any element of the colour is flagged, per output element."""
        return np.logical_or.reduceat(flags[self.order], self.starts, axis=0)

    def owners(self, analytic: np.ndarray) -> np.ndarray:
        """(C, m): the element of the colour that output element depends on, else -1."""
        n = analytic.shape[0]
        index = np.where(analytic != 0, np.arange(n)[:, None], -1)
        return np.maximum.reduceat(index[self.order], self.starts, axis=0)

    def members(self, picked_colors: np.ndarray) -> np.ndarray:
        """Input elements whose colour is in ``picked_colors``."""
        return np.nonzero(np.isin(self.colors, picked_colors))[0]


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


def compressed_columns(target, i: int, step, screen: full.Screen, colors) -> full.Columns:
    """Both phases with one perturbation per colour; suspects re-checked element by element.

    Each (colour, output element) quotient belongs to the colour's owner of that output
    element (the one element the backward says it depends on); where there is none, to every
    element of the colour, since any of them may be the dependency the backward missed.
    Entries the full rule still rejects, and kinks, are re-checked per element so that
    reports name the exact entry. Everything up to the end works on (colours, m) arrays.

    >>> from gradcheck.checks.adapters import adapter_for
    >>> from gradcheck.checks.analytic import analytic_rows
    >>> from gradcheck.checks.target import Target
    >>> vjp = lambda g, x: (g / np.cosh(x) ** 2,)
    >>> t = Target(adapter_for((np.linspace(-1, 1, 8),), fn=np.tanh, wrt=None, vjp=vjp))
    >>> cols = compressed_columns(t, 0, None, full.Screen(0, analytic_rows(t)[0], [0]),
    ...                           np.zeros(8, int))
    >>> bool(np.allclose(cols.numeric[0], np.diag(1 / np.cosh(np.linspace(-1, 1, 8)) ** 2)))
    True
    """
    x = target.x[i]
    flat = x.ravel()
    groups = Grouping(colors)
    # NOTE: each element's step gets its own random factor. With equal steps, a backward that
    # moves a dependency to another element of the same colour (an index off by one) is
    # credited with exactly the quotient of the element it displaced, and agrees.
    factor = np.random.default_rng(JITTER_SEED).uniform(0.5, 1.0, flat.size)
    h = full.steps_for(target, flat, step, factor)
    c = groups.count
    outs = _along_colors(target, i, groups, h, np.arange(c), with_x=True)
    size = num.input_scale(flat)
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
        samples = (fp, fm, f0)
        p = _Packed(fp, fm, f0, owners, step_co, np.where(owned, size[safe], s_max),
                    np.where(owned, screen.analytic[k][safe, np.arange(out.shape[1])], 0.0),
                    quotient, num.quotient_rounding(target.eval_eps, samples, step_co),
                    np.zeros(quotient.shape, bool),
                    num.quotient_rounding(target.eval_eps, samples, h[:, None]))
        packed.append(p)
        if k not in screen.outputs:
            continue
        gap = np.abs(fp - 2 * f0 + fm) / step_co
        # NOTE: the same kink hint and first-pass tolerance as the per-element screen.
        kinkish = gap > num.relative_floor(quotient, target.eval_eps)
        tol = compare.tolerance_at(target, screen.pos, k, quotient, 0.0, p.s, screen.atol,
                                   screen.rtol)
        refine |= (kinkish | ~(np.abs(quotient - p.analytic) <= tol)).any(axis=1)
    if refine.any():
        _refine_colors(target, i, groups, h, np.nonzero(refine)[0], packed)
    rechecked = _recheck_suspects(target, i, step, screen, groups, h, packed)
    return _unpack(groups, h, packed, rechecked)


def _along_colors(target, i, groups, h, picked, with_x: bool) -> list[np.ndarray]:
    """Outputs (per output k, rows (2 len(picked) [+ 1], m_k)) at x + v_c for the picked
    colours, then x - v_c, then (with_x) x itself; points are built a chunk at a time."""
    x = target.x[i]
    flat = x.ravel()
    chunk = max(1, full.BATCH_ELEMENTS // (2 * flat.size))
    starts = list(range(0, len(picked), chunk))
    plus, minus, at_x = [], [], []
    for start in starts:
        dirs = groups.directions(h, picked[start:start + chunk])
        last = with_x and start == starts[-1]  # x shares the last batch, as in phase 1
        points = np.concatenate([flat + dirs, flat - dirs] + ([flat[None]] if last else []))
        label = lambda r: "of a compressed column (several elements moved at once)"  # noqa: E731
        out = [o.reshape(len(points), -1) for o in target.evaluate_points(
            i, points.reshape((len(points),) + x.shape), label=label)]
        plus.append([o[:len(dirs)] for o in out])
        minus.append([o[len(dirs):2 * len(dirs)] for o in out])
        at_x = [o[2 * len(dirs):] for o in out]
    return [np.concatenate([p[k] for p in plus] + [p[k] for p in minus] + at_x[k:k + 1])
            for k in range(len(target.f0))]


def _refine_colors(target, i, groups, h, picked, packed) -> None:
    """Phase 2 for the colours in ``picked``: x +/- h/2 along their directions."""
    outs = _along_colors(target, i, groups, h / 2, picked, with_x=False)
    n = len(groups.colors)
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
        tol = compare.tolerance_at(target, screen.pos, k, p.numeric, p.estimate, p.s,
                                   screen.atol, screen.rtol)
        bad = p.kink | ~(np.abs(p.numeric - p.analytic) <= tol)
        if not bad.any():
            continue
        owned = bad & (p.owners >= 0)
        owner_suspects[p.owners[owned]] = True
        color_suspects |= (bad & (p.owners < 0)).any(axis=1)
        pending.append((k, owned, tol))
    first = np.nonzero(owner_suspects)[0]
    cols = full.numeric_columns(target, i, "central", step, screen, elements=first)
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
    more = full.numeric_columns(target, i, "central", step, screen, elements=second)
    return [(first, cols), (second, more)]


def _unpack(groups, h, packed, rechecked) -> full.Columns:
    """(n, m) columns: attributed entries from the packed arrays, the rest exactly the
    analytic zero, and the re-checked elements' own columns."""
    n = len(groups.colors)
    numeric, estimate, kink = [], [], []
    for p in packed:
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
    return full.Columns(numeric, estimate, kink)
