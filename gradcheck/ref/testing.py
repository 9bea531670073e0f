"""``torch.testing``: ``assert_close`` with torch's default tolerances per dtype and its
messages, ``assert_allclose`` (the deprecated form) and ``make_tensor``.

>>> import gradcheck.ref as torch
>>> assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-7]))
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from gradcheck.ref import dtypes as dt
from gradcheck.ref.tensors import Tensor

# torch's defaults: (rtol, atol) by dtype
_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
               "float64": (1e-7, 1e-7)}


def _tolerances(dtype) -> tuple[float, float]:
    return _TOLERANCES.get(dtype.name, (0.0, 0.0))


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True,
                 rtol: float | None = None, atol: float | None = None, equal_nan: bool = False,
                 check_device: bool = True, check_dtype: bool = True, check_layout: bool = True,
                 check_stride: bool = False, msg: str | None = None) -> None:
    """Raise AssertionError unless ``actual`` and ``expected`` (tensors, numbers, or nested
    sequences and mappings of them) match in shape, dtype and values within tolerance."""
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"no {'rtol' if rtol is None else 'atol'}.")
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        if set(actual) != set(expected):
            raise AssertionError(f"The keys of the mappings do not match: {sorted(actual)} != "
                                 f"{sorted(expected)}")
        for key in expected:
            assert_close(actual[key], expected[key], rtol=rtol, atol=atol, equal_nan=equal_nan,
                         check_dtype=check_dtype, msg=msg)
        return
    if isinstance(expected, Sequence) and not isinstance(expected, str) and \
            isinstance(actual, Sequence) and not isinstance(actual, str):
        if len(actual) != len(expected):
            raise AssertionError(f"The length of the sequences mismatch: {len(actual)} != "
                                 f"{len(expected)}")
        for a, e in zip(actual, expected):
            assert_close(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan,
                         check_dtype=check_dtype, msg=msg)
        return
    if not isinstance(actual, Tensor) or not isinstance(expected, Tensor):
        from gradcheck.ref.creation import tensor

        actual, expected = tensor(actual), tensor(expected)
    if tuple(actual.shape) != tuple(expected.shape):
        raise AssertionError(msg or f"The values for attribute 'shape' do not match: "
                                    f"{actual.shape} != {expected.shape}.")
    if check_dtype and actual.dtype != expected.dtype:
        raise AssertionError(msg or f"The values for attribute 'dtype' do not match: "
                                    f"{actual.dtype} != {expected.dtype}.")
    if rtol is None:
        rtol, atol = (max(a, b) for a, b in zip(_tolerances(actual.dtype),
                                                _tolerances(expected.dtype)))
    _compare_values(np.asarray(actual.detach()), np.asarray(expected.detach()), rtol, atol,
                    equal_nan, msg)


def _compare_values(a: np.ndarray, e: np.ndarray, rtol: float, atol: float, equal_nan: bool,
                    msg: str | None) -> None:
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    close = np.isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if close.all():
        return
    if msg:
        raise AssertionError(msg)
    kind = "Tensor-likes" if a.ndim else "Scalars"
    if not a.ndim:
        raise AssertionError(f"{kind} are not close!\n\nExpected {e.item()} but got {a.item()}."
                             f"\nAbsolute difference: {abs(a64 - e64).item()} (up to {atol} "
                             f"allowed)\nRelative difference: "
                             f"{abs(a64 - e64).item() / abs(e64).item() if e64 else float('inf')}"
                             f" (up to {rtol} allowed)")
    diff = np.abs(a64 - e64)
    rel = diff / np.where(e64 == 0, np.inf, np.abs(e64))
    worst, worst_rel = np.unravel_index(np.nanargmax(diff), a.shape), \
        np.unravel_index(np.nanargmax(rel), a.shape)
    bad = int((~close).sum())
    raise AssertionError(
        f"{kind} are not close!\n\nMismatched elements: {bad} / {a.size} "
        f"({100 * bad / a.size:.1f}%)\nGreatest absolute difference: {diff[worst]} at index "
        f"{tuple(int(i) for i in worst)} (up to {atol} allowed)\nGreatest relative difference: "
        f"{rel[worst_rel]} at index {tuple(int(i) for i in worst_rel)} (up to {rtol} allowed)")


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None,
                    atol: float | None = None, equal_nan: bool = True, msg: str = "") -> None:
    """The deprecated spelling: values only (dtypes may differ), NaNs equal by default."""
    import warnings

    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `torch.testing.assert_close()` "
                  "instead.", FutureWarning, stacklevel=2)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_dtype=False, msg=msg or None)


def make_tensor(*shape, dtype=None, device=None, low=None, high=None,
                requires_grad: bool = False, **kwargs: Any) -> Tensor:
    """Random values in [low, high) (defaults: [-9, 9] for floats, [-9, 10) for ints)."""
    from gradcheck.ref import random

    shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape
    dtype = dtype or dt.float32
    low = -9 if low is None else low
    high = 9 if high is None else high
    if dtype.is_floating_point:
        out = random.rand(*shape, dtype=dtype) * (high - low) + low
        return out.requires_grad_(requires_grad)
    if dtype == dt.bool_:
        return random.randint(0, 2, shape).bool()
    return random.randint(int(low), int(high) + 1, shape, dtype=dtype)


class _TensorTestCase(__import__("unittest").TestCase):
    """``torch.testing._internal.common_utils.TestCase``: a unittest TestCase whose
    ``assertEqual`` compares tensors (and nested containers of them) with ``assert_close``'s
    dtype-based tolerances, exactly for everything else."""

    def assertEqual(self, x: Any, y: Any, msg: Any = None, *, atol: float | None = None,  # noqa: N802
                    rtol: float | None = None, exact_dtype: bool = True, **kwargs: Any) -> None:
        if isinstance(x, Tensor) or isinstance(y, Tensor):
            from gradcheck.ref.creation import as_tensor

            x = x if isinstance(x, Tensor) else as_tensor(x)
            y = y if isinstance(y, Tensor) else as_tensor(y)
            assert_close(x, y, atol=atol, rtol=rtol, check_dtype=exact_dtype,
                         msg=msg, equal_nan=True)
        elif isinstance(x, Sequence) and isinstance(y, Sequence) and not isinstance(x, str):
            self.assertEqual(len(x), len(y), msg)
            for a, b in zip(x, y):
                self.assertEqual(a, b, msg, atol=atol, rtol=rtol, exact_dtype=exact_dtype)
        else:
            super().assertEqual(x, y, msg)

    def assertNotEqual(self, x: Any, y: Any, msg: Any = None, **kwargs: Any) -> None:  # noqa: N802
        try:
            self.assertEqual(x, y, **kwargs)
        except AssertionError:
            return
        raise self.failureException(msg or f"{x!r} == {y!r}")


_internal = __import__("types").SimpleNamespace(
    common_utils=__import__("types").SimpleNamespace(TestCase=_TensorTestCase,
                                                     run_tests=__import__("unittest").main))
