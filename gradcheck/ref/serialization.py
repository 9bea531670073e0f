"""``torch.save`` / ``torch.load`` for engine objects (tensors, state dicts, anything picklable).

NOTE: like torch with ``weights_only=False``, loading unpickles arbitrary objects: only load
files you trust.
"""
from __future__ import annotations

import os
import pickle


def save(obj, f, pickle_protocol: int = pickle.DEFAULT_PROTOCOL) -> None:
    """Write ``obj`` to a path or binary file object.

    >>> import io, gradcheck.ref as torch
    >>> buffer = io.BytesIO(); save({"w": torch.ones(2)}, buffer)
    """
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as handle:
            pickle.dump(obj, handle, protocol=pickle_protocol)
    else:
        pickle.dump(obj, f, protocol=pickle_protocol)


def load(f, map_location=None, weights_only=None, **kwargs):
    """Read an object written by ``save`` (tensors come back on the cpu).

    >>> import io, gradcheck.ref as torch
    >>> buffer = io.BytesIO(); save(torch.ones(2), buffer); _ = buffer.seek(0)
    >>> load(buffer)
    tensor([1., 1.])
    """
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as handle:
            return pickle.load(handle)
    return pickle.load(f)
