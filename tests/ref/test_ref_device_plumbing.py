"""The "cuda" code path, exercised without a GPU through a stand-in CuPy built on numpy.

The stand-in's arrays are an ndarray subclass from a module named like CuPy's, so the engine
treats them as device arrays: this checks the plumbing (creation, moves, repr, backward across
devices), not CuPy itself. The real-CuPy test lives in test_ref_tensor_api.py.
"""
from __future__ import annotations

import sys
import types
from contextlib import nullcontext

import numpy as np
import pytest

import gradcheck.ref as ref


class DeviceArray(np.ndarray):
    """A numpy array that claims to live on GPU 0."""

    device = types.SimpleNamespace(id=0)

    def get(self):
        return np.asarray(self).copy()


DeviceArray.__module__ = "cupy_standin"


def _wrap(value):
    return value.view(DeviceArray) if isinstance(value, np.ndarray) else value


def _standin_cupy() -> types.ModuleType:
    module = types.ModuleType("cupy")

    def forward(name):
        return lambda *a, **k: _wrap(getattr(np, name)(*a, **k))

    for name in ("asarray", "zeros", "ones", "full", "empty", "arange"):
        setattr(module, name, forward(name))
    module.ndarray = DeviceArray
    module.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDeviceCount=lambda: 1),
        Device=lambda index=0: nullcontext(),
    )
    return module


@pytest.fixture
def fake_gpu(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _standin_cupy())


def test_cuda_tensors_are_created_on_the_device_module(fake_gpu):
    x = ref.ones(2, 3, device="cuda")
    assert type(x._data) is DeviceArray and x.device == ref.device("cuda", 0) and x.is_cuda
    assert ref.cuda.is_available()
    assert repr(ref.tensor([1.0, 2.0], device="cuda")) == "tensor([1., 2.], device='cuda:0')"


def test_backward_flows_across_devices(fake_gpu):
    w = ref.tensor([1.0, 2.0], requires_grad=True)
    on_gpu = w.to("cuda")
    loss = (on_gpu * on_gpu).sum()
    assert type(loss._data) is DeviceArray
    loss.backward()
    assert type(w.grad._data) is np.ndarray and w.grad.tolist() == [2.0, 4.0]
    assert on_gpu.cpu().device == ref.device("cpu")


def test_each_tensor_keeps_its_own_module(fake_gpu):
    a, b = ref.ones(2), ref.ones(2, device="cuda")
    assert type((a * 2)._data) is np.ndarray and type((b * 2)._data) is DeviceArray
    with pytest.raises(TypeError, match="cuda"):
        b.numpy()
    assert b.cpu().numpy().tolist() == [1.0, 1.0]


def test_missing_cupy_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` fail
    with pytest.raises(RuntimeError, match="needs CuPy, which is not installed"):
        ref.zeros(1, device="cuda")
    assert not ref.cuda.is_available()


def test_missing_gpu_is_named(monkeypatch):
    cupy = _standin_cupy()
    cupy.cuda.runtime.getDeviceCount = lambda: 0
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    with pytest.raises(RuntimeError, match="no CUDA device was found"):
        ref.zeros(1, device="cuda")
