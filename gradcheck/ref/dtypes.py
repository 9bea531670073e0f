"""Dtypes: torch-named wrappers around numpy dtypes, plus torch's type-promotion rules."""
from __future__ import annotations

import numpy as np


class dtype:  # noqa: N801 - named like torch.dtype
    """A torch-style dtype such as ``float32``; wraps the numpy dtype that stores it.

    >>> from gradcheck.ref import float64
    >>> float64.is_floating_point, float64.itemsize
    (True, 8)
    """

    __slots__ = ("name", "np", "is_floating_point", "itemsize", "_tensor_type", "_rank")

    def __init__(self, name: str, np_dtype, tensor_type: str, rank: int):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.is_floating_point = self.np.kind == "f"
        self.itemsize = self.np.itemsize
        self._tensor_type = tensor_type
        self._rank = rank  # promotion order within torch's categories

    @property
    def is_signed(self) -> bool:
        return self.np.kind in "if"

    @property
    def is_complex(self) -> bool:
        return self.np.kind == "c"

    def to_real(self) -> "dtype":
        return _REAL_OF.get(self, self)

    def to_complex(self) -> "dtype":
        """The complex dtype whose parts are this float dtype (complex64 for float32)."""
        COMPLEX_IN_USE[0] = True
        if self.np.kind == "c":
            return self
        if self not in _COMPLEX_OF:
            raise NotImplementedError(f"{self} has no complex counterpart in gradcheck.ref "
                                      "(numpy has no complex32); use float32 or float64")
        return _COMPLEX_OF[self]

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __reduce__(self):
        return (from_name, (self.name,))


bool_ = dtype("bool", np.bool_, "BoolTensor", 0)
uint8 = dtype("uint8", np.uint8, "ByteTensor", 1)
int8 = dtype("int8", np.int8, "CharTensor", 2)
int16 = dtype("int16", np.int16, "ShortTensor", 3)
int32 = dtype("int32", np.int32, "IntTensor", 4)
int64 = dtype("int64", np.int64, "LongTensor", 5)
float16 = dtype("float16", np.float16, "HalfTensor", 6)
float32 = dtype("float32", np.float32, "FloatTensor", 7)
float64 = dtype("float64", np.float64, "DoubleTensor", 8)

# NOTE: numpy has no bfloat16; the name exists (scripts pass it to autocast) and tensors
# converted to it are stored, computed and reported as float32.
bfloat16 = dtype("bfloat16", np.float32, "BFloat16Tensor", 7)

# complex tensors are numpy complex arrays; their ops and rules live in ``complex`` and ``fft``
complex64 = dtype("complex64", np.complex64, "ComplexFloatTensor", 9)
complex128 = dtype("complex128", np.complex128, "ComplexDoubleTensor", 10)


def _name_only(name: str, floating: bool, tensor_type: str, storage=np.uint8) -> dtype:
    """A dtype numpy cannot store (8-bit floats, quantized integers): the name and its
    properties exist, making a tensor of it raises NotImplementedError."""
    made = dtype(name, storage, tensor_type, 11)
    made.is_floating_point = floating
    return made


float8_e4m3fn = _name_only("float8_e4m3fn", True, "Float8_e4m3fnTensor")
float8_e5m2 = _name_only("float8_e5m2", True, "Float8_e5m2Tensor")
float8_e4m3fnuz = _name_only("float8_e4m3fnuz", True, "Float8_e4m3fnuzTensor")
float8_e5m2fnuz = _name_only("float8_e5m2fnuz", True, "Float8_e5m2fnuzTensor")
qint8 = _name_only("qint8", False, "QInt8Tensor")
quint8 = _name_only("quint8", False, "QUInt8Tensor")
qint32 = _name_only("qint32", False, "QInt32Tensor", np.int32)
quint4x2 = _name_only("quint4x2", False, "QUInt4x2Tensor")
quint2x4 = _name_only("quint2x4", False, "QUInt2x4Tensor")
# the sub-byte unsigned "shell" dtypes: torch itself computes nothing in them
uint1, uint2, uint3, uint4, uint5, uint6, uint7 = (
    _name_only(f"uint{bits}", False, f"UInt{bits}Tensor") for bits in range(1, 8))
_UNSUPPORTED = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz,
                float8_e5m2fnuz, qint8, quint8, qint32, quint4x2, quint2x4, uint1, uint2, uint3,
                uint4, uint5, uint6, uint7)
_WHY: dict = {}
# True once a complex dtype has been asked for in this process: until then the dispatcher
# skips its check that an op accepts complex tensors (one list read instead of a dtype test)
COMPLEX_IN_USE = [False]
_REAL_OF = {complex64: float32, complex128: float64}
_COMPLEX_OF = {float32: complex64, float64: complex128, bfloat16: complex64}

ALL = (bool_, uint8, int8, int16, int32, int64, float16, float32, float64, complex64, complex128)
_BY_NP = {d.np: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update(
    {"bool_": bool_, "long": int64, "int": int32, "short": int16, "half": float16,
     "float": float32, "double": float64, "bfloat16": bfloat16, "cfloat": complex64,
     "cdouble": complex128}
)

_default = [float32]


def from_name(name: str) -> dtype:
    """Look a dtype up by its torch name, e.g. ``from_name("float32")``.

    >>> from_name("double")
    torch.float64
    """
    return _BY_NAME[name]


def from_numpy(np_dtype) -> dtype:
    """The torch dtype that stores values like ``np_dtype`` (e.g. ``np.float64`` -> float64).

    >>> from_numpy(np.dtype("int64"))
    torch.int64
    """
    try:
        found = _BY_NP[np.dtype(np_dtype)]
    except KeyError:
        raise TypeError(
            f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types are: "
            "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint8, "
            "and bool."
        ) from None
    if found.np.kind == "c":
        COMPLEX_IN_USE[0] = True
    return found


def as_dtype(value) -> dtype:
    """Accept a dtype, a numpy dtype, a python type (float/int/bool) or a name."""
    if isinstance(value, dtype):
        if value in _UNSUPPORTED:
            why = _WHY.get(value, "numpy has no such type; compute in float32 or float64")
            raise NotImplementedError(f"{value} tensors are not available in gradcheck.ref: "
                                      f"{why}")
        if value.np.kind == "c":
            COMPLEX_IN_USE[0] = True
        return value
    if value is float:
        return get_default_dtype()
    if value is int:
        return int64
    if value is bool:
        return bool_
    if isinstance(value, str):
        return _BY_NAME[value.replace("torch.", "")]
    return from_numpy(value)


def refuse_complex_order(name: str, *tensors, error: type = RuntimeError) -> None:
    """torch's ordering ops reject complex tensors (complex numbers have no order); its
    comparisons raise NotImplementedError, argmax and sort RuntimeError."""
    for t in tensors:
        if t._data.dtype.kind == "c":
            raise error(f"{name} does not support complex tensors ({t.dtype}): complex "
                               "numbers have no order; compare .real or .abs() instead")


def get_default_dtype() -> dtype:
    """The dtype of new float tensors (float32 unless changed).

    >>> get_default_dtype()
    torch.float32
    """
    return _default[0]


def set_default_dtype(d: dtype) -> None:
    """Make ``d`` (float32 or float64) the dtype of new float tensors (torch.set_default_dtype).

    >>> set_default_dtype(float64); set_default_dtype(float32)
    """
    d = as_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default[0] = d


def _category(d: dtype) -> int:
    if d.np.kind == "c":
        return 3
    return 2 if d.is_floating_point else (0 if d is bool_ else 1)


def default_complex() -> dtype:
    """The dtype of new complex tensors: complex64, or complex128 under a float64 default."""
    COMPLEX_IN_USE[0] = True
    return complex128 if get_default_dtype() is float64 else complex64


def _scalar_dtype(value) -> dtype:
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    if isinstance(value, (complex, np.complexfloating)):
        return default_complex()
    return get_default_dtype()


def _promote_complex(a: dtype, b: dtype) -> dtype:
    """A complex and any other dtype: complex, as wide as the wider floating part (torch:
    complex64 with float64 gives complex128)."""
    COMPLEX_IN_USE[0] = True
    widths = [d.to_real() for d in (a, b) if d.np.kind in "fc"]
    widest = max(widths, key=lambda d: d.itemsize)
    return complex128 if widest.itemsize >= 8 else complex64


def promote_types(a: dtype, b: dtype) -> dtype:
    """torch.promote_types: the smallest dtype that holds both.

    >>> promote_types(int64, float32)
    torch.float32
    """
    if a is b:
        return a
    if a.np.kind == "c" or b.np.kind == "c":
        return _promote_complex(a, b)
    if a.is_floating_point != b.is_floating_point:
        return a if a.is_floating_point else b
    if a is bool_ or b is bool_:
        return b if a is bool_ else a
    if {a, b} == {uint8, int8}:
        return int16
    return a if a._rank >= b._rank else b


def result_type(*operands) -> dtype:
    """torch.result_type over tensors and python scalars.

    Dimensioned tensors outrank 0-d tensors, which outrank python scalars; a lower-priority
    operand only matters when it is of a higher category (bool < int < float).

    >>> result_type(1.5, 2)
    torch.float32
    """
    best = [None, None, None]  # per priority: dimensioned tensors, 0-d tensors, scalars
    for op in operands:
        if hasattr(op, "_data"):
            d, slot = op.dtype, (0 if op._data.ndim else 1)
        else:
            d, slot = _scalar_dtype(op), 2
        best[slot] = d if best[slot] is None else promote_types(best[slot], d)
    result = None
    for d in best:  # highest priority first
        if d is not None and (result is None or _category(d) > _category(result)):
            # a complex operand of lower priority keeps the float precision of the higher
            # one (a float64 tensor times 1j is complex128), as torch's promotion does
            widened = result is not None and result.is_floating_point and _category(d) == 3
            result = result.to_complex() if widened else d
    return result
