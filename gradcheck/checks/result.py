"""What a gradient check found: per-element mismatches, the verdict, and the errors raised.

A report is only useful if it points at the element: every mismatch carries the output and
input it belongs to, the multi-index, both values, the tolerance that was applied and the
finite-difference error estimate that produced that tolerance.

The verdict is one of three: "passed", "failed" (a mismatch or a problem with the backward)
or "inconclusive" (the finite differences could not resolve some entries, so a pass would
vouch for what was not checked). Only "passed" is ``passed``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SHOWN_MISMATCHES = 5


@dataclass(frozen=True)
class Mismatch:
    """One Jacobian entry (d output[out_index] / d input[index]) that disagrees."""

    output: str
    input: str
    out_index: tuple[int, ...]
    index: tuple[int, ...]
    analytic: float
    numeric: float
    abs_error: float
    rel_error: float
    tolerance: float
    estimate: float

    def describe(self) -> str:
        return (
            f"d {self.output}{list(self.out_index)} / d {self.input}{list(self.index)}: "
            f"analytic={self.analytic:.10g} numeric={self.numeric:.10g} "
            f"abs_err={self.abs_error:.3g} rel_err={self.rel_error:.3g} "
            f"tol={self.tolerance:.3g} fd_estimate={self.estimate:.3g}"
        )


@dataclass
class GradcheckResult:
    """The outcome of :func:`gradcheck.check_grad`; ``bool(result)`` is ``result.passed``.

    >>> import numpy as np, gradcheck
    >>> r = gradcheck.check_grad(np.sin, np.array([0.5]), vjp=lambda g, x: (g * np.cos(x),))
    >>> r.passed, r.evaluations["backward"] > 0
    (True, True)
    """

    passed: bool = True
    verdict: str = "passed"
    inconclusive: list[str] = field(default_factory=list)
    mode: str = "full"
    method: str = "central"
    framework: str = "numpy"
    mismatches: list[Mismatch] = field(default_factory=list)
    mismatch_counts: dict[tuple[str, str], int] = field(default_factory=dict)
    nondifferentiable: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    evaluations: dict[str, int] = field(default_factory=dict)
    taylor_order: float | None = None
    probes: int | None = None
    miss_probability: float | None = None
    miss_error: float | None = None
    rechecked_blocks: list[tuple[str, str]] = field(default_factory=list)
    unresolved: dict[tuple[str, str], dict] = field(default_factory=dict)
    nan_entries: dict[tuple[str, str], int] = field(default_factory=dict)
    unchecked: list[str] = field(default_factory=list)
    eval_dtype: str = "float64"
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.passed

    def worst(self) -> Mismatch | None:
        """The mismatch with the largest error relative to its tolerance."""
        if not self.mismatches:
            return None
        return max(self.mismatches, key=_beyond_tolerance)

    def __str__(self) -> str:
        verdict = self.verdict.upper()
        lines = [
            (f"gradient check {verdict} ({self.framework}, mode={self.mode}, "
             f"method={self.method}, numerics in {self.eval_dtype})"),
            f"  max abs error {self.max_abs_error:.3g}, max rel error {self.max_rel_error:.3g}",
            ("  evaluations: "
             + ", ".join(f"{k}={v}" for k, v in sorted(self.evaluations.items()))),
        ]
        if self.taylor_order is not None:
            lines.append(f"  Taylor remainder order {self.taylor_order:.2f} along one random "
                         f"direction: {_taylor_meaning(self.taylor_order, self.verdict)}")
        if self.probes is not None and self.miss_probability is not None:
            lines.append(
                f"  fast mode: {self.probes} x {self.probes} probes per output; chance of "
                f"missing one Jacobian entry wrong by {self.miss_error:.3g} is at most "
                f"{self.miss_probability:.3g}"
            )
        for block in self.rechecked_blocks:
            lines.append(f"  probes disagreed on d {block[0]} / d {block[1]}: re-checked in full")
        if self.nondifferentiable:
            shown = ", ".join(f"{name}{list(idx)}" for name, idx in self.nondifferentiable[:8])
            more = len(self.nondifferentiable) - 8
            lines.append(
                f"  {len(self.nondifferentiable)} non-differentiable point(s): {shown}"
                + (f" and {more} more" if more > 0 else "")
            )
        lines.extend(f"  problem: {p}" for p in self.problems)
        lines.extend(f"  inconclusive: {p}" for p in self.inconclusive)
        lines.extend(self._mismatch_lines())
        return "\n".join(lines)

    def _mismatch_lines(self) -> list[str]:
        lines: list[str] = []
        for (out, inp), count in self.mismatch_counts.items():
            block = [m for m in self.mismatches if (m.output, m.input) == (out, inp)]
            worst = max(block, key=_beyond_tolerance)
            lines.append(f"  d {out} / d {inp}: {count} element(s) mismatch; worst at "
                         f"{inp}{list(worst.index)} (output element {list(worst.out_index)}):")
            lines.append(
                f"    analytic={worst.analytic:.10g} numeric={worst.numeric:.10g} "
                f"abs_err={worst.abs_error:.3g} rel_err={worst.rel_error:.3g} "
                f"tolerance={worst.tolerance:.3g} fd_error_estimate={worst.estimate:.3g}"
            )
            lines.append(f"    first {min(count, SHOWN_MISMATCHES)}:")
            lines.extend(f"      {m.describe()}" for m in block[:SHOWN_MISMATCHES])
        return lines


def _taylor_meaning(order: float, verdict: str) -> str:
    """What a Taylor remainder order says next to the verdict: a second opinion, worded so
    that it never contradicts the entry-by-entry comparison."""
    if order >= 1.5:
        if verdict == "failed":
            return ("second order along this direction; the wrong entries above are too few "
                    "or too small to show in one random direction")
        return "second order or higher, so the gradient is right along it to the test's resolution"
    if verdict == "failed":
        return "first order, as the mismatches above say: the gradient is wrong along it"
    if verdict == "inconclusive":
        return ("first order, which a wrong gradient gives, and so does rounding inside the "
                "function; the entries above could not be resolved, so the check does not "
                "decide")
    return ("first order, yet every Jacobian entry agrees to its tolerance; along a line of "
            "steps up to 1e-2 a kink or rounding inside the function gives this too, and "
            "the entries decide")


def _beyond_tolerance(m: Mismatch) -> float:
    return m.abs_error / max(m.tolerance, 1e-300)


class GradientInconclusive(AssertionError):
    """Raised when the finite differences could not resolve the gradient (``verdict`` is
    "inconclusive"); ``.result`` holds the :class:`GradcheckResult`. Pass
    ``allow_inconclusive=True`` to get the result back instead."""

    def __init__(self, result: GradcheckResult):
        self.result = result
        super().__init__(str(result) + "\n  nothing is known to be wrong, but the check could "
                         "not vouch for the entries above; pass allow_inconclusive=True to "
                         "accept that")


class GradientMismatch(AssertionError):
    """Raised when a gradient check fails; ``.result`` holds the full :class:`GradcheckResult`."""

    def __init__(self, result: GradcheckResult):
        self.result = result
        fix = (
            "\n  fix: the backward (VJP) disagrees with finite differences at the elements above;"
            " if the function is only approximately smooth there, pass atol=/rtol= explicitly."
        )
        super().__init__(str(result) + fix)
