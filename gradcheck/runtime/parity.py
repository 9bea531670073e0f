"""``check_parity``: is a device's forward and backward as accurate as the CPU's?

Exact equality between devices is the wrong test (summation order differs), so a float64 CPU
run is the arbiter: a device passes when, element by element, its distance from float64 is at
most ``factor`` times the CPU's worst distance in the same dtype (over that output or
gradient), plus a floor of ``factor`` units in the last place of the largest magnitude. In
float64, where the arbiter is the CPU's own run, the CPU's distance is estimated from its
float32 run's, scaled by the ratio of the two epsilons. Each device also runs ``runs`` times with identical
inputs; any difference between runs is nondeterminism, an error when deterministic algorithms
are requested and a warning otherwise.

>>> check_parity(lambda x: (x * x).sum(), [np.ones(3)], framework="ref", devices=("cpu",)).passed
True
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gradcheck.runtime.adapter import as_numpy
from gradcheck.runtime.devices import DeviceBackend, DeviceUnavailable, Result, get_backend


@dataclass(frozen=True)
class ParityProblem:
    """One disagreement: ``kind`` is "accuracy" or "nondeterminism"."""

    kind: str
    device: str
    dtype: str
    quantity: str  # "output" or "grad[i]"
    index: int  # flattened index of the worst element
    message: str
    severity: str = "error"

    def __str__(self) -> str:
        return f"{self.device}/{self.dtype} {self.quantity}[{self.index}]: {self.message}"


@dataclass
class ParityReport:
    """Per device and dtype: the worst error ratio, the run-to-run spread, and the flags."""

    framework: str
    devices: list[str]
    dtypes: list[str]
    factor: float
    problems: list[ParityProblem] = field(default_factory=list)
    worst_ratio: dict[tuple[str, str], float] = field(default_factory=dict)
    spread: dict[tuple[str, str], float] = field(default_factory=dict)
    flags: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)

    def summary(self) -> str:
        head = (f"parity {'passed' if self.passed else 'FAILED'} ({self.framework}, "
                f"factor {self.factor:g} over the CPU error, float64 CPU arbiter)")
        lines = [head]
        for (device, dtype), ratio in self.worst_ratio.items():
            lines.append(f"  {device}/{dtype}: worst error ratio {ratio:.3g}, "
                         f"run-to-run spread {self.spread[(device, dtype)]:.3g}")
        lines += [f"  {p.severity}: {p}" for p in self.problems]
        lines += [f"  flag {name} = {value}" for name, value in self.flags.items()]
        return "\n".join(lines)

    __str__ = summary


def check_parity(
    fn: Callable[..., Any],
    inputs: Sequence[Any],
    *,
    devices: Sequence[str | DeviceBackend] = ("cpu", "cuda"),
    dtypes: Sequence[str] | None = None,
    framework: str = "torch",
    factor: float = 4.0,
    runs: int = 2,
    require_deterministic: bool | None = None,
    seed: int = 0,
) -> ParityReport:
    """Run ``fn`` forward and backward on each device and compare with a float64 CPU arbiter.

    ``inputs`` are arrays (or tensors, copied to float64); ``fn`` maps framework tensors to one
    tensor. Raises ``DeviceUnavailable`` with the reason when a device cannot run here.

    >>> from gradcheck.runtime.devices import RefDevice, SimulatedDevice
    >>> sim = SimulatedDevice(RefDevice("cpu"), output_error=(0, 0.1))  # a device-only bug
    >>> report = check_parity(lambda x: x.sin(), [np.ones(4)], framework="ref", devices=(sim,))
    >>> [(p.kind, p.quantity, p.index) for p in report.problems]
    [('accuracy', 'output', 0)]
    """
    if runs < 2:
        raise ValueError(f"runs must be at least 2 to measure run-to-run spread, got {runs}")
    if factor < 1:
        raise ValueError(f"factor must be >= 1 (the CPU itself has ratio <= 1), got {factor}")
    arrays = [as_numpy(x) for x in inputs]
    cpu = get_backend(framework, "cpu")
    backends = [get_backend(framework, d) for d in devices]
    for backend in [cpu, *backends]:
        reason = backend.unavailable_reason()
        if reason is not None:
            raise DeviceUnavailable(backend.name, reason)
    dtypes = list(dtypes or ["float32"])
    report = ParityReport(framework, [b.name for b in backends], dtypes, factor)
    for backend in [cpu, *backends]:
        report.flags.update(backend.flags())
    strict = _deterministic_requested(report.flags, require_deterministic)
    arbiter = cpu.run(fn, arrays, "float64", seed)
    # In float64 the arbiter is the CPU's own run, whose error is unknown, not zero: the
    # float32 run's error, scaled down by the ratio of the two epsilons, estimates it (the
    # computation's sensitivity to rounding, times float64's rounding).
    probe = cpu.run(fn, arrays, "float32", seed) if "float64" in dtypes else None
    for dtype in dtypes:
        baseline = cpu.run(fn, arrays, dtype, seed)
        for backend in backends:
            results = [backend.run(fn, arrays, dtype, seed) for _ in range(runs)]
            _compare(report, backend.name, dtype, results, baseline, arbiter, strict,
                     probe if dtype == "float64" else None)
    return report


def _deterministic_requested(flags: dict[str, Any], require: bool | None) -> bool:
    if require is not None:
        return require
    return bool(flags.get("torch.are_deterministic_algorithms_enabled()", False))


def _quantities(result: Result) -> list[tuple[str, np.ndarray]]:
    output, grads = result
    return [("output", output)] + [(f"grad[{i}]", g.ravel()) for i, g in enumerate(grads)]


def _compare(
    report: ParityReport, device: str, dtype: str, results: list[Result],
    baseline: Result, arbiter: Result, strict: bool, probe: Result | None = None,
) -> None:
    from gradcheck.checks.numeric import dtype_eps  # lazily: one table for the whole project

    eps = dtype_eps(dtype)
    runs = [_quantities(r) for r in results]
    worst = 0.0
    named = zip(runs[0], _quantities(baseline), _quantities(arbiter))
    probes = _quantities(probe) if probe is not None else [(None, None)] * len(runs[0])
    for ((name, got), (_, cpu), (_, exact)), (_, rough) in zip(named, probes):
        scale = float(np.max(np.abs(exact), initial=0.0))
        # The CPU's worst error over the whole quantity, not at each element: rounding is
        # as likely to land a CUDA element near the truth as the CPU's, so one CPU element
        # that happens to be exact must not demand exactness there. The ulp floor keeps an
        # exact CPU result from demanding exactness everywhere.
        cpu_error = float(np.max(np.abs(cpu - exact), initial=0.0))
        if rough is not None:
            cpu_error = max(cpu_error, float(np.max(np.abs(rough - exact), initial=0.0))
                            * eps / dtype_eps("float32"))
        allowed = report.factor * (cpu_error + eps * scale) + np.finfo(float).tiny
        ratio = np.abs(got - exact) / allowed
        if ratio.size:
            at = int(np.argmax(ratio))
            worst = max(worst, float(ratio[at]))
            if ratio[at] > 1.0:
                report.problems.append(ParityProblem("accuracy", device, dtype, name, at, (
                    f"{device} gives {got[at]:.9g}, CPU {dtype} {cpu[at]:.9g}, float64 "
                    f"{exact[at]:.9g}: {ratio[at]:.3g}x the allowed error (factor "
                    f"{report.factor:g} over the CPU's)"
                )))
    spread = max((float(np.max(np.abs(value - first), initial=0.0))
                  for run in runs[1:] for (_, value), (_, first) in zip(run, runs[0])),
                 default=0.0)
    report.worst_ratio[(device, dtype)] = worst
    report.spread[(device, dtype)] = spread
    if spread > 0.0:
        report.problems.append(ParityProblem(
            "nondeterminism", device, dtype, "all", 0,
            f"{len(results)} identical runs differ by up to {spread:.3g}; "
            + ("deterministic algorithms were requested" if strict else
               "call torch.use_deterministic_algorithms(True) to find the op"),
            "error" if strict else "warning",
        ))

