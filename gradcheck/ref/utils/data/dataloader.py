"""`DataLoader`: iterate a dataset in (optionally shuffled) mini-batches, in-process."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from gradcheck.ref.utils.data.collate import default_collate
from gradcheck.ref.utils.data.dataset import IterableDataset
from gradcheck.ref.utils.data.sampler import BatchSampler, RandomSampler, SequentialSampler


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

    def __iter__(self) -> Iterator[Any]:
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


def _no_collate(sample: Any) -> Any:
    # With batch_size=None torch yields single samples unbatched (default_convert).
    return sample
