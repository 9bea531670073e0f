"""eps_sweep: the finite-difference error against the step size, and its V-shaped plot.

Too large a step gives truncation error (falling as eps^2), too small a step gives rounding
error (growing as 1/eps). With a right gradient the two branches meet in a V whose minimum is
tiny; with a wrong gradient the curve has a floor, the size of the bug, that no step removes.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gradcheck.checks.adapters import adapter_for
from gradcheck.checks.analytic import analytic_rows
from gradcheck.checks.full import perturbed, steps_for
from gradcheck.checks.target import Target


@dataclass
class EpsSweep:
    """(eps, max |analytic - central difference|) pairs; iterate it or call ``.plot()``."""

    pairs: list[tuple[float, float]] = field(default_factory=list)

    def __iter__(self):
        return iter(self.pairs)

    def __len__(self) -> int:
        return len(self.pairs)

    @property
    def best(self) -> tuple[float, float]:
        """The (eps, error) pair with the smallest error: the bottom of the V."""
        return min(self.pairs, key=lambda p: p[1])

    def plot(self, path: str | None = None, ax: Any = None):
        """Draw the curve on log-log axes (matplotlib, Agg backend); save it if ``path``."""
        try:
            import matplotlib
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "eps_sweep plots need matplotlib: pip install gradcheck[plot]") from exc
        if ax is None:
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt

            fig, ax = plt.subplots(figsize=(5, 3.5))
        else:
            fig = ax.figure
        eps, err = zip(*self.pairs)
        ax.loglog(eps, np.maximum(err, 1e-18), marker="o")
        ax.set_xlabel("relative step eps")
        ax.set_ylabel("max |analytic - numeric|")
        ax.set_title("finite-difference error vs step")
        if path is not None:
            fig.savefig(path, bbox_inches="tight")
        return ax


def eps_sweep(fn: Callable, inputs: Any, *, eps: Sequence[float] | None = None,
              vjp: Callable | None = None, wrt: Sequence[int] | None = None,
              plot: bool | str = False) -> EpsSweep:
    """Max error of the plain central difference against the analytic Jacobian, per step.

    The step for element x is eps * max(1, |x|). ``plot=True`` draws the curve; a string is
    also the file it is saved to.

    >>> import numpy as np
    >>> sweep = eps_sweep(np.sin, np.array([0.5]), vjp=lambda g, x: (g * np.cos(x),))
    >>> 1e-7 < sweep.best[0] < 1e-3 and sweep.best[1] < 1e-9
    True
    """
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    target = Target(adapter_for(inputs, fn=fn, wrt=wrt, vjp=vjp))
    eps = np.geomspace(1e-13, 1e-1, 25) if eps is None else np.asarray(eps, dtype=np.float64)
    jac = analytic_rows(target)
    sweep = EpsSweep()
    for e in eps:
        worst = 0.0
        for pos, i in enumerate(target.diff):
            flat = target.x[i].ravel()
            h = steps_for(target, flat, float(e))
            n = flat.size
            outs = perturbed(target, i, np.arange(n), (h, -h), with_x=False)
            for k, out in enumerate(outs):
                fp, fm = out[:n], out[n:]
                numeric = (fp - fm) / (2 * h[:, None])
                worst = max(worst, float(np.max(np.abs(numeric - jac[pos][k]), initial=0.0)))
        sweep.pairs.append((float(e), worst))
    if plot:
        sweep.plot(plot if isinstance(plot, str) else None)
    return sweep
