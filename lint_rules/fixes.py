"""Line-level edits that move or insert whole statements without touching any other byte.

Only statements that own their lines (nothing but whitespace or a comment shares them) are
moved; otherwise no fix is offered. Moved lines keep their own line endings, inserted lines
use the file's, and indentation is copied from the anchor line, so tabs stay tabs.
"""
from __future__ import annotations

import ast
import re

from lint_rules.finding import Edit
from lint_rules.source import SourceText

_TAIL_OK = re.compile(r"\s*(#.*)?")
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def owns_lines(stmt: ast.stmt, text: SourceText) -> bool:
    """True when ``stmt`` starts its first line and nothing but a comment follows it."""
    first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
    start_col = text.char_column(first, stmt.col_offset)
    if text.line_text(first)[:start_col].strip():
        return False
    tail = text.line_text(last)[text.char_column(last, stmt.end_col_offset or 0):]
    return _TAIL_OK.fullmatch(tail) is not None


def _block_text(stmt: ast.stmt, text: SourceText, indent: str) -> str:
    start, end = text.line_span(stmt.lineno, stmt.end_lineno or stmt.lineno)
    old = text.indent_of(stmt.lineno)
    # NOTE: str.splitlines() also splits on \f, \v and U+2028; Python source lines do not.
    lines = _LINES.findall(text.source[start:end])
    moved = [indent + line[len(old):] if line.startswith(old) else line for line in lines]
    out = "".join(moved)
    return out if out.endswith(("\n", "\r")) else out + text.newline


def _removal(stmt: ast.stmt, text: SourceText, sole: bool) -> Edit:
    start, end = text.line_span(stmt.lineno, stmt.end_lineno or stmt.lineno)
    if sole:  # an emptied block needs a body
        ending = text.source[start:end][len(text.source[start:end].rstrip("\r\n")):]
        return Edit(start, end, f"{text.indent_of(stmt.lineno)}pass{ending}")
    return Edit(start, end, "")


def _insertion_point(anchor: ast.stmt, text: SourceText) -> tuple[int, str]:
    start, end = text.line_span(anchor.lineno, anchor.end_lineno or anchor.lineno)
    chunk = text.source[start:end]
    prefix = "" if chunk.endswith(("\n", "\r")) else text.newline
    return end, prefix


def insert_after(anchor: ast.stmt, line: str, text: SourceText) -> tuple[Edit, ...] | None:
    """Insert ``line`` as a new statement right after ``anchor``, at its indentation."""
    if not owns_lines(anchor, text):
        return None
    at, prefix = _insertion_point(anchor, text)
    return (Edit(at, at, f"{prefix}{text.indent_of(anchor.lineno)}{line}{text.newline}"),)


def move_after(
    stmt: ast.stmt, anchor: ast.stmt, text: SourceText, *, sole: bool, replacement: str | None = None
) -> tuple[Edit, ...] | None:
    """Move ``stmt`` to just after ``anchor`` (optionally rewritten as ``replacement``)."""
    if not (owns_lines(stmt, text) and owns_lines(anchor, text)) or _overlaps(stmt, anchor):
        return None
    at, prefix = _insertion_point(anchor, text)
    indent = text.indent_of(anchor.lineno)
    body = f"{indent}{replacement}{text.newline}" if replacement else _block_text(stmt, text, indent)
    return (_removal(stmt, text, sole), Edit(at, at, prefix + body))


def move_before(stmt: ast.stmt, anchor: ast.stmt, text: SourceText, *, sole: bool) -> tuple[Edit, ...] | None:
    """Move ``stmt`` to just before ``anchor``, at ``anchor``'s indentation."""
    if not (owns_lines(stmt, text) and owns_lines(anchor, text)) or _overlaps(stmt, anchor):
        return None
    at = text.line_starts[anchor.lineno - 1]
    return (_removal(stmt, text, sole), Edit(at, at, _block_text(stmt, text, text.indent_of(anchor.lineno))))


def _overlaps(a: ast.stmt, b: ast.stmt) -> bool:
    a_end, b_end = a.end_lineno or a.lineno, b.end_lineno or b.lineno
    return not (a_end < b.lineno or b_end < a.lineno)
