"""The key-value stores processes rendezvous through: ``HashStore``, ``TCPStore``,
``FileStore`` and ``PrefixStore``, with torch's answers (values come back as bytes, ``add``
keeps an integer as text, ``compare_set`` returns what the key holds afterwards, a missing key
is waited for until the timeout).

The engine runs one process, so a store is shared between the threads of this process: a
``TCPStore`` client finds the server made in this process at the same host and port, and two
``FileStore`` objects on the same path share their keys. No socket is opened.

>>> store = HashStore()
>>> store.set("epoch", "3"); store.add("epoch", 2), store.get("epoch")
(5, b'5')
"""
from __future__ import annotations

import datetime
import os
import socket
import threading
from typing import Any

DEFAULT_TIMEOUT = datetime.timedelta(minutes=5)


class DistError(RuntimeError):
    """torch.distributed's base error."""


class DistStoreError(DistError):
    """A store operation failed (a key did not appear before the timeout)."""


class DistNetworkError(DistError):
    """A connection could not be made."""


class DistBackendError(DistError):
    """A collective backend failed."""


def _bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


class _Keys:
    """One table of keys with a condition variable, shared by every handle on it."""

    def __init__(self, internal: int = 0) -> None:
        self.values: dict[str, bytes] = {}
        self.internal = internal  # keys the real store keeps for itself (counted by num_keys)
        self.changed = threading.Condition()


class Store:
    """What every store answers; subclasses choose the table and the timeout message."""

    def __init__(self, keys: _Keys | None = None,
                 timeout: datetime.timedelta = DEFAULT_TIMEOUT) -> None:
        self._keys = keys or _Keys()
        self.timeout = timeout

    def set(self, key: str, value: Any) -> None:
        with self._keys.changed:
            self._keys.values[key] = _bytes(value)
            self._keys.changed.notify_all()

    def get(self, key: str) -> bytes:
        self._wait([key], None)
        return self._keys.values[key]

    def add(self, key: str, amount: int) -> int:
        with self._keys.changed:
            total = int(self._keys.values.get(key, b"0")) + int(amount)
            self._keys.values[key] = str(total).encode()
            self._keys.changed.notify_all()
            return total

    def append(self, key: str, value: Any) -> None:
        with self._keys.changed:
            self._keys.values[key] = self._keys.values.get(key, b"") + _bytes(value)
            self._keys.changed.notify_all()

    def compare_set(self, key: str, expected_value: Any, desired_value: Any) -> bytes:
        """Set ``desired_value`` when the key holds ``expected_value`` (or is missing and
        ``expected_value`` is empty); return the value the key holds afterwards, or
        ``expected_value`` for a missing key that was not set (torch's answer)."""
        expected, desired = _bytes(expected_value), _bytes(desired_value)
        with self._keys.changed:
            current = self._keys.values.get(key)
            if current is None and expected:
                return expected
            if current is None or current == expected:
                self._keys.values[key] = desired
                self._keys.changed.notify_all()
            return self._keys.values[key]

    def multi_get(self, keys: list) -> list:
        return [self.get(key) for key in keys]

    def multi_set(self, keys: list, values: list) -> None:
        for key, value in zip(keys, values):
            self.set(key, value)

    def check(self, keys: list) -> bool:
        return self._has(keys)

    def _has(self, keys: list) -> bool:
        return all(key in self._keys.values for key in keys)

    def delete_key(self, key: str) -> bool:
        with self._keys.changed:
            return self._keys.values.pop(key, None) is not None

    def num_keys(self) -> int:
        return len(self._keys.values) + self._keys.internal

    def set_timeout(self, timeout: datetime.timedelta) -> None:
        self.timeout = timeout

    def has_extended_api(self) -> bool:
        return True

    def wait(self, keys: list, timeout: datetime.timedelta | None = None) -> None:
        """Block until every key exists (another thread may set them) or the timeout ends."""
        self._wait(keys, timeout)

    def _wait(self, keys: list, timeout: datetime.timedelta | None) -> None:
        limit = (timeout or self.timeout).total_seconds()
        with self._keys.changed:
            if not self._keys.changed.wait_for(lambda: self._has(keys), timeout=limit):
                raise self._timed_out(keys, limit, explicit=timeout is not None)

    def _timed_out(self, keys: list, seconds: float, explicit: bool) -> Exception:
        return DistStoreError("Wait timeout")


class HashStore(Store):
    """A store inside this process (torch's thread-safe hash map)."""

    def __init__(self) -> None:
        super().__init__(_Keys())


_TCP_SERVERS: dict = {}
_FILES: dict = {}


def _free_port(host: str) -> int:
    """What port 0 means: one the system would hand out now."""
    with socket.socket() as probe:
        probe.bind((host if host not in ("localhost", "") else "127.0.0.1", 0))
        return probe.getsockname()[1]


class TCPStore(Store):
    """``TCPStore(host, port, world_size, is_master)``: the master makes the table, a client
    in this process joins it; a client with no master here fails as torch's does when
    nothing listens."""

    def __init__(self, host_name: str, port: int, world_size: int | None = None,
                 is_master: bool = False, timeout: datetime.timedelta = DEFAULT_TIMEOUT,
                 wait_for_workers: bool = True, multi_tenant: bool = False,
                 master_listen_fd: int | None = None, use_libuv: bool = True) -> None:
        if is_master:
            port = port or _free_port(host_name)
            keys = _TCP_SERVERS.setdefault((host_name, port), _Keys(internal=1))
        elif (host_name, port) in _TCP_SERVERS:
            keys = _TCP_SERVERS[(host_name, port)]
        else:
            raise DistNetworkError(f"The client socket has failed to connect to "
                                   f"[{host_name}]:{port}: no TCPStore master was made at that "
                                   "address in this process (gradcheck.ref runs one process)")
        super().__init__(keys, timeout)
        self.host, self.port, self.libuvBackend = host_name, port, use_libuv

    def _timed_out(self, keys: list, seconds: float, explicit: bool) -> Exception:
        shown = ", ".join(f"/{key}" for key in keys if not self._has([key]))
        return DistStoreError(f"wait timeout after {round(seconds * 1000)}ms, keys: {shown}")


class FileStore(Store):
    """A store kept under a file name; handles on the same path share their keys."""

    def __init__(self, file_name: str, world_size: int = -1) -> None:
        path = os.path.abspath(file_name)
        open(path, "ab").close()  # torch creates the file
        super().__init__(_FILES.setdefault(path, _Keys(internal=1)))
        self.path = file_name

    def has_extended_api(self) -> bool:
        return False

    def _timed_out(self, keys: list, seconds: float, explicit: bool) -> Exception:
        if explicit:
            return RuntimeError("Wait timeout")
        return RuntimeError(f"Timeout waiting for key: {keys[0]} after "
                            f"{round(seconds * 1000)} ms")


class PrefixStore(Store):
    """Every key of ``store`` seen under ``prefix + "/"``."""

    def __init__(self, prefix: str, store: Store) -> None:
        super().__init__(store._keys, store.timeout)
        self.underlying_store, self._prefix = store, prefix

    def _key(self, key: str) -> str:
        return f"{self._prefix}/{key}"

    def set(self, key: str, value: Any) -> None:
        super().set(self._key(key), value)

    def get(self, key: str) -> bytes:
        self.underlying_store._wait([self._key(key)], None)
        return self._keys.values[self._key(key)]

    def add(self, key: str, amount: int) -> int:
        return super().add(self._key(key), amount)

    def append(self, key: str, value: Any) -> None:
        super().append(self._key(key), value)

    def compare_set(self, key: str, expected_value: Any, desired_value: Any) -> bytes:
        return super().compare_set(self._key(key), expected_value, desired_value)

    def check(self, keys: list) -> bool:
        return self._has([self._key(key) for key in keys])

    def delete_key(self, key: str) -> bool:
        return super().delete_key(self._key(key))

    def wait(self, keys: list, timeout: datetime.timedelta | None = None) -> None:
        self.underlying_store._wait([self._key(key) for key in keys], timeout)
