"""What every rule module provides: codes, docs, examples, and a helper to build Findings."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from lint_rules.finding import Edit, Finding, Fix

if TYPE_CHECKING:
    import ast


@dataclass(frozen=True)
class Valid:
    """A program the rule must stay silent on."""

    code: str


@dataclass(frozen=True)
class Invalid:
    """A program the rule must flag on exactly ``expected_lines``.

    ``expected_fixed`` is the source after applying every fix of this rule (None: no fix).
    """

    code: str
    expected_lines: tuple[int, ...]
    expected_fixed: str | None = None


class Rule:
    """Base class: subclasses set the class attributes and implement ``check``."""

    CODE: ClassVar[str] = ""
    NAME: ClassVar[str] = ""
    MESSAGE: ClassVar[str] = ""
    SEVERITY: ClassVar[str] = "error"
    FIX_SAFETY: ClassVar[str] = "none"  # "safe", "unsafe", "mixed" or "none"
    PATTERNS: ClassVar[dict[str, str]] = {}  # form -> what it flags, as the docs say it
    PREVIEW: ClassVar[frozenset[str]] = frozenset()  # forms reported only with --preview
    VALID: ClassVar[list[Valid]] = []
    INVALID: ClassVar[list[Invalid]] = []

    @classmethod
    def check(cls, analysis) -> list[Finding]:
        """Findings of this rule for one analysed module."""
        raise NotImplementedError

    @classmethod
    def finding(
        cls,
        analysis,
        node: ast.AST,
        message: str,
        edits: tuple[Edit, ...] | None = None,
        *,
        safe: bool = True,
        description: str = "",
        pattern: str = "",
    ) -> Finding:
        """A Finding spanning ``node``, with a fix when ``edits`` is given."""
        line, column = analysis.text.start(node)
        end_line, end_column = analysis.text.end(node)
        fix = Fix(description or cls.MESSAGE, tuple(edits), safe) if edits else None
        return Finding(line, column, cls.CODE, cls.NAME, message, end_line, end_column,
                       cls.SEVERITY, fix, pattern)


def crosses_modules(issue) -> bool:
    """Whether an event of ``issue`` happens inside another module's function (its position
    is the call here): no text edit here could be proven to fix just that."""
    events = (issue.at, issue.step, *issue.backwards, *issue.applied_by, *issue.also,
              *getattr(issue, "foreign", ()))
    return any(event.via for event in events)


def short(text: str) -> str:
    """First line of a code snippet, for messages: ``for p in model.parameters()``."""
    first = text.strip().splitlines()[0] if text.strip() else text
    return first.rstrip(":").strip()
