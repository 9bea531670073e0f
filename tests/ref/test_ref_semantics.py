"""The autograd semantics list, item by item, run on the engine and on torch side by side.

Error and warning texts are taken from real torch inside each test, so the two cannot drift.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import gradcheck.ref as ref

torch = pytest.importorskip("torch")
BOTH = pytest.mark.parametrize("m", [ref, torch], ids=["engine", "torch"])


def torch_error(fn) -> str:
    """The message torch raises for ``fn(torch)``."""
    with pytest.raises(Exception) as info:
        fn(torch)
    return str(info.value)


def assert_same_error(fn, kind=RuntimeError):
    text = torch_error(fn)
    with pytest.raises(kind, match=re.escape(text)):
        fn(ref)


def torch_warning(fn) -> str:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(torch)
    return str(caught[0].message).split(" (Triggered internally")[0]


# ----- accumulation ---------------------------------------------------------------------------
@BOTH
def test_accumulation_demo_gives_12_then_24_then_0(m):
    x = m.tensor(2.0, requires_grad=True)
    z = 3 * x ** 2
    z.backward(retain_graph=True)
    first = x.grad.item()
    z.backward(retain_graph=True)
    second = x.grad.item()
    x.grad.zero_()
    assert (first, second, x.grad.item()) == (12.0, 24.0, 0.0)


@BOTH
def test_accumulation_is_in_place_and_never_aliases_upstream(m):
    x = m.tensor([1.0, 2.0], requires_grad=True)
    upstream = m.tensor([5.0, 7.0])
    x.backward(upstream)
    assert x.grad is not upstream
    assert x.grad.tolist() == [5.0, 7.0]
    grad_object = x.grad
    (x * 1).backward(upstream)
    assert x.grad is grad_object and grad_object.tolist() == [10.0, 14.0]
    assert upstream.tolist() == [5.0, 7.0]


def test_engine_grad_objects_match_torch_identity_behaviour():
    def run(m):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        (x * 2).sum().backward()
        first = x.grad
        (x * 3).sum().backward()
        return first is x.grad, x.grad.tolist()

    assert run(ref) == run(torch)


# ----- freed graphs ---------------------------------------------------------------------------
def _twice(build):
    def fn(m):
        x = m.tensor([2.0, 3.0], requires_grad=True)
        out = build(m, x).sum()
        out.backward()
        out.backward()
        return x.grad.tolist()

    return fn


@pytest.mark.parametrize("name,build", [
    ("mul_scalar", lambda m, x: x * 2), ("square", lambda m, x: x * x),
    ("exp", lambda m, x: x.exp()), ("relu", lambda m, x: x.relu()),
    ("div", lambda m, x: x / 2), ("index_tensor", lambda m, x: x[m.tensor([0, 0])]),
])
def test_second_backward_through_saved_tensors_raises_torchs_error(name, build):
    assert_same_error(_twice(build))


@pytest.mark.parametrize("name,build", [
    ("add", lambda m, x: x + 1), ("neg", lambda m, x: -x), ("view", lambda m, x: x.view(2, 1)),
    ("mean", lambda m, x: x.mean()), ("slice", lambda m, x: x[0]),
])
def test_second_backward_without_saved_tensors_accumulates_again(name, build):
    assert _twice(build)(ref) == _twice(build)(torch)


# ----- backward errors ------------------------------------------------------------------------
def test_non_scalar_backward_needs_gradient():
    assert_same_error(lambda m: (m.ones(3, requires_grad=True) * 2).backward())


def test_backward_on_tensor_without_grad():
    assert_same_error(lambda m: m.ones(3).sum().backward())


def test_backward_gradient_shape_mismatch():
    assert_same_error(lambda m: (m.ones(3, requires_grad=True) * 2).backward(m.ones(2)))


# ----- non-leaf grads -------------------------------------------------------------------------
def test_non_leaf_grad_warns_with_torchs_text_and_is_none():
    text = torch_warning(lambda m: (m.ones(2, requires_grad=True) * 2).grad)
    y = ref.ones(2, requires_grad=True) * 2
    with pytest.warns(UserWarning, match=re.escape(text)):
        assert y.grad is None


@BOTH
def test_retain_grad_populates_and_accumulates(m):
    x = m.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.retain_grad()
    z = (y * y).sum()
    z.backward(retain_graph=True)
    first = y.grad.tolist()
    z.backward()
    assert first == [6.0, 12.0] and y.grad.tolist() == [12.0, 24.0]
    assert x.grad.tolist() == [36.0, 72.0]


def test_requires_grad_cannot_be_cleared_on_non_leaf():
    def fn(m):
        y = m.ones(2, requires_grad=True) * 2
        y.requires_grad = False

    assert_same_error(fn)


# ----- in-place --------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["add_", "mul_", "zero_", "fill_", "copy_"])
def test_in_place_on_leaf_requiring_grad_raises(op):
    args = {"add_": (1.0,), "mul_": (2.0,), "zero_": (), "fill_": (1.0,)}

    def fn(m):
        x = m.ones(3, requires_grad=True)
        getattr(x, op)(*args.get(op, (m.zeros(3),)))

    assert_same_error(fn)


def test_in_place_on_leaf_allowed_under_no_grad():
    x = ref.ones(3, requires_grad=True)
    with ref.no_grad():
        x.add_(1.0)
    assert x.tolist() == [2.0, 2.0, 2.0] and x.is_leaf and x.requires_grad


@pytest.mark.parametrize("case", ["saved_input", "saved_output", "leaf_saved"])
def test_modified_saved_tensor_caught_by_version_counter(case):
    def fn(m):
        a = m.ones(3, requires_grad=True)
        if case == "saved_input":
            b = a * 2
            c = b * b
            b.add_(1)
        elif case == "saved_output":
            b = a.exp()
            c = b
            b.mul_(2)
        else:
            w = m.ones(3)
            c = a * w
            w.add_(1)
        c.sum().backward()

    assert_same_error(fn)


@BOTH
def test_in_place_on_non_leaf_is_differentiated(m):
    x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    y.add_(1)
    y.mul_(x)
    y[0] = 0.0
    y.sum().backward()
    assert x.grad.tolist() == pytest.approx([0.0, 9.0, 13.0])


@BOTH
def test_setitem_into_buffer_records_graph(m):
    x = m.tensor([1.0, 2.0], requires_grad=True)
    buf = m.zeros(2, 2)
    buf[0] = x * 3
    buf[1, 1] = x[0] * x[1]
    buf.sum().backward()
    assert buf.grad_fn is not None
    assert x.grad.tolist() == [5.0, 4.0]


@BOTH
def test_data_edits_bypass_the_version_counter_but_detach_shares_it(m):
    a = m.ones(2, requires_grad=True)
    b = a.exp()
    b.data.mul_(2)
    b.sum().backward()
    assert a.grad.tolist() == pytest.approx([2 * np.e, 2 * np.e])
    c = a.exp()
    c.detach().mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


# ----- grad mode ----------------------------------------------------------------------------------
@BOTH
def test_no_grad_enable_grad_and_set_grad_enabled(m):
    x = m.ones(2, requires_grad=True)
    with m.no_grad():
        assert not (x * 2).requires_grad
        with m.enable_grad():
            assert (x * 2).requires_grad
    with m.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad
    m.set_grad_enabled(False)
    try:
        assert not m.is_grad_enabled()
    finally:
        m.set_grad_enabled(True)

    @m.no_grad()
    def doubled(t):
        return t * 2

    assert not doubled(x).requires_grad and m.is_grad_enabled()


# ----- autograd.grad ------------------------------------------------------------------------------
@BOTH
def test_autograd_grad_never_touches_grad(m):
    x = m.tensor([1.0, 2.0], requires_grad=True)
    y = (x ** 2).sum()
    (g,) = m.autograd.grad(y, x)
    assert g.tolist() == [2.0, 4.0] and x.grad is None


@BOTH
def test_create_graph_gives_higher_order_derivatives(m):
    x = m.tensor([0.5, 1.5], requires_grad=True)
    y = (x ** 3 + x.sin() * x.exp()).sum()
    (g,) = m.autograd.grad(y, x, create_graph=True)
    (gg,) = m.autograd.grad(g.sum(), x, create_graph=True)
    (ggg,) = m.autograd.grad(gg.sum(), x)
    xs = np.array([0.5, 1.5])
    expected = 6 + np.exp(xs) * (2 * np.cos(xs) - 2 * np.sin(xs))
    assert ggg.tolist() == pytest.approx(expected.tolist())


def test_autograd_grad_unused_input_error_and_allow_unused():
    def fn(m):
        x, z = m.ones(2, requires_grad=True), m.ones(2, requires_grad=True)
        m.autograd.grad((x * 2).sum(), [x, z])

    assert_same_error(fn)
    x, z = ref.ones(2, requires_grad=True), ref.ones(2, requires_grad=True)
    gx, gz = ref.autograd.grad((x * 2).sum(), [x, z], allow_unused=True)
    assert gx.tolist() == [2.0, 2.0] and gz is None


@BOTH
def test_autograd_grad_with_respect_to_non_leaf(m):
    x = m.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    out = (h * h).sum()
    (gh,) = m.autograd.grad(out, h)
    assert gh.tolist() == [6.0, 12.0]


@BOTH
def test_backward_inputs_restricts_accumulation(m):
    a, b = m.tensor(1.0, requires_grad=True), m.tensor(2.0, requires_grad=True)
    (a * b).backward(inputs=[a])
    assert a.grad.item() == 2.0 and b.grad is None


# ----- hooks ------------------------------------------------------------------------------------
@BOTH
def test_tensor_hooks_can_replace_the_gradient(m):
    x = m.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))
    handle = x.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert seen == [[1.0, 1.0]] and x.grad.tolist() == [20.0, 20.0]
    handle.remove()
    x.grad = None
    y = x * 2
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


@BOTH
def test_post_accumulate_grad_hook_sees_the_accumulated_grad(m):
    x = m.tensor([1.0, 2.0], requires_grad=True)
    calls = []
    x.register_post_accumulate_grad_hook(lambda t: calls.append((t is x, t.grad.tolist())))
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    assert calls == [(True, [3.0, 3.0]), (True, [6.0, 6.0])]


# ----- custom Functions ---------------------------------------------------------------------------
def _custom(m):
    class Cube(m.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            ctx.save_for_backward(x)
            ctx.scale = scale
            return x ** 3 * scale

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x ** 2 * ctx.scale, None

    return Cube


@BOTH
def test_custom_function_with_save_for_backward(m):
    x = m.tensor([1.0, 2.0], requires_grad=True)
    y = _custom(m).apply(x, 2.0)
    y.sum().backward()
    assert y.tolist() == [2.0, 16.0] and x.grad.tolist() == [6.0, 24.0]
    assert type(y.grad_fn).__name__ == "CubeBackward"


def test_custom_function_double_backward_and_freed_graph():
    def run(m):
        cube = _custom(m)
        x = m.tensor([1.5, -2.0], requires_grad=True)
        (g,) = m.autograd.grad(cube.apply(x, 1.0).sum(), x, create_graph=True)
        (gg,) = m.autograd.grad(g.sum(), x)
        with m.no_grad():
            assert not cube.apply(x, 1.0).requires_grad
        y = cube.apply(x, 1.0).sum()
        y.backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            y.backward()
        return g.tolist(), gg.tolist()

    assert run(ref) == run(torch)


# ----- requires_grad on integers ------------------------------------------------------------------
def test_requires_grad_on_integer_tensors():
    assert_same_error(lambda m: m.ones(3, dtype=m.long).requires_grad_())
    assert_same_error(lambda m: m.tensor([1, 2], requires_grad=True))


# ----- dtypes of gradients, deep graphs, views -------------------------------------------------
@BOTH
def test_gradients_take_their_inputs_dtype(m):
    a = m.ones(2, 3, requires_grad=True)
    b = m.ones(3, dtype=m.float64, requires_grad=True)
    (a * b).sum().backward()
    assert a.grad.dtype == m.float32 and b.grad.dtype == m.float64
    assert b.grad.tolist() == [2.0, 2.0, 2.0]


def test_deep_graph_does_not_hit_the_recursion_limit():
    x = ref.tensor(1.0, dtype=ref.float64, requires_grad=True)
    y = x
    for _ in range(5000):
        y = y * 1.0001
    y.backward()
    assert x.grad.item() == pytest.approx(1.0001 ** 5000)


@BOTH
def test_views_share_the_version_counter(m):
    a = m.ones(4, requires_grad=True)
    b = a * 2
    c = b.exp()  # saves its output c
    v = c.view(2, 2)
    v[0, 0] = 5.0
    assert c._version == v._version > 0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


@BOTH
def test_gradient_of_a_reused_leaf_sums_both_paths(m):
    x = m.tensor([1.0, -2.0], requires_grad=True)
    y = x * x + x.relu() + x.abs() * 0.5
    y.sum().backward()
    assert x.grad.tolist() == [3.5, -4.5]


@BOTH
def test_grad_can_be_set_to_none_or_replaced(m):
    w = m.ones(2, requires_grad=True)
    (w * 3).sum().backward()
    w.grad = None
    (w * 2).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0]
    w.grad = m.zeros(2)
    (w * 2).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0]


# ----- in-place edits through views (torch's CopySlices) ---------------------------------------
def test_in_place_edits_through_views_rewrite_the_base_history():
    def run(m):
        x = m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        w = m.tensor([0.5, -1.0, 2.0], requires_grad=True)
        h = x * 2
        h[:, 0] += 1
        h[1].mul_(w)
        h.t()[2].clamp_(max=5.0)
        flat = h.view(-1)
        flat[1:3] = w[:2] * 3
        (h * h).sum().backward()
        return h.tolist(), x.grad.tolist(), w.grad.tolist(), repr(h)

    assert run(ref) == run(torch)


def test_in_place_on_a_view_of_a_leaf_raises():
    def fn(m):
        y = m.ones(3, requires_grad=True)
        y[0].add_(1)

    assert_same_error(fn)


def test_other_views_of_an_edited_base_see_the_edit():
    def run(m):
        x = m.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        h = x * 1
        row, block = h[0], h[0:1]
        block.mul_(3)
        col = h.t()
        h[1, 1] = 10.0
        col[0].add_(row)
        loss = (row * row).sum() + (col * 2).sum() + (h ** 2).sum()
        loss.backward()
        return x.grad.tolist(), row.tolist(), h.tolist()

    assert run(ref) == run(torch)


def test_only_tensors_a_rule_reads_are_saved():
    # x * 3 needs 3 (not x) for x's gradient, so editing x's storage later is no error
    def run(m):
        x = m.zeros(3, dtype=m.float64, requires_grad=True)
        t = x * 1
        t[0] = t[2] * 3
        (t * m.tensor([1.0, 2.0, 3.0], dtype=m.float64)).sum().backward()
        return x.grad.tolist()

    assert run(ref) == run(torch)
    assert_same_error(lambda m: _edit_saved_operand(m))


def _edit_saved_operand(m):
    x = m.ones(3, requires_grad=True)
    w = m.ones(3, requires_grad=True) * 1
    y = x * w  # both need grads: both saved
    w.add_(1)
    y.sum().backward()


@pytest.mark.parametrize("outer", [True, False])
def test_inference_mode_forms_match_torch(outer):
    def run(m):
        seen = []

        @m.inference_mode(False)
        def keeps():
            seen.append(m.is_grad_enabled())

        @m.inference_mode
        def bare():
            seen.append(m.is_grad_enabled())

        with m.set_grad_enabled(outer):
            keeps()
            bare()
            with m.inference_mode():
                seen.append(m.is_grad_enabled())
            with m.inference_mode(False):
                seen.append(m.is_grad_enabled())
            seen.append(m.is_grad_enabled())
        return seen

    pytest.importorskip("torch")
    assert run(ref) == run(torch)
