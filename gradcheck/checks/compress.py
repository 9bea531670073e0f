"""Column compression: perturb several input elements at once where no output sees two of them.

When the analytic Jacobian is sparse (an elementwise op, a row-wise op, a weight that feeds
only some outputs), input elements that touch disjoint sets of output elements can share one
perturbation: x +/- sum_{j in c} h_j e_j for each colour c. Every output element then sees at
most one element the backward says it depends on (its "owner"), so the directional quotient
gives that entry directly. This is a screen, not the verdict: any colour/output pair whose
quotient disagrees with the analytic side, or hints at a kink, sends its owner (or, when the
disagreement cannot come from the owner, the whole colour) back to the per-element check.
"""
from __future__ import annotations

import numpy as np

# Compression must save at least this factor of points to be worth a screen.
MIN_GAIN = 4
# How many colourings of the form ``j mod C`` to try before giving up.
TRIALS = 24


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

    def directions(self, h: np.ndarray) -> np.ndarray:
        """(C, n): row c is sum_{j in c} h_j e_j."""
        out = np.zeros((self.count, len(self.colors)))
        out[self.colors, np.arange(len(self.colors))] = h
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
