"""The reference engine on a real GPU: CuPy against numpy, and against torch on CUDA.

Every test carries ``gradcheck_gpu``: it runs with ``--gradcheck-device=cuda`` where torch sees a
GPU and CuPy reaches it, and is skipped with the reason elsewhere (the plumbing without a GPU is
tested in test_ref_device_plumbing.py). Each op is written once as ``fn(lib, *tensors)`` and run
on both libraries.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import gradcheck.ref as ref
from gradcheck.runtime import check_parity
from gradcheck.runtime.devices import RefDevice, TorchDevice

pytestmark = pytest.mark.gradcheck_gpu

TARGETS = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]


@pytest.fixture
def cuda(gradcheck_device):
    """The device name, once CuPy is known to reach a GPU."""
    reason = RefDevice(gradcheck_device).unavailable_reason()
    if reason is not None:
        pytest.skip(f"the reference engine on {gradcheck_device}: {reason}")
    return gradcheck_device


def _matmul_tanh(lib, x, w):
    return (x @ w).tanh()


def _linear(lib, x, w, b):
    return lib.nn.functional.linear(x, w, b)


def _broadcast(lib, x, y):
    return (x * y + y.exp()).sum(dim=0) / (1 + x.abs().mean())


def _reductions(lib, x):
    return lib.stack([x.var(dim=1).mean(), x.amax(), x.logsumexp(dim=0).sum(), x.norm()])


def _softmax(lib, x):
    return lib.nn.functional.softmax(x, dim=-1)


def _cross_entropy(lib, x):
    target = lib.tensor(TARGETS[: x.shape[0]], device=x.device)
    return lib.nn.functional.cross_entropy(x, target)


def _layer_norm(lib, x, w, b):
    return lib.nn.functional.layer_norm(x, (x.shape[-1],), w, b)


def _conv2d(lib, x, w, b):
    return lib.nn.functional.conv2d(x, w, b, padding=1)


def _index(lib, x):
    rows = lib.tensor([2, 0, 2, 5], device=x.device)
    return x[rows].sigmoid() * x[:, 1:3].sum()


OPS = {
    "matmul_tanh": (_matmul_tanh, [(12, 16), (16, 8)]),
    "linear": (_linear, [(12, 16), (8, 16), (8,)]),
    "broadcast": (_broadcast, [(6, 5), (5,)]),
    "reductions": (_reductions, [(6, 7)]),
    "softmax": (_softmax, [(12, 10)]),
    "cross_entropy": (_cross_entropy, [(12, 10)]),
    "layer_norm": (_layer_norm, [(6, 16), (16,), (16,)]),
    "conv2d": (_conv2d, [(2, 3, 6, 6), (4, 3, 3, 3), (4,)]),
    "index": (_index, [(6, 4)]),
}


def _inputs(name, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for shape in OPS[name][1]]


@pytest.mark.parametrize("name", list(OPS))
def test_cupy_float32_matches_the_float64_numpy_arbiter(cuda, name):
    fn = functools.partial(OPS[name][0], ref)
    report = check_parity(fn, _inputs(name), framework="ref", devices=(cuda,))
    assert report.passed, report.summary()
    assert [p for p in report.problems if p.kind == "accuracy"] == []


@pytest.mark.parametrize("name", list(OPS))
def test_cupy_float64_matches_numpy_to_a_few_ulp(cuda, name):
    # NOTE: in float64 the arbiter is the numpy run itself; check_parity estimates that run's
    # error from its float32 run (CuPy's sums, in another order, measured 1.02x of a bare
    # 4-ulp floor on the index op, a sum that cancels)
    fn = functools.partial(OPS[name][0], ref)
    report = check_parity(fn, _inputs(name), framework="ref", devices=(cuda,),
                          dtypes=("float64",))
    assert report.passed, report.summary()


@pytest.mark.parametrize("name", list(OPS))
def test_float64_on_cupy_agrees_with_numpy_and_with_torch_cuda(cuda, name):
    fn, _ = OPS[name]
    arrays = _inputs(name, seed=1)
    on_cupy = RefDevice(cuda).run(functools.partial(fn, ref), arrays, "float64", 0)
    on_numpy = RefDevice("cpu").run(functools.partial(fn, ref), arrays, "float64", 0)
    torch = pytest.importorskip("torch")
    on_torch = TorchDevice(cuda).run(functools.partial(fn, torch), arrays, "float64", 0)
    for other in (on_numpy, on_torch):
        np.testing.assert_allclose(on_cupy[0], other[0], rtol=1e-10, atol=1e-12)
        assert len(on_cupy[1]) == len(other[1])
        for got, want in zip(on_cupy[1], other[1]):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_outputs_and_gradients_stay_on_the_gpu(cuda):
    x = ref.tensor(np.arange(6.0).reshape(2, 3), device=cuda, requires_grad=True)
    w = ref.ones(3, 2, device=cuda, requires_grad=True)
    y = (x @ w).relu().sum()
    y.backward()
    for t in (y, x.grad, w.grad):
        assert t.device.type == "cuda" and type(t._data).__module__.startswith("cupy")
    assert x.grad.tolist() == [[2.0, 2.0, 2.0]] * 2


def test_grad_accumulates_on_cupy_and_zero_resets_it(cuda):
    x = ref.tensor(2.0, device=cuda, requires_grad=True)
    z = 3 * x ** 2
    z.backward(retain_graph=True)
    assert x.grad.item() == 12.0 and x.grad.device.type == "cuda"
    z.backward()
    assert x.grad.item() == 24.0  # accumulated, not overwritten
    x.grad.zero_()
    assert x.grad.item() == 0.0 and x.grad.device.type == "cuda"


def _train(lib, device, dtype, initial, steps=3):
    """A 2-layer MLP, SGD with momentum, cross-entropy; the parameters after ``steps`` steps."""
    model = lib.nn.Sequential(lib.nn.Linear(8, 16), lib.nn.Tanh(), lib.nn.Linear(16, 4))
    with lib.no_grad():
        for p, value in zip(model.parameters(), initial):
            p.copy_(lib.tensor(value, dtype=p.dtype))
    model = model.to(device=device, dtype=dtype)
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(5)
    for _ in range(steps):
        x = lib.tensor(rng.standard_normal((12, 8)), dtype=dtype, device=device)
        y = lib.tensor(rng.integers(0, 4, 12), device=device)
        opt.zero_grad()
        lib.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return [p.detach().cpu().double().numpy() for p in model.parameters()]


def _initial():
    rng = np.random.default_rng(4)
    return [rng.standard_normal(s) / 3 for s in [(16, 8), (16,), (4, 16), (4,)]]


def test_a_training_step_on_cupy_matches_numpy(cuda):
    exact = _train(ref, "cpu", ref.float64, _initial())
    for dtype, tol in ((ref.float64, 1e-12), (ref.float32, 1e-5)):
        got = _train(ref, cuda, dtype, _initial())
        for g, want in zip(got, exact):
            np.testing.assert_allclose(g, want, rtol=0, atol=tol)


def test_a_training_step_on_cupy_matches_torch_cuda(cuda):
    torch = pytest.importorskip("torch")
    on_torch = _train(torch, cuda, torch.float64, _initial())
    on_cupy = _train(ref, cuda, ref.float64, _initial())
    for got, want in zip(on_cupy, on_torch):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
