"""``torch.PyTorchFileReader`` (``torch._C.PyTorchFileReader``): the records of a checkpoint
written by ``torch.save`` (a zip archive whose entries sit under one top folder), by name
without that folder; and the ``torch.serialization`` helpers built on it
(``_open_zipfile_reader``, ``_is_torchscript_zip``, ``_check_dill_version``).

>>> import io, zipfile
>>> buffer = io.BytesIO()
>>> with zipfile.ZipFile(buffer, "w") as archive:   # the layout torch.save writes
...     archive.writestr("checkpoint/data.pkl", b"...")
...     archive.writestr("checkpoint/byteorder", b"little")
>>> reader = PyTorchFileReader(buffer)
>>> reader.get_all_records(), reader.get_record("byteorder")
(['data.pkl', 'byteorder'], b'little')
"""
from __future__ import annotations

import os
import zipfile
from typing import IO, Any

_MINIZ_HINT = (" This is an internal miniz error. If you are seeing this error, there is a high "
               "likelihood that your checkpoint file is corrupted. This can happen if the "
               "checkpoint was not saved properly, was transferred incorrectly, or the file was "
               "modified after saving.")


class PyTorchFileReader:
    """Read the records of a torch zip checkpoint (a path or a binary file object)."""

    def __init__(self, name_or_buffer: str | os.PathLike | IO[bytes]) -> None:
        try:
            self._zip = zipfile.ZipFile(name_or_buffer)
        except zipfile.BadZipFile:
            raise RuntimeError("PytorchStreamReader failed reading zip archive: not a ZIP "
                               "archive." + _MINIZ_HINT) from None
        names = self._zip.namelist()
        self._prefix = names[0].split("/", 1)[0] + "/" if names else ""

    def get_all_records(self) -> list[str]:
        return [name[len(self._prefix):] for name in self._zip.namelist()]

    def has_record(self, name: str) -> bool:
        return self._prefix + name in self._zip.NameToInfo

    def _info(self, name: str) -> zipfile.ZipInfo:
        if not self.has_record(name):
            raise RuntimeError(f"PytorchStreamReader failed locating file {name}: file not "
                               f"found." + _MINIZ_HINT)
        return self._zip.getinfo(self._prefix + name)

    def get_record(self, name: str) -> bytes:
        return self._zip.read(self._info(name))

    def get_record_size(self, name: str) -> int:
        return self._info(name).file_size

    def serialization_id(self) -> str:
        name = ".data/serialization_id"
        return self.get_record(name).decode() if self.has_record(name) else ""


class _open_zipfile_reader:  # noqa: N801 - torch's name
    """``with _open_zipfile_reader(f) as reader:``: a PyTorchFileReader for the block."""

    def __init__(self, name_or_buffer: Any) -> None:
        self.file_like = PyTorchFileReader(name_or_buffer)

    def __enter__(self) -> PyTorchFileReader:
        return self.file_like

    def __exit__(self, *exc: Any) -> None:
        return None


def _is_torchscript_zip(zip_file: PyTorchFileReader) -> bool:
    """TorchScript archives hold a ``constants.pkl``; plain checkpoints do not."""
    return "constants.pkl" in zip_file.get_all_records()


def _check_dill_version(pickle_module: Any) -> None:
    """torch reads dill pickles only from dill 0.3.1 on."""
    if pickle_module is None or pickle_module.__name__ != "dill":
        return
    version = tuple(int(part) for part in pickle_module.__version__.split(".")[:3]
                    if part.isdigit())
    if version < (0, 3, 1):
        raise ValueError(f"'torch' supports dill >= 0.3.1, but you have dill "
                         f"{pickle_module.__version__}. Please upgrade dill or switch to "
                         f"'pickle'")


def install(ref: Any) -> None:
    ref.PyTorchFileReader = ref._C.PyTorchFileReader = PyTorchFileReader
    for helper in (_open_zipfile_reader, _is_torchscript_zip, _check_dill_version):
        setattr(ref.serialization, helper.__name__, helper)
