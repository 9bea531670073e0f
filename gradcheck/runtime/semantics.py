"""``run_semantics``: the accumulation-semantics conformance suite behind ``gradcheck semantics``.

Every scenario in ``scenarios.SCENARIOS`` runs on the chosen framework and on the reference
engine ``gradcheck.ref``. A row passes when the framework's observations satisfy the documented
rule *and* equal the engine's (the engine is the reference, so a framework author or a user
upgrading torch sees exactly where the two part ways).

>>> report = run_semantics("ref")
>>> [row.name for row in report.failed]
[]
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from gradcheck.runtime.scenarios import SCENARIOS, Observations, Scenario, same_observations

FRAMEWORKS = {"torch": "torch", "ref": "gradcheck.ref"}


@dataclass(frozen=True)
class SemanticsRow:
    """One scenario's outcome; ``observed`` and ``expected`` map names to values."""

    name: str
    statement: str
    passed: bool
    detail: str
    observed: Observations | None
    expected: Observations | None


@dataclass
class SemanticsReport:
    """All rows for one framework; ``passed`` when every row does."""

    framework: str
    rows: list[SemanticsRow] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(row.passed for row in self.rows)

    @property
    def failed(self) -> list[SemanticsRow]:
        return [row for row in self.rows if not row.passed]

    def table(self) -> str:
        """A fixed-width pass/fail table, one line per scenario plus its reason when failing."""
        width = max(len(row.name) for row in self.rows) if self.rows else 10
        lines = [f"{'semantic':<{width}}  result  rule", f"{'-' * width}  ------  ----"]
        for row in self.rows:
            lines.append(f"{row.name:<{width}}  {'PASS' if row.passed else 'FAIL':<6}  "
                         f"{row.statement}")
            if not row.passed:
                lines.append(f"{'':<{width}}          -> {row.detail}")
        verdict = "all passed" if self.passed else f"{len(self.failed)} failed"
        lines.append(f"{self.framework}: {len(self.rows)} semantics, {verdict}")
        return "\n".join(lines)


def run_semantics(framework: str | ModuleType | Any = "torch") -> SemanticsReport:
    """Run every accumulation semantic on ``framework`` ("torch", "ref", or a torch-like module).

    >>> run_semantics("ref").passed
    True
    """
    fw, label = _resolve(framework)
    reference = _load_reference()
    report = SemanticsReport(label)
    for scenario in SCENARIOS:
        report.rows.append(_run_row(scenario, fw, reference))
    return report


def _resolve(framework: Any) -> tuple[Any, str]:
    if isinstance(framework, str):
        if framework not in FRAMEWORKS:
            raise ValueError(
                f"framework must be one of {sorted(FRAMEWORKS)} or a torch-like module, "
                f"got {framework!r}"
            )
        try:
            return importlib.import_module(FRAMEWORKS[framework]), framework
        except ImportError as exc:
            raise ValueError(
                f"framework {framework!r} is not importable ({exc}); install it "
                "(pip install torch) or choose --framework ref"
            ) from exc
    return framework, getattr(framework, "__name__", type(framework).__name__)


def _load_reference() -> Any:
    try:
        return importlib.import_module(FRAMEWORKS["ref"])
    except ImportError:  # pragma: no cover - the engine ships with the package
        return None


def _observe(scenario: Scenario, fw: Any) -> tuple[Observations | None, str]:
    try:
        return scenario.run(fw), ""
    except Exception as exc:  # noqa: BLE001 - a missing feature fails its row, not the suite
        return None, f"{type(exc).__name__}: {exc}"


def _run_row(scenario: Scenario, fw: Any, reference: Any) -> SemanticsRow:
    observed, error = _observe(scenario, fw)
    expected, ref_error = _observe(scenario, reference) if reference is not None else (None, "")
    if observed is None:
        detail, passed = f"raised {error}", False
    elif not scenario.holds(observed):
        detail, passed = f"rule broken: observed {_brief(observed)}", False
    elif expected is None:
        detail = f"reference engine could not run it ({ref_error or 'not installed'})"
        passed = False
    elif not same_observations(observed, expected):
        detail, passed = f"observed {_brief(observed)} but the engine gives {_brief(expected)}", False
    else:
        detail, passed = "", True
    return SemanticsRow(scenario.name, scenario.statement, passed, detail, observed, expected)


def _brief(observations: Observations) -> str:
    return ", ".join(f"{key}={value}" for key, value in observations.items())
