"""``torch.distributed.remote_device._remote_device`` (also ``torch.distributed._remote_device``):
where a remote module lives, parsed from ``"<worker>/<device>"``, ``"rank:<r>/<device>"`` or a
plain local device (the device defaults to cpu).

>>> d = _remote_device("rank:0/cuda:1")
>>> d.rank(), d.worker_name(), d.device(), d
(0, None, device(type='cuda', index=1), rank:0/cuda:1)
"""
from __future__ import annotations

from typing import Any


class _remote_device:  # noqa: N801 - torch's name
    """A device on a (possibly remote) worker, named or given by rank."""

    def __init__(self, remote_device: Any) -> None:
        from gradcheck.ref.devices import device

        problem = (f"Could not parse remote_device: {remote_device}. The valid format is "
                   "'<workername>/<device>' or 'rank:<rank>/<device>' or '<device>'")
        self._worker_name: str | None = None
        self._rank: int | None = None
        if isinstance(remote_device, device):
            where = remote_device
        elif isinstance(remote_device, str):
            parts = remote_device.split("/")
            if len(parts) > 2:
                raise ValueError(problem)
            if len(parts) == 2:
                self._worker_name, where = parts
            elif self._is_valid_local_device(parts[0]):
                where = parts[0]
            else:
                self._worker_name, where = parts[0], "cpu"
        else:
            raise TypeError(f"Invalid type for remote_device: {type(remote_device)}")
        if self._worker_name is not None and not self._worker_name:
            raise ValueError(problem)
        self._device = device(where)
        if self._worker_name is not None and ":" in self._worker_name:
            head, *rest = self._worker_name.split(":")
            if len(rest) != 1 or head != "rank" or not rest[0].isdigit():
                raise ValueError(problem)
            self._rank, self._worker_name = int(rest[0]), None

    @staticmethod
    def _is_valid_local_device(name: str) -> bool:
        from gradcheck.ref.devices import device

        try:
            device(name)
        except Exception:  # noqa: BLE001 - any refusal means "not a device name"
            return False
        return True

    def worker_name(self) -> str | None:
        return self._worker_name

    def rank(self) -> int | None:
        return self._rank

    def device(self) -> Any:
        return self._device

    def __repr__(self) -> str:
        if self._worker_name is not None:
            return f"{self._worker_name}/{self._device}"
        if self._rank is not None:
            return f"rank:{self._rank}/{self._device}"
        return str(self._device)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _remote_device) and (
            (self._worker_name, self._device, self._rank)
            == (other._worker_name, other._device, other._rank))

    def __hash__(self) -> int:
        return hash(self._worker_name) ^ hash(self._device) ^ hash(self._rank)
