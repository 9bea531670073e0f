"""Size: the tuple subclass that ``Tensor.shape`` returns (``torch.Size``)."""
from __future__ import annotations


class Size(tuple):
    """A shape, e.g. ``Size([2, 3])``; behaves as a tuple of ints.

    >>> Size([2, 3])
    torch.Size([2, 3])
    """

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds."""
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, item):
        out = super().__getitem__(item)
        return Size(out) if isinstance(item, slice) else out

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))
