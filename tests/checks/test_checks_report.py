"""What a result and a failure say, the extra backward checks, and argument validation."""
import numpy as np
import pytest

from gradcheck.checks import GradientMismatch, check_grad
from gradcheck.checks.miss import grid_miss_cdf, miss_probability
from gradcheck.checks.planted import ROWS, numpy_case


def _failure(mode="full"):
    fn, inputs, vjp = numpy_case(ROWS["one wrong element of 1000"], buggy=True)
    with pytest.raises(GradientMismatch) as info:
        check_grad(fn, inputs, vjp=vjp, mode=mode)
    return info.value, inputs


@pytest.mark.parametrize("mode", ["full", "fast"])
def test_message_names_everything_needed_to_fix_it(mode):
    error, (x,) = _failure(mode)
    assert isinstance(error, AssertionError)
    message = str(error)
    worst = error.result.worst()
    right = 1 - np.tanh(x[417]) ** 2
    assert worst.index == (417,) and worst.out_index == (417,)
    assert abs(worst.numeric - right) < 1e-9 and abs(worst.analytic - 1.01 * right) < 1e-12
    assert worst.abs_error > worst.tolerance > worst.estimate > 0
    for text in ["d output / d input", "input[417]", "1 element(s) mismatch",
                 f"analytic={worst.analytic:.10g}", f"numeric={worst.numeric:.10g}",
                 f"tolerance={worst.tolerance:.3g}", f"fd_error_estimate={worst.estimate:.3g}",
                 "abs_err=", "rel_err=0.01"]:
        assert text in message, text


def test_many_mismatches_are_counted_and_the_first_few_listed():
    x = np.linspace(0.1, 2, 40)
    with pytest.raises(GradientMismatch) as info:
        check_grad(np.log, x, vjp=lambda g, x: (g / x * 1.5,))
    result = info.value.result
    assert result.mismatch_counts == {("output", "input"): 40}
    assert "40 element(s) mismatch" in str(info.value) and "first 5:" in str(info.value)


def test_result_fields_on_success():
    fn, inputs, vjp = numpy_case(ROWS["softmax missing its second term"], buggy=False)
    result = check_grad(fn, inputs, vjp=vjp, screen="two-sided")
    n = inputs[0].size
    assert result.passed and bool(result)
    assert result.max_abs_error < 1e-8 and result.max_rel_error < 1e-5
    assert result.evaluations["backward"] >= n  # one one-hot VJP per output element
    assert result.evaluations["forward_points"] >= 2 * n  # x +/- h for every element
    # the forward screen settles with a coarser quotient (about 16 sqrt(eps) relative)
    screened = check_grad(fn, inputs, vjp=vjp)
    assert screened.passed and screened.max_rel_error < 1e-5
    assert result.taylor_order is not None and result.taylor_order > 1.8
    assert "PASSED" in str(result)


def test_taylor_order_is_about_one_for_a_wrong_gradient():
    fn, inputs, vjp = numpy_case(ROWS["flipped sign"], buggy=True)
    result = check_grad(fn, inputs, vjp=vjp, raise_on_failure=False)
    assert 0.8 < result.taylor_order < 1.2


def test_fast_mode_states_its_miss_probability():
    fn, inputs, vjp = numpy_case(ROWS["missing transpose"], buggy=False)
    result = check_grad(fn, inputs, vjp=vjp, mode="fast", probes=3)
    assert result.probes == 3
    # the reported chance is for an entry wrong by 100x the largest probe tolerance
    assert result.miss_probability == pytest.approx(grid_miss_cdf(1.125 / 100, 3, 3))
    assert miss_probability(result.miss_error, result.miss_error / 100, 3) == pytest.approx(
        result.miss_probability)
    assert 0 < result.miss_probability < 1e-5
    assert "3 x 3 probes per output; chance of missing" in str(result)


def test_grid_miss_cdf_matches_sampling():
    rng = np.random.default_rng(0)
    draw = lambda k: np.abs(rng.standard_normal((k, 200_000))).max(axis=0)  # noqa: E731
    for directions, weights in [(1, 1), (2, 2), (1, 3)]:
        z = draw(directions) * draw(weights)
        for c in [0.01, 0.1, 1.0]:
            assert grid_miss_cdf(c, directions, weights) == pytest.approx((z < c).mean(),
                                                                          abs=3e-3)


def test_fast_mode_costs_less_than_full_mode():
    x = np.random.default_rng(0).standard_normal(200)
    w = np.random.default_rng(1).standard_normal((200, 30))
    fn, vjp = (lambda x: np.tanh(x @ w)), (lambda g, x: ((g * (1 - np.tanh(x @ w) ** 2)) @ w.T,))
    full = check_grad(fn, x, vjp=vjp)
    fast = check_grad(fn, x, vjp=vjp, mode="fast")
    # full mode needs at least one point per element (n + 1 with the forward screen)
    assert full.evaluations["forward_points"] > x.size
    assert fast.evaluations["forward_points"] * 5 < full.evaluations["forward_points"]
    assert fast.evaluations["backward"] < full.evaluations["backward"]


def test_explicit_tolerances_override_the_estimate():
    x = np.array([0.3, 0.6])
    vjp = lambda g, x: (1.001 * g * np.cos(x),)
    assert not check_grad(np.sin, x, vjp=vjp, raise_on_failure=False).passed
    assert check_grad(np.sin, x, vjp=vjp, rtol=1e-2).passed
    assert check_grad(np.sin, x, vjp=vjp, atol=1e-2, mode="fast").passed


def test_complex_step_is_exact_for_analytic_functions():
    x = np.linspace(-1, 1, 7)
    right = check_grad(np.sinh, x, vjp=lambda g, x: (g * np.cosh(x),), method="complex")
    assert right.passed and right.max_abs_error < 1e-14
    wrong = check_grad(np.sinh, x, vjp=lambda g, x: (g * np.cosh(x) * (1 + 1e-9),),
                       method="complex", raise_on_failure=False)
    assert not wrong.passed


def test_backward_that_depends_on_hidden_state_is_nondeterministic():
    calls = []

    def vjp(g, x):
        calls.append(1)
        return (g * np.cos(x) + 1e-12 * len(calls),)

    result = check_grad(np.sin, np.array([0.1, 0.2]), vjp=vjp, raise_on_failure=False)
    assert any("not deterministic" in p for p in result.problems)
    assert check_grad(np.sin, np.array([0.1]), vjp=lambda g, x: (g * np.cos(x),),
                      nondet_tol=1e-9).passed


def test_zero_grad_output_must_give_zero_grads():
    result = check_grad(np.sin, np.array([0.1, 0.2]), vjp=lambda g, x: (g * np.cos(x) + 1e-3,),
                        raise_on_failure=False)
    assert any("zero grad_output" in p for p in result.problems)


def test_grads_must_have_the_input_shape_and_dtype():
    shape = check_grad(np.sin, np.array([0.1, 0.2]), vjp=lambda g, x: (np.cos(x)[:1] * g[:1],),
                       raise_on_failure=False)
    assert any("has shape (1,)" in p for p in shape.problems)
    dtype = check_grad(np.sin, np.array([0.1, 0.2]),
                       vjp=lambda g, x: ((g * np.cos(x)).astype(np.float32),),
                       raise_on_failure=False)
    assert any("dtype float32" in p for p in dtype.problems)


@pytest.mark.parametrize("kwargs, named", [
    ({"mode": "slow"}, "mode='slow'"),
    ({"method": "forward"}, "method='forward'"),
    ({"nondifferentiable": "maybe"}, "nondifferentiable='maybe'"),
    ({"probes": 0}, "probes=0"),
    ({"eps": 2.0}, "eps=2.0"),
    ({"screen": "both"}, "screen='both'"),
])
def test_bad_options_name_the_argument_and_value(kwargs, named):
    with pytest.raises(ValueError, match=named.replace("(", r"\(")):
        check_grad(np.sin, np.array([0.1]), vjp=lambda g, x: (g * np.cos(x),), **kwargs)


def test_numpy_without_vjp_says_how_to_fix_it():
    with pytest.raises(TypeError, match="vjp="):
        check_grad(np.sin, np.array([0.1]))


def test_custom_step_still_passes():
    x = np.linspace(0.5, 1.5, 5)
    assert check_grad(np.log, x, vjp=lambda g, x: (g / x,), eps=1e-4).passed


def test_numpy_has_no_second_order_and_says_what_to_do():
    from gradcheck.checks import check_gradgrad

    with pytest.raises(TypeError, match="check_gradgrad needs autograd"):
        check_gradgrad(np.sin, np.array([0.1]), vjp=lambda g, x: (g * np.cos(x),))


def test_mixed_frameworks_are_named():
    torch = pytest.importorskip("torch")
    jnp = pytest.importorskip("jax.numpy")
    with pytest.raises(TypeError, match=r"inputs mix frameworks \['jax', 'torch'\]"):
        check_grad(lambda a, b: a, (torch.ones(1, requires_grad=True), jnp.ones(1)))


def test_no_differentiable_input_is_explained():
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="requires_grad=True"):
        check_grad(torch.sin, torch.ones(2))


def test_full_mode_takes_the_second_step_only_where_needed():
    rng = np.random.default_rng(4)
    w = rng.standard_normal((200, 5))
    x = rng.standard_normal(200)
    right = check_grad(lambda x: x @ w, x, vjp=lambda g, x: (w @ g,))
    assert right.passed and right.evaluations["forward_points"] < 2.2 * x.size
    w_bad = w.copy()
    w_bad[17, 3] *= 1.001
    wrong = check_grad(lambda x: x @ w, x, vjp=lambda g, x: (w_bad @ g,), raise_on_failure=False)
    assert [(m.index, m.out_index) for m in wrong.mismatches] == [((17,), (3,))]
