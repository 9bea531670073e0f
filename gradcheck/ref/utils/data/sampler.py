"""Samplers decide the order in which a `DataLoader` visits dataset indices."""
from __future__ import annotations

from collections.abc import Iterator, Sized
from typing import Any

from gradcheck import ref as torch


class SequentialSampler:
    """Indices 0, 1, ..., len(data_source) - 1.

    Example:
        >>> list(SequentialSampler(range(3)))
        [0, 1, 2]
    """

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler:
    """A fresh random permutation per epoch, drawn from `generator` (or the global RNG).

    Example:
        >>> import gradcheck.ref as torch
        >>> sorted(RandomSampler(range(4), generator=torch.Generator().manual_seed(1)))
        [0, 1, 2, 3]
    """

    def __init__(self, data_source: Sized, generator: Any = None) -> None:
        self.data_source = data_source
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        generator = self.generator
        if generator is None:
            # Like torch: seed a private generator from the global RNG, so that
            # torch.manual_seed(...) makes shuffling reproducible.
            seed = int(torch.randint(0, 2**62, (1,)).item())
            generator = torch.Generator().manual_seed(seed)
        return iter(torch.randperm(len(self.data_source), generator=generator).tolist())

    def __len__(self) -> int:
        return len(self.data_source)


class BatchSampler:
    """Group the indices of `sampler` into lists of `batch_size`.

    Example:
        >>> list(BatchSampler(range(5), batch_size=2, drop_last=True))
        [[0, 1], [2, 3]]
    """

    def __init__(self, sampler: Any, batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer, but got "
                             f"batch_size={batch_size!r}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
