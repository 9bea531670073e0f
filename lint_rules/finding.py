"""What a rule reports: a Finding, and the optional Fix that repairs it.

A fix is a list of text edits on the *exact* source string that was checked (offsets are
indices into that ``str``), so applying it cannot change a byte outside the edited spans.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# The front end's code for "this file was not (fully) checked"; no rule of the analysis owns it.
PREVIEW = "PREVIEW"  # in a selection: also report the forms of rules that are in preview
NOT_CHECKED_CODE = "GC000"
NOT_CHECKED_NAME = "file-not-checked"


@dataclass(frozen=True)
class Edit:
    """Replace ``source[start:end]`` with ``replacement`` (an insertion has start == end)."""

    start: int
    end: int
    replacement: str


@dataclass(frozen=True)
class Fix:
    """A repair for one finding. Only ``safe`` fixes apply without ``--unsafe-fixes``."""

    description: str
    edits: tuple[Edit, ...]
    safe: bool = True

    def apply(self, source: str) -> str:
        """Return ``source`` with every edit applied (edits must not overlap)."""
        out = source
        for edit in sorted(self.edits, key=lambda e: (e.start, e.end), reverse=True):
            out = out[: edit.start] + edit.replacement + out[edit.end :]
        return out


@dataclass(frozen=True, order=True)
class Finding:
    """One problem at one place. Lines are 1-based, columns are 1-based (as ruff prints)."""

    line: int
    column: int
    code: str
    rule: str  # kebab-case name, e.g. "missing-zero-grad"
    message: str
    end_line: int = 0
    end_column: int = 0
    severity: str = "error"
    fix: Fix | None = field(default=None, compare=False)
    # which form of the rule found it (GC002 "stale", "restep"...): a form whose precision is
    # not yet shown on code it was not tuned on runs only with `--preview`
    pattern: str = field(default="", compare=False)

    def format(self, path: str) -> str:
        return f"{path}:{self.line}:{self.column}: {self.code} {self.message}"


class LintSyntaxError(ValueError):
    """The source could not be parsed; carries where, so the CLI can report GC000."""

    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


class AnalysisIncomplete(Exception):
    """The analysis could not finish a part of the file (a budget or a depth ran out).

    ``check_source`` turns it into a GC000 finding at (``line``, ``column``), 1-based, whose
    message says that the file was not fully analysed and why: a limit that changes the
    answer is never silent.

    >>> error = AnalysisIncomplete("the flow analysis ran out of its budget", 12, 5)
    >>> (error.reason, error.line, error.column)
    ('the flow analysis ran out of its budget', 12, 5)
    """

    def __init__(self, reason: str, line: int = 1, column: int = 1) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = max(line, 1)
        self.column = max(column, 1)
