"""Custom autograd.Function: multiple outputs, ctx flags and saved-tensor freeing.

Each Function body is written once and built for both libraries, so the engine runs exactly
the code torch runs.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import gradcheck.ref as ref

torch = pytest.importorskip("torch")


def split_scale(m):
    """Three tensor outputs (one non-differentiable) and one non-tensor output."""

    class SplitScale(m.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, k):
            ctx.save_for_backward(x, w)
            ctx.k = k
            ctx.needs = ctx.needs_input_grad
            positive = (x > 0).to(m.int64)
            ctx.mark_non_differentiable(positive)
            return x * w, x * k, positive, "tag"

        @staticmethod
        def backward(ctx, g_prod, g_scaled, g_positive, g_tag):
            x, w = ctx.saved_tensors
            ctx.seen = (ctx.needs_input_grad, g_scaled.tolist(), g_positive is None, g_tag)
            gx = g_prod * w + g_scaled * ctx.k
            gw = g_prod * x if ctx.needs_input_grad[1] else None
            return gx, gw, None

    return SplitScale


def min_max(m, materialize=True):
    """Two outputs from one node; backward sees None for unused outputs when asked to."""

    class MinMax(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(materialize)
            lo, hi = x.argmin(), x.argmax()
            ctx.save_for_backward(x)
            ctx.picks = (lo, hi)
            return x[lo].clone(), x[hi].clone()

        @staticmethod
        def backward(ctx, g_lo, g_hi):
            (x,) = ctx.saved_tensors
            ctx.got_none = (g_lo is None, g_hi is None)
            grad = m.zeros_like(x)
            if g_lo is not None:
                grad[ctx.picks[0]] += g_lo
            if g_hi is not None:
                grad[ctx.picks[1]] += g_hi
            return grad

    return MinMax


def _split_scale_run(m, weight_requires_grad):
    fn = split_scale(m)
    x = m.tensor([1.0, -2.0, 0.5], requires_grad=True)
    w = m.tensor([3.0, 4.0, -1.0], requires_grad=weight_requires_grad)
    prod, scaled, positive, tag = fn.apply(x, w, 5.0)
    info = {
        "flags": (prod.requires_grad, scaled.requires_grad, positive.requires_grad, tag),
        "positive": positive.tolist(),
        "names": (prod.grad_fn.name(), type(scaled.grad_fn).__name__),
    }
    prod.sum().backward(retain_graph=True)  # only one output used: the other grad is zeros
    info["first"] = (x.grad.tolist(), prod.grad_fn.seen, prod.grad_fn.needs)
    (prod * 2 + scaled * 3).sum().backward()
    info["second"] = x.grad.tolist(), (w.grad.tolist() if weight_requires_grad else None)
    return info


@pytest.mark.parametrize("weight_requires_grad", [True, False])
def test_multiple_outputs_match_torch(weight_requires_grad):
    assert _split_scale_run(ref, weight_requires_grad) == _split_scale_run(
        torch, weight_requires_grad)


@pytest.mark.parametrize("materialize", [True, False])
def test_unused_output_grads_are_zeros_or_none_like_torch(materialize):
    def run(m):
        fn = min_max(m, materialize)
        x = m.tensor([2.0, -1.0, 5.0], requires_grad=True)
        lo, hi = fn.apply(x)
        (hi * 3).backward()
        return x.grad.tolist(), hi.grad_fn.got_none, (lo.item(), hi.item())

    assert run(ref) == run(torch)


def test_outputs_get_their_own_hooks_and_retained_grads():
    def run(m):
        fn = min_max(m)
        x = m.tensor([2.0, -1.0, 5.0], requires_grad=True)
        lo, hi = fn.apply(x)
        lo.retain_grad()
        hi.register_hook(lambda g: g * 10)
        (lo * 2 + hi).backward()
        return x.grad.tolist(), lo.grad.item()

    assert run(ref) == run(torch)


def test_double_backward_through_a_multi_output_function():
    def run(m):
        fn = split_scale(m)
        x = m.tensor([1.0, -2.0], requires_grad=True)
        w = m.tensor([3.0, 4.0], requires_grad=True)
        prod, scaled, _, _ = fn.apply(x * x, w, 2.0)
        (gx,) = m.autograd.grad((prod + scaled).sum(), x, create_graph=True)
        (ggx,) = m.autograd.grad(gx.sum(), x)
        return gx.tolist(), ggx.tolist()

    assert run(ref) == run(torch)


def test_saved_tensors_are_freed_after_backward_like_torch():
    def run(m):
        fn = split_scale(m)
        x = m.tensor([1.0, -2.0], requires_grad=True)
        prod, scaled, _, _ = fn.apply(x, m.tensor([3.0, 4.0]), 5.0)
        (prod + scaled).sum().backward()
        with pytest.raises(RuntimeError) as second:
            scaled.sum().backward()
        with pytest.raises(RuntimeError) as access:
            _ = prod.grad_fn.saved_tensors
        return str(second.value), str(access.value)

    engine, real = run(ref), run(torch)
    assert engine == real


def test_wrong_number_of_gradients_is_torchs_error():
    def build(m):
        class Bad(m.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * y, x + y

            @staticmethod
            def backward(ctx, ga, gb):
                return ga

        return Bad

    def run(m):
        x = m.tensor([1.0], requires_grad=True)
        a, b = build(m).apply(x, m.tensor([2.0]))
        (a + b).sum().backward()

    with pytest.raises(RuntimeError) as expected:
        run(torch)
    with pytest.raises(RuntimeError, match=re.escape(str(expected.value))):
        run(ref)


def test_no_grad_returns_forward_outputs_untouched():
    def run(m):
        x = m.tensor([1.0, -2.0], requires_grad=True)
        with m.no_grad():
            prod, scaled, positive, tag = split_scale(m).apply(x, m.tensor([3.0, 4.0]), 5.0)
        return [t.requires_grad for t in (prod, scaled, positive)], tag, np.asarray(
            scaled.detach()).tolist()

    assert run(ref) == run(torch)
