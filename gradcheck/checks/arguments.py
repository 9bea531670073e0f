"""check_grad's arguments, validated before anything runs.

Each bad argument gets a ``TypeError`` (wrong kind of value) or ``ValueError`` (right kind,
impossible value) whose message names the argument, the value given and what to pass instead.

>>> check_number("eps", "1e-3", low=0, high=1, example="1e-6")
Traceback (most recent call last):
...
TypeError: eps='1e-3' is a str: give a number, e.g. eps=1e-6
"""
from __future__ import annotations

import inspect
import numbers
from collections.abc import Callable, Sequence
from typing import Any

CHOICES = {
    "mode": ("full", "fast"),
    "method": ("central", "complex"),
    "nondifferentiable": ("fail", "warn", "ignore"),
    "screen": ("one-sided", "two-sided"),
}


def check_choices(**given: str) -> None:
    for name, value in given.items():
        if value not in CHOICES[name]:
            raise ValueError(f"{name}={value!r}: choose one of {', '.join(CHOICES[name])}")


def check_number(name: str, value: Any, *, low: float = 0.0, high: float | None = None,
                 example: str, low_inclusive: bool = False) -> None:
    """A real number in (low, high) (or [low, high) with ``low_inclusive``); None passes."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}={value!r} is a {type(value).__name__}: give a number, "
                        f"e.g. {name}={example}")
    above = value >= low if low_inclusive else value > low
    if not (above and (high is None or value < high)):
        span = f"{'at least' if low_inclusive else 'above'} {low:g}"
        span += f" and below {high:g}" if high is not None else ""
        raise ValueError(f"{name}={value!r}: give a number {span}, e.g. {name}={example}")


def check_int(name: str, value: Any, *, low: int, example: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name}={value!r}: give an int of at least {low}, e.g. {name}={example}")


def check_function(fn: Any) -> None:
    if not callable(fn):
        raise TypeError(f"fn={fn!r} is not callable: pass the function whose gradient to check "
                        "first, then its inputs, e.g. check_grad(torch.sin, (x,))")


def check_arity(fn: Any, n_inputs: int) -> None:
    """Raise a TypeError that says so if ``fn`` cannot take ``n_inputs`` positional
    arguments (when Python can tell). NOTE: inspecting a signature costs more than a small
    check's every other step, so this runs only after the first call failed."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins and C functions may have none
        return
    try:
        signature.bind(*range(n_inputs))
    except TypeError as exc:
        params = [p for p in signature.parameters.values()
                  if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY,
                                                         p.POSITIONAL_OR_KEYWORD)]
        raise TypeError(
            f"fn{signature} cannot be called with the {n_inputs} input(s) given ({exc}): pass "
            f"one input per parameter, e.g. check_grad(fn, ({', '.join(p.name for p in params)}"
            f"{',' if len(params) == 1 else ''})), or bind the other arguments with a lambda"
        ) from None


def check_wrt(wrt: Any, n_inputs: int) -> list[int] | None:
    """``wrt`` as a list of distinct input indices (negative ones counted from the end)."""
    if wrt is None:
        return None
    if isinstance(wrt, (str, bytes)) or not isinstance(wrt, Sequence):
        raise TypeError(f"wrt={wrt!r}: give a list of input indices, e.g. wrt=[0]")
    found = []
    for i in wrt:
        if isinstance(i, bool) or not isinstance(i, numbers.Integral):
            raise TypeError(f"wrt={list(wrt)!r}: {i!r} is not an input index; give ints, "
                            "e.g. wrt=[0]")
        if not -n_inputs <= i < n_inputs:
            raise ValueError(
                f"wrt={list(wrt)!r}: there is no input {i}; inputs has {n_inputs} element(s), "
                f"so indices run from 0 to {n_inputs - 1}")
        found.append(int(i) % n_inputs)
    if len(set(found)) != len(found):
        raise ValueError(f"wrt={list(wrt)!r} names an input twice; give each index once")
    return found


def check_names(names: Any, n_inputs: int) -> None:
    if names is None:
        return
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise TypeError(f"names={names!r}: give one name per input, e.g. names=['x', 'w']")
    if len(names) != n_inputs:
        raise ValueError(f"names= has {len(names)} entries for {n_inputs} inputs; give one per "
                         "input")


def as_inputs(inputs: Any) -> tuple:
    """One array or a tuple/list of them, as a tuple; an empty one is refused."""
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    if not inputs:
        raise ValueError("inputs=() is empty: pass the tensors or arrays to differentiate, "
                         "e.g. check_grad(fn, (x,)) with x.requires_grad_(True)")
    return inputs


def validate(fn: Callable, inputs: tuple, *, mode: str, method: str, nondifferentiable: str,
             screen: str, eps: Any, atol: Any, rtol: Any, probes: Any, seed: Any,
             nondet_tol: Any, wrt: Any, names: Any) -> list[int] | None:
    """Every check of check_grad's arguments; returns ``wrt`` normalised."""
    check_choices(mode=mode, method=method, nondifferentiable=nondifferentiable, screen=screen)
    check_function(fn)
    check_number("eps", eps, low=0.0, high=1.0, example="1e-6")
    check_number("atol", atol, example="1e-5", low_inclusive=True)
    check_number("rtol", rtol, example="1e-3", low_inclusive=True)
    check_number("nondet_tol", nondet_tol, example="1e-12", low_inclusive=True)
    check_int("probes", probes, low=1, example="4")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed={seed!r} is a {type(seed).__name__}: give an int, e.g. seed=0")
    if method == "complex" and mode == "fast":
        raise ValueError("method='complex' runs in mode='full'; drop one of the two")
    check_names(names, len(inputs))
    return check_wrt(wrt, len(inputs))
