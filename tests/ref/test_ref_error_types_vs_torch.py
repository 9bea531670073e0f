"""Errors whose type must be torch's (the text is ours: it names the value and the fix), and
integer powers with negative exponents, which torch computes where numpy raises."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gradcheck.ref as ref


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _raised(lib, fn):
    try:
        fn(lib)
    except Exception as exc:  # noqa: BLE001 - the type is what we compare
        return type(exc)
    return None


def _ints(lib, values):
    return lib.tensor(values, dtype=lib.int32)


def _scatter(lib, self_shape, src_shape, half=False):
    self_ = lib.zeros(*self_shape)
    index = lib.zeros(3, 4, 5, dtype=lib.int64)
    return (self_.half() if half else self_).scatter(1, index, lib.zeros(*src_shape))


ERRORS = {
    "int ** negative int": lambda lib: _ints(lib, [-2, 0, 2]) ** -2,
    "float << int": lambda lib: lib.tensor([1.0]) << 2,
    "int << float tensor": lambda lib: _ints(lib, [1]) << lib.tensor([1.0]),
    "int >> float": lambda lib: _ints(lib, [1]) >> 1.0,
    "float & int": lambda lib: lib.tensor([1.0]) & 1,
    "linspace bool": lambda lib: lib.linspace(5, 10, 3, dtype=lib.bool),
    "linspace negative steps": lambda lib: lib.linspace(1, 2, -1),
    "int floor division by 0": lambda lib: _ints(lib, [1, 2]) // _ints(lib, [0, 1]),
    "int trunc division by 0": lambda lib: lib.div(_ints(lib, [1, 2]), 0,
                                                   rounding_mode="trunc"),
    "int remainder by 0": lambda lib: _ints(lib, [1, 2]) % 0,
    "scatter index larger than self": lambda lib: _scatter(lib, (2, 3, 10), (10, 10, 10)),
    "scatter index larger than src": lambda lib: _scatter(lib, (10, 3, 10), (10, 3, 10)),
    "scatter dtype mismatch": lambda lib: _scatter(lib, (3, 4, 5), (3, 4, 5), half=True),
    "scatter_reduce dtype mismatch": lambda lib: lib.zeros(4, 5, 6).half().scatter_reduce(
        0, lib.zeros(4, 5, 6, dtype=lib.int64), lib.zeros(4, 5, 6), reduce="sum"),
    "circular pad wrapping twice": lambda lib: lib.nn.functional.pad(
        lib.zeros(1, 1, 5, 5), (3, 6, 0, 0), mode="circular"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_error_type_matches_torch(case, torch):
    expected = _raised(torch, ERRORS[case])
    assert expected is not None, f"torch accepts {case}"
    assert _raised(ref, ERRORS[case]) is expected


@given(st.lists(st.integers(-3, 3), min_size=1, max_size=6),
       st.lists(st.integers(-3, 3), min_size=1, max_size=6), st.sampled_from(["int32", "int64"]))
def test_integer_powers_with_negative_exponents_match_torch(bases, exponents, dtype):
    """1 and -1 keep their magnitude (sign by parity), other bases truncate to 0."""
    torch = pytest.importorskip("torch")
    n = min(len(bases), len(exponents))

    def run(lib):
        b = lib.tensor(bases[:n], dtype=getattr(lib, dtype))
        e = lib.tensor(exponents[:n], dtype=getattr(lib, dtype))
        return [(b ** e).numpy(), (2 ** e).numpy(), ((-1) ** e).numpy()]

    for ours, theirs in zip(run(ref), run(torch)):
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)
