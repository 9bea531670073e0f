"""A catalogue of planted gradient bugs: one row per bug, usable with numpy and torch.

Each row holds a forward, its right VJP and a buggy VJP, written against an array module ``xp``
(numpy or torch), plus seeded inputs. The tests assert that every buggy row is caught and every
right row passes; the benchmark reuses the rows. ``framework_op`` turns a row into a
custom ``autograd.Function`` (torch or gradcheck.ref) whose backward is the chosen VJP.

>>> import numpy as np
>>> from gradcheck.checks import check_grad
>>> fn, inputs, vjp = numpy_case(ROWS["flipped sign"], buggy=False)
>>> check_grad(fn, inputs, vjp=vjp).passed
True
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Row:
    forward: Callable
    right: Callable
    buggy: Callable
    inputs: Callable  # rng -> tuple of float64 numpy arrays


def _softmax(xp, x):
    e = xp.exp(x - x.max())
    return e / e.sum()


def _wrong_for_negatives(xp, g, x):
    return (g * xp.where(x > 0, 3 * x * x, 2.9 * x * x),)


def _one_wrong_of_1000(xp, g, x):
    scale = xp.ones_like(x)
    scale[417] = 1.01
    return (g * (1 - xp.tanh(x) ** 2) * scale,)


def _one_entry_25_percent_off(xp, g, x):
    # The bug torch.autograd.gradcheck's fast mode misses: one entry of a linear map's
    # backward is 2.5 instead of 2.
    scale = xp.ones_like(x)
    scale[417] = 1.25
    return (2 * g * scale,)


ROWS: dict[str, Row] = {
    "flipped sign": Row(
        lambda xp, x: xp.sin(x),
        lambda xp, g, x: (g * xp.cos(x),),
        lambda xp, g, x: (-g * xp.cos(x),),
        lambda rng: (rng.uniform(-2, 2, 6),),
    ),
    "missing factor": Row(
        lambda xp, x: x * x,
        lambda xp, g, x: (2 * g * x,),
        lambda xp, g, x: (g * x,),
        lambda rng: (rng.uniform(-2, 2, 6),),
    ),
    "missing transpose": Row(
        lambda xp, a, b: a @ b,
        lambda xp, g, a, b: (g @ b.T, a.T @ g),
        lambda xp, g, a, b: (g @ b, a.T @ g),
        lambda rng: (rng.standard_normal((4, 4)), rng.standard_normal((4, 4))),
    ),
    "wrong broadcast reduction": Row(
        lambda xp, x, b: x * b,
        lambda xp, g, x, b: (g * b, (g * x).sum(0)),
        lambda xp, g, x, b: (g * b, (g * x).sum(1)),
        lambda rng: (rng.standard_normal((4, 4)), rng.standard_normal(4)),
    ),
    "softmax missing its second term": Row(
        _softmax,
        lambda xp, g, x: (_softmax(xp, x) * (g - (g * _softmax(xp, x)).sum()),),
        lambda xp, g, x: (_softmax(xp, x) * g,),
        lambda rng: (rng.standard_normal(7),),
    ),
    "one wrong element of 1000": Row(
        lambda xp, x: xp.tanh(x),
        lambda xp, g, x: (g * (1 - xp.tanh(x) ** 2),),
        _one_wrong_of_1000,
        lambda rng: (rng.standard_normal(1000),),
    ),
    "one entry of 1000 25% off": Row(
        lambda xp, x: 2 * x,
        lambda xp, g, x: (2 * g,),
        _one_entry_25_percent_off,
        lambda rng: (rng.standard_normal(1000),),
    ),
    "wrong only for negative inputs": Row(
        lambda xp, x: x * x * x,
        lambda xp, g, x: (3 * g * x * x,),
        _wrong_for_negatives,
        lambda rng: (rng.uniform(-2, 2, 8),),
    ),
    "a 0.1% relative error": Row(
        lambda xp, x: xp.exp(x),
        lambda xp, g, x: (g * xp.exp(x),),
        lambda xp, g, x: (1.001 * g * xp.exp(x),),
        lambda rng: (rng.uniform(-1, 1, 6),),
    ),
    "the second input's gradient wrong": Row(
        lambda xp, x, y: x * y + xp.sin(y),
        lambda xp, g, x, y: (g * y, g * (x + xp.cos(y))),
        lambda xp, g, x, y: (g * y, g * (x - xp.cos(y))),
        lambda rng: (rng.standard_normal(5), rng.standard_normal(5)),
    ),
}


def numpy_case(row: Row, buggy: bool, seed: int = 0):
    """(fn, inputs, vjp=...) arguments for :func:`check_grad` with numpy arrays."""
    inputs = row.inputs(np.random.default_rng(seed))
    vjp = row.buggy if buggy else row.right
    return (lambda *a: row.forward(np, *a)), inputs, (lambda g, *a: vjp(np, g, *a))


def framework_op(module, row: Row, buggy: bool) -> Callable:
    """The row as a custom ``autograd.Function`` of ``module`` (torch or gradcheck.ref)."""
    vjp = row.buggy if buggy else row.right

    class PlantedOp(module.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            ctx.save_for_backward(*args)
            return row.forward(module, *args)

        @staticmethod
        def backward(ctx, grad):
            return tuple(vjp(module, grad, *ctx.saved_tensors))

    return PlantedOp.apply


def framework_case(module, row: Row, buggy: bool, seed: int = 0, dtype: str = "float64"):
    """(fn, inputs) for :func:`check_grad` with ``module`` tensors that require grad."""
    inputs = tuple(
        module.tensor(a, dtype=getattr(module, dtype), requires_grad=True)
        for a in row.inputs(np.random.default_rng(seed))
    )
    return framework_op(module, row, buggy), inputs


def torch_op(row: Row, buggy: bool) -> Callable:
    """The row as a ``torch.autograd.Function`` whose backward is the chosen VJP."""
    import torch

    return framework_op(torch, row, buggy)


def torch_case(row: Row, buggy: bool, seed: int = 0, dtype: str = "float64"):
    """(fn, inputs) with torch tensors that require grad."""
    import torch

    return framework_case(torch, row, buggy, seed, dtype)
