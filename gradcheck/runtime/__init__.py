"""Run-time accumulation checks: the part of a gradient bug the linter cannot see.

- ``check_training_step``: run the user's step on a few batches and audit every update;
- ``guard``: always-on, low-cost hooks on an optimizer inside a real loop;
- ``run_semantics``: the accumulation-semantics conformance suite (``gradcheck semantics``);
- ``check_parity``: forward/backward parity of a device against a float64 CPU arbiter.

Nothing here imports torch, JAX or CuPy until an adapter needs it.
"""
from gradcheck.runtime.devices import DeviceBackend, DeviceUnavailable, SimulatedDevice
from gradcheck.runtime.guard import GradGuard, GradGuardError, GradGuardWarning, guard
from gradcheck.runtime.parity import ParityProblem, ParityReport, check_parity
from gradcheck.runtime.report import StepProblem, TrainingStepError, TrainingStepReport
from gradcheck.runtime.semantics import SemanticsReport, run_semantics
from gradcheck.runtime.training_step import check_training_step

__all__ = [
    "DeviceBackend",
    "DeviceUnavailable",
    "GradGuard",
    "GradGuardError",
    "GradGuardWarning",
    "ParityProblem",
    "ParityReport",
    "SemanticsReport",
    "SimulatedDevice",
    "StepProblem",
    "TrainingStepError",
    "TrainingStepReport",
    "check_parity",
    "check_training_step",
    "guard",
    "run_semantics",
]
