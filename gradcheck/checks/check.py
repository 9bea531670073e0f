"""check_grad and check_gradgrad: the public entry points of the checker."""
from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from gradcheck.checks import arguments
from gradcheck.checks import numeric as num
from gradcheck.checks.adapters import adapter_for
from gradcheck.checks.errors import GradcheckError, user_error
from gradcheck.checks.fast import DEFAULT_PROBES, run_fast
from gradcheck.checks.full import run_full
from gradcheck.checks.numeric import taylor_order
from gradcheck.checks.result import GradcheckResult, GradientInconclusive, GradientMismatch
from gradcheck.checks.sanity import backward_problems
from gradcheck.checks.target import Target
from gradcheck.checks.verdict import inconclusive_reasons


class NondifferentiableWarning(UserWarning):
    """Emitted when nondifferentiable="warn" and the check met a kink."""


def check_grad(
    fn: Callable, inputs: Any, *, mode: str = "full", eps: float | None = None,
    atol: float | None = None, rtol: float | None = None, probes: int | None = None,
    seed: int = 0, nondifferentiable: str = "warn", raise_on_failure: bool = True,
    vjp: Callable | None = None, method: str = "central", wrt: Sequence[int] | None = None,
    names: Sequence[str] | None = None, nondet_tol: float = 0.0, batch: bool = True,
    taylor: bool | None = None, screen: str = "one-sided", allow_inconclusive: bool = False,
) -> GradcheckResult:
    """Check the backward of ``fn`` against finite differences at ``inputs``.

    torch inputs are checked w.r.t. those with ``requires_grad``; JAX and numpy inputs w.r.t.
    every floating input (or ``wrt``). Numpy functions need ``vjp(grad_output, *inputs)``.
    The verdict is "passed", "failed" or "inconclusive"; with ``raise_on_failure`` a failure
    raises ``GradientMismatch`` and an inconclusive check ``GradientInconclusive`` (unless
    ``allow_inconclusive``). An exception from ``fn`` or its backward comes out as a
    ``GradcheckError`` that says where the check was.

    >>> import numpy as np
    >>> check_grad(np.tanh, np.linspace(-1, 1, 5), vjp=lambda g, x: (g / np.cosh(x) ** 2,)).passed
    True
    """
    inputs = arguments.as_inputs(inputs)
    wrt = arguments.validate(
        fn, inputs, mode=mode, method=method, nondifferentiable=nondifferentiable,
        screen=screen, eps=eps, atol=atol, rtol=rtol, probes=probes, seed=seed,
        nondet_tol=nondet_tol, wrt=wrt, names=names)
    started = time.perf_counter()
    adapter = adapter_for(inputs, fn=fn, wrt=wrt, vjp=vjp)
    if not adapter.diff:
        raise ValueError(_nothing_to_differentiate(adapter))
    try:
        target = Target(adapter, names, batch)
    except GradcheckError as err:
        if isinstance(err.__cause__, TypeError):
            arguments.check_arity(fn, len(inputs))
        raise
    result = GradcheckResult(mode=mode, method=method, framework=adapter.name,
                             eval_dtype=target.eval_name)
    rng = np.random.default_rng(seed)
    result.problems, shapes_ok, first_vjp = backward_problems(target, rng, nondet_tol)
    # with a wrongly shaped grad, values cannot be compared; the shape problem is the report
    if method == "complex" and (target.complex_inputs or target.complex_outputs):
        raise ValueError("method='complex' needs real inputs and outputs; this function has "
                         "complex ones: use method='central'")
    # NOTE: with no element to perturb or no output element to see it, the Jacobian is
    # empty and there is nothing to compare (torch's gradcheck passes such inputs too)
    if shapes_ok and target.f0 and any(target.x[i].size for i in target.diff):
        if mode == "full":
            run_full(result, target, method, eps, atol, rtol, one_sided=screen == "one-sided")
        else:
            run_fast(result, target, probes or DEFAULT_PROBES, seed, atol, rtol, first_vjp)
        if taylor or (taylor is None and mode == "full"):
            with target.during("forward", None, "of the Taylor test (every input moved along "
                               "a random direction)"):
                result.taylor_order = _taylor(target, rng)
    _apply_policy(result, nondifferentiable)
    result.inconclusive = inconclusive_reasons(result, target)
    result.verdict = "failed" if not result.passed else (
        "inconclusive" if result.inconclusive else "passed")
    result.passed = result.verdict == "passed"
    result.evaluations = dict(target.counts)
    result.seconds = time.perf_counter() - started
    if raise_on_failure and result.verdict == "failed":
        raise GradientMismatch(result)
    if raise_on_failure and result.verdict == "inconclusive" and not allow_inconclusive:
        raise GradientInconclusive(result)
    return result


def _nothing_to_differentiate(adapter) -> str:
    """Why no input is differentiated, with a fix that the framework allows."""
    whole = [i for i, x in enumerate(adapter.inputs)
             if adapter.dtype_name(x).startswith(("int", "uint", "bool"))]
    if whole:
        names = ", ".join(f"input {i} ({adapter.dtype_name(adapter.inputs[i])})" for i in whole)
        return (f"no input to differentiate: {names} cannot be differentiated, as gradients "
                f"exist only for floating dtypes; convert it first, e.g. {adapter.float_hint()}")
    return ("no input to differentiate: set requires_grad=True on a torch input "
            "(x.requires_grad_()), or pass wrt=[...] with the indices of the inputs to check")


def check_gradgrad(fn: Callable, inputs: Any, grad_outputs: Any = None, **options: Any):
    """Second order: check the gradient of the VJP w.r.t. the inputs and the grad_outputs.

    ``grad_outputs`` defaults to seeded standard normal arrays; options are those of
    :func:`check_grad`.

    >>> import torch
    >>> x = torch.tensor([0.3, -0.7], dtype=torch.float64, requires_grad=True)
    >>> check_gradgrad(torch.tanh, x).passed
    True
    """
    inputs = arguments.as_inputs(inputs)
    arguments.check_function(fn)
    wrt = arguments.check_wrt(options.pop("wrt", None), len(inputs))
    adapter = adapter_for(inputs, fn=fn, wrt=wrt, vjp=options.get("vjp"))
    try:
        outputs = adapter.output_items(adapter.call(list(adapter.inputs)))
    except Exception as exc:  # noqa: BLE001 - the user's function may raise anything
        if isinstance(exc, TypeError):
            arguments.check_arity(fn, len(inputs))
        raise user_error(exc, fn, "forward", "at the given inputs, before building the "
                         "second-order check") from exc
    first = adapter.first_order(len(outputs))
    if grad_outputs is None:
        rng = np.random.default_rng(options.get("seed", 0) + 1)
        grad_outputs = [rng.standard_normal(tuple(o.shape)) for o in outputs]
    grad_outputs = list(grad_outputs) if isinstance(grad_outputs, (tuple, list)) else [
        grad_outputs]
    # grad_outputs take their outputs' dtypes, so the VJP is computed in the tested dtype
    gos = [adapter.differentiable(np.asarray(adapter.to_numpy(g), dtype=np.float64), o)
           for g, o in zip(grad_outputs, outputs)]
    names = [f"input {i}" for i in range(len(inputs))] + [
        f"grad_output {k}" for k in range(len(gos))]
    wrt = list(adapter.diff) + [len(inputs) + k for k in range(len(gos))]
    return check_grad(first, list(adapter.inputs) + gos, names=names, wrt=wrt, **options)


def _apply_policy(result: GradcheckResult, policy: str) -> None:
    if result.problems:
        result.passed = False
    if not result.nondifferentiable or policy == "ignore":
        return
    points = ", ".join(f"{n}{list(i)}" for n, i in result.nondifferentiable[:5])
    if policy == "fail":
        result.passed = False
        result.problems.append(
            f"{len(result.nondifferentiable)} non-differentiable point(s) ({points}); "
            "move the inputs away from kinks or pass nondifferentiable='warn'"
        )
    else:
        warnings.warn(
            f"gradient check met {len(result.nondifferentiable)} non-differentiable point(s): "
            f"{points}; they are not counted as mismatches", NondifferentiableWarning,
            stacklevel=3,
        )


def _taylor(target: Target, rng: np.random.Generator) -> float | None:
    """Remainder order of <v, f(x + t w)> along a random line; ~2 when the VJP is right."""
    ws = {i: rng.standard_normal(target.x[i].shape) * num.input_scale(target.x[i])
          for i in target.diff}
    vs = [rng.standard_normal(f.shape) for f in target.f0]
    grads = target.vjp(vs)
    slope = sum(float(np.dot(np.asarray(g, np.float64).ravel(), ws[i].ravel()))
                for i, g in zip(target.diff, grads) if g is not None)
    ts = 1e-2 * 0.5 ** np.arange(6)
    phis = []
    for t in ts:
        arrays = [x if x is None or i not in ws else x + t * ws[i] for i, x in enumerate(target.x)]
        phis.append(sum(float(np.dot(v.ravel(), f.ravel().real))
                        for v, f in zip(vs, target.evaluate(arrays))))
    phi0 = sum(float(np.dot(v.ravel(), f.ravel())) for v, f in zip(vs, target.f0))
    return taylor_order(phi0, np.array(phis), ts, slope, target.eval_eps)
