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
from gradcheck.ref.utils.data.distributed import DistributedSampler
from gradcheck.ref.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from gradcheck.ref.utils.data.worker import get_worker_info
from gradcheck.ref.utils.data import _utils, dataloader, dataset, sampler  # noqa: F401
from gradcheck.ref.utils.data import datapipes  # noqa: F401, E402
from gradcheck.ref.utils.data.dataset import ChainDataset  # noqa: F401, E402
from gradcheck.ref.utils.data.datapipes import (  # noqa: F401, E402
    IterDataPipe,
    MapDataPipe,
    functional_datapipe,
)

__all__ = [
    "BatchSampler", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
    "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "Subset",
    "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "default_collate",
    "get_worker_info", "random_split",
]

from gradcheck.ref.utils.data import graph  # noqa: F401, E402
