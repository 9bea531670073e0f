"""The checked text and where each libcst node lies in it.

libcst positions count lines from 1 and columns from 0 in characters (code points), which is
what ``str`` offsets count too, so a column needs no re-encoding; findings add one to make
columns 1-based. Positions are resolved lazily: a module with no gradient event never pays
for them.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # narrowing and fixes use split_lines before (or without) libcst
    import libcst as cst
    from libcst.metadata import CodeRange

_LINE_END = re.compile(r"\r\n|\r|\n")
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str) -> list[str]:
    """The lines of ``text``, each with its own line ending.

    NOTE: str.splitlines() also splits on \\f, \\v and U+2028; Python source lines do not.

    >>> split_lines("a\\r\\nb\\fc\\nd")
    ['a\\r\\n', 'b\\x0cc\\n', 'd']
    """
    return _LINES.findall(text)


class TooDeeplyNested(Exception):
    """The module parsed, but its nesting is too deep for libcst to compute positions."""


def _positions(module: cst.Module) -> dict:
    """Every node's range, from one code-generation pass over ``module``.

    NOTE: ``MetadataWrapper.resolve(PositionProvider)`` also runs an empty visitor over the
    whole tree after generating the code, which doubles the cost; the provider is run
    directly here, and the wrapper is the fallback should libcst's internals move.
    """
    from libcst.metadata import MetadataWrapper, PositionProvider

    provider = PositionProvider()
    try:
        provider._gen_impl(module)
        return provider._computed
    except AttributeError:  # pragma: no cover - a libcst without these internals
        # The tree is never modified, so the defensive deep copy is skipped.
        return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)


class SourceText:
    """Line table and node positions for one parsed source string.

    >>> import libcst
    >>> text = SourceText("x = 1\\r\\ny = 2\\r\\n", libcst.parse_module("x = 1\\r\\ny = 2\\r\\n"))
    >>> text.offset(2, 0), text.newline
    (7, '\\r\\n')
    """

    def __init__(self, source: str, module: cst.Module) -> None:
        self.source = source
        self.module = module
        self._ranges: object | None = None
        self.line_starts = [0]
        for match in _LINE_END.finditer(source):
            self.line_starts.append(match.end())
        first = _LINE_END.search(source)
        # Reuse the file's own line ending for inserted lines (CRLF stays CRLF).
        self.newline = first.group(0) if first else "\n"

    def range(self, node: cst.CSTNode) -> CodeRange:
        """Where ``node`` starts and ends (without its own parentheses, as Python's parser)."""
        if self._ranges is None:
            try:
                self._ranges = _positions(self.module)
            except (RecursionError, KeyError) as exc:
                # libcst generates positions recursively: an expression nested a few hundred
                # levels deep (which its parser accepts) exhausts the stack, and the failure
                # surfaces as a RecursionError or a KeyError for a node left unrecorded.
                raise TooDeeplyNested("expression nesting too deep to locate nodes") from exc
        return self._ranges[node]

    def line_text(self, line: int) -> str:
        """Line ``line`` (1-based) without its line ending."""
        start = self.line_starts[line - 1]
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.source)
        return _LINE_END.sub("", self.source[start:end])

    def offset(self, line: int, column: int) -> int:
        """Offset into the source string of a (1-based line, 0-based character column)."""
        return self.line_starts[line - 1] + column

    def first_line(self, node: cst.CSTNode) -> int:
        return self.range(node).start.line

    def last_line(self, node: cst.CSTNode) -> int:
        return self.range(node).end.line

    def start(self, node: cst.CSTNode) -> tuple[int, int]:
        """1-based (line, column) where ``node`` starts."""
        start = self.range(node).start
        return start.line, start.column + 1

    def end(self, node: cst.CSTNode) -> tuple[int, int]:
        """1-based (line, column) just past the end of ``node``."""
        end = self.range(node).end
        return end.line, end.column + 1

    def start_offset(self, node: cst.CSTNode) -> int:
        start = self.range(node).start
        return self.offset(start.line, start.column)

    def end_offset(self, node: cst.CSTNode) -> int:
        end = self.range(node).end
        return self.offset(end.line, end.column)

    def segment(self, node: cst.CSTNode) -> str:
        """The exact text of ``node``; like Python's ``ast``, without its own parentheses."""
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
