"""The legacy typed storages (``torch.FloatStorage``, ``torch.ByteStorage``, ...): a size or
a list makes one, ``from_buffer`` reads bytes (how older distributed code serialises
objects), and a legacy tensor type built from a storage shares its values.

>>> import gradcheck.ref as torch
>>> torch.ByteTensor(torch.ByteStorage.from_buffer(b"ab")).tolist()
[97, 98]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gradcheck.ref import dtypes as dt
from gradcheck.ref.storage import TypedStorage


def _storage_class(name: str, dtype: Any) -> type:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if len(args) == 1 and isinstance(args[0], int):
            array = np.zeros(args[0], dtype=dtype.np)
        elif args:
            array = np.asarray(args[0], dtype=dtype.np).reshape(-1)
        else:
            array = np.zeros(0, dtype=dtype.np)
        TypedStorage.__init__(self, array, dtype)

    def from_buffer(cls, buffer: bytes, byte_order: str = "native", count: int = -1,
                    offset: int = 0) -> TypedStorage:
        array = np.frombuffer(buffer, dtype=dtype.np, count=count, offset=offset).copy()
        return cls(array)

    return type(name, (TypedStorage,), {"__init__": __init__,
                                        "from_buffer": classmethod(from_buffer),
                                        "_from_buffer": classmethod(from_buffer),
                                        "__doc__": f"torch.{name}"})


FloatStorage = _storage_class("FloatStorage", dt.float32)
DoubleStorage = _storage_class("DoubleStorage", dt.float64)
HalfStorage = _storage_class("HalfStorage", dt.float16)
LongStorage = _storage_class("LongStorage", dt.int64)
IntStorage = _storage_class("IntStorage", dt.int32)
ShortStorage = _storage_class("ShortStorage", dt.int16)
CharStorage = _storage_class("CharStorage", dt.int8)
ByteStorage = _storage_class("ByteStorage", dt.uint8)
BoolStorage = _storage_class("BoolStorage", dt.bool_)
