"""``torch.profiler``: the context managers and labels scripts wrap their steps in.

``record_function`` labels a region (no effect on the computation) and ``profile`` runs its
block; the engine records no kernel timings, so asking a profile for results
(``key_averages``, ``export_chrome_trace``, ...) raises NotImplementedError naming the call.

>>> import gradcheck.ref as torch
>>> with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
...     with torch.profiler.record_function("step"):
...         _ = torch.ones(2) * 2
...     prof.step()
"""
from __future__ import annotations

import contextlib
import enum
from typing import Any


class ProfilerActivity(enum.Enum):
    CPU = 0
    XPU = 1
    CUDA = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0):
    """torch's step -> action schedule (wait, warm up, record, repeat)."""
    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        position = step % cycle
        if position < wait:
            return ProfilerAction.NONE
        if position < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if position < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False):
    def handler(prof: Any) -> None:
        raise NotImplementedError("torch.profiler.tensorboard_trace_handler is not available "
                                  "in gradcheck.ref: the engine records no kernel timings")

    return handler


class record_function(contextlib.ContextDecorator):  # noqa: N801 - torch's name
    """A label around a region; nothing is recorded."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name

    def __enter__(self) -> record_function:
        return self

    def __exit__(self, *exc: Any) -> bool:
        return False


class profile:  # noqa: N801 - torch's name
    """Runs its block; results are not available (the engine times nothing)."""

    def __init__(self, *args: Any, schedule: Any = None, on_trace_ready: Any = None,
                 **kwargs: Any) -> None:
        self.schedule, self.on_trace_ready, self.step_num = schedule, on_trace_ready, 0

    def __enter__(self) -> profile:
        return self

    def __exit__(self, *exc: Any) -> bool:
        return False

    def start(self) -> None:
        """Nothing to start."""

    stop = start

    def step(self) -> None:
        self.step_num += 1

    def _no_results(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("torch.profiler.profile results are not available in "
                                  "gradcheck.ref: the engine records no kernel timings")

    key_averages = events = export_chrome_trace = export_stacks = table = _no_results



def kineto_available() -> bool:
    """Whether the Kineto tracer is there: the engine has none (it records no timings)."""
    return False


class emit_nvtx:  # noqa: N801 - torch's name
    """NVTX ranges around each autograd op, for nvprof; entering it needs a CUDA build."""

    def __init__(self, enabled: bool = True, record_shapes: bool = False) -> None:
        self.enabled, self.entered, self.record_shapes = enabled, False, record_shapes

    def __enter__(self) -> emit_nvtx | None:
        if not self.enabled:
            return None
        from gradcheck.ref.cuda.runtime import NOT_COMPILED

        raise AssertionError(NOT_COMPILED)

    def __exit__(self, *exc: Any) -> bool:
        return False


class EventList(list):
    """The events a profile recorded: the engine records none, so the list stays empty."""

    def table(self, *args: Any, **kwargs: Any) -> str:
        if self:
            raise NotImplementedError("torch.autograd.profiler.EventList.table is not available "
                                      "in gradcheck.ref: the engine records no kernel timings")
        return ""


def _default_schedule_fn(_: int) -> ProfilerAction:
    """Without a schedule the profiler records every step."""
    return ProfilerAction.RECORD


def _register_self_alias() -> None:
    """``torch.profiler.profiler`` is the module defining ``profile``: this one."""
    import sys

    this = sys.modules[__name__]
    this.profiler = this
    sys.modules[f"{__name__}.profiler"] = this


_register_self_alias()
