"""The checked text: maps `ast` positions to 1-based columns and exact character offsets.

`ast` reports columns as UTF-8 *byte* offsets; findings use character columns and fixes
use offsets into the ``str`` itself, so every conversion goes through this one class.
"""
from __future__ import annotations

import ast
import re

_LINE_END = re.compile(r"\r\n|\r|\n")


class SourceText:
    """Line table for one source string.

    >>> text = SourceText("x = 1\\r\\ny = 2\\r\\n")
    >>> text.offset(2, 0), text.newline
    (7, '\\r\\n')
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.line_starts = [0]
        for match in _LINE_END.finditer(source):
            self.line_starts.append(match.end())
        first = _LINE_END.search(source)
        # Reuse the file's own line ending for inserted lines (CRLF stays CRLF).
        self.newline = first.group(0) if first else "\n"

    def line_text(self, line: int) -> str:
        """Line ``line`` (1-based) without its line ending."""
        start = self.line_starts[line - 1]
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.source)
        return _LINE_END.sub("", self.source[start:end])

    def char_column(self, line: int, byte_col: int) -> int:
        """0-based character column of an `ast` byte column on ``line``."""
        text = self.line_text(line)
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))

    def offset(self, line: int, byte_col: int) -> int:
        """Offset into the source string of an `ast` (line, byte column)."""
        return self.line_starts[line - 1] + self.char_column(line, byte_col)

    def start(self, node: ast.AST) -> tuple[int, int]:
        """1-based (line, column) where ``node`` starts."""
        return node.lineno, self.char_column(node.lineno, node.col_offset) + 1

    def end(self, node: ast.AST) -> tuple[int, int]:
        """1-based (line, column) just past the end of ``node``."""
        line = node.end_lineno or node.lineno
        col = node.end_col_offset if node.end_col_offset is not None else node.col_offset
        return line, self.char_column(line, col) + 1

    def segment(self, node: ast.AST) -> str:
        """The exact text of ``node``."""
        start = self.offset(node.lineno, node.col_offset)
        end = self.offset(node.end_lineno or node.lineno, node.end_col_offset or 0)
        return self.source[start:end]

    def indent_of(self, line: int) -> str:
        """Leading whitespace of ``line`` (tabs stay tabs)."""
        text = self.line_text(line)
        return text[: len(text) - len(text.lstrip(" \t"))]

    def line_span(self, first: int, last: int) -> tuple[int, int]:
        """Offsets covering whole lines ``first``..``last`` including the final line ending."""
        start = self.line_starts[first - 1]
        end = self.line_starts[last] if last < len(self.line_starts) else len(self.source)
        return start, end
