"""``torch.distributed.checkpoint.metadata`` and ``.planner``'s records: where each tensor
chunk of a checkpoint lives and what a save plan writes. They are plain frozen dataclasses,
the same with one rank as with many, so code that builds its own plans can use them.

>>> import gradcheck.ref as torch
>>> from gradcheck.ref.distributed.checkpoint_metadata import MetadataIndex
>>> MetadataIndex("w", [0, 2])
MetadataIndex(fqn='w', offset=torch.Size([0, 2]), index=None)
"""
from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any


def _size(values: Any) -> Any:
    from gradcheck.ref import Size

    return Size(values)


@dataclasses.dataclass
class ChunkStorageMetadata:
    """Where one chunk sits in the whole tensor."""

    offsets: Any
    sizes: Any


@dataclasses.dataclass
class TensorProperties:
    """What a tensor is besides its values (torch's layout and memory format objects)."""

    dtype: Any
    layout: Any = dataclasses.field(default_factory=lambda: _ref().strided)
    requires_grad: bool = False
    memory_format: Any = dataclasses.field(default_factory=lambda: _ref().contiguous_format)
    pin_memory: bool = False

    def __repr__(self) -> str:
        # the engine names layouts and memory formats by strings; print them as torch does
        def shown(value: Any) -> str:
            return f"torch.{value}" if isinstance(value, str) else repr(value)

        return (f"TensorProperties(dtype={self.dtype}, layout={shown(self.layout)}, "
                f"requires_grad={self.requires_grad}, memory_format="
                f"{shown(self.memory_format)}, pin_memory={self.pin_memory})")

    @staticmethod
    def create_from_tensor(tensor: Any) -> TensorProperties:
        return TensorProperties(dtype=tensor.dtype, layout=tensor.layout,
                                requires_grad=tensor.requires_grad,
                                memory_format=_ref().contiguous_format,
                                pin_memory=tensor.is_pinned())


def _ref() -> Any:
    import gradcheck.ref as ref

    return ref


@dataclasses.dataclass
class TensorStorageMetadata:
    properties: TensorProperties
    size: Any
    chunks: list


@dataclasses.dataclass(frozen=True)
class MetadataIndex:
    """A key into a state dict: the name, and for a chunk its offset (``index`` is a hint
    that takes no part in equality)."""

    fqn: str
    offset: Any = None
    index: int | None = dataclasses.field(hash=False, compare=False, default=None)

    def __init__(self, fqn: str, offset: Any = None, index: int | None = None) -> None:
        object.__setattr__(self, "fqn", fqn)
        object.__setattr__(self, "index", index)
        object.__setattr__(self, "offset", None if offset is None else _size(offset))


class WriteItemType(enum.Enum):
    TENSOR = enum.auto()
    SHARD = enum.auto()
    BYTE_IO = enum.auto()


@dataclasses.dataclass(frozen=True)
class BytesIOWriteData:
    nbytes: int


@dataclasses.dataclass(frozen=True)
class TensorWriteData:
    chunk: ChunkStorageMetadata
    properties: TensorProperties
    size: Any


@dataclasses.dataclass(frozen=True)
class WriteItem:
    """One thing a save plan writes."""

    index: MetadataIndex
    type: WriteItemType
    bytes_io_data: BytesIOWriteData | None = None
    tensor_data: TensorWriteData | None = None

    def tensor_storage_size(self) -> int | None:
        """Bytes of the tensor this item writes; None when it writes no tensor."""
        if self.tensor_data is None:
            return None
        from gradcheck.ref.cpu_build import _element_size

        return math.prod(self.tensor_data.size) * _element_size(
            self.tensor_data.properties.dtype)


def install(checkpoint: Any) -> None:
    import types

    checkpoint.metadata = types.SimpleNamespace(
        ChunkStorageMetadata=ChunkStorageMetadata, TensorProperties=TensorProperties,
        TensorStorageMetadata=TensorStorageMetadata, MetadataIndex=MetadataIndex)
    checkpoint.planner = types.SimpleNamespace(
        WriteItemType=WriteItemType, WriteItem=WriteItem, TensorWriteData=TensorWriteData,
        BytesIOWriteData=BytesIOWriteData)
