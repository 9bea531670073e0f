"""What ``check_training_step`` reports: one ``StepProblem`` per finding, and the report itself.

>>> report = TrainingStepReport(problems=[], steps=2, batches=4)
>>> report.passed
True
"""
from __future__ import annotations

from dataclasses import dataclass, field

# kind -> severity; an unscaled accumulation trains, just with a k-times larger step
KINDS = {
    "stale_gradients": "error",
    "wiped_gradients": "error",
    "discarded_accumulation": "error",
    "unscaled_accumulation": "warning",
    "update_mismatch": "error",
}


@dataclass(frozen=True)
class StepProblem:
    """One wrong update: which kind, at which batch (0-based index), for which parameter."""

    kind: str
    batch: int
    parameter: str
    message: str

    @property
    def severity(self) -> str:
        return KINDS[self.kind]

    def __str__(self) -> str:
        return f"batch {self.batch}, {self.parameter}: {self.kind} ({self.severity}): {self.message}"


@dataclass
class TrainingStepReport:
    """The outcome of one ``check_training_step`` run.

    ``passed`` is False when any problem is an error; warnings (unscaled accumulation) are listed
    but do not fail the check.
    """

    problems: list[StepProblem] = field(default_factory=list)
    steps: int = 0  # optimizer.step() calls observed
    batches: int = 0  # step(batch) calls made
    replays: int = 0  # updates replayed on copies and compared
    replay_skips: list[str] = field(default_factory=list)  # why some updates were not replayed

    @property
    def passed(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)

    @property
    def kinds(self) -> set[str]:
        return {p.kind for p in self.problems}

    def summary(self, limit: int = 12) -> str:
        verdict = "passed" if self.passed else "FAILED"
        head = (
            f"training step check {verdict}: {self.batches} batches, {self.steps} optimizer "
            f"steps, {len(self.problems)} problem(s)"
        )
        lines = [head] + [f"  {p}" for p in self.problems[:limit]]
        if len(self.problems) > limit:
            lines.append(f"  ... and {len(self.problems) - limit} more")
        lines += [f"  update replay skipped: {reason}" for reason in self.replay_skips]
        return "\n".join(lines)

    __str__ = summary


class TrainingStepError(AssertionError):
    """Raised by ``check_training_step`` when an update is wrong; ``.report`` has the details."""

    def __init__(self, report: TrainingStepReport) -> None:
        super().__init__(report.summary())
        self.report = report
