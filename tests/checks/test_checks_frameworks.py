"""Adapters (JAX, engine), second-order checks, and the step-size sweep."""
import numpy as np
import pytest

from gradcheck.checks import check_grad, check_gradgrad, eps_sweep


def test_jax_functions_and_a_buggy_custom_vjp():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal(6), dtype=jnp.float32)
    w = jnp.asarray(rng.standard_normal((6, 3)), dtype=jnp.float32)
    fn = lambda x, w: jnp.tanh(x @ w)
    for mode in ["full", "fast"]:
        result = check_grad(fn, (x, w), mode=mode)
        assert result.passed and result.framework == "jax" and result.eval_dtype == "float64"

    @jax.custom_vjp
    def sine(x):
        return jnp.sin(x)

    sine.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (-g * jnp.cos(x),))
    for mode in ["full", "fast"]:
        assert not check_grad(sine, x, mode=mode, raise_on_failure=False).passed


def test_jax_second_order():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    x = jnp.asarray(np.linspace(-1, 1, 5), dtype=jnp.float32)
    assert check_gradgrad(lambda x: jnp.tanh(x) * x, x).passed


class _CubeWithDetachedBackward:
    """x**3 whose backward is right but detaches x, so its own derivative is wrong."""

    @staticmethod
    def make(module):
        class Cube(module.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x * x

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return grad * 3 * x.detach() * x.detach()

        return Cube.apply


@pytest.mark.parametrize("mode", ["full", "fast"])
def test_torch_second_order_catches_a_detached_backward(mode):
    torch = pytest.importorskip("torch")
    x = torch.tensor([0.5, -1.2, 2.0], dtype=torch.float64, requires_grad=True)
    cube = _CubeWithDetachedBackward.make(torch)
    assert check_grad(cube, x, mode=mode).passed
    result = check_gradgrad(cube, x, mode=mode, raise_on_failure=False)
    assert not result.passed
    assert {m.input for m in result.mismatches} == {"input 0"}
    w = torch.randn(3, 2, dtype=torch.float64, requires_grad=True)
    assert check_gradgrad(lambda x, w: torch.softmax(x @ w, 0), (x, w), mode=mode).passed


def test_engine_second_order():
    ref = pytest.importorskip("gradcheck.ref")
    if not hasattr(ref, "autograd"):
        pytest.skip("the reference engine has no autograd yet")
    x = ref.tensor(np.array([0.5, -1.2, 2.0]), requires_grad=True)
    assert check_gradgrad(lambda x: (x * x).tanh(), x).passed
    cube = _CubeWithDetachedBackward.make(ref)
    assert not check_gradgrad(cube, x, raise_on_failure=False).passed


def test_engine_float32_and_batching_by_broadcast():
    ref = pytest.importorskip("gradcheck.ref")
    if not hasattr(ref, "tensor"):
        pytest.skip("the reference engine is not ready")
    rng = np.random.default_rng(0)
    x = ref.tensor(rng.standard_normal(64).astype(np.float32), requires_grad=True)
    w = ref.tensor(rng.standard_normal((64, 8)).astype(np.float32))
    result = check_grad(lambda x: (x @ w).tanh(), x)
    assert result.passed and result.eval_dtype == "float64"
    # 4 points per element plus f(x) went through in a handful of broadcast calls
    assert result.evaluations["forward"] < 20 < result.evaluations["forward_points"]


def test_unbatchable_numpy_function_falls_back_to_a_loop():
    x = np.linspace(0.5, 1.5, 6)
    fn = lambda x: x / x.max()

    def vjp(g, x):
        top = np.argmax(x)
        grad = g / x.max()
        grad[top] -= (g * x).sum() / x.max() ** 2
        return (grad,)

    result = check_grad(fn, x, vjp=vjp)
    assert result.passed and result.evaluations["forward"] >= 4 * x.size


def test_eps_sweep_is_a_v_for_a_right_gradient_and_a_floor_for_a_wrong_one(tmp_path):
    x = np.linspace(0.2, 1.0, 4)
    right = eps_sweep(np.exp, x, vjp=lambda g, x: (g * np.exp(x),))
    errors = [e for _, e in right]
    assert len(right) == 25 and right.best[1] < 1e-8
    assert errors[0] > 100 * right.best[1] and errors[-1] > 100 * right.best[1]
    wrong = eps_sweep(np.exp, x, vjp=lambda g, x: (1.01 * g * np.exp(x),))
    assert wrong.best[1] > 1e-3
    pytest.importorskip("matplotlib")
    path = tmp_path / "sweep.png"
    eps_sweep(np.exp, x, vjp=lambda g, x: (g * np.exp(x),), plot=str(path))
    assert path.stat().st_size > 1000
