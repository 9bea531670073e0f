"""Helpers shared by the nn/optim/data tests: build the same model in torch and the engine."""
from __future__ import annotations

import itertools
import types

import numpy as np
import pytest


@pytest.fixture(scope="session")
def ref():
    """The reference engine, imported the way users do (`import gradcheck.ref as torch`)."""
    import gradcheck.ref as engine

    return engine


@pytest.fixture(scope="session")
def torch():
    """Real torch, the oracle; tests that need it skip when it is not installed."""
    return pytest.importorskip("torch")


def _to_numpy(t):
    return np.array(t.detach().numpy() if hasattr(t, "detach") else t, dtype=np.float64)


def _copy_parameters(src_model, dst_model, dst_lib):
    """Copy every parameter of `src_model` into `dst_model` (same names), through numpy."""
    src = dict(src_model.named_parameters())
    dst = dict(dst_model.named_parameters())
    assert list(src) == list(dst), f"parameter names differ: {list(src)} vs {list(dst)}"
    with dst_lib.no_grad():
        for name, p in dst.items():
            p.copy_(dst_lib.tensor(_to_numpy(src[name]), dtype=p.dtype))


def _mlp(lib, sizes=(4, 8, 3), act="Tanh", dtype=None):
    """A small MLP built from `lib.nn` in float64 (default)."""
    dtype = dtype or lib.float64
    layers = []
    for i, (fan_in, fan_out) in enumerate(itertools.pairwise(sizes)):
        layers.append(lib.nn.Linear(fan_in, fan_out, dtype=dtype))
        if i < len(sizes) - 2:
            layers.append(getattr(lib.nn, act)())
    return lib.nn.Sequential(*layers)


def _assert_close(actual, expected, rtol=1e-6, atol=1e-9, what="value"):
    a, e = _to_numpy(actual), _to_numpy(expected)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, err_msg=what)


@pytest.fixture(scope="session")
def helpers():
    """Namespace of plain helper functions (test files must not import each other)."""
    return types.SimpleNamespace(to_numpy=_to_numpy, copy_parameters=_copy_parameters,
                                 mlp=_mlp, assert_close=_assert_close)
