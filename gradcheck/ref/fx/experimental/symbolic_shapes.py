"""``torch.fx.experimental.symbolic_shapes``: guards on size expressions. The engine has no
symbolic sizes (every shape is a concrete int), so a guard is the boolean itself, as torch's
guards are for concrete values.

>>> guard_or_false(3 > 2), statically_known_true(False)
(True, False)
"""
from __future__ import annotations

import warnings


def _concrete(expr: object) -> bool:
    if not isinstance(expr, bool):
        raise AssertionError(f"Expected bool, got {type(expr)}")
    return expr


def guard_size_oblivious(expr: bool) -> bool:
    """The value of a size condition (torch's deprecated size-oblivious guard)."""
    warnings.warn("guard_size_oblivious will be removed. Consider using explicit unbacked "
                  "handling     potentially utilizing guard_or_false, guard_or_true, or "
                  "statically_known_true", FutureWarning, stacklevel=2)
    return _concrete(expr)


def guard_or_false(expr: bool) -> bool:
    return bool(expr)


def guard_or_true(expr: bool) -> bool:
    return bool(expr)


def statically_known_true(expr: bool) -> bool:
    return bool(expr)


def is_concrete_int(value: object) -> bool:
    return isinstance(value, int)
