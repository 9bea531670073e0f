"""``torch.multiprocessing.reductions``: how a tensor or storage is reduced to a rebuild
function and its arguments when sent to another process.

Torch passes the storage's shared memory (a file descriptor) so that the rebuilt tensor
aliases the sender's. The engine's ``multiprocessing`` runs its workers in this process, so
the arguments carry the storage itself and the rebuilt tensor aliases the original in the
same way: a write through one shows in the other. Nothing is registered with the pickler.

>>> import gradcheck.ref as torch
>>> x = torch.arange(4.0)
>>> rebuild, args = reduce_tensor(x)
>>> _ = rebuild(*args).mul_(2)
>>> x
tensor([0., 2., 4., 6.])
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gradcheck.ref.storage import TypedStorage, UntypedStorage, _base, _offset_of
from gradcheck.ref.tensors import Tensor, _make


def rebuild_tensor(cls: type, storage: TypedStorage, metadata: tuple) -> Tensor:
    offset, size, stride, requires_grad = metadata
    flat = storage._array
    array = np.lib.stride_tricks.as_strided(
        flat[offset:], shape=tuple(size), strides=tuple(s * flat.itemsize for s in stride))
    tensor = _make(array, cls=cls if cls is not Tensor else None)
    return tensor.requires_grad_(requires_grad) if requires_grad else tensor


def reduce_tensor(tensor: Tensor) -> tuple:
    """(rebuild_tensor, its arguments): the type, the storage, offset, size, stride and
    requires_grad."""
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, "
                           "since autograd does not support crossing process boundaries.  If "
                           "you just want to transfer the data, call detach() on the tensor "
                           "before serializing (e.g., putting it on the queue).")
    storage = TypedStorage(_base(tensor._data), tensor.dtype)
    metadata = (_offset_of(tensor), tensor.size(), tensor.stride(), tensor.requires_grad)
    return rebuild_tensor, (type(tensor), storage, metadata)


def rebuild_storage(cls: type, array: np.ndarray) -> TypedStorage:
    return TypedStorage(array.view(np.uint8))


def reduce_storage(storage: TypedStorage) -> tuple:
    """(rebuild_storage, its arguments): the same bytes, seen untyped."""
    return rebuild_storage, (UntypedStorage, storage._array)


def rebuild_typed_storage(storage: TypedStorage, dtype: Any) -> TypedStorage:
    return TypedStorage(storage._array.view(dtype.np), dtype)


def reduce_typed_storage(storage: TypedStorage) -> tuple:
    return rebuild_typed_storage, (TypedStorage(storage._array.view(np.uint8)), storage.dtype)


def rebuild_typed_storage_child(storage: TypedStorage, storage_type: type) -> TypedStorage:
    return rebuild_typed_storage(storage, storage_type.dtype)


def reduce_typed_storage_child(storage: TypedStorage) -> tuple:
    kind = type("TypedStorage", (TypedStorage,), {"dtype": storage.dtype})
    return rebuild_typed_storage_child, (TypedStorage(storage._array.view(np.uint8)), kind)


def init_reductions() -> None:
    """Torch registers these with the pickler; the engine's workers share this process, so
    there is nothing to register."""
