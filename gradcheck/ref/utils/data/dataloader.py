"""`DataLoader`: iterate a dataset in (optionally shuffled) mini-batches, in-process."""
from __future__ import annotations

import os  # noqa: F401 - torch's dataloader module exposes it; code patches os.environ here
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from gradcheck.ref.utils.data.collate import default_collate
from gradcheck.ref.utils.data.dataset import IterableDataset
from gradcheck.ref.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
)

_T = TypeVar("_T")
_collate_fn_t = Callable[[list[_T]], Any]


class _DatasetKind:
    """How a loader reads its dataset: by index (Map) or by iterating it (Iterable)."""

    Map = 0
    Iterable = 1


class _InfiniteConstantSampler(Sampler):
    """``None`` forever: the sampler a loader over an iterable dataset uses."""

    def __init__(self, data_source: Any = None) -> None:
        pass

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


class DataLoader:
    """Batches of `dataset`, shuffled per epoch when `shuffle=True` (seeded by `generator`).

    Worker processes are not simulated: `num_workers` is accepted for signature
    compatibility and the data is always loaded in the calling process.

    Example:
        >>> import gradcheck.ref as torch
        >>> ds = torch.utils.data.TensorDataset(torch.arange(5))
        >>> [b[0].tolist() for b in DataLoader(ds, batch_size=2)]
        [[0, 1], [2, 3], [4]]
    """

    def __init__(self, dataset: Any, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Any = None, batch_sampler: Any = None, num_workers: int = 0,
                 collate_fn: Callable[[list[Any]], Any] | None = None, pin_memory: bool = False,
                 drop_last: bool = False, generator: Any = None, **_ignored: Any) -> None:
        if isinstance(dataset, IterableDataset) and (shuffle or sampler is not None
                                                     or batch_sampler is not None):
            raise ValueError("DataLoader with an IterableDataset takes its order from the "
                             "dataset: leave shuffle, sampler and batch_sampler unset")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None
                                          or drop_last):
            raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                             "shuffle, sampler, and drop_last")
        if sampler is None:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_sampler is None and batch_size is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.generator = generator
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batch_sampler is not None else _no_collate)

    def __iter__(self) -> _BaseDataLoaderIter:
        return _SingleProcessDataLoaderIter(self)

    def _batches(self) -> Iterator[Any]:
        if isinstance(self.dataset, IterableDataset):
            yield from self._iter_stream()
            return
        if self.batch_sampler is None:
            for index in self.sampler:
                yield self.collate_fn(self.dataset[index])
            return
        for indices in self.batch_sampler:
            yield self.collate_fn([self.dataset[i] for i in indices])

    def _iter_stream(self) -> Iterator[Any]:
        if self.batch_size is None:
            for sample in self.dataset:
                yield self.collate_fn(sample)
            return
        batch: list[Any] = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            length = len(self.dataset)  # TypeError when the stream has no __len__, as in torch
            if self.batch_size is None:
                return length
            return length // self.batch_size if self.drop_last else -(-length // self.batch_size)
        if self.batch_sampler is None:
            return len(self.sampler)
        return len(self.batch_sampler)


class _BaseDataLoaderIter:
    """One pass over a loader: ``next`` gives the next batch (``_next_data``), ``len`` the
    loader's length; subclasses (and code patching them) override ``_next_data``."""

    def __init__(self, loader: DataLoader) -> None:
        self._dataset, self._num_workers = loader.dataset, loader.num_workers
        self._dataset_kind = (_DatasetKind.Iterable if isinstance(loader.dataset,
                                                                  IterableDataset)
                              else _DatasetKind.Map)
        self._collate_fn, self._drop_last = loader.collate_fn, loader.drop_last
        self._num_yielded = 0
        self._loader = loader

    def __iter__(self) -> _BaseDataLoaderIter:
        return self

    def _next_data(self) -> Any:
        raise NotImplementedError

    def __next__(self) -> Any:
        data = self._next_data()
        self._num_yielded += 1
        return data

    def __len__(self) -> int:
        return len(self._loader)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """Batches loaded in this process (the engine never starts workers)."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._batches = loader._batches()

    def _next_data(self) -> Any:
        return next(self._batches)


def _no_collate(sample: Any) -> Any:
    # With batch_size=None torch yields single samples unbatched (default_convert).
    return sample
