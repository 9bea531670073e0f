"""``torch.autograd.gradcheck``/``gradgradcheck`` (finite differences against the engine's
backward, torch's slow mode) and ``torch.autograd.functional`` (``jacobian``, ``hessian``,
``vjp``, ``jvp``, ``vhp``, ``hvp``), built on ``autograd.grad``.

>>> import gradcheck.ref as torch
>>> x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
>>> torch.autograd.gradcheck(lambda a: a ** 2, (x,))
True
>>> torch.autograd.functional.jacobian(lambda a: a ** 2, x)
tensor([[2., 0.],
        [0., 4.]], dtype=torch.float64)
"""
from __future__ import annotations

import sys
import types
from typing import Any

import numpy as np

from gradcheck import ref as torch


class GradcheckError(RuntimeError):
    """torch.autograd.gradcheck.GradcheckError."""


def _as_tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _outputs(fn: Any, inputs: tuple) -> tuple:
    return tuple(o for o in _as_tuple(fn(*inputs)) if isinstance(o, torch.Tensor))


def _numerical(fn: Any, inputs: tuple, i: int, k: int, eps: float) -> np.ndarray:
    """d output k / d input i by central differences, one column per input element."""
    x = inputs[i]
    flat = x.detach().reshape(-1)
    columns = []
    for j in range(flat.numel()):
        values = []
        for step in (eps, -eps):
            moved = flat.clone()
            moved[j] += step
            args = list(inputs)
            # the function may itself differentiate (gradgradcheck): keep requires_grad
            args[i] = moved.reshape(x.shape).requires_grad_(x.requires_grad)
            values.append(_outputs(fn, tuple(args))[k].detach().numpy().reshape(-1)
                          .astype(np.float64))
        columns.append((values[0] - values[1]) / (2 * eps))
    return np.stack(columns, 1) if columns else np.zeros((0, 0))


def _analytical(outputs: tuple, inputs: tuple, i: int, k: int) -> np.ndarray:
    out = outputs[k]
    rows = []
    for j in range(out.numel()):
        seed = torch.zeros_like(out).reshape(-1)
        seed[j] = 1
        grad = torch.autograd.grad(out, inputs[i], seed.reshape(out.shape), retain_graph=True,
                                   allow_unused=True)[0]
        rows.append(np.zeros(inputs[i].numel()) if grad is None else
                    grad.detach().numpy().reshape(-1).astype(np.float64))
    return np.stack(rows, 0) if rows else np.zeros((0, inputs[i].numel()))


def gradcheck(func: Any, inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, **kwargs: Any) -> bool:
    """Compare the backward's Jacobian with central differences for every differentiable
    input; True, or GradcheckError (False with ``raise_exception=False``)."""
    inputs = _as_tuple(inputs)
    outputs = _outputs(func, inputs)
    for i, x in enumerate(inputs):
        if not (isinstance(x, torch.Tensor) and x.requires_grad):
            continue
        for k in range(len(outputs)):
            numerical = _numerical(func, inputs, i, k, eps)
            analytical = _analytical(outputs, inputs, i, k) if outputs[k].requires_grad else \
                np.zeros_like(numerical)
            if not np.allclose(analytical, numerical, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(
                    f"Jacobian mismatch for output {k} with respect to input {i},\n"
                    f"numerical:{torch.tensor(numerical.T, dtype=x.dtype)!r}\n"
                    f"analytical:{torch.tensor(analytical.T, dtype=x.dtype)!r}\n")
    return True


def gradgradcheck(func: Any, inputs: Any, grad_outputs: Any = None, **kwargs: Any) -> bool:
    """gradcheck of the first derivative (a vector-Jacobian product with fixed upstream)."""
    inputs = _as_tuple(inputs)
    outputs = _outputs(func, inputs)
    if grad_outputs is None:
        generator = torch.Generator().manual_seed(0)
        grad_outputs = tuple(torch.randn(*o.shape, dtype=o.dtype, generator=generator)
                             for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.requires_grad]

    def first_derivative(*args: Any) -> tuple:
        outs = _outputs(func, args)
        grads = torch.autograd.grad(outs, [args[i] for i in diff], grad_outputs,
                                    create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivative, inputs, **kwargs)


# ----- torch.autograd.functional ---------------------------------------------------------------
def _leaves(inputs: Any) -> tuple:
    return tuple(x.detach().requires_grad_(True) for x in _as_tuple(inputs))


def _unpack(values: tuple, like: Any) -> Any:
    return values if isinstance(like, (tuple, list)) else values[0]


def vjp(func: Any, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """(func(inputs), v^T J)."""
    leaves = _leaves(inputs)
    with torch.enable_grad():
        out = func(*leaves)
        outs = _as_tuple(out)
        v = _as_tuple(v) if v is not None else tuple(torch.ones_like(o) for o in outs)
        grads = torch.autograd.grad(outs, leaves, v, create_graph=create_graph,
                                    allow_unused=True)
    grads = tuple(torch.zeros_like(x) if g is None else g for g, x in zip(grads, leaves))
    return (out if create_graph else _detach(out)), _unpack(grads, inputs)


def jacobian(func: Any, inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """d func / d inputs, shaped output.shape + input.shape (nested for tuples)."""
    leaves = _leaves(inputs)
    with torch.enable_grad():
        raw = func(*leaves)
        outs = _as_tuple(raw)
        table = []
        for out in outs:
            rows = [[] for _ in leaves]
            flat = out.reshape(-1)
            for j in range(flat.numel()):
                grads = torch.autograd.grad(flat[j], leaves, retain_graph=True,
                                            create_graph=create_graph, allow_unused=True)
                for r, (g, x) in enumerate(zip(grads, leaves)):
                    rows[r].append(torch.zeros_like(x) if g is None else g)
            table.append(tuple(
                (torch.stack(r, 0) if r else torch.zeros(0, *x.shape, dtype=x.dtype)).reshape(
                    *out.shape, *x.shape) for r, x in zip(rows, leaves)))
    per_output = [_unpack(row, inputs) for row in table]
    result = tuple(per_output) if isinstance(raw, (tuple, list)) else per_output[0]
    return result if create_graph else _detach(result)


def hessian(func: Any, inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Jacobian of the gradient of a scalar function."""
    def gradient(*args: Any) -> Any:
        grads = torch.autograd.grad(func(*args), args, create_graph=True, allow_unused=True)
        grads = tuple(torch.zeros_like(x) if g is None else g for g, x in zip(grads, args))
        return _unpack(grads, inputs)

    return jacobian(gradient, inputs, create_graph=create_graph)


def jvp(func: Any, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """(func(inputs), J v), by the double-vjp trick."""
    leaves = _leaves(inputs)
    v = _as_tuple(v) if v is not None else tuple(torch.ones_like(x) for x in leaves)
    with torch.enable_grad():
        out = func(*leaves)
        outs = _as_tuple(out)
        dummies = tuple(torch.zeros_like(o).requires_grad_(True) for o in outs)
        grads = torch.autograd.grad(outs, leaves, dummies, create_graph=True,
                                    allow_unused=True)
        pairs = [(g, vi) for g, vi in zip(grads, v) if g is not None]
        result = torch.autograd.grad([g for g, _ in pairs], dummies, [vi for _, vi in pairs],
                                     create_graph=create_graph, allow_unused=True)
    result = tuple(torch.zeros_like(o) if r is None else r for r, o in zip(result, outs))
    return _detach(out), _unpack(result if create_graph else _detach(result), out)


def vhp(func: Any, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """(func(inputs), v^T H) for a scalar function."""
    leaves = _leaves(inputs)
    with torch.enable_grad():
        out = func(*leaves)
        grads = torch.autograd.grad(out, leaves, create_graph=True, allow_unused=True)
        v = _as_tuple(v) if v is not None else tuple(torch.ones_like(x) for x in leaves)
        pairs = [(g, vi) for g, vi in zip(grads, v) if g is not None]
        second = torch.autograd.grad([g for g, _ in pairs], leaves, [vi for _, vi in pairs],
                                     create_graph=create_graph, allow_unused=True)
    second = tuple(torch.zeros_like(x) if s is None else s for s, x in zip(second, leaves))
    return _detach(out), _unpack(second if create_graph else _detach(second), inputs)


hvp = vhp  # for the twice-differentiable scalar functions these are the same


def _detach(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, (tuple, list)):
        return type(value)(_detach(v) for v in value)
    return value


def install(autograd: types.ModuleType) -> None:
    """Attach gradcheck, the functional submodule and the profiler to torch.autograd."""
    from gradcheck.ref import profiler

    functional = types.ModuleType("gradcheck.ref.autograd.functional", "torch.autograd.functional")
    for fn in (vjp, jvp, jacobian, hessian, vhp, hvp):
        setattr(functional, fn.__name__, fn)
    sys.modules[functional.__name__] = functional
    autograd_profiler = types.ModuleType("gradcheck.ref.autograd.profiler",
                                         "torch.autograd.profiler")
    autograd_profiler.record_function = profiler.record_function
    autograd_profiler.profile = profiler.profile
    autograd_profiler.emit_nvtx = profiler.emit_nvtx
    autograd_profiler.EventList = profiler.EventList
    autograd._profiler_enabled = lambda: False  # the engine's profile records nothing
    sys.modules[autograd_profiler.__name__] = autograd_profiler
    autograd.functional, autograd.profiler = functional, autograd_profiler
    autograd.gradcheck, autograd.gradgradcheck = gradcheck, gradgradcheck
    autograd.GradcheckError = GradcheckError
    autograd._is_checkpoint_valid = lambda: True
