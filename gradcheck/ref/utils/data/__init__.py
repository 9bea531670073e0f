"""`gradcheck.ref.utils.data`: datasets, samplers and a single-process `DataLoader`."""
from gradcheck.ref.utils.data import distributed  # noqa: F401
from gradcheck.ref.utils.data.collate import default_collate
from gradcheck.ref.utils.data.dataloader import DataLoader
from gradcheck.ref.utils.data.dataset import (
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from gradcheck.ref.utils.data.sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = [
    "BatchSampler", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset", "RandomSampler",
    "SequentialSampler", "Subset", "TensorDataset", "default_collate", "random_split",
]
