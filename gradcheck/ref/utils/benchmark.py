"""``torch.utils.benchmark``: ``Timer`` (``timeit``, ``blocked_autorange``), ``Measurement``
and ``Compare``, timing Python statements on the CPU as torch's do (no CUDA synchronisation,
there is no device to wait for).

>>> m = Timer("x + 1", globals={"x": 1}).timeit(10)
>>> m.number_per_run, len(m.times)
(10, 1)
"""
from __future__ import annotations

import statistics
import timeit as _timeit
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Measurement:
    """Times per run of ``stmt`` (seconds), with the labels the Timer was given."""

    number_per_run: int
    raw_times: list
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    stmt: str = ""
    num_threads: int = 1
    metadata: dict = field(default_factory=dict)

    @property
    def times(self) -> list:
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def mean(self) -> float:
        return statistics.mean(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def iqr(self) -> float:
        times = sorted(self.times)
        if len(times) < 2:
            return 0.0
        q = statistics.quantiles(times, n=4)
        return q[2] - q[0]

    @property
    def title(self) -> str:
        return self.label or self.stmt

    def __repr__(self) -> str:
        return (f"<Measurement> {self.title}\n  Median: {self.median * 1e6:.2f} us\n"
                f"  {len(self.times)} measurements, {self.number_per_run} runs per measurement,"
                f" {self.num_threads} thread")


class Timer:
    """Time ``stmt`` after ``setup`` in the namespace ``globals``."""

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Any = None, globals: dict | None = None, label: str | None = None,
                 sub_label: str | None = None, description: str | None = None,
                 env: str | None = None, num_threads: int = 1, language: Any = "python") -> None:
        if str(language).lower() not in ("python", "language.python"):
            raise NotImplementedError("torch.utils.benchmark.Timer(language='c++') is not "
                                      "available in gradcheck.ref: there is no C++ toolchain")
        self._stmt, self._labels = stmt, dict(label=label, sub_label=sub_label,
                                              description=description)
        self._num_threads = num_threads
        self._timer = _timeit.Timer(stmt, setup, timer or _timeit.default_timer,
                                    dict(globals or {}))

    def _measure(self, number: int, raw: list) -> Measurement:
        return Measurement(number, raw, stmt=self._stmt, num_threads=self._num_threads,
                           **self._labels)

    def timeit(self, number: int = 1000000) -> Measurement:
        return self._measure(number, [self._timer.timeit(number)])

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback: Any = None) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def blocked_autorange(self, callback: Any = None, min_run_time: float = 0.2) -> Measurement:
        """As torch: grow a block of runs until it lasts 10 ms, then time such blocks until
        ``min_run_time`` seconds are spent; one measurement per block."""
        number = 1
        while True:
            spent = self._timer.timeit(number)
            if spent >= 0.01 or number >= 10 ** 7:
                break
            number *= 10
        raw, total = [], 0.0
        while total < min_run_time or not raw:
            spent = self._timer.timeit(number)
            if callback is not None:
                callback(number, spent)
            raw.append(spent)
            total += spent
        return self._measure(number, raw)


class Compare:
    """A table of measurements grouped by label, one row per sub_label."""

    def __init__(self, results: list) -> None:
        self._results = list(results)

    def __str__(self) -> str:
        lines = []
        for m in self._results:
            name = " ".join(x for x in (m.label, m.sub_label, m.description) if x) or m.stmt
            lines.append(f"{name}: {m.median * 1e6:.2f} us")
        return "\n".join(lines)

    def print(self) -> None:
        print(str(self))

    def trim_significant_figures(self) -> None:
        """Accepted; the table prints two decimals."""

    def colorize(self, rowwise: bool = False) -> None:
        """Accepted; the table is plain text."""
