"""Window functions (``torch.hann_window``, ``hamming_window``, ``blackman_window``,
``bartlett_window``, ``kaiser_window``) with torch's conventions: a periodic window of length
N is the symmetric window of length N + 1 without its last point; N = 1 gives ``[1.]``.

>>> [round(v, 4) for v in hann_window(4).tolist()]
[0.0, 0.5, 1.0, 0.5]
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np


def _window(shape: Callable[[np.ndarray, int], np.ndarray], name: str):
    def window(window_length: int, periodic: bool = True, *args: Any, dtype: Any = None,
               layout: Any = None, device: Any = None, requires_grad: bool = False,
               pin_memory: bool = False, **kwargs: Any):
        from gradcheck.ref import dtypes
        from gradcheck.ref.creation import tensor

        if window_length < 0:
            raise RuntimeError(f"{name} requires non-negative window_length, got "
                               f"window_length={window_length}")
        kind = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)
        if not kind.is_floating_point:
            raise RuntimeError(f"{name} expects floating point dtypes, got: {kind}")
        if window_length <= 1:
            values = np.ones(window_length)
        else:
            n = window_length + 1 if periodic else window_length
            values = shape(np.arange(n, dtype=np.float64), n, *args, **kwargs)[:window_length]
        return tensor(values, dtype=kind, device=device, requires_grad=requires_grad)

    window.__name__ = name
    window.__doc__ = f"torch.{name}: periodic by default, as torch."
    return window


def _cosine_sum(n: np.ndarray, length: int, *coefficients: float) -> np.ndarray:
    phase = 2 * math.pi * n / (length - 1)
    return sum(((-1) ** k) * a * np.cos(k * phase) for k, a in enumerate(coefficients))


def _hamming(n, length, alpha=0.54, beta=0.46):
    return _cosine_sum(n, length, alpha, beta)


def _kaiser(n, length, beta=12.0):
    half = (length - 1) / 2
    return np.i0(beta * np.sqrt(np.clip(1 - ((n - half) / half) ** 2, 0, None))) / np.i0(beta)


hann_window = _window(lambda n, length: _cosine_sum(n, length, 0.5, 0.5), "hann_window")
hamming_window = _window(_hamming, "hamming_window")
blackman_window = _window(lambda n, length: _cosine_sum(n, length, 0.42, 0.5, 0.08),
                          "blackman_window")
bartlett_window = _window(lambda n, length: 1 - np.abs(2 * n / (length - 1) - 1),
                          "bartlett_window")
kaiser_window = _window(_kaiser, "kaiser_window")
