"""torch's legacy tensor types: ``FloatTensor``, ``LongTensor``, ``DoubleTensor``, ...

Each is a constructor (``FloatTensor(2, 3)`` is uninitialised, ``LongTensor([1, 2])`` converts
data) and a type that ``isinstance`` and ``Tensor.type`` understand, as in old tutorials.

>>> import gradcheck.ref as torch
>>> x = torch.FloatTensor([1, 2])
>>> x.dtype, isinstance(x, torch.FloatTensor), isinstance(x, torch.LongTensor)
(torch.float32, True, False)
"""
from __future__ import annotations

from gradcheck.ref import dtypes as dt
from gradcheck.ref.size import Size
from gradcheck.ref.tensors import Tensor


class _LegacyType(type):
    """Metaclass: ``isinstance(t, FloatTensor)`` checks the dtype, as torch's does."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype

    def __repr__(cls) -> str:
        return f"<class 'torch.{cls.__name__}'>"


def _construct(cls, *args, **kwargs):
    from gradcheck.ref import creation

    device = kwargs.pop("device", None)
    if args and all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return creation.zeros(*args, dtype=cls.dtype, device=device)
    if len(args) == 1 and isinstance(args[0], Size):
        return creation.zeros(*args[0], dtype=cls.dtype, device=device)
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0].to(cls.dtype)
    from gradcheck.ref.storage import TypedStorage

    if len(args) == 1 and isinstance(args[0], TypedStorage):  # shares the storage's values
        from gradcheck.ref.tensors import _make

        return _make(args[0]._array.view(cls.dtype.np))
    return creation.tensor(args[0] if args else [], dtype=cls.dtype, device=device)


def _legacy(name: str, dtype: dt.dtype) -> type:
    # NOTE: torch leaves sized legacy tensors uninitialised; zeros keep runs reproducible.
    return _LegacyType(name, (), {"dtype": dtype, "__new__": _construct,
                                  "__doc__": f"Legacy constructor of {dtype} tensors."})


FloatTensor = _legacy("FloatTensor", dt.float32)
DoubleTensor = _legacy("DoubleTensor", dt.float64)
HalfTensor = _legacy("HalfTensor", dt.float16)
LongTensor = _legacy("LongTensor", dt.int64)
IntTensor = _legacy("IntTensor", dt.int32)
ShortTensor = _legacy("ShortTensor", dt.int16)
CharTensor = _legacy("CharTensor", dt.int8)
ByteTensor = _legacy("ByteTensor", dt.uint8)
BoolTensor = _legacy("BoolTensor", dt.bool_)
BY_NAME = {cls.__name__: cls for cls in (FloatTensor, DoubleTensor, HalfTensor, LongTensor,
                                         IntTensor, ShortTensor, CharTensor, ByteTensor,
                                         BoolTensor)}
