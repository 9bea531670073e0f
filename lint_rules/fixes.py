"""Line-level edits that move or insert whole statements without touching any other byte.

Statements that own their lines (nothing but whitespace or a comment shares them) move as
whole lines: moved lines keep their own line endings, inserted lines use the file's, and
indentation is copied from the anchor line, so tabs stay tabs. A statement that shares its
line with others (``loss.backward(); opt.zero_grad()``) is moved within or out of that line
by ``shared_line.py``; anything else gets no fix.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lint_rules import shared_line
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
        return _one(shared_line.insert_after(anchor, line, text))
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
    alone, anchor_alone = owns_lines(stmt, text), owns_lines(anchor, text)
    if stmt.lineno == anchor.lineno and not (alone and anchor_alone):
        return _one(shared_line.move_after(stmt, anchor, text, replacement))
    if _overlaps(stmt, anchor, text):
        return None
    removal = _removal(stmt, text, sole) if alone else shared_line.drop(stmt, text)
    if not anchor_alone:
        code = replacement or (text.segment(stmt) if stmt.lineno == stmt.end_lineno else "")
        insertion = shared_line.insert_after(anchor, code, text) if code else None
    else:
        at, prefix = _insertion_point(anchor, text)
        indent = text.indent_of(text.first_line(anchor))
        if replacement or not alone:  # a statement taken out of a shared line is one line
            code = replacement or text.segment(stmt)
            body = f"{indent}{code}{text.newline}" if "\n" not in code else None
        else:
            body = _block_text(stmt, text, indent)
        insertion = Edit(at, at, prefix + body) if body else None
    return (removal, insertion) if removal and insertion else None


def move_before(stmt: Statement, anchor: Statement, text: SourceText, *, sole: bool) -> tuple[Edit, ...] | None:
    """Move ``stmt`` to just before ``anchor``, at ``anchor``'s indentation."""
    if not (owns_lines(stmt, text) and owns_lines(anchor, text)) or _overlaps(stmt, anchor, text):
        return None
    first = text.first_line(anchor)
    at = text.line_starts[first - 1]
    return (_removal(stmt, text, sole), Edit(at, at, _block_text(stmt, text, text.indent_of(first))))


def _one(edit: Edit | None) -> tuple[Edit, ...] | None:
    return None if edit is None else (edit,)


def _overlaps(a: Statement, b: Statement, text: SourceText) -> bool:
    return not (text.last_line(a) < text.first_line(b) or text.last_line(b) < text.first_line(a))
