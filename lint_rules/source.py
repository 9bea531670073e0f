"""The checked text and where each node of Python's syntax tree lies in it.

Lines count from 1; columns are converted from the tree's UTF-8 byte offsets to characters
(code points), which is what ``str`` offsets count, and findings add one to make them
1-based.
"""
from __future__ import annotations

import ast
import re

_LINE_END = re.compile(r"\r\n|\r|\n")
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str) -> list[str]:
    """The lines of ``text``, each with its own line ending.

    NOTE: str.splitlines() also splits on \\f, \\v and U+2028; Python source lines do not.

    >>> split_lines("a\\r\\nb\\fc\\nd")
    ['a\\r\\n', 'b\\x0cc\\n', 'd']
    """
    return _LINES.findall(text)


class SourceText:
    """Line table and node positions for one parsed source string.

    Python's trees count columns in UTF-8 bytes; every method here speaks in characters
    (code points), which is what ``str`` offsets count, so a line with non-ASCII text is
    re-measured once. Columns returned by ``start``/``end`` are 1-based.

    >>> import ast
    >>> text = SourceText("x = 1\\r\\ny = 2\\r\\n")
    >>> text.offset(2, 0), text.newline, text.start(ast.parse(text.source).body[1])
    (7, '\\r\\n', (2, 1))
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.line_starts = [0]
        for match in _LINE_END.finditer(source):
            self.line_starts.append(match.end())
        first = _LINE_END.search(source)
        # Reuse the file's own line ending for inserted lines (CRLF stays CRLF).
        self.newline = first.group(0) if first else "\n"
        self._encoded: dict[int, bytes] = {}

    def _column(self, line: int, byte_column: int) -> int:
        """The character column of a UTF-8 byte column on ``line`` (1-based)."""
        text = self.line_text(line)
        if text.isascii():
            return byte_column
        encoded = self._encoded.get(line)
        if encoded is None:
            encoded = self._encoded[line] = text.encode("utf-8", "surrogatepass")
        return len(encoded[:byte_column].decode("utf-8", "replace"))

    def _start(self, node: ast.AST) -> tuple[int, int]:
        decorators = getattr(node, "decorator_list", None)
        if decorators:  # a decorated definition starts at its first `@`
            first = decorators[0]
            return first.lineno, max(self._column(first.lineno, first.col_offset) - 1, 0)
        return node.lineno, self._column(node.lineno, node.col_offset)

    def _end(self, node: ast.AST) -> tuple[int, int]:
        return node.end_lineno, self._column(node.end_lineno, node.end_col_offset)

    def line_text(self, line: int) -> str:
        """Line ``line`` (1-based) without its line ending."""
        start = self.line_starts[line - 1]
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.source)
        return _LINE_END.sub("", self.source[start:end])

    def offset(self, line: int, column: int) -> int:
        """Offset into the source string of a (1-based line, 0-based character column)."""
        return self.line_starts[line - 1] + column

    def first_line(self, node: ast.AST) -> int:
        return _first_line(node)

    def last_line(self, node: ast.AST) -> int:
        return node.end_lineno

    def start(self, node: ast.AST) -> tuple[int, int]:
        """1-based (line, column) where ``node`` starts (a decorated definition: its first
        decorator)."""
        line, column = self._start(node)
        return line, column + 1

    def end(self, node: ast.AST) -> tuple[int, int]:
        """1-based (line, column) just past the end of ``node``."""
        line, column = self._end(node)
        return line, column + 1

    def start_offset(self, node: ast.AST) -> int:
        return self.offset(*self._start(node))

    def end_offset(self, node: ast.AST) -> int:
        return self.offset(*self._end(node))

    def segment(self, node: ast.AST) -> str:
        """The exact text of ``node``, without its own parentheses."""
        return self.source[self.start_offset(node):self.end_offset(node)]

    def indent_of(self, line: int) -> str:
        """Leading whitespace of ``line`` (tabs stay tabs)."""
        text = self.line_text(line)
        return text[: len(text) - len(text.lstrip(" \t"))]

    def line_span(self, first: int, last: int) -> tuple[int, int]:
        """Offsets covering whole lines ``first``..``last`` including the final line ending."""
        start = self.line_starts[first - 1]
        end = self.line_starts[last] if last < len(self.line_starts) else len(self.source)
        return start, end


def _first_line(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", None)
    return decorators[0].lineno if decorators else node.lineno
