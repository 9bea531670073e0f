"""The checks torch.autograd.gradcheck also makes, besides comparing values.

A backward must be deterministic, must map a zero grad_output to zero grads, and must return
grads with the shapes and dtypes of their inputs. Each failure is a sentence naming the input.
"""
from __future__ import annotations

import numpy as np

from gradcheck.checks.target import Target


def backward_problems(target: Target, rng: np.random.Generator, nondet_tol: float):
    """Problems found with the VJP itself, whether every grad has its input's shape, and
    the first VJP made, (grad_outputs, grads), for fast mode to reuse."""
    problems: list[str] = [
        f"fn changed {target.input_names[i]} in place (first at {list(index)}): a function "
        "must not modify its inputs (copy before an in-place op: x = x - m, not x -= m)"
        for i, index in target.changed_inputs]
    shapes_ok = True
    gos = [rng.standard_normal(f.shape) for f in target.f0]
    first = target.vjp(gos)
    second = target.vjp(gos)
    zero = target.vjp([np.zeros_like(f) for f in target.f0])
    for pos, i in enumerate(target.diff):
        name = target.input_names[i]
        expected_dtype = target.grad_np_dtypes[pos]
        g = first[pos]
        if g is None:
            continue
        if g.shape != target.x[i].shape:
            problems.append(
                f"grad of {name} has shape {tuple(g.shape)} but {name} has shape "
                f"{tuple(target.x[i].shape)}; the backward must return one grad per input element"
            )
            shapes_ok = False
            continue
        if g.dtype != expected_dtype:
            problems.append(
                f"grad of {name} has dtype {g.dtype} but {name} has dtype {expected_dtype}; "
                "cast the grad back to the input's dtype in the backward"
            )
        if second[pos] is not None:
            a, b = g.astype(np.float64), second[pos].astype(np.float64)
            # NOTE: NaN in both runs at the same place (a NaN input) is the same result
            same_nan = np.isnan(a) & np.isnan(b)
            gap = float(np.max(np.where(same_nan, 0.0, np.abs(a - b)), initial=0.0))
            if not gap <= nondet_tol:
                problems.append(
                    f"backward is not deterministic for {name}: two runs with the same "
                    f"grad_output differ by {gap:.3g} > nondet_tol={nondet_tol:g}; pass a "
                    "larger nondet_tol= if this is expected (atomic adds); a backward that changes "
                    "a tensor it saved in place (grad *= grad_output) does this too"
                )
        z = zero[pos]
        if z is not None and np.any(z != 0):
            problems.append(
                f"a zero grad_output gives a nonzero grad for {name} (max "
                f"{float(np.max(np.abs(z))):.3g}); the backward must be linear in grad_output"
            )
    return problems, shapes_ok, (gos, first)
