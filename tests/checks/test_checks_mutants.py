"""Mutated backwards of real torch ops are caught in both modes at every seed; the correct
twins pass.

Each op is one row: a function of square float64 (or complex128) inputs. A mutant wraps the
op in an autograd.Function whose backward takes torch's own VJP and breaks it one way:
scaled by 1 + 1e-4, sign flipped, transposed, one entry of 1024 off by 1%, conj dropped
(complex rows), or 1% off only where the first input is negative. The twin is the same
wrapper with the VJP left alone, so a pass or a failure comes from the mutation only.
"""
from __future__ import annotations

import numpy as np
import pytest

from gradcheck.checks import check_grad

torch = pytest.importorskip("torch")
F = torch.nn.functional

SEEDS = (0, 1, 2)
SIDE = 8  # inputs are SIDE x SIDE; "one entry of 1024" uses 32 x 32

# name -> (function of the inputs, number of inputs)
REAL_OPS = {
    "exp": (torch.exp, 1),
    "tanh": (torch.tanh, 1),
    "sin": (torch.sin, 1),
    "sigmoid": (torch.sigmoid, 1),
    "softplus": (F.softplus, 1),
    "softmax": (lambda x: torch.softmax(x, -1), 1),
    "log_softmax": (lambda x: torch.log_softmax(x, 0), 1),
    "cumsum": (lambda x: torch.cumsum(x, 1), 1),
    "layer_norm": (lambda x: F.layer_norm(x, x.shape[-1:]), 1),
    "mm": (torch.mm, 2),
    "mul": (torch.mul, 2),
    "atan2": (torch.atan2, 2),
}
COMPLEX_OPS = {
    "complex exp": (torch.exp, 1),
    "complex square": (lambda z: z * z, 1),
    "complex mm": (torch.mm, 2),
}


def _one_entry(g, x):
    g = g.clone()
    g.view(-1)[417] *= 1.01
    return g


def _missing_conj(vjp, g, xs):
    # for a holomorphic f torch's grad is g * conj(f'); without the conj it is g * f'
    return [None if r is None else r.conj() for r in vjp(g.conj(), xs)]


MUTATIONS = {
    "scaled 1e-4": lambda vjp, g, xs: [r * (1 + 1e-4) for r in vjp(g, xs)],
    "sign flip": lambda vjp, g, xs: [-r for r in vjp(g, xs)],
    "transpose": lambda vjp, g, xs: [r.T.contiguous() for r in vjp(g, xs)],
    "one entry of 1024": lambda vjp, g, xs: [_one_entry(r, x) for r, x in zip(vjp(g, xs), xs)],
    "wrong for negatives": lambda vjp, g, xs: [
        torch.where(xs[0].real < 0, 1.01 * r, r) for r in vjp(g, xs)],
}


def _vjp_of(op):
    def vjp(g, xs):
        with torch.enable_grad():
            leaves = [x.detach().requires_grad_(True) for x in xs]
            return list(torch.autograd.grad(op(*leaves), leaves, g))
    return vjp


def wrapped(op, mutation=None):
    """``op`` as an autograd.Function whose backward is torch's VJP, mutated if asked."""
    vjp = _vjp_of(op)

    class Mutant(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *xs):
            ctx.save_for_backward(*xs)
            return op(*xs)

        @staticmethod
        def backward(ctx, g):
            xs = ctx.saved_tensors
            return tuple(vjp(g, xs) if mutation is None else mutation(vjp, g, xs))

    return Mutant.apply


def inputs_for(count, side, seed, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(side, side, generator=gen, dtype=dtype).requires_grad_(True)
                 for _ in range(count))


# NOTE: a dense op's full Jacobian at 1024 elements costs 1024 single VJPs through the
# wrapper; the elementwise rows carry that mutant
ELEMENTWISE = {"exp", "tanh", "sin", "sigmoid", "softplus", "mul", "atan2"}


def _cases():
    for name, (op, count) in REAL_OPS.items():
        for mutation in MUTATIONS:
            if mutation != "one entry of 1024" or name in ELEMENTWISE:
                yield name, op, count, mutation, torch.float64
    for name, (op, count) in COMPLEX_OPS.items():
        for mutation in ("missing conj", "sign flip", "scaled 1e-4"):
            yield name, op, count, mutation, torch.complex128


CASES = list(_cases())


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize(("name", "op", "count", "mutation", "dtype"), CASES,
                         ids=[f"{c[0]}-{c[3]}" for c in CASES])
def test_mutant_is_caught(name, op, count, mutation, dtype, mode):
    side = 32 if mutation == "one entry of 1024" else SIDE
    broken = _missing_conj if mutation == "missing conj" else MUTATIONS[mutation]
    for seed in SEEDS:
        xs = inputs_for(count, side, seed, dtype)
        found = check_grad(wrapped(op, broken), xs, mode=mode, seed=seed, taylor=False,
                           raise_on_failure=False)
        assert not found.passed, f"{name} {mutation} missed in {mode} mode at seed {seed}"


TWINS = [(name, op, count, torch.float64) for name, (op, count) in REAL_OPS.items()] + [
    (name, op, count, torch.complex128) for name, (op, count) in COMPLEX_OPS.items()]


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize(("name", "op", "count", "dtype"), TWINS, ids=[t[0] for t in TWINS])
def test_correct_twin_passes(name, op, count, dtype, mode):
    sides = (SIDE, 32) if name in ELEMENTWISE else (SIDE,)
    for seed in SEEDS:
        for side in sides:
            xs = inputs_for(count, side, seed, dtype)
            twin = check_grad(wrapped(op), xs, mode=mode, seed=seed, taylor=False,
                              raise_on_failure=False)
            assert twin.passed and not twin.nondifferentiable, (
                f"{name} correct twin failed in {mode} mode at seed {seed}:\n{twin}")


def test_missing_conj_report_names_the_imaginary_part():
    z = inputs_for(1, 3, 0, torch.complex128)
    result = check_grad(wrapped(torch.exp, _missing_conj), z, raise_on_failure=False)
    worst = result.worst()
    assert not result.passed and worst is not None
    # complex inputs and outputs are real pairs on a last axis: [..., 0] real, [..., 1] imag
    assert len(worst.index) == 3 and len(worst.out_index) == 3
    assert 1 in (worst.index[-1], worst.out_index[-1])


def test_complex_functions_agree_with_torch_gradcheck():
    gen = torch.Generator().manual_seed(3)
    z = torch.randn(4, dtype=torch.complex128, generator=gen, requires_grad=True)
    x = torch.randn(4, dtype=torch.float64, generator=gen, requires_grad=True)
    functions = [
        lambda z, x: torch.abs(z) * x,          # complex in, real out
        lambda z, x: torch.polar(x.abs() + 1, x) * z,  # real and complex in, complex out
        lambda z, x: torch.fft.fft(z * x),
        lambda z, x: (z.conj() * z).real + x,   # not holomorphic
    ]
    for fn in functions:
        for mode in ("full", "fast"):
            assert torch.autograd.gradcheck(fn, (z, x), fast_mode=mode == "fast")
            assert check_grad(fn, (z, x), mode=mode).passed
    np.testing.assert_equal(z.grad, None)
