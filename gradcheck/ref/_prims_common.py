"""``torch._prims_common``: dtype classes and shape arithmetic that library code borrows.

>>> import gradcheck.ref as torch
>>> infer_size((2, -1), 6), is_integer_dtype(torch.uint8), is_integer_dtype(torch.bool)
((2, 3), True, False)
"""
from __future__ import annotations

from typing import Any

from gradcheck.ref import dtypes as dt

_integer_dtypes = (dt.uint8, dt.int8, dt.int16, dt.int32, dt.int64)


def _need_dtype(value: Any) -> None:
    if not isinstance(value, dt.dtype):
        raise AssertionError(f"Expected torch.dtype, got {type(value)}")


def is_integer_dtype(dtype: Any) -> bool:
    _need_dtype(dtype)
    return dtype in _integer_dtypes


def is_float_dtype(dtype: Any) -> bool:
    _need_dtype(dtype)
    return dtype.is_floating_point


def is_boolean_dtype(dtype: Any) -> bool:
    _need_dtype(dtype)
    return dtype is dt.bool_


def infer_size(shape: Any, numel: int) -> tuple:
    """``shape`` with its one -1 resolved so that it holds ``numel`` elements."""
    inferred, known = None, 1
    for i, size in enumerate(shape):
        if size == -1:
            if inferred is not None:
                raise RuntimeError("only one dimension can be inferred")
            inferred = i
        elif size < 0:
            raise RuntimeError(f"invalid shape dimension {size}. If this was symbolic, it was "
                               "assumed to not be -1.If this was meant to be inferred, please "
                               "explicitly pass in -1.")
        else:
            known *= size
    invalid = f"shape '{list(shape)}' is invalid for input of size {numel}"
    if inferred is None:
        if numel != known:
            raise RuntimeError(invalid)
        return tuple(shape)
    if known == 0:
        raise RuntimeError(
            f"cannot reshape tensor of 0 elements into shape {list(shape)} because the "
            "unspecified dimension size -1 can be any value and is ambiguous" if numel == 0
            else invalid)
    if numel % known:
        raise RuntimeError(invalid)
    return tuple(numel // known if i == inferred else s for i, s in enumerate(shape))
