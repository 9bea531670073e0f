"""``torch.distributed._shard``: sharded tensors on a world of one process.

A ShardedTensor is a global size, the metadata of every shard (offsets, sizes, placement)
and this rank's local shards. With one rank every shard is local, so ``gather`` assembles
the whole tensor from them. Sharding specs build the shard layout: ``ChunkShardingSpec``
cuts one dimension as ``torch.chunk`` does, ``EnumerableShardingSpec`` lists the shards.

What differs from torch: the engine's ShardedTensor is not a Tensor (torch's is a wrapper
subclass that holds no data and refuses the operators it does not register), and a
placement on a rank other than 0 is refused, since no such rank exists here.

>>> import gradcheck.ref as torch
>>> spec = ChunkShardingSpec(dim=0, placements=["rank:0/cpu", "rank:0/cpu"])
>>> [shard.shard_sizes for shard in spec.build_metadata(torch.Size([5, 3]),
...     TensorProperties(torch.float32)).shards_metadata]
[[3, 3], [2, 3]]
"""
from __future__ import annotations

import abc
import dataclasses
import math
import types
from typing import Any

from gradcheck.ref.distributed.checkpoint_metadata import TensorProperties
from gradcheck.ref.distributed.remote_device import _remote_device


class ShardMetadata:
    """Where one shard sits in the global tensor and which device holds it."""

    __slots__ = ("shard_offsets", "shard_sizes", "placement")

    def __init__(self, shard_offsets: list, shard_sizes: list, placement: Any = None) -> None:
        self.shard_offsets, self.shard_sizes = shard_offsets, shard_sizes
        self.placement = _remote_device(placement) if isinstance(placement, str) else placement
        if len(shard_offsets) != len(shard_sizes):
            raise ValueError(f"shard_offsets and shard_sizes should have the same number of "
                             f"elements, found {len(shard_offsets)} and {shard_sizes} "
                             f"respectively")
        if any(offset < 0 for offset in shard_offsets):
            raise ValueError("shard_offsets should be >=0")
        if any(size < 0 for size in shard_sizes):
            raise ValueError("shard_sizes should be >= 0")

    def _key(self) -> tuple:
        return tuple(self.shard_offsets), tuple(self.shard_sizes), self.placement

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ShardMetadata) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"ShardMetadata(shard_offsets={self.shard_offsets}, shard_sizes="
                f"{self.shard_sizes}, placement={self.placement})")


@dataclasses.dataclass
class Shard:
    """A local tensor and the metadata saying where it belongs."""

    tensor: Any
    metadata: ShardMetadata

    def __post_init__(self) -> None:
        if list(self.tensor.size()) != list(self.metadata.shard_sizes):
            raise ValueError(f"Shard tensor size does not match with metadata.shard_lengths! "
                             f"Found shard tensor size: {list(self.tensor.size())}, "
                             f"metadata.shard_lengths: {self.metadata.shard_sizes}, ")
        placement = self.metadata.placement
        if placement is not None and placement.device() != self.tensor.device:
            raise ValueError(f"Local shard tensor device does not match with local Shard's "
                             f"placement! Found local shard tensor device: "
                             f"{self.tensor.device}, local shard metadata placement device: "
                             f"{placement.device()}")

    @classmethod
    def from_tensor_and_offsets(cls, tensor: Any, shard_offsets: list, rank: int) -> Shard:
        placement = _remote_device(f"rank:{rank}/{tensor.device}")
        return cls(tensor, ShardMetadata(shard_offsets, list(tensor.size()), placement))


@dataclasses.dataclass
class ShardedTensorMetadata:
    shards_metadata: list = dataclasses.field(default_factory=list)
    size: Any = dataclasses.field(default_factory=lambda: _ref().Size([]))
    tensor_properties: TensorProperties = dataclasses.field(
        default_factory=lambda: TensorProperties(dtype=_ref().get_default_dtype()))


def _ref() -> Any:
    import gradcheck.ref as ref

    return ref


def _check_local(placement: _remote_device) -> None:
    if placement.rank() not in (None, 0):
        raise ValueError(f"placement {placement} names rank {placement.rank()}, but this "
                         f"world has one process (rank 0); place every shard on rank 0")


def _overlap(a: ShardMetadata, b: ShardMetadata) -> bool:
    return all(x0 < y0 + ys and y0 < x0 + xs for x0, xs, y0, ys in zip(
        a.shard_offsets, a.shard_sizes, b.shard_offsets, b.shard_sizes))


class ShardingSpec(abc.ABC):
    """How a tensor is cut into shards and placed."""

    @abc.abstractmethod
    def build_metadata(self, tensor_sizes: Any, tensor_properties: TensorProperties
                       ) -> ShardedTensorMetadata:
        """The shard layout of a tensor of this size."""

    @abc.abstractmethod
    def shard(self, tensor: Any, src_rank: int = 0, process_group: Any = None) -> Any:
        """The tensor cut into a ShardedTensor."""


def _shard_by_spec(spec: ShardingSpec, tensor: Any) -> ShardedTensor:
    metadata = spec.build_metadata(tensor.size(), TensorProperties.create_from_tensor(tensor))
    shards = [Shard(tensor[tuple(slice(o, o + s) for o, s in zip(
        m.shard_offsets, m.shard_sizes))].clone(), m) for m in metadata.shards_metadata]
    return ShardedTensor._init_from_local_shards_and_global_metadata(
        shards, metadata, sharding_spec=spec)


@dataclasses.dataclass
class ChunkShardingSpec(ShardingSpec):
    """One dimension cut into len(placements) chunks, as ``torch.chunk`` cuts it."""

    dim: Any
    placements: list

    def __post_init__(self) -> None:
        self._verify_dim(self.dim)
        self.placements = [p if isinstance(p, _remote_device) else _remote_device(p)
                           for p in self.placements]

    @staticmethod
    def _verify_dim(dim: Any) -> None:
        if isinstance(dim, str):
            raise NotImplementedError("ChunkShardingSpec does not support named dimension yet!")
        if not isinstance(dim, int):
            raise ValueError(f"Sharding dim needs to be an integer, found: {dim}")

    def build_metadata(self, tensor_sizes: Any, tensor_properties: TensorProperties
                       ) -> ShardedTensorMetadata:
        ndim = len(tensor_sizes)
        if not -ndim <= self.dim < ndim:
            raise ValueError(f"Invalid sharding dim: {self.dim}")
        length = tensor_sizes[self.dim]
        step = math.ceil(length / len(self.placements))
        shards = []
        for index, placement in enumerate(self.placements):
            offsets, sizes = [0] * ndim, list(tensor_sizes)
            offsets[self.dim] = step * index
            sizes[self.dim] = max(min(length, step * (index + 1)) - step * index, 0)
            shards.append(ShardMetadata(offsets, sizes, placement))
        return ShardedTensorMetadata(shards, _ref().Size(tensor_sizes), tensor_properties)

    def shard(self, tensor: Any, src_rank: int = 0, process_group: Any = None) -> Any:
        return _shard_by_spec(self, tensor)


@dataclasses.dataclass
class EnumerableShardingSpec(ShardingSpec):
    """The shards listed one by one; they may not overlap."""

    shards: list

    def __post_init__(self) -> None:
        if not self.shards:
            return
        rank = len(self.shards[0].shard_offsets)
        for shard in self.shards:
            if len(shard.shard_offsets) != rank:
                raise ValueError(f"Found inconsistent ranks for shards: {rank} and "
                                 f"{len(shard.shard_offsets)}")
        for i, first in enumerate(self.shards):
            for second in self.shards[i + 1:]:
                if _overlap(first, second):
                    raise ValueError(f"Shards {first} and {second} overlap")

    def build_metadata(self, tensor_sizes: Any, tensor_properties: TensorProperties
                       ) -> ShardedTensorMetadata:
        _check_covers(self.shards, tensor_sizes)
        return ShardedTensorMetadata(self.shards, _ref().Size(tensor_sizes), tensor_properties)

    def shard(self, tensor: Any, src_rank: int = 0, process_group: Any = None) -> Any:
        return _shard_by_spec(self, tensor)


def _check_covers(shards: list, tensor_sizes: Any) -> None:
    """The shards fit in the tensor and together fill it (they do not overlap)."""
    for shard in shards:
        if any(o + s > d for o, s, d in zip(shard.shard_offsets, shard.shard_sizes,
                                               tensor_sizes)):
            raise ValueError(f"Shard offset {shard.shard_offsets} and length "
                             f"{shard.shard_sizes} exceeds tensor dim: {list(tensor_sizes)} "
                             f"for shard {shard}")
    volume, expected = sum(math.prod(s.shard_sizes) for s in shards), math.prod(tensor_sizes)
    if volume != expected:
        raise ValueError(f"Total volume of shards: {volume} does not match tensor volume: "
                         f"{expected}, in other words all the individual shards do not cover "
                         f"the entire tensor")


def _infer_spec(metadata: ShardedTensorMetadata) -> ShardingSpec:
    """A ChunkShardingSpec when the shards are torch.chunk's cut of one dimension, as torch
    infers it; otherwise the shards enumerated."""
    shards = list(metadata.shards_metadata)
    cut = [d for d in range(len(metadata.size))
           if len({s.shard_offsets[d] for s in shards}) > 1]
    if len(shards) > 1 and len(cut) == 1:
        ordered = sorted(shards, key=lambda s: s.shard_offsets[cut[0]])
        chunk = ChunkShardingSpec(cut[0], [s.placement for s in ordered])
        built = chunk.build_metadata(metadata.size, metadata.tensor_properties)
        if built.shards_metadata == ordered:
            return chunk
    return EnumerableShardingSpec(shards)


class ShardedTensorBase:
    """Shards and their global metadata, without a process group."""

    def __init__(self, local_shards: list, metadata: ShardedTensorMetadata,
                 sharding_spec: ShardingSpec | None = None) -> None:
        self._local_shards, self._metadata = list(local_shards), metadata
        self._sharding_spec = sharding_spec or _infer_spec(metadata)

    @classmethod
    def _init_from_local_shards_and_global_metadata(
            cls, local_shards: list, sharded_tensor_metadata: ShardedTensorMetadata,
            sharding_spec: ShardingSpec | None = None) -> ShardedTensorBase:
        for shard in sharded_tensor_metadata.shards_metadata:
            if shard.placement is not None:
                _check_local(shard.placement)
        _check_covers(sharded_tensor_metadata.shards_metadata, sharded_tensor_metadata.size)
        known = {id(m) for m in sharded_tensor_metadata.shards_metadata}
        for shard in local_shards:
            if id(shard.metadata) not in known and shard.metadata not in \
                    sharded_tensor_metadata.shards_metadata:
                raise ValueError(f"local shard {shard.metadata} is not in the global "
                                 f"metadata's shards")
        return ShardedTensor(local_shards, sharded_tensor_metadata, sharding_spec)

    def metadata(self) -> ShardedTensorMetadata:
        return self._metadata

    def local_shards(self) -> list:
        return self._local_shards

    def sharding_spec(self) -> ShardingSpec:
        return self._sharding_spec

    def size(self, dim: int | None = None) -> Any:
        return self._metadata.size if dim is None else self._metadata.size[dim]

    @property
    def shape(self) -> Any:
        return self._metadata.size

    def dim(self) -> int:
        return len(self._metadata.size)

    ndim = property(dim)
    dtype = property(lambda self: self._metadata.tensor_properties.dtype)
    layout = property(lambda self: self._metadata.tensor_properties.layout)
    requires_grad = property(lambda self: self._metadata.tensor_properties.requires_grad)
    device = property(lambda self: _ref().device("cpu"))

    def is_pinned(self) -> bool:
        return self._metadata.tensor_properties.pin_memory

    def __repr__(self) -> str:
        return f"ShardedTensor({self._metadata})"


class ShardedTensor(ShardedTensorBase):
    """A tensor kept as shards; with one rank, all of them are local."""

    @classmethod
    def _init_from_local_shards(cls, local_shards: list, *global_size: Any,
                                process_group: Any = None,
                                init_rrefs: bool = False) -> ShardedTensor:
        _ref().distributed._get_default_group()
        size = _ref().Size(global_size[0] if len(global_size) == 1 and not isinstance(
            global_size[0], int) else global_size)
        if not local_shards:
            raise ValueError("no local shards given: a world of one process holds them all")
        first = local_shards[0].tensor
        properties = TensorProperties.create_from_tensor(first)
        metadata = ShardedTensorMetadata([s.metadata for s in local_shards], size, properties)
        return cls._init_from_local_shards_and_global_metadata(local_shards, metadata)

    def local_tensor(self) -> Any:
        if len(self._local_shards) != 1:
            raise NotImplementedError(f"Only single local shard is supported. Number of "
                                      f"shards: {len(self._local_shards)}")
        return self._local_shards[0].tensor

    def gather(self, dst: int = 0, out: Any = None, enforce_dtype: bool = False,
               dtype: Any = None) -> None:
        """Copy the shards into ``out`` (the whole tensor, on rank ``dst``)."""
        if out is None:
            return
        if tuple(out.size()) != tuple(self.size()):
            raise ValueError(f"Argument ``dst_tensor`` have size {tuple(out.size())},but "
                             f"should be {tuple(self.size())}")
        ref = _ref()
        with ref.no_grad():
            for shard in self._local_shards:
                region = tuple(slice(o, o + s) for o, s in zip(
                    shard.metadata.shard_offsets, shard.metadata.shard_sizes))
                out[region] = shard.tensor

    def cpu(self, memory_format: Any = None, process_group: Any = None) -> ShardedTensor:
        return self


def _create(fill: Any, sharding_spec: ShardingSpec, size: tuple, dtype: Any,
            requires_grad: bool, pin_memory: bool) -> ShardedTensor:
    ref = _ref()
    ref.distributed._get_default_group()
    size = ref.Size(size[0] if len(size) == 1 and not isinstance(size[0], int) else size)
    dtype = dtype or ref.get_default_dtype()
    properties = TensorProperties(dtype=dtype, requires_grad=requires_grad,
                                  pin_memory=pin_memory)
    metadata = sharding_spec.build_metadata(size, properties)
    shards = []
    for shard in metadata.shards_metadata:
        _check_local(shard.placement)
        local = fill(shard.shard_sizes, dtype).requires_grad_(requires_grad)
        shards.append(Shard(local, shard))
    return ShardedTensor(shards, metadata, sharding_spec)


def _factory(make: Any) -> Any:
    def create(sharding_spec: ShardingSpec, *size: Any, dtype: Any = None, layout: Any = None,
               requires_grad: bool = False, pin_memory: bool = False, memory_format: Any = None,
               process_group: Any = None, init_rrefs: bool = False) -> ShardedTensor:
        return _create(make, sharding_spec, size, dtype, requires_grad, pin_memory)

    return create


empty = _factory(lambda sizes, dtype: _ref().empty(sizes, dtype=dtype))
ones = _factory(lambda sizes, dtype: _ref().ones(sizes, dtype=dtype))
zeros = _factory(lambda sizes, dtype: _ref().zeros(sizes, dtype=dtype))


def full(sharding_spec: ShardingSpec, size: Any, fill_value: Any, *, dtype: Any = None,
         layout: Any = None, requires_grad: bool = False, pin_memory: bool = False,
         memory_format: Any = None, process_group: Any = None,
         init_rrefs: bool = False) -> ShardedTensor:
    def fill(sizes: list, kind: Any) -> Any:
        return _ref().full(sizes, fill_value, dtype=kind)

    return _create(fill, sharding_spec, (size,), dtype, requires_grad, pin_memory)


def init_from_local_shards(local_shards: list, *global_size: Any, process_group: Any = None,
                           init_rrefs: bool = False) -> ShardedTensor:
    return ShardedTensor._init_from_local_shards(local_shards, *global_size)


def install(distributed: Any) -> None:
    """``torch.distributed._shard`` and its old alias ``torch.distributed._sharding_spec``."""
    metadata = types.SimpleNamespace(ShardMetadata=ShardMetadata)
    sharding_spec = types.SimpleNamespace(
        ShardingSpec=ShardingSpec, ChunkShardingSpec=ChunkShardingSpec,
        EnumerableShardingSpec=EnumerableShardingSpec, ShardMetadata=ShardMetadata)
    tensor_metadata = types.SimpleNamespace(ShardedTensorMetadata=ShardedTensorMetadata,
                                            TensorProperties=TensorProperties)
    api = types.SimpleNamespace(ShardedTensor=ShardedTensor, ShardedTensorBase=ShardedTensorBase)
    sharded_tensor = types.SimpleNamespace(
        ShardedTensor=ShardedTensor, ShardedTensorBase=ShardedTensorBase, Shard=Shard,
        ShardMetadata=ShardMetadata, ShardedTensorMetadata=ShardedTensorMetadata,
        TensorProperties=TensorProperties, ShardingSpec=ShardingSpec, empty=empty, full=full,
        ones=ones, zeros=zeros, init_from_local_shards=init_from_local_shards, api=api,
        metadata=tensor_metadata, shard=types.SimpleNamespace(Shard=Shard))
    distributed._shard = types.SimpleNamespace(
        sharded_tensor=sharded_tensor, sharding_spec=sharding_spec, metadata=metadata,
        api=types.SimpleNamespace(ShardedTensor=ShardedTensor))
    distributed._sharding_spec = sharding_spec
