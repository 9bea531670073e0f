"""``torch.distributed.tensor.placement_types``: how a DTensor lies on each mesh dimension.
``Shard(dim)`` splits it along ``dim``, ``Replicate()`` keeps a full copy on every rank,
``Partial(op)`` holds per-rank pieces still to be reduced. Their ``repr``, ``str``, equality
and hashing follow torch's, since scripts compare and print them.

>>> Shard(0), str(Shard(1)), Replicate(), str(Partial()), Shard(0) == Shard(0)
(Shard(dim=0), 'S(1)', Replicate(), 'P(sum)', True)
"""
from __future__ import annotations


class Placement:
    """The base class; the three queries say which kind a placement is."""

    def is_shard(self, dim: int | None = None) -> bool:
        return False

    def is_replicate(self) -> bool:
        return False

    def is_partial(self, reduce_op: str | None = None) -> bool:
        return False


class Shard(Placement):
    """Split along tensor dimension ``dim`` across the ranks of a mesh dimension."""

    def __init__(self, dim: int) -> None:
        self.dim = dim

    def is_shard(self, dim: int | None = None) -> bool:
        return dim is None or dim == self.dim

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.dim == self.dim

    def __hash__(self) -> int:
        return hash(self.dim)

    def __repr__(self) -> str:
        return f"Shard(dim={self.dim})"

    def __str__(self) -> str:
        return f"S({self.dim})"


class Replicate(Placement):
    """A full copy on every rank."""

    def is_replicate(self) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Replicate)

    def __hash__(self) -> int:
        return -1

    def __repr__(self) -> str:
        return "Replicate()"

    def __str__(self) -> str:
        return "R"


class Partial(Placement):
    """Per-rank values whose ``reduce_op`` over the ranks is the tensor."""

    def __init__(self, reduce_op: str = "sum") -> None:
        self.reduce_op = reduce_op

    def is_partial(self, reduce_op: str | None = None) -> bool:
        return reduce_op is None or reduce_op == self.reduce_op

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Partial) and other.reduce_op == self.reduce_op

    def __hash__(self) -> int:
        return 1 + hash(self.reduce_op)

    def __repr__(self) -> str:
        return f"Partial({self.reduce_op})"

    def __str__(self) -> str:
        return f"P({self.reduce_op})"
