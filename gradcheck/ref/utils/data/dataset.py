"""Datasets: `Dataset`, `TensorDataset`, `Subset`, `ConcatDataset` and `random_split`."""
from __future__ import annotations

import bisect
import math
from collections.abc import Iterator, Sequence
from typing import Any, Generic, TypeVar

from gradcheck import ref as torch


T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map-style dataset: implement `__getitem__(index)` and `__len__()` (generic like
    torch's, so ``Dataset[Tensor]`` works as a base).

    Example:
        >>> class Squares(Dataset):
        ...     def __getitem__(self, i): return i * i
        ...     def __len__(self): return 4
        >>> [Squares()[i] for i in range(4)]
        [0, 1, 4, 9]
    """

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream-style dataset: implement `__iter__`; DataLoader batches it in order.

    Example:
        >>> class Count(IterableDataset):
        ...     def __iter__(self): return iter(range(3))
        >>> list(Count())
        [0, 1, 2]
    """

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class ChainDataset(IterableDataset):
    """Iterable datasets one after the other, chained as they are iterated.

    Example:
        >>> class Count(IterableDataset):
        ...     def __init__(self, n): self.n = n
        ...     def __iter__(self): return iter(range(self.n))
        ...     def __len__(self): return self.n
        >>> chained = ChainDataset([Count(2), Count(3)])
        >>> list(chained), len(chained)
        ([0, 1, 0, 1, 2], 5)
    """

    def __init__(self, datasets: Any) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator[Any]:
        for dataset in self.datasets:
            if not isinstance(dataset, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from dataset

    def __len__(self) -> int:
        total = 0
        for dataset in self.datasets:
            if not isinstance(dataset, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(dataset)
        return total


class TensorDataset(Dataset):
    """Sample `i` is the tuple of every tensor's row `i`.

    Example:
        >>> import gradcheck.ref as torch
        >>> ds = TensorDataset(torch.arange(3), torch.arange(3) * 10)
        >>> [t.item() for t in ds[2]]
        [2, 20]
    """

    def __init__(self, *tensors: Any) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        sizes = [t.shape[0] for t in tensors]
        if any(size != sizes[0] for size in sizes):
            raise ValueError(f"Size mismatch between tensors: first dimensions are {sizes}; "
                             "every tensor must have the same number of rows")
        self.tensors = tensors

    def __getitem__(self, index: int) -> tuple:
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order.

    Example:
        >>> Subset([10, 11, 12, 13], [3, 0])[0]
        13
    """

    def __init__(self, dataset: Any, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index: int) -> Any:
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """Several datasets one after another.

    Example:
        >>> ds = ConcatDataset([[1, 2], [3]])
        >>> len(ds), ds[2]
        (3, 3)
    """

    def __init__(self, datasets: Sequence[Any]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset needs at least one dataset")
        self.cumulative_sizes: list[int] = self.cumsum(self.datasets)

    @staticmethod
    def cumsum(sequence: Sequence[Any]) -> list[int]:
        """The running total of the lengths: where each dataset ends."""
        ends, total = [], 0
        for part in sequence:
            total += len(part)
            ends.append(total)
        return ends

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int) -> Any:
        if index < 0:
            if -index > len(self):
                raise IndexError(f"index {index} is out of range for a dataset of {len(self)}")
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][index - start]


def random_split(dataset: Any, lengths: Sequence[float], generator: Any = None) -> list[Subset]:
    """Split `dataset` into random non-overlapping subsets of the given lengths or fractions.

    Example:
        >>> import gradcheck.ref as torch
        >>> parts = random_split(range(10), [0.7, 0.3], generator=torch.Generator().manual_seed(0))
        >>> [len(p) for p in parts]
        [7, 3]
    """
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = [math.floor(len(dataset) * frac) for frac in lengths]
        for i in range(len(dataset) - sum(counts)):
            counts[i % len(counts)] += 1  # spread the remainder round-robin, as torch does
        lengths = counts
    if sum(lengths) != len(dataset):
        raise ValueError(f"Sum of input lengths ({sum(lengths)}) does not equal the length of "
                         f"the input dataset ({len(dataset)})")
    indices = torch.randperm(sum(lengths), generator=generator).tolist()
    subsets, offset = [], 0
    for length in lengths:
        subsets.append(Subset(dataset, indices[offset:offset + length]))
        offset += length
    return subsets
