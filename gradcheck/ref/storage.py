"""Storage-level Tensor API: ``storage()``, ``untyped_storage()``, ``storage_offset()``,
``as_strided``, ``resize_``/``resize_as_``, ``set_``, the legacy ``new(...)`` constructor,
and the memory queries (``pin_memory``, ``share_memory_``, ``is_shared``, ``nbytes``).

A storage here is the flat numpy buffer behind the tensor (its base array), so
``x.storage().data_ptr()`` and sizes mean what they mean in torch for a contiguous tensor.

>>> import gradcheck.ref as torch
>>> x = torch.arange(6.0)
>>> x[2:].storage_offset(), x.storage().size(), x.nbytes
(2, 6, 24)
>>> torch.ones(2).new(3).shape, torch.ones(2).new([1, 2])
(torch.Size([3]), tensor([1., 2.]))
"""
from __future__ import annotations

import numpy as np

from gradcheck.ref import creation
from gradcheck.ref import dtypes as dt
from gradcheck.ref.inplace import check_inplace
from gradcheck.ref.size import Size
from gradcheck.ref.tensors import Tensor, _make


def _base(array: np.ndarray) -> np.ndarray:
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


class TypedStorage:
    """The flat buffer behind a tensor: ``size()``, ``data_ptr()``, ``element_size()``,
    ``tolist()``, ``nbytes()``, and ``resize_(0)`` (which frees nothing here)."""

    def __init__(self, array: np.ndarray, dtype=None) -> None:
        self._array = array.reshape(-1) if array.flags.c_contiguous else array.ravel()
        self.dtype = dtype or dt._BY_NP[array.dtype]

    def size(self) -> int:
        return int(self._array.size)

    __len__ = size

    def data_ptr(self) -> int:
        return int(self._array.__array_interface__["data"][0])

    def element_size(self) -> int:
        return self._array.itemsize

    def nbytes(self) -> int:
        return int(self._array.nbytes)

    def tolist(self) -> list:
        return self._array.tolist()

    def resize_(self, size: int) -> TypedStorage:
        if size != self.size():
            raise NotImplementedError("resizing a storage is not available in gradcheck.ref; "
                                      "make a new tensor of the size you need")
        return self

    def __getitem__(self, index):
        return self._array[index].item() if np.isscalar(index) or isinstance(index, int) \
            else self._array[index].tolist()

    def is_shared(self) -> bool:
        return False

    def is_pinned(self) -> bool:
        return False

    @property
    def device(self):
        from gradcheck.ref.devices import device

        return device("cpu")


UntypedStorage = TypedStorage


def storage(self: Tensor) -> TypedStorage:
    return TypedStorage(_base(self._data))


def untyped_storage(self: Tensor) -> TypedStorage:
    return TypedStorage(_base(self._data).view(np.uint8))


def storage_offset(self: Tensor) -> int:
    return _offset_of(self)


def _offset_of(self: Tensor) -> int:
    base = _base(self._data)
    start = self._data.__array_interface__["data"][0]
    return (start - base.__array_interface__["data"][0]) // self._data.itemsize


def as_strided(self: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """A view with the given sizes and strides (in elements) over this tensor's storage.

    The values are read through numpy's stride tricks; the result is a copy in the graph
    (gradients flow back through an index), never a writable alias.
    """
    base = _base(self._data)
    offset = _offset_of(self) if storage_offset is None else storage_offset
    flat_index = offset + sum(np.arange(n).reshape((-1,) + (1,) * (len(size) - i - 1)) * s
                              for i, (n, s) in enumerate(zip(size, stride)))
    flat_index = np.broadcast_to(np.asarray(flat_index, dtype=np.int64), tuple(size))
    if flat_index.size and flat_index.max() >= base.size:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {offset} are out of bounds for storage of size {base.size}")
    start = _offset_of(self)
    inside = flat_index.size == 0 or (flat_index.min() >= start
                                      and flat_index.max() < start + self._data.size)
    if self._data.flags.c_contiguous and inside:  # within self: differentiable gather
        return self.reshape(-1)[_make(flat_index - start)]
    return _make(base.reshape(-1)[flat_index].copy())


def new(self: Tensor, *args, **kwargs) -> Tensor:
    """The legacy constructor: sizes give an uninitialised tensor of self's dtype, data a
    tensor of self's dtype."""
    dtype = kwargs.pop("dtype", None) or self.dtype
    if not args:
        return creation.empty(0, dtype=dtype)
    if all(isinstance(a, (int, np.integer)) for a in args):
        return creation.empty(*args, dtype=dtype)
    if len(args) == 1 and isinstance(args[0], Size):
        return creation.empty(*args[0], dtype=dtype)
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0].to(dtype)
    return creation.tensor(args[0], dtype=dtype)


def resize_(self: Tensor, *sizes) -> Tensor:
    """Change the shape in place; new elements (when growing) are zero here, uninitialised
    in torch."""
    check_inplace(self)
    shape = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else sizes
    count = int(np.prod(shape))
    flat = self._data.reshape(-1)
    if count <= flat.size:
        self._data = np.ascontiguousarray(flat[:count]).reshape(shape)
    else:
        grown = np.zeros(count, dtype=self._data.dtype)
        grown[:flat.size] = flat
        self._data = grown.reshape(shape)
    self._vc[0] += 1
    return self


def resize(self: Tensor, *sizes) -> Tensor:
    """The deprecated out-of-place ``resize``: a reshaped copy (same number of elements)."""
    shape = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else sizes
    return self.clone().reshape(*shape) if int(np.prod(shape)) == self.numel() else \
        resize_(self.detach().clone(), *shape)


def resize_as_(self: Tensor, other: Tensor, memory_format=None) -> Tensor:
    return resize_(self, *other.shape)


def set_(self: Tensor, source: Tensor | None = None, *args) -> Tensor:
    """Make self share ``source``'s data (and shape); with no source, become empty."""
    check_inplace(self)
    self._data = np.zeros(0, dtype=self._data.dtype) if source is None else source._data
    self._vc[0] += 1
    return self


def pin_memory(self: Tensor, device=None) -> Tensor:
    raise RuntimeError("Cannot access accelerator device when none is available.")


def is_pinned(self: Tensor, device=None) -> bool:
    return False


def share_memory_(self: Tensor) -> Tensor:
    """One process, so the memory is shared with everyone who can see it already."""
    return self


def is_shared(self: Tensor) -> bool:
    return False


def record_stream(self: Tensor, stream) -> None:
    raise RuntimeError("unknown parameter type")


def attach() -> None:
    """Install the storage methods on Tensor."""
    for fn in (storage, untyped_storage, storage_offset, as_strided, new, resize_, resize,
               resize_as_, set_, pin_memory, is_pinned, share_memory_, is_shared,
               record_stream):
        setattr(Tensor, fn.__name__, fn)
    Tensor._typed_storage = storage
    Tensor.itemsize = property(lambda self: self._data.itemsize)
    Tensor.nbytes = property(lambda self: int(self._data.nbytes))
