"""What a guard finds at run time, where in the user's code it happened, and the tally at exit.

A finding names the offending call (``zero_grad()``, ``step()`` or ``backward()``) and its line in
the user's own code: the first frame on the stack that is not in the standard library, an
installed package (torch, Lightning, transformers) or gradcheck itself. The tally merges repeats
of the same finding, so a bug inside a loop is printed once with how often it happened.

>>> tally = Tally()
>>> for _ in range(3):
...     tally.add(GuardFinding("stale_gradients", "SGD (train.py:12)", "step()", "train.py:30",
...                            "stale"))
>>> print(tally.render())
gradcheck: 1 problem found by the optimizer guard
  train.py:30: stale_gradients in SGD (train.py:12) at step(), 3 times: stale
"""
from __future__ import annotations

import os
import sys
import sysconfig
import warnings
from dataclasses import dataclass

import gradcheck

_LIBRARY_ROOTS = tuple(
    os.path.normcase(os.path.realpath(path)) + os.sep
    for path in {
        *(sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")),
        os.path.dirname(gradcheck.__file__),
    }
)
_is_library_cache: dict[str, bool] = {}


@dataclass(frozen=True)
class GuardFinding:
    """One problem at one call site; ``rank`` is the process's rank in a distributed job."""

    kind: str  # a kind of gradcheck.runtime.report.KINDS
    optimizer: str  # its class and where it was built, e.g. "SGD (main.py:88)"
    call: str  # the offending call: "zero_grad()", "step()", "backward()"
    location: str  # "file:line" in the user's code
    message: str
    rank: int | None = None


class Tally:
    """Findings merged by call site, in the order they first happened."""

    def __init__(self) -> None:
        self.counts: dict[tuple, list] = {}  # key -> [first finding, count, ranks]
        self.undecided: dict[tuple, list] = {}  # (optimizer, call, line) -> [count, ranks]

    def add(self, finding: GuardFinding, count: int = 1) -> None:
        key = (finding.kind, finding.optimizer, finding.call, finding.location)
        entry = self.counts.setdefault(key, [finding, 0, set()])
        entry[1] += count
        if finding.rank is not None:
            entry[2].add(finding.rank)

    def add_undecided(self, optimizer: str, call: str, location: str, count: int,
                      rank: int | None) -> None:
        """Steps after a reset dropped passes, not judged because ``k`` is unknown."""
        entry = self.undecided.setdefault((optimizer, call, location), [0, set()])
        entry[0] += count
        if rank is not None:
            entry[1].add(rank)

    def merge(self, other: Tally) -> None:
        """Add another tally's counts (e.g. gathered from another rank)."""
        for key, (finding, count, ranks) in other.counts.items():
            entry = self.counts.setdefault(key, [finding, 0, set()])
            entry[1] += count
            entry[2] |= ranks
        for key, (count, ranks) in other.undecided.items():
            entry = self.undecided.setdefault(key, [0, set()])
            entry[0] += count
            entry[1] |= ranks

    def __len__(self) -> int:
        return len(self.counts)

    def render(self) -> str:
        """One line per call site; empty when nothing was found."""
        lines = self._render_problems() if self.counts else []
        if self.undecided:
            lines.append("gradcheck: not judged, because accumulation_steps is unknown (pass "
                         "--accumulation-steps K, or accumulation_steps=K):")
        for (optimizer, call, location), (count, ranks) in self.undecided.items():
            lines.append(f"  {location}: {call} on {optimizer}{_ranks(ranks)} dropped backward "
                         f"passes that no step() used, before {count} step(s)")
        return "\n".join(lines)

    def _render_problems(self) -> list[str]:
        noun = "problem" if len(self.counts) == 1 else "problems"
        lines = [f"gradcheck: {len(self.counts)} {noun} found by the optimizer guard"]
        for finding, count, ranks in self.counts.values():
            where = _ranks(ranks)
            times = "once" if count == 1 else f"{count} times"
            lines.append(
                f"  {finding.location}: {finding.kind} in {finding.optimizer} at "
                f"{finding.call}{where}, {times}: {finding.message}"
            )
        return lines


def _ranks(ranks: set[int]) -> str:
    if not ranks:
        return ""
    label = "rank" if len(ranks) == 1 else "ranks"
    return f" on {label} {', '.join(str(r) for r in sorted(ranks))}"


def user_location() -> str:
    """``file:line`` of the innermost frame in the user's code (relative to the working dir)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not _is_library(filename):
            return f"{_display(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


def warn_at(location: str, warning: Warning) -> None:
    """Issue ``warning`` as if raised at ``location`` (``file:line`` in the user's code).

    Python's filters then treat it as any warning of that line: shown once per line by default.
    """
    filename, _, line = location.rpartition(":")
    lineno = int(line) if line.isdigit() else 0
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_lineno == lineno and
                                     _display(frame.f_code.co_filename) == filename):
        frame = frame.f_back
    if frame is None:  # not on the stack (a reset seen earlier): name the file alone
        path = filename if filename.startswith("<") else os.path.abspath(filename)
        warnings.warn_explicit(warning, type(warning), path, lineno)
        return
    module_globals = frame.f_globals
    where = dict(module=module_globals.get("__name__"),
                 registry=module_globals.setdefault("__warningregistry__", {}))
    try:
        warnings.warn_explicit(warning, type(warning), frame.f_code.co_filename, lineno,
                               module_globals=module_globals, **where)
    except ValueError:
        # Python 3.12 refuses globals whose ``__spec__`` has no loader (a script run by
        # runpy, as `gradcheck run` does); they only serve to show the source line.
        warnings.warn_explicit(warning, type(warning), frame.f_code.co_filename, lineno, **where)


def _is_library(filename: str) -> bool:
    known = _is_library_cache.get(filename)
    if known is None:
        path = os.path.normcase(os.path.realpath(filename))
        known = filename.startswith("<") or path.startswith(_LIBRARY_ROOTS)
        _is_library_cache[filename] = known
    return known


def _display(filename: str) -> str:
    relative = os.path.relpath(filename) if os.path.isabs(filename) else filename
    return filename if relative.startswith("..") else relative
