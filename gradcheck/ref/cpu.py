"""``torch.cpu``: the cpu as a device module, shaped like ``torch.cuda`` so device-agnostic code
can call the same functions. It has one device that is always there, one stream (whose
events do nothing), and ``torch.cpu.amp.autocast``, the deprecated spelling of
``torch.amp.autocast("cpu")``.

>>> import gradcheck.ref as torch
>>> torch.cpu.device_count(), torch.cpu.current_device(), torch.cpu.current_stream().__class__
(1, 'cpu', <class 'gradcheck.ref.cpu.Stream'>)
"""
from __future__ import annotations

import contextlib
import sys
import types
import warnings
from typing import Any

from gradcheck.ref import amp as _amp


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def set_device(device: Any) -> None:
    """There is only one cpu device."""


def synchronize(device: Any = None) -> None:
    """Work on the cpu is finished when the call returns."""


class Stream:
    """torch's placeholder stream of the cpu, for device-agnostic code."""

    def __init__(self, priority: int = -1) -> None:
        pass

    def wait_stream(self, stream: Any) -> None:
        pass

    def record_event(self) -> None:
        pass

    def wait_event(self, event: Any) -> None:
        pass


class Event:
    """torch's placeholder event of the cpu: always complete."""

    def query(self) -> bool:
        return True

    def record(self, stream: Any = None) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait(self, stream: Any = None) -> None:
        pass


_default_cpu_stream = Stream()
_current_stream = _default_cpu_stream


def current_stream(device: Any = None) -> Stream:
    return _current_stream


class StreamContext(contextlib.AbstractContextManager):
    """Makes ``stream`` current for the block (there is only one cpu stream to choose)."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream, self.prev_stream = stream, _default_cpu_stream

    def __enter__(self) -> None:
        global _current_stream
        if self.stream is not None:
            self.prev_stream, _current_stream = _current_stream, self.stream

    def __exit__(self, *exc: Any) -> None:
        global _current_stream
        if self.stream is not None:
            _current_stream = self.prev_stream


def stream(stream: Stream | None) -> contextlib.AbstractContextManager:
    return StreamContext(stream)


class autocast(_amp.autocast):  # noqa: N801 - torch's name
    """``torch.amp.autocast("cpu", ...)`` under its deprecated name (bfloat16 by default)."""

    def __init__(self, enabled: bool = True, dtype: Any = None, cache_enabled: bool = True):
        from gradcheck.ref import bfloat16

        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", bfloat16 if dtype is None else dtype, enabled, cache_enabled)


def _install_amp() -> types.ModuleType:
    amp = types.ModuleType(f"{__name__}.amp", "torch.cpu.amp")
    amp.autocast = autocast
    amp.autocast_mode = types.ModuleType(f"{__name__}.amp.autocast_mode")
    amp.autocast_mode.autocast = autocast
    sys.modules[amp.__name__] = amp
    sys.modules[amp.autocast_mode.__name__] = amp.autocast_mode
    return amp


amp = _install_amp()
