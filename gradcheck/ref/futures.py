"""``torch.futures``: a result that arrives later. ``then`` chains a callback that gets the
finished future and whose return value (or exception) completes a new one; ``wait`` blocks
until the result is set and raises the exception if one was set instead.

>>> fut = Future()
>>> doubled = fut.then(lambda f: f.value() * 2)
>>> fut.set_result(21); doubled.wait()
42
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class Future:
    """One value or one exception, set once, waited for by any number of threads."""

    def __init__(self, *, devices: Any = None) -> None:
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._result: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable] = []

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self) -> Any:
        self._done.wait()
        return self.value()

    def value(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._result

    def set_result(self, result: Any) -> None:
        self._finish(result, None)

    def set_exception(self, result: BaseException) -> None:
        if not isinstance(result, BaseException):
            raise TypeError(f"{result} is of type {type(result)}, not an Exception.")
        self._finish(None, result)

    def _finish(self, result: Any, error: BaseException | None) -> None:
        with self._lock:
            if self._done.is_set():
                raise RuntimeError("Future can only be marked completed once.")
            self._result, self._error = result, error
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)

    def add_done_callback(self, callback: Callable[[Future], None]) -> None:
        """Call ``callback(self)`` once the future is done (now, if it already is)."""
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback: Callable[[Future], Any]) -> Future:
        """A future completed with ``callback(self)``; an exception the callback raises
        completes it with a RuntimeError naming that exception (torch's wording)."""
        chained = Future()

        def run(done: Future) -> None:
            try:
                chained.set_result(callback(done))
            except Exception as error:  # noqa: BLE001 - the chained future carries it
                chained.set_exception(RuntimeError(
                    f"Got the following error when running the callback: "
                    f"{type(error).__name__}: {error}"))

        self.add_done_callback(run)
        return chained


def collect_all(futures: list[Future]) -> Future:
    """A future that completes, with the list of ``futures``, when all of them have."""
    collected = Future()
    remaining = [len(futures)]
    lock = threading.Lock()

    def one_done(_: Future) -> None:
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            collected.set_result(list(futures))

    if not futures:
        collected.set_result([])
    for fut in futures:
        fut.add_done_callback(one_done)
    return collected


def wait_all(futures: list[Future]) -> list:
    """Every future's value, in order; the first exception among them is raised."""
    return [fut.wait() for fut in collect_all(futures).wait()]
