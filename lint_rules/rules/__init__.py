"""The rule registry: one module per rule, in code order."""
from __future__ import annotations

from lint_rules.rules.gc001_zero_grad_between_backward_and_step import (
    ZeroGradBetweenBackwardAndStep,
)
from lint_rules.rules.gc002_missing_zero_grad import MissingZeroGrad
from lint_rules.rules.gc003_zero_grad_outside_loop import ZeroGradOutsideLoop
from lint_rules.rules.gc004_loss_accumulated_with_graph import LossAccumulatedWithGraph

RULES = (ZeroGradBetweenBackwardAndStep, MissingZeroGrad, ZeroGradOutsideLoop, LossAccumulatedWithGraph)


def rule_by_code_or_name(code_or_name: str):
    """The rule class for a code (``GC001``) or kebab-case name (``missing-zero-grad``).

    >>> rule_by_code_or_name("gc002").NAME
    'missing-zero-grad'
    """
    wanted = code_or_name.strip()
    for rule in RULES:
        if wanted.upper() == rule.CODE or wanted.lower() == rule.NAME:
            return rule
    known = ", ".join(f"{r.CODE} ({r.NAME})" for r in RULES)
    raise KeyError(f"unknown rule {code_or_name!r}; known rules: {known}")
