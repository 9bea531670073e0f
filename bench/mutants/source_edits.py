"""Minimal edits to a source file, by line, that remember where every original line went.

A mutant must differ from its original only where the mutation is, so edits work on the
original text (never on a regenerated one): whole lines are removed or inserted, and a
span inside one line is replaced. ``new_line`` maps an original line number to its number
in the edited text, so findings can be compared with the mutated statements.

    >>> edit = LineEdit("a = 1\\nb = 2\\n")
    >>> edit.insert_before(1, ["c = 3\\n"], tag="moved")
    >>> edit.text(), edit.new_line(2), edit.tagged_line("moved")
    ('c = 3\\na = 1\\nb = 2\\n', 3, 1)
"""
from __future__ import annotations

import ast


class LineEdit:
    """The lines of one file, each remembering its original number (None when inserted)."""

    def __init__(self, source: str) -> None:
        self.rows: list[list] = [[number, line, None]
                                 for number, line in enumerate(source.splitlines(True), 1)]
        if self.rows and not self.rows[-1][1].endswith("\n"):
            self.rows[-1][1] += "\n"

    def _index(self, line: int) -> int:
        for index, row in enumerate(self.rows):
            if row[0] == line:
                return index
        raise KeyError(f"original line {line} is no longer in the edit")

    def remove(self, first: int, last: int) -> None:
        """Remove original lines ``first`` to ``last`` (inclusive)."""
        for line in range(first, last + 1):
            del self.rows[self._index(line)]

    def replace_lines(self, first: int, last: int, lines: list[str], tag: str) -> None:
        index = self._index(first)
        self.remove(first, last)
        self.rows[index:index] = [[None, line, tag] for line in lines]

    def insert_before(self, line: int, lines: list[str], tag: str) -> None:
        index = self._index(line)
        self.rows[index:index] = [[None, text, tag] for text in lines]

    def insert_after(self, line: int, lines: list[str], tag: str) -> None:
        index = self._index(line) + 1
        self.rows[index:index] = [[None, text, tag] for text in lines]

    def replace_span(self, line: int, start: int, end: int, content: str) -> None:
        """Replace characters ``start:end`` of original line ``line``."""
        row = self.rows[self._index(line)]
        row[1] = row[1][:start] + content + row[1][end:]

    def new_line(self, line: int) -> int:
        return self._index(line) + 1

    def tagged_line(self, tag: str) -> int:
        return next(i for i, row in enumerate(self.rows, 1) if row[2] == tag)

    def text(self) -> str:
        return "".join(row[1] for row in self.rows)


def char_col(line_text: str, byte_col: int) -> int:
    """``ast`` columns count UTF-8 bytes; string slicing counts characters."""
    return len(line_text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def span(lines: list[str], node: ast.AST) -> tuple[int, int, int]:
    """``(line, start, end)`` character span of a node that fits on one line, else ValueError."""
    if node.lineno != node.end_lineno:
        raise ValueError("the node spans several lines")
    line_text = lines[node.lineno - 1]
    return node.lineno, char_col(line_text, node.col_offset), char_col(line_text, node.end_col_offset)


def alone_on_its_lines(lines: list[str], stmt: ast.stmt) -> bool:
    """Whether ``stmt`` shares none of its lines with another statement (no ``;``, no
    ``if x: stmt``), so whole lines can move."""
    first, last = lines[stmt.lineno - 1], lines[stmt.end_lineno - 1]
    before = first[:char_col(first, stmt.col_offset)]
    after = last[char_col(last, stmt.end_col_offset):].strip()
    return before.strip() == "" and (after == "" or after.startswith("#"))


def indent_of(lines: list[str], stmt: ast.stmt) -> str:
    line = lines[stmt.lineno - 1]
    return line[:len(line) - len(line.lstrip())]


def reindented(lines: list[str], stmt: ast.stmt, indent: str) -> list[str]:
    """The lines of ``stmt`` with its own indentation replaced by ``indent``."""
    own = indent_of(lines, stmt)
    moved = []
    for line in lines[stmt.lineno - 1:stmt.end_lineno]:
        if line.strip() and not line.startswith(own):
            raise ValueError("a continuation line is indented less than the statement")
        moved.append(indent + line[len(own):] if line.strip() else line)
    if not moved[-1].endswith("\n"):
        moved[-1] += "\n"
    return moved
