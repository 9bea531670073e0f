"""The engine's "cuda" path on a strict stand-in for CuPy, so that CI (no GPU) keeps it honest.

Like real CuPy, the stand-in refuses what a device array cannot do: ``np.asarray`` of it,
mixing it with a numpy array in one ufunc (an index array inside ``add.at`` included) or one
numpy function. Each bug of that kind found on a real GPU (comparisons, ``any``, ``argmax``,
``gather``'s and indexing's backward, convolutions, GELU's ``erf``) raised here first. Values
must equal the numpy run's, and every output and gradient must stay a device array.
test_ref_cuda.py runs the same ops on a real GPU; test_ref_device_plumbing.py covers moves.
"""
from __future__ import annotations

import math
import sys
import types

import numpy as np
import pytest

import gradcheck.ref as ref

_REFUSED = ("asarray", "array", "asanyarray", "ascontiguousarray")
_ORIGINAL = {name: getattr(np, name) for name in _REFUSED}


class DeviceArray(np.ndarray):
    """A numpy array that claims to live on GPU 0 and refuses to meet host arrays."""

    device = types.SimpleNamespace(id=0)

    def get(self):
        return self.view(np.ndarray).copy()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        outs = kwargs.get("out") or ()
        _refuse_host(f"{ufunc.__name__}.{method}", [*inputs, *outs])
        if outs:
            kwargs["out"] = tuple(_host(o) for o in outs)
        result = getattr(ufunc, method)(*[_host(i) for i in inputs], **kwargs)
        return outs[0] if len(outs) == 1 else outs if outs else _device(result)

    def __array_function__(self, func, types_, args, kwargs):
        _refuse_host(func.__name__, [*args, *kwargs.values()])
        return _device(func(*_host(list(args)), **{k: _host(v) for k, v in kwargs.items()}))


DeviceArray.__module__ = "cupy_standin"


def _refuse_host(what, values):
    for value in values:
        if isinstance(value, (list, tuple)):
            _refuse_host(what, value)
        elif type(value) is np.ndarray and value.ndim > 0:
            raise TypeError(f"stand-in CuPy: a numpy array {value.shape} given to {what} with "
                            "device arrays")


def _host(value):
    if isinstance(value, DeviceArray):
        return value.view(np.ndarray)
    if isinstance(value, (list, tuple)):
        return type(value)(_host(v) for v in value)
    return value


def _device(value):
    if isinstance(value, (np.ndarray, np.generic)) and not isinstance(value, DeviceArray):
        return _ORIGINAL["asarray"](value).view(DeviceArray)  # CuPy has no scalars: 0-d arrays
    if isinstance(value, (list, tuple)):
        return type(value)(_device(v) for v in value)
    return value


def _strict(name):
    original = _ORIGINAL[name]

    def refuse(value, *args, **kwargs):
        if isinstance(value, DeviceArray) or (isinstance(value, (list, tuple)) and any(
                isinstance(v, DeviceArray) for v in value)):
            raise TypeError(f"stand-in CuPy: np.{name} of a device array (CuPy refuses the "
                            "implicit copy to the host)")
        return original(value, *args, **kwargs)

    return refuse


class _Module(types.ModuleType):
    """``cupy``: every numpy function, returning device arrays."""

    def __getattr__(self, name):
        target = _ORIGINAL.get(name) or getattr(np, name)
        if isinstance(target, np.ufunc):
            return target  # add.at and friends reach DeviceArray.__array_ufunc__
        if callable(target) and not isinstance(target, type):
            return lambda *a, **k: _device(target(*_host(list(a)), **k))
        return target


def _standin_cupy():
    cupy = _Module("cupy")
    cupy.ndarray = DeviceArray
    cupy.asarray = lambda a, dtype=None, **_: (
        a if isinstance(a, DeviceArray) and dtype is None
        else _device(_ORIGINAL["array"](_host(a), dtype=dtype)))
    cupy.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDeviceCount=lambda: 1), Device=_Device)
    special = types.ModuleType("cupyx.scipy.special")
    erf = np.frompyfunc(math.erf, 1, 1)
    special.erf = lambda a: _device(erf(_host(a)).astype(a.dtype))
    return cupy, special


class _Device:
    def __init__(self, index=0):
        self.id = index or 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def use(self):
        return None

    def synchronize(self):
        return None


@pytest.fixture
def strict_gpu(monkeypatch):
    cupy, special = _standin_cupy()
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupyx", types.ModuleType("cupyx"))
    monkeypatch.setitem(sys.modules, "cupyx.scipy", types.ModuleType("cupyx.scipy"))
    monkeypatch.setitem(sys.modules, "cupyx.scipy.special", special)
    for name in _REFUSED:
        monkeypatch.setattr(np, name, _strict(name))


TARGETS = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]


def _cross_entropy(lib, x):
    return lib.nn.functional.cross_entropy(x, lib.tensor(TARGETS[: x.shape[0]], device=x.device))


OPS = {
    "matmul_tanh": (lambda lib, x, w: (x @ w).tanh(), [(12, 16), (16, 8)]),
    "linear_gelu": (lambda lib, x, w, b: lib.nn.functional.gelu(
        lib.nn.functional.linear(x, w, b)), [(12, 16), (8, 16), (8,)]),
    "reductions": (lambda lib, x: lib.stack([x.var(dim=1).mean(), x.amax(),
                                             x.logsumexp(dim=0).sum(), x.norm()]), [(6, 7)]),
    "compare_any_argmax": (lambda lib, x: x * (x > 0).any() + x.argmax().to(x.dtype)
                           + (x == x.max()).to(x.dtype), [(5, 4)]),
    "softmax": (lambda lib, x: lib.nn.functional.softmax(x, dim=-1), [(12, 10)]),
    "cross_entropy": (_cross_entropy, [(12, 10)]),
    "layer_norm": (lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (16,), w, b),
                   [(6, 16), (16,), (16,)]),
    "conv2d": (lambda lib, x, w, b: lib.nn.functional.conv2d(x, w, b, padding=1),
               [(2, 3, 6, 6), (4, 3, 3, 3), (4,)]),
    "index": (lambda lib, x: x[lib.tensor([2, 0, 2, 5], device=x.device)].sigmoid()
              * x[:, 1:3].sum(), [(6, 4)]),
}


def _run(fn, arrays, device):
    inputs = [ref.tensor(a, device=device, requires_grad=True) for a in arrays]
    out = fn(ref, *inputs)
    out.backward(ref.tensor(np.random.default_rng(0).standard_normal(tuple(out.shape)),
                            device=device))
    return out, [t.grad for t in inputs]


@pytest.mark.parametrize("name", list(OPS))
def test_each_op_stays_on_the_device_and_matches_numpy(strict_gpu, name):
    fn, shapes = OPS[name]
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(shape) for shape in shapes]
    out, grads = _run(fn, arrays, "cuda")
    want, want_grads = _run(fn, arrays, "cpu")
    for got, expected in zip([out, *grads], [want, *want_grads]):
        assert type(got._data) is DeviceArray and got.device == ref.device("cuda", 0)
        np.testing.assert_allclose(got._data.get(), expected._data, rtol=1e-12, atol=1e-14)


def test_an_mlp_trains_on_the_device_as_on_numpy(strict_gpu):
    def train(device):
        ref.manual_seed(0)
        model = ref.nn.Sequential(ref.nn.Linear(8, 16), ref.nn.GELU(), ref.nn.Linear(16, 4))
        model = model.to(device=device, dtype=ref.float64)
        opt = ref.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        rng = np.random.default_rng(5)
        for _ in range(3):
            x = ref.tensor(rng.standard_normal((12, 8)), device=device)
            y = ref.tensor(rng.integers(0, 4, 12), device=device)
            opt.zero_grad()
            ref.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        return list(model.parameters())

    for got, want in zip(train("cuda"), train("cpu")):
        assert type(got._data) is DeviceArray and type(got.grad._data) is DeviceArray
        np.testing.assert_allclose(got._data.get(), want._data, rtol=1e-12, atol=1e-14)


def test_the_standin_refuses_what_cupy_refuses(strict_gpu):
    on_device = ref.ones(3, device="cuda")._data
    with pytest.raises(TypeError, match="implicit copy"):
        np.asarray(on_device)
    with pytest.raises(TypeError, match="numpy array"):
        on_device + np.ones(3)
    with pytest.raises(TypeError, match="numpy array"):
        np.add.at(on_device, (np.array([0, 0]),), 1.0)
    assert type(on_device * 2) is DeviceArray and type(np.exp(on_device)) is DeviceArray
