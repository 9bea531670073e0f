"""TorchScript's type objects as a CPU build of torch exposes them (``torch.IntType.get()``,
``torch.ListType(...)``, ...), and ``torch.Tag``. Code reads them to describe signatures;
the engine compiles nothing, so they only name types, print them, compare them and answer
``isSubtypeOf`` by TorchScript's rules (Any above all, Optional above its element and None,
tuples covariant, lists and dicts invariant, int not a float).

>>> import gradcheck.ref as torch
>>> torch.ListType(torch.IntType.get()), torch.OptionalType.ofTensor().annotation_str
(List[int], 'Optional[Tensor]')
"""
from __future__ import annotations

import enum
from typing import Any


class Type:
    """A TorchScript type: its name, contained types and subtype relation."""

    _name = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(f"torch._C.{type(self).__name__}: No constructor defined!")

    def containedTypes(self) -> list:  # noqa: N802 - torch's name
        return []

    def kind(self) -> str:
        return type(self).__name__

    def str(self) -> str:  # noqa: A003
        """The schema spelling (``int[]``, ``int?``, ``Dict(str, int)``, ``(int, float)``)."""
        return self._name

    @property
    def annotation_str(self) -> str:
        return self._name

    def isSubtypeOf(self, other: Type) -> bool:  # noqa: N802
        if not isinstance(other, Type):
            raise TypeError(f"isSubtypeOf(): expected a torch type, got {other!r}")
        if isinstance(other, AnyType) or self == other:
            return True
        if isinstance(other, OptionalType):
            return isinstance(self, NoneType) or self.isSubtypeOf(other.getElementType())
        return False

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.containedTypes() == other.containedTypes()

    __hash__ = None  # torch's types are unhashable

    def __repr__(self) -> str:
        return self._name

    __str__ = __repr__


def _singleton(name: str, text: str) -> type:
    """A type with one instance, got with ``get()``."""
    cls = type(name, (Type,), {"_name": text, "__module__": "torch"})
    instance = object.__new__(cls)
    cls.get = staticmethod(lambda: instance)
    return cls


AnyType = _singleton("AnyType", "Any")
IntType = _singleton("IntType", "int")
FloatType = _singleton("FloatType", "float")
ComplexType = _singleton("ComplexType", "complex")
StringType = _singleton("StringType", "str")
BoolType = _singleton("BoolType", "bool")
NoneType = _singleton("NoneType", "NoneType")
TensorType = _singleton("TensorType", "Tensor")


def _checked(value: Any, cls_name: str, signature: str) -> Any:
    if not isinstance(value, Type):
        raise TypeError(f"__init__(): incompatible constructor arguments. The following "
                        f"argument types are supported:\n    1. torch._C.{cls_name}"
                        f"({signature})\n\nInvoked with: {value!r}")
    return value


class _OneElement(Type):
    """A type around one element type: ``List[int]`` (``int[]``), ``Optional[int]`` (``int?``)."""
    _wrapper = ""
    _suffix = ""

    def __init__(self, element: Type) -> None:
        self._element = _checked(element, type(self).__name__, "arg0: torch._C.Type")

    def getElementType(self) -> Type:  # noqa: N802
        return self._element

    def containedTypes(self) -> list:  # noqa: N802
        return [self._element]

    @property
    def _name(self) -> str:  # type: ignore[override]
        return f"{self._wrapper}[{self._element.annotation_str}]"

    def str(self) -> str:  # noqa: A003
        return f"{self._element.str()}{self._suffix}"


class ListType(_OneElement):
    _wrapper, _suffix = "List", "[]"

    ofInts = staticmethod(lambda: ListType(IntType.get()))  # noqa: N815
    ofFloats = staticmethod(lambda: ListType(FloatType.get()))  # noqa: N815
    ofComplexDoubles = staticmethod(lambda: ListType(ComplexType.get()))  # noqa: N815
    ofBools = staticmethod(lambda: ListType(BoolType.get()))  # noqa: N815
    ofStrings = staticmethod(lambda: ListType(StringType.get()))  # noqa: N815
    ofTensors = staticmethod(lambda: ListType(TensorType.get()))  # noqa: N815


class OptionalType(_OneElement):
    _wrapper, _suffix = "Optional", "?"

    def isSubtypeOf(self, other: Type) -> bool:  # noqa: N802
        if isinstance(other, OptionalType):
            return self._element.isSubtypeOf(other.getElementType())
        return super().isSubtypeOf(other)

    ofTensor = staticmethod(lambda: OptionalType(TensorType.get()))  # noqa: N815


class DictType(Type):
    def __init__(self, key: Type, value: Type) -> None:
        signature = "arg0: torch._C.Type, arg1: torch._C.Type"
        self._key = _checked(key, "DictType", signature)
        self._value = _checked(value, "DictType", signature)

    def getKeyType(self) -> Type:  # noqa: N802
        return self._key

    def getValueType(self) -> Type:  # noqa: N802
        return self._value

    def containedTypes(self) -> list:  # noqa: N802
        return [self._key, self._value]

    @property
    def _name(self) -> str:  # type: ignore[override]
        return f"Dict[{self._key.annotation_str}, {self._value.annotation_str}]"

    def str(self) -> str:  # noqa: A003
        return f"Dict({self._key.str()}, {self._value.str()})"


class TupleType(Type):
    def __init__(self, elements: list) -> None:
        self._elements = [_checked(e, "TupleType", "arg0: list[torch._C.Type]")
                          for e in elements]

    def elements(self) -> list:
        return list(self._elements)

    def containedTypes(self) -> list:  # noqa: N802
        return self.elements()

    @property
    def _name(self) -> str:  # type: ignore[override]
        inner = ", ".join(e.annotation_str for e in self._elements) or "()"
        return f"Tuple[{inner}]"

    def str(self) -> str:  # noqa: A003
        return f"({', '.join(e.str() for e in self._elements)})"

    def isSubtypeOf(self, other: Type) -> bool:  # noqa: N802
        if isinstance(other, TupleType) and len(other.elements()) == len(self._elements):
            return all(mine.isSubtypeOf(theirs)
                       for mine, theirs in zip(self._elements, other.elements()))
        return super().isSubtypeOf(other)


for _cls in (Type, ListType, OptionalType, DictType, TupleType):
    _cls.__module__ = "torch"

_TAGS = ("core", "cudagraph_unsafe", "data_dependent_output", "dynamic_output_shape",
         "flexible_layout", "generated", "inplace", "inplace_view",
         "maybe_aliasing_or_mutating", "needs_contiguous_strides", "needs_exact_strides",
         "needs_fixed_stride_order", "nondeterministic_bitwise", "nondeterministic_seeded",
         "out", "out_variant", "pointwise", "pt2_compliant_tag", "reduction", "view_copy")


class Tag(enum.Enum):
    """``torch.Tag``: the operator tags, numbered as torch numbers them."""

    _ignore_ = ["name", "index"]
    for index, name in enumerate(_TAGS):
        vars()[name] = index

    def __int__(self) -> int:
        return self.value


Tag.__module__ = "torch"

NAMES = {cls.__name__: cls for cls in (Type, AnyType, IntType, FloatType, ComplexType,
                                       StringType, BoolType, NoneType, TensorType, ListType,
                                       OptionalType, DictType, TupleType)}
NAMES["Tag"] = Tag
