"""Samplers decide the order in which a `DataLoader` visits dataset indices."""
from __future__ import annotations

from collections.abc import Iterator, Sized
from typing import Any, Generic, TypeVar

from gradcheck import ref as torch


T_co = TypeVar("T_co", covariant=True)


class Sampler(Generic[T_co]):
    """Base class of samplers: an iterable of dataset indices (subclasses define __iter__);
    generic like torch's, so ``Sampler[int]`` is a valid annotation and base."""

    def __init__(self, data_source: Any = None) -> None:
        pass

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError


class SequentialSampler(Sampler):
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


class RandomSampler(Sampler):
    """A fresh random permutation per epoch, drawn from `generator` (or the global RNG);
    with ``replacement=True``, ``num_samples`` independent draws (taken 32 at a time, as in
    torch); without, ``num_samples`` may exceed the dataset and spans several permutations.

    Example:
        >>> import gradcheck.ref as torch
        >>> sorted(RandomSampler(range(4), generator=torch.Generator().manual_seed(1)))
        [0, 1, 2, 3]
        >>> len(list(RandomSampler(range(4), replacement=True, num_samples=70)))
        70
    """

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: int | None = None, generator: Any = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got "
                            f"replacement={replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        # read at each epoch: the dataset may grow or shrink between epochs
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        generator = self.generator
        if generator is None:
            # Like torch: seed a private generator from the global RNG, so that
            # torch.manual_seed(...) makes shuffling reproducible.
            seed = int(torch.randint(0, 2**62, (1,)).item())
            generator = torch.Generator().manual_seed(seed)
        if self.replacement:  # lazily: num_samples may be astronomically large
            for _ in range(self.num_samples // 32):
                yield from torch.randint(0, n, (32,), generator=generator).tolist()
            yield from torch.randint(0, n, (self.num_samples % 32,), generator=generator).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from torch.randperm(n, generator=generator).tolist()
        yield from torch.randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
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


def _generator(generator: Any) -> Any:
    if generator is not None:
        return generator
    seed = int(torch.randint(0, 2**62, (1,)).item())  # torch's: seeded from the global RNG
    return torch.Generator().manual_seed(seed)


class SubsetRandomSampler(Sampler):
    """The given indices, in a fresh random order each epoch.

    Example:
        >>> sorted(SubsetRandomSampler([4, 7, 9]))
        [4, 7, 9]
    """

    def __init__(self, indices: Any, generator: Any = None) -> None:
        self.indices, self.generator = indices, generator

    def __iter__(self) -> Iterator[int]:
        order = torch.randperm(len(self.indices), generator=_generator(self.generator)).tolist()
        for i in order:
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``.

    Example:
        >>> list(WeightedRandomSampler([0.0, 1.0], 3))
        [1, 1, 1]
    """

    def __init__(self, weights: Any, num_samples: int, replacement: bool = True,
                 generator: Any = None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        self.weights = torch.as_tensor(weights, dtype=torch.float64)
        if self.weights.dim() != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(self.weights.shape)}")
        self.num_samples, self.replacement, self.generator = num_samples, replacement, generator

    def __iter__(self) -> Iterator[int]:
        drawn = torch.multinomial(self.weights, self.num_samples, self.replacement,
                                  generator=_generator(self.generator))
        yield from iter(drawn.tolist())

    def __len__(self) -> int:
        return self.num_samples
