"""Line-level edits that move or insert whole statements without touching any other byte.

Only statements that own their lines (nothing but whitespace or a comment shares them) are
moved; otherwise no fix is offered. Moved lines keep their own line endings, inserted lines
use the file's, and indentation is copied from the anchor line, so tabs stay tabs.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lint_rules.finding import Edit
from lint_rules.source import split_lines

if TYPE_CHECKING:
    from lint_rules.source import SourceText
    from lint_rules.syntax import Statement

_TAIL_OK = re.compile(r"\s*(#.*)?")


def owns_lines(stmt: Statement, text: SourceText) -> bool:
    """True when ``stmt`` starts its first line and nothing but a comment follows it."""
    (start_line, start_column), (end_line, end_column) = text.start(stmt), text.end(stmt)
    if text.line_text(start_line)[: start_column - 1].strip():
        return False
    tail = text.line_text(end_line)[end_column - 1:]
    return _TAIL_OK.fullmatch(tail) is not None


def _block_text(stmt: Statement, text: SourceText, indent: str) -> str:
    first = text.first_line(stmt)
    start, end = text.line_span(first, text.last_line(stmt))
    old = text.indent_of(first)
    lines = split_lines(text.source[start:end])
    moved = [indent + line[len(old):] if line.startswith(old) else line for line in lines]
    out = "".join(moved)
    return out if out.endswith(("\n", "\r")) else out + text.newline


def _removal(stmt: Statement, text: SourceText, sole: bool) -> Edit:
    start, end = text.line_span(text.first_line(stmt), text.last_line(stmt))
    if sole:  # an emptied block needs a body
        ending = text.source[start:end][len(text.source[start:end].rstrip("\r\n")):]
        return Edit(start, end, f"{text.indent_of(text.first_line(stmt))}pass{ending}")
    return Edit(start, end, "")


def _insertion_point(anchor: Statement, text: SourceText) -> tuple[int, str]:
    start, end = text.line_span(text.first_line(anchor), text.last_line(anchor))
    chunk = text.source[start:end]
    prefix = "" if chunk.endswith(("\n", "\r")) else text.newline
    return end, prefix


def insert_after(anchor: Statement, line: str, text: SourceText) -> tuple[Edit, ...] | None:
    """Insert ``line`` as a new statement right after ``anchor``, at its indentation."""
    if not owns_lines(anchor, text):
        return None
    at, prefix = _insertion_point(anchor, text)
    return (Edit(at, at, f"{prefix}{text.indent_of(text.first_line(anchor))}{line}{text.newline}"),)


def insert_before(anchor: Statement, line: str, text: SourceText) -> tuple[Edit, ...] | None:
    """Insert ``line`` as a new statement right before ``anchor``, at its indentation."""
    if not owns_lines(anchor, text):
        return None
    first = text.first_line(anchor)
    at = text.line_starts[first - 1]
    return (Edit(at, at, f"{text.indent_of(first)}{line}{text.newline}"),)


def move_after(
    stmt: Statement, anchor: Statement, text: SourceText, *, sole: bool, replacement: str | None = None
) -> tuple[Edit, ...] | None:
    """Move ``stmt`` to just after ``anchor`` (optionally rewritten as ``replacement``)."""
    if not (owns_lines(stmt, text) and owns_lines(anchor, text)) or _overlaps(stmt, anchor, text):
        return None
    at, prefix = _insertion_point(anchor, text)
    indent = text.indent_of(text.first_line(anchor))
    body = f"{indent}{replacement}{text.newline}" if replacement else _block_text(stmt, text, indent)
    return (_removal(stmt, text, sole), Edit(at, at, prefix + body))


def move_before(stmt: Statement, anchor: Statement, text: SourceText, *, sole: bool) -> tuple[Edit, ...] | None:
    """Move ``stmt`` to just before ``anchor``, at ``anchor``'s indentation."""
    if not (owns_lines(stmt, text) and owns_lines(anchor, text)) or _overlaps(stmt, anchor, text):
        return None
    first = text.first_line(anchor)
    at = text.line_starts[first - 1]
    return (_removal(stmt, text, sole), Edit(at, at, _block_text(stmt, text, text.indent_of(first))))


def _overlaps(a: Statement, b: Statement, text: SourceText) -> bool:
    return not (text.last_line(a) < text.first_line(b) or text.last_line(b) < text.first_line(a))
