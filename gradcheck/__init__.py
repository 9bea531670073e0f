"""gradcheck: make gradient bugs hard to ship.

The package is imported lazily: ``import gradcheck`` costs almost nothing, so the linter
starts fast and torch, JAX and CuPy are touched only by the adapters that need them.

>>> import gradcheck
>>> callable(gradcheck.check_grad)
True
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    "check_grad": "gradcheck.checks",
    "check_gradgrad": "gradcheck.checks",
    "eps_sweep": "gradcheck.checks",
    "GradcheckResult": "gradcheck.checks",
    "GradientMismatch": "gradcheck.checks",
    "GradientInconclusive": "gradcheck.checks",
    "GradcheckError": "gradcheck.checks",
    "check_training_step": "gradcheck.runtime",
    "TrainingStepReport": "gradcheck.runtime",
    "TrainingStepError": "gradcheck.runtime",
    "guard": "gradcheck.runtime",
    "GradGuardError": "gradcheck.runtime",
    "run_semantics": "gradcheck.runtime",
    "check_parity": "gradcheck.runtime",
    "ParityReport": "gradcheck.runtime",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gradcheck' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
