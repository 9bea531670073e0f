"""``torch.Stream`` and ``torch.Event``, the device-agnostic stream and event of torch >= 2.5,
as a CPU build has them: a stream on the cpu (device index -1, stream 0) runs everything in
order, so it is always done (``query()`` is True) and synchronizing waits for nothing. The
cpu backend has no events, so recording one raises torch's RuntimeError at the call; an
accelerator device raises the CPU build's error for a device it was not built with.

>>> import gradcheck.ref as torch
>>> stream = torch.Stream()
>>> stream, stream.query()
(torch.Stream device_type=cpu, device_index=-1, stream_id=0, True)
>>> torch.Event(enable_timing=True)
torch.Event device_type=cpu, device_index=-1, event_flag=1, event_id=0
"""
from __future__ import annotations

from typing import Any

NO_EVENTS = "cpu backend doesn't support events."
NO_ACCELERATOR = "Cannot access accelerator device when none is available."


def _cpu_device(device: Any) -> Any:
    """The cpu device a stream or event lives on; anything else cannot exist on a CPU build."""
    from gradcheck.ref.devices import device as make_device

    if device is None:
        return make_device("cpu")
    if isinstance(device, int):
        raise RuntimeError(NO_ACCELERATOR)
    resolved = make_device(device)
    if resolved.type != "cpu":
        raise RuntimeError(f"PyTorch is not linked with support for {resolved.type} devices")
    return resolved


class Stream:
    """The cpu's one in-order stream."""

    def __init__(self, device: Any = None, *, priority: int = 0, **kwargs: Any) -> None:
        self.device = _cpu_device(device)
        # NOTE: torch reports the device type as its DeviceType number (cpu is 0)
        self.device_type, self.device_index, self.stream_id = 0, -1, 0

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        """Work on the cpu is finished when the call returns."""

    def is_capturing(self) -> bool:
        return False

    @property
    def native_handle(self) -> int:
        return 0

    def record_event(self, event: Event | None = None) -> Event:
        raise RuntimeError(NO_EVENTS)

    def wait_event(self, event: Event) -> None:
        raise RuntimeError(NO_EVENTS)

    def wait_stream(self, stream: Stream) -> None:
        raise RuntimeError(NO_EVENTS)

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream)

    def __hash__(self) -> int:
        return hash(("cpu", -1, 0))

    def __repr__(self) -> str:
        return (f"torch.Stream device_type=cpu, "
                f"device_index={self.device_index}, stream_id={self.stream_id}")


class Event:
    """A cpu event: it can be created and waited on, not recorded."""

    def __init__(self, device: Any = None, *, enable_timing: bool = False,
                 blocking: bool = False, interprocess: bool = False) -> None:
        self.device = _cpu_device(device)
        self.event_id = 0
        self._timing = bool(enable_timing)

    def query(self) -> bool:
        return True

    def record(self, stream: Stream | None = None) -> None:
        raise RuntimeError(NO_EVENTS)

    def synchronize(self) -> None:
        """Nothing was recorded, so there is nothing to wait for."""

    def wait(self, stream: Stream | None = None) -> None:
        """Nothing was recorded, so there is nothing to wait for."""

    def elapsed_time(self, end_event: Event) -> float:
        if not (self._timing and end_event._timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        raise ValueError("Both events must be recorded before calculating elapsed time.")

    def ipc_handle(self) -> Any:
        raise NotImplementedError("torch.Event ipc is not supported yet, please open an issue "
                                  "if you need this!")

    def __repr__(self) -> str:
        return (f"torch.Event device_type=cpu, device_index=-1, "
                f"event_flag={int(self._timing)}, event_id={self.event_id}")
