"""Fixes inside one line of ``a; b; c``, made on libcst's concrete tree of that line.

Moving whole lines (``fixes.py``) cannot take ``optimizer.zero_grad()`` out of
``loss.backward(); optimizer.zero_grad(); optimizer.step()``. libcst keeps every token of a
line (semicolons, their spacing, a trailing comment), so the line is parsed on its own, its
small statements are reordered, dropped or extended, and the line is written back from that
tree: nothing outside the line is touched, and nothing inside it but the statements moved.
Only the few lines that need it are ever given to libcst.

>>> from lint_rules.source import SourceText
>>> source = "loss.backward(); opt.zero_grad(); opt.step()  # one line\\n"
>>> zero, step = ast.parse(source).body[1:]
>>> edit = move_after(zero, step, SourceText(source))
>>> source[:edit.start] + edit.replacement + source[edit.end:]
'loss.backward(); opt.step(); opt.zero_grad()  # one line\\n'
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from lint_rules.finding import Edit
from lint_rules.source import SourceText


# NOTE: libcst's native parser overflows the C stack on an expression chain some thousands
# deep (Python 3.10's parser lets those through); no line worth rewriting is this long.
MAX_LINE = 2_000


@dataclass
class _Line:
    """One physical line of simple statements: libcst's tree of it and where it lies."""

    tree: object  # libcst.SimpleStatementLine
    starts: list[int]  # UTF-8 byte column of each small statement, as Python's tree counts
    start: int  # offset of the line's first statement in the source
    end: int  # offset of the end of its text (before the line ending)

    def index(self, stmt: ast.stmt) -> int | None:
        return self.starts.index(stmt.col_offset) if stmt.col_offset in self.starts else None

    def edit(self, body: list) -> Edit:
        import libcst as cst

        code = cst.Module([]).code_for_node(self.tree.with_changes(body=body))
        return Edit(self.start, self.end, code.rstrip("\r\n"))


def _line(stmt: ast.stmt, text: SourceText) -> _Line | None:
    """The line ``stmt`` shares with other simple statements, parsed; None when it holds
    anything else (a compound statement's header, a statement spanning lines)."""
    import libcst as cst

    number = stmt.lineno
    if stmt.end_lineno != number:
        return None
    line = text.line_text(number)
    if len(line) > MAX_LINE:
        return None
    indent = len(line) - len(line.lstrip(" \t"))
    try:
        tree = cst.parse_statement(line[indent:] + "\n")
        statements = ast.parse(line[indent:]).body
    except (cst.ParserSyntaxError, SyntaxError, ValueError, RecursionError):
        return None
    if not isinstance(tree, cst.SimpleStatementLine) or len(tree.body) != len(statements) or any(
            s.end_lineno != 1 for s in statements):
        return None
    shift = len(line[:indent].encode("utf-8"))
    start = text.offset(number, indent)
    return _Line(tree, [s.col_offset + shift for s in statements], start,
                 start + len(line) - indent)


def _with_semicolons(body: list, original: list) -> list:
    """``body`` with each position keeping the semicolon (and its spacing) it had before; the
    last keeps the line's own ending, and new positions take libcst's default (``; ``)."""
    import libcst as cst

    last = len(body) - 1
    out = []
    for position, stmt in enumerate(body):
        if position == last:
            keep = original[-1].semicolon
        elif position < len(original) - 1:
            keep = original[position].semicolon
        else:
            keep = cst.MaybeSentinel.DEFAULT
        out.append(stmt.with_changes(semicolon=keep))
    return out


def move_after(stmt: ast.stmt, anchor: ast.stmt, text: SourceText,
               replacement: str | None = None) -> Edit | None:
    """Move ``stmt`` to just after ``anchor`` on the line they share (optionally rewritten)."""
    line = _line(stmt, text)
    if line is None or anchor.lineno != stmt.lineno:
        return None
    moved, after = line.index(stmt), line.index(anchor)
    if moved is None or after is None or moved == after:
        return None
    original = list(line.tree.body)
    item = original[moved] if replacement is None else _statement(replacement)
    if item is None:
        return None
    body = [s for i, s in enumerate(original) if i != moved]
    body.insert(body.index(original[after]) + 1, item)
    return line.edit(_with_semicolons(body, original))


def drop(stmt: ast.stmt, text: SourceText) -> Edit | None:
    """Remove ``stmt`` from the line it shares with other statements."""
    line = _line(stmt, text)
    position = line.index(stmt) if line is not None else None
    if position is None:
        return None
    original = list(line.tree.body)
    return line.edit(_with_semicolons([s for i, s in enumerate(original) if i != position],
                                      original))


def insert_after(anchor: ast.stmt, code: str, text: SourceText) -> Edit | None:
    """Add the simple statement ``code`` right after ``anchor`` on ``anchor``'s line."""
    line = _line(anchor, text)
    position = line.index(anchor) if line is not None else None
    item = _statement(code)
    if position is None or item is None:
        return None
    original = list(line.tree.body)
    body = original[: position + 1] + [item] + original[position + 1:]
    return line.edit(_with_semicolons(body, original))


def _statement(code: str):
    import libcst as cst

    try:
        tree = cst.parse_statement(code + "\n")
    except cst.ParserSyntaxError:
        return None
    return tree.body[0] if isinstance(tree, cst.SimpleStatementLine) and len(tree.body) == 1 else None
