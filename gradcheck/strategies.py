"""Hypothesis strategies for gradient tests: shapes, well-conditioned values, framework tensors.

Strategies compose the way ``hypothesis.extra.numpy`` does: every argument may be a plain value
or a strategy for one, options are keyword-only, and a bad option raises an error naming the
argument and its value. ``assert_gradients`` and ``given_grad_check`` turn them into a one-line
property test whose failures shrink to a minimal input.

>>> import numpy as np
>>> from gradcheck import strategies as gst
>>> gst.assert_gradients(np.sin, gst.arrays(gst.shapes(max_dims=2)),
...                      vjp=lambda g, x: (g * np.cos(x),), max_examples=5)
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

FRAMEWORKS = ("numpy", "torch", "jax", "ref")
DTYPES = ("float64", "float32", "float16")


def _strategy(value: Any) -> st.SearchStrategy:
    return value if isinstance(value, st.SearchStrategy) else st.just(value)


def _check(name: str, value: Any, ok: bool, need: str) -> None:
    if not ok:
        raise ValueError(f"{name}={value!r}: {need}")


def shapes(*, min_dims: int = 0, max_dims: int = 3, min_side: int = 1,
           max_side: int = 5) -> st.SearchStrategy:
    """Array shapes; small by default so that full-mode checks stay cheap.

    >>> shapes(max_dims=1, max_side=2).example() in [(), (1,), (2,)]
    True
    """
    _check("min_dims", min_dims, 0 <= min_dims <= max_dims, f"need 0 <= min_dims <= {max_dims}")
    _check("min_side", min_side, 0 <= min_side <= max_side, f"need 0 <= min_side <= {max_side}")
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def broadcastable_shapes(num_shapes: int = 2, *, min_dims: int = 0, max_dims: int = 3,
                         min_side: int = 1, max_side: int = 5) -> st.SearchStrategy:
    """Tuples of ``num_shapes`` shapes that broadcast together.

    >>> a, b = broadcastable_shapes(2).example()
    >>> len(np.broadcast_shapes(a, b)) >= max(len(a), len(b))
    True
    """
    _check("num_shapes", num_shapes, isinstance(num_shapes, int) and num_shapes >= 1,
           "need an int >= 1")
    _check("min_dims", min_dims, 0 <= min_dims <= max_dims, f"need 0 <= min_dims <= {max_dims}")
    return hnp.mutually_broadcastable_shapes(
        num_shapes=num_shapes, min_dims=min_dims, max_dims=max_dims, min_side=min_side,
        max_side=max_side,
    ).map(lambda found: tuple(found.input_shapes))


def _away_from(kinks: Sequence[float], margin: float, low: float, high: float):
    """Move a value closer than ``margin`` to a kink out to the nearer allowed side."""
    def move(v: float) -> float:
        for k in kinks:
            if abs(v - k) < margin:
                up, down = k + margin, k - margin
                v = up if (v >= k and up <= high) or down < low else down
        return v
    return move


def arrays(shape: Any, *, dtype: Any = "float64", min_value: float = -3.0,
           max_value: float = 3.0, avoid: Sequence[float] = (), margin: float = 0.0,
           ) -> st.SearchStrategy:
    """numpy arrays of finite, bounded values, optionally kept ``margin`` away from kinks.

    >>> a = arrays((3,), avoid=[0.0], margin=0.1).example()
    >>> bool(np.all(np.abs(a) >= 0.1))
    True
    """
    _check("min_value", min_value, math.isfinite(min_value) and min_value < max_value,
           f"need a finite value below max_value={max_value!r}")
    _check("max_value", max_value, math.isfinite(max_value), "need a finite value")
    _check("margin", margin, margin >= 0, "need margin >= 0")
    for k in avoid:
        _check("avoid", tuple(avoid), min_value <= k - margin or k + margin <= max_value,
               "every kink needs room on one side within [min_value, max_value]")
    if not isinstance(dtype, st.SearchStrategy):
        _check("dtype", dtype, str(dtype) in DTYPES, f"choose one of {', '.join(DTYPES)}")
    move = _away_from(tuple(avoid), margin, min_value, max_value)
    elements = st.floats(min_value, max_value, allow_nan=False, allow_infinity=False,
                         allow_subnormal=False, width=64).map(move)

    def build(spec: tuple) -> st.SearchStrategy:
        shape_, dtype_ = spec
        _check("dtype", dtype_, str(dtype_) in DTYPES, f"choose one of {', '.join(DTYPES)}")
        return hnp.arrays(np.float64, shape_, elements=elements).map(
            lambda a: a.astype(str(dtype_)))

    return st.tuples(_strategy(shape), _strategy(dtype)).flatmap(build)


def tensors(shape: Any, *, framework: str = "torch", dtype: Any = "float64",
            requires_grad: bool = True, min_value: float = -3.0, max_value: float = 3.0,
            avoid: Sequence[float] = (), margin: float = 0.0) -> st.SearchStrategy:
    """Tensors of ``framework`` ("torch", "jax", "ref" for gradcheck.ref, or "numpy").

    >>> x = tensors((2,), framework="numpy").example()
    >>> x.shape
    (2,)
    """
    _check("framework", framework, framework in FRAMEWORKS,
           f"choose one of {', '.join(FRAMEWORKS)}")
    base = arrays(shape, dtype=dtype, min_value=min_value, max_value=max_value, avoid=avoid,
                  margin=margin)
    return base.map(lambda a: _to_framework(a, framework, requires_grad))


def _to_framework(a: np.ndarray, framework: str, requires_grad: bool) -> Any:
    if framework == "torch":
        import torch

        return torch.tensor(a, requires_grad=requires_grad)
    if framework == "jax":
        import jax

        with jax.enable_x64(a.dtype == np.float64):
            return jax.numpy.asarray(a)
    if framework == "ref":
        from gradcheck import ref

        return ref.tensor(a, requires_grad=requires_grad)
    return a


def _inputs_strategy(inputs: Sequence[Any]) -> st.SearchStrategy:
    _check("inputs", inputs, len(inputs) > 0, "give at least one input (value or strategy)")
    return st.tuples(*[_strategy(a) for a in inputs])


def _settings(max_examples: int | None) -> settings:
    # NOTE: a full-mode check, or a JAX function's first compilation, can take longer than
    # hypothesis's default 200 ms deadline; timing is not what these tests are about.
    if max_examples is None:
        return settings(deadline=None)
    return settings(deadline=None, max_examples=max_examples)


def assert_gradients(fn: Callable, *inputs: Any, max_examples: int | None = None,
                     **check_options: Any) -> None:
    """Check ``fn``'s gradient on drawn inputs (one strategy or value per input).

    A failing example is shrunk by hypothesis and re-raised as ``GradientMismatch`` (or
    ``GradientInconclusive`` where the finite differences cannot resolve the gradient; pass
    ``allow_inconclusive=True`` to accept those); ``check_options`` go to
    :func:`gradcheck.check_grad` (``mode`` defaults to "fast").
    """
    given_grad_check(fn, *inputs, max_examples=max_examples, **check_options)(_no_more_checks)()


def _no_more_checks(result: Any) -> None:
    """The test body of :func:`assert_gradients`: check_grad has already judged the example."""


def given_grad_check(fn: Callable, *inputs: Any, **check_options: Any) -> Callable:
    """Decorator: a test that checks ``fn``'s gradient on drawn inputs, one line per op.

    The decorated function receives each passing ``GradcheckResult`` for extra assertions.

    >>> import numpy as np
    >>> @given_grad_check(np.tanh, arrays((3,)), vjp=lambda g, x: (g / np.cosh(x) ** 2,))
    ... def test_tanh(result):
    ...     assert result.passed
    >>> test_tanh()
    """
    from gradcheck.checks import check_grad

    check_options.setdefault("mode", "fast")
    max_examples = check_options.pop("max_examples", None)

    def decorate(test: Callable) -> Callable:
        @_settings(max_examples)
        @given(_inputs_strategy(inputs))
        def run(drawn: tuple) -> None:
            test(check_grad(fn, drawn, **check_options))

        def wrapper() -> None:
            run()

        wrapper.__name__ = test.__name__
        wrapper.__qualname__ = test.__qualname__
        wrapper.__doc__ = test.__doc__
        wrapper.__module__ = test.__module__
        return wrapper

    return decorate
