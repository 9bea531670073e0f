"""The chance that fast mode's probes all miss one wrong Jacobian entry.

Fast mode draws P directions ``w_p = u_p * max(1, |x|)`` and P output weights ``v_q`` (all
standard normal) and compares every pair (a grid of P x P probes). One entry (a, b) wrong by
``delta`` adds ``delta * v_qa * u_pb * s_b`` (``s_b >= 1``) to the disagreement of pair
(p, q); every pair misses it only if ``max_q |v_qa| * max_p |u_pb| < c`` with
``c = (1 + 1/K) * tolerance / delta`` (the numeric error is within ``tolerance / K``).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from gradcheck.checks import numeric as num


@functools.lru_cache(maxsize=64)
def grid_miss_cdf(c: float, directions: int, weights: int) -> float:
    """P(max of ``directions`` |Z| * max of ``weights`` |Z| < c), Z standard normal.

    >>> round(grid_miss_cdf(1.0, 1, 1), 3)  # P(|Z1 Z2| < 1)
    0.791
    """
    if c <= 0:
        return 0.0
    # average over M_w (the max of the weights) of P(M_d < c / M_w); a log grid, because
    # the integrand turns over at z ~ c
    z = np.geomspace(1e-16, 12.0, 6000)
    half = np.array([math.erf(zi / math.sqrt(2)) for zi in z])
    inner = np.array([math.erf(c / (zi * math.sqrt(2))) for zi in z]) ** directions
    density = weights * half ** (weights - 1) * math.sqrt(2 / math.pi) * np.exp(-z * z / 2)
    y = inner * density
    below = math.erf(z[0] / math.sqrt(2)) ** weights  # M_w < z[0]: then M_d < c / M_w surely
    return float(min(1.0, np.sum((y[1:] + y[:-1]) * np.diff(z)) / 2 + below))


def miss_probability(error: float, tolerance: float, probes: int) -> float:
    """Chance that a grid of ``probes`` directions by ``probes`` weights misses one Jacobian
    entry wrong by ``error``, at the given probe ``tolerance``.

    >>> miss_probability(1.0, 1e-6, 2) < 1e-9
    True
    """
    if error <= 0:
        return 1.0
    c = (1 + 1 / num.SAFETY) * tolerance / error
    return grid_miss_cdf(c, probes, probes)
