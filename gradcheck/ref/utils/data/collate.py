"""`default_collate`: turn a list of samples into one batch, following torch's rules.

Tensors are stacked along a new first dimension; Python floats become a float64 tensor and ints an
int64 tensor; numpy arrays become tensors and are stacked; strings stay a list; mappings and
sequences are collated field by field (a tuple of fields comes back as a list, as in torch).
"""
from __future__ import annotations

import collections.abc
from typing import Any

import numpy as np

from gradcheck import ref as torch


def default_collate(batch: list[Any]) -> Any:
    """Collate a list of samples into a batch.

    Example:
        >>> import gradcheck.ref as torch
        >>> xs, ys = default_collate([(torch.zeros(2), 1), (torch.ones(2), 0)])
        >>> tuple(xs.shape), ys.tolist()
        ((2, 2), [1, 0])
    """
    elem = batch[0]
    if isinstance(elem, torch.Tensor):
        return torch.stack(batch, 0)
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in "OUS":
            raise TypeError(f"default_collate: batch must contain tensors, numbers, dicts or "
                            f"lists; found a numpy array of dtype {elem.dtype}")
        return torch.stack([torch.from_numpy(np.ascontiguousarray(b)) for b in batch], 0)
    if isinstance(elem, np.generic):
        return torch.tensor(np.array(batch))
    if isinstance(elem, bool):
        return torch.tensor(batch, dtype=torch.bool)
    if isinstance(elem, float):
        return torch.tensor(batch, dtype=torch.float64)
    if isinstance(elem, int):
        return torch.tensor(batch, dtype=torch.int64)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return type(elem)(collated)  # keep OrderedDict and friends
        except TypeError:
            return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(default_collate(list(field)) for field in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(sample) != len(elem) for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size; got "
                               f"sizes {sorted({len(s) for s in batch})}")
        return [default_collate(list(field)) for field in zip(*batch)]
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, "
                    f"dicts or lists; found {type(elem).__name__}; pass collate_fn= to "
                    "DataLoader to batch other types")
