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
    """Read an object written by ``save``, or a checkpoint written by real torch's ``save``
    (its zip format: tensors and parameters come back as engine tensors on the cpu).

    >>> import io, gradcheck.ref as torch
    >>> buffer = io.BytesIO(); save(torch.ones(2), buffer); _ = buffer.seek(0)
    >>> load(buffer)
    tensor([1., 1.])
    """
    import zipfile

    if isinstance(f, (str, os.PathLike)):
        if zipfile.is_zipfile(f):  # a checkpoint written by torch.save
            return _load_torch_zip(f)
        with open(f, "rb") as handle:
            return pickle.load(handle)
    if f.seekable():
        start = f.tell()
        is_zip = zipfile.is_zipfile(f)
        f.seek(start)
        if is_zip:
            return _load_torch_zip(f)
    return pickle.load(f)


# ----- reading torch's own checkpoint files (a zip archive around a pickle) -------------------
_STORAGE_DTYPES = {"DoubleStorage": "float64", "FloatStorage": "float32",
                   "HalfStorage": "float16", "BFloat16Storage": "bfloat16",
                   "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16",
                   "CharStorage": "int8", "ByteStorage": "uint8", "BoolStorage": "bool_",
                   "ComplexFloatStorage": "complex64", "ComplexDoubleStorage": "complex128"}


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None):
    """A tensor over ``storage`` (a flat numpy array) with torch's sizes and strides."""
    import numpy as np

    from gradcheck.ref.tensors import _make

    itemsize = storage.itemsize
    view = np.lib.stride_tricks.as_strided(storage[storage_offset:], shape=tuple(size),
                                           strides=tuple(s * itemsize for s in stride))
    tensor = _make(np.array(view))  # a copy: torch's storages may be shared and strided
    tensor._rg = bool(requires_grad)
    return tensor


def _rebuild_parameter(data, requires_grad, backward_hooks=None, *state):
    from gradcheck.ref.nn.parameter import Parameter

    return Parameter(data, requires_grad)


class _TorchUnpickler(pickle.Unpickler):
    """Unpickle torch's ``data.pkl``: storages come from the archive, tensors are rebuilt
    as engine tensors, and ``torch.*`` names resolve on the engine."""

    def __init__(self, handle, archive, prefix: str) -> None:
        super().__init__(handle)
        self.archive, self.prefix = archive, prefix

    def find_class(self, module: str, name: str):
        if name == "_rebuild_tensor_v2":
            return _rebuild_tensor_v2
        if name in ("_rebuild_parameter", "_rebuild_parameter_with_state"):
            return _rebuild_parameter
        if name in _STORAGE_DTYPES or (module == "torch" and name.endswith("Storage")):
            return name
        if module == "torch" or module.startswith("torch."):
            import importlib

            engine = importlib.import_module("gradcheck.ref" + module[len("torch"):])
            return getattr(engine, name)
        return super().find_class(module, name)

    def persistent_load(self, pid):
        import numpy as np

        from gradcheck.ref import dtypes as dt

        _, storage_type, key, _location, _numel = pid
        dtype = dt.as_dtype(getattr(dt, _STORAGE_DTYPES.get(storage_type, "uint8"))).np
        raw = self.archive.read(f"{self.prefix}data/{key}")
        return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype)


def _load_torch_zip(source):
    import io
    import zipfile

    with zipfile.ZipFile(source) as archive:
        name = next(n for n in archive.namelist() if n.endswith("data.pkl"))
        prefix = name[:-len("data.pkl")]
        return _TorchUnpickler(io.BytesIO(archive.read(name)), archive, prefix).load()


# ---- the allow-list of torch's weights_only unpickler ----------------------------------------
# NOTE: the engine's load always unpickles (weights_only is not enforced, see load); the list is
# kept so that code registering its classes and reading them back runs unchanged.
_SAFE_GLOBALS: list = []


def add_safe_globals(safe_globals: list) -> None:
    """Add classes or functions to the weights_only allow-list."""
    _SAFE_GLOBALS.extend(safe_globals)


def get_safe_globals() -> list:
    return list(_SAFE_GLOBALS)


def clear_safe_globals() -> None:
    _SAFE_GLOBALS.clear()


class safe_globals:  # noqa: N801 - torch's name
    """``with safe_globals([...]):`` the allow-list extended for the block."""

    def __init__(self, safe_globals: list) -> None:
        self._extra = list(safe_globals)

    def __enter__(self) -> None:
        _SAFE_GLOBALS.extend(self._extra)

    def __exit__(self, *exc) -> None:
        for value in self._extra:
            _SAFE_GLOBALS.remove(value)


def _is_zipfile(f) -> bool:
    """Whether the open binary file starts like a zip archive (torch's checkpoint format);
    the position is restored."""
    start = f.tell()
    head = f.read(4)
    f.seek(start)
    return head == b"PK\x03\x04"


class _open_file_like:  # noqa: N801 - torch's name
    """``with _open_file_like(path_or_buffer, mode) as f``: a path is opened (and closed);
    an open file object is used as it is."""

    def __init__(self, name_or_buffer, mode: str) -> None:
        self._opened = isinstance(name_or_buffer, (str, os.PathLike))
        self.file_like = open(name_or_buffer, mode) if self._opened else name_or_buffer

    def __enter__(self):
        return self.file_like

    def __exit__(self, *exc) -> None:
        if self._opened:
            self.file_like.close()


def default_restore_location(storage, location: str):
    """Where a loaded storage goes: its saved location, which must be the cpu here."""
    if location == "cpu":
        return storage
    if location.startswith("cuda"):
        raise RuntimeError(
            "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() "
            "is False. If you are running on a CPU-only machine, please use torch.load with "
            "map_location=torch.device('cpu') to map your storages to the CPU.")
    raise RuntimeError(f"don't know how to restore data location of "
                       f"torch.storage.{type(storage).__name__} (tagged with {location})")
