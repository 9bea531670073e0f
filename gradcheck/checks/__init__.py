"""Gradient checkers: full and fast modes, second order, and the step-size sweep.

>>> import numpy as np
>>> from gradcheck.checks import check_grad
>>> check_grad(np.exp, np.array([1.0, 2.0]), vjp=lambda g, x: (g * np.exp(x),)).passed
True
"""
from gradcheck.checks.check import NondifferentiableWarning, check_grad, check_gradgrad
from gradcheck.checks.errors import GradcheckError
from gradcheck.checks.result import (
    GradcheckResult,
    GradientInconclusive,
    GradientMismatch,
    Mismatch,
)
from gradcheck.checks.sweep import EpsSweep, eps_sweep

__all__ = [
    "EpsSweep",
    "GradcheckError",
    "GradcheckResult",
    "GradientInconclusive",
    "GradientMismatch",
    "Mismatch",
    "NondifferentiableWarning",
    "check_grad",
    "check_gradgrad",
    "eps_sweep",
]
