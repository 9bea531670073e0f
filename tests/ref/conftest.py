"""Helpers shared by the engine tests: a tiny finite-difference gradient and torch bridges."""
from __future__ import annotations

import numpy as np
import pytest


def central_difference(fn, arrays, upstream, eps=1e-6):
    """d(sum(fn(*arrays) * upstream)) / d(arrays[i]) by central differences, in float64."""
    grads = []
    for i, base in enumerate(arrays):
        grad = np.zeros_like(base)
        flat = grad.reshape(-1)
        for j in range(base.size):
            values = []
            for step in (eps, -eps):
                moved = [a.copy() for a in arrays]
                moved[i].reshape(-1)[j] += step
                values.append(float(np.sum(np.asarray(fn(*moved)) * upstream)))
            flat[j] = (values[0] - values[1]) / (2 * eps)
        grads.append(grad)
    return grads


@pytest.fixture(scope="session")
def finite_diff():
    """The central-difference helper, handed to tests as a fixture."""
    return central_difference


@pytest.fixture
def real_torch():
    """The installed PyTorch, or a skip when it is absent."""
    return pytest.importorskip("torch")
