"""Split a very large module into pieces that are analysed one at a time.

Python's tree of a module costs about 4 KB per line, and the analysis adds to it, so a
generated 200k-line file of training functions would need about a gigabyte at once, and the
analysis of one module grows faster than its length. The split itself never holds the
whole tree: top-level statements are parsed a chunk at a time. A piece is the module's own top-level
code (imports, globals, the ``if __name__ == "__main__":`` block) plus a group of top-level
functions and classes that refer to one another by name, so that everything the flow
analysis follows (same-file calls, whether a function is referenced) stays together.
Groups are packed into pieces of about ``PIECE_LINES`` lines; memory then follows the
largest group, not the file. Findings are mapped back to the file's own lines and offsets.

>>> source = "import torch\\n\\ndef a():\\n    b()\\n\\ndef b():\\n    pass\\n\\ndef c():\\n    pass\\n"
>>> [piece.text.count("def ") for piece in split(source, piece_lines=3)]
[2, 1]
"""
from __future__ import annotations

import ast
import bisect
import dataclasses
import re
import warnings
from collections.abc import Iterator

from lint_rules.finding import Edit, Finding, Fix
from lint_rules.source import split_lines

PIECE_LINES = 10_000  # files longer than this are analysed in pieces of about this size
_LINE_REFERENCE = re.compile(r"\bline (\d+)\b")


@dataclasses.dataclass
class Piece:
    """Whole lines of the original module, and where each one came from."""

    text: str
    lines: list[int]  # original line number of each piece line (1-based), in order
    offsets: list[int]  # original offset of each piece line's start
    starts: list[int]  # the piece's own offset of each of its lines' start
    ends: list[int]  # original offset just past each piece line (its line ending included)

    def finding(self, finding: Finding) -> Finding:
        """``finding`` (on this piece) on the original module's lines and offsets."""
        fix = finding.fix
        if fix is not None:
            edits = tuple(Edit(self._offset(e.start), self._offset(e.end), e.replacement)
                          for e in fix.edits)
            fix = Fix(fix.description, edits, fix.safe)
        message = _LINE_REFERENCE.sub(lambda m: f"line {self._line(int(m.group(1)))}",
                                      finding.message)
        return dataclasses.replace(finding, line=self._line(finding.line),
                                   end_line=self._line(finding.end_line) if finding.end_line else 0,
                                   message=message, fix=fix)

    def _line(self, line: int) -> int:
        return self.lines[min(max(line, 1), len(self.lines)) - 1]

    def _offset(self, offset: int) -> int:
        index = bisect.bisect_right(self.starts, offset) - 1
        within = offset - self.starts[index]
        if within == 0 and index > 0:
            # between two lines: right after the previous one, as an insertion "after the
            # step" means (the next piece line may come from further down the file)
            return self.ends[index - 1]
        return min(self.offsets[index] + within, self.ends[index])


def split(source: str, piece_lines: int = PIECE_LINES) -> list[Piece] | None:
    """The pieces of ``source``, or None when it is small or cannot be split (a syntax
    error, or one group already as big as the limit)."""
    if source.count("\n") <= piece_lines:
        return None
    lines = split_lines(source)
    shared: list[tuple[int, int]] = []
    units: list[tuple[int, int, set[str], set[str]]] = []  # first, last, defines, mentions
    try:
        # Each chunk's tree is dropped once its statements are summarised.
        for statement, offset in _top_level(lines, piece_lines):
            first = min([statement.lineno] + [d.lineno for d in
                                              getattr(statement, "decorator_list", [])]) + offset
            span = (first, (statement.end_lineno or statement.lineno) + offset)
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                units.append((*span, _defined(statement), _mentioned(statement)))
            else:
                shared.append(span)
    except _Unsplittable:
        return None
    groups = _groups(units)
    if len(groups) < 2:
        return None
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    pieces, batch, size = [], [], 0
    for group in groups:
        group_size = sum(units[i][1] - units[i][0] + 1 for i in group)
        if batch and size + group_size > piece_lines:
            pieces.append(_piece(shared, [units[i] for i in batch], lines, starts))
            batch, size = [], 0
        batch += group
        size += group_size
    pieces.append(_piece(shared, [units[i] for i in batch], lines, starts))
    return pieces if len(pieces) > 1 else None


# A line that may start a top-level statement: not indented, not a comment or a closing
# bracket, not the continuation of a compound statement.
_TOP_LEVEL = re.compile(r"(?![\s#)\]}]|(?:else|elif|except|finally)\b)")


class _Unsplittable(Exception):
    """The text does not parse, or holds one statement longer than a piece."""


def _top_level(lines: list[str], most: int) -> Iterator[tuple[ast.stmt, int]]:
    """Every top-level statement with the line offset of the chunk it was parsed in; raises
    ``_Unsplittable`` when the text does not parse or a statement is too long.

    The module is parsed a few top-level statements at a time, so that memory follows the
    largest chunk, not the file: a chunk that does not parse on its own (a decorator, a
    string spanning lines that starts a line at column 0) takes in the next one.
    """
    cuts = [i for i, line in enumerate(lines) if _TOP_LEVEL.match(line) and i] + [len(lines)]
    begin, least, failed = 0, 1, -1
    while begin < len(lines):
        end = cuts[bisect.bisect_left(cuts, begin + least)]
        if end - begin > most:
            # the longest chunk a piece could hold, unless that one failed already
            end = cuts[bisect.bisect_right(cuts, begin + most) - 1]
            if end <= begin or end == failed:
                raise _Unsplittable  # a statement (or a string) too long for any piece
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse("".join(lines[begin:end]))
        except SyntaxError:
            # Cut inside a statement: try again with at least twice the text, so that a long
            # string full of column-0 lines costs a few parses, not one per line.
            failed, least = end, 2 * (end - begin)
            continue
        except (ValueError, RecursionError, MemoryError):
            raise _Unsplittable from None
        yield from ((statement, begin) for statement in tree.body)
        begin, least = end, 1


def _defined(statement: ast.stmt) -> set[str]:
    names = {statement.name}
    if isinstance(statement, ast.ClassDef):  # methods are reached as attributes
        names |= {s.name for s in statement.body
                  if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return names


def _mentioned(statement: ast.stmt) -> set[str]:
    words = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Name):
            words.add(node.id)
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
    return words


def _groups(units: list[tuple[int, int, set[str], set[str]]]) -> list[list[int]]:
    """Units joined when one mentions a name another defines (union-find), in file order."""
    parent = list(range(len(units)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    definer: dict[str, int] = {}
    for index, (_, _, defines, _) in enumerate(units):
        for name in defines:
            if name in definer:
                parent[root(index)] = root(definer[name])
            definer[name] = index
    for index, (_, _, _, mentions) in enumerate(units):
        for name in mentions & definer.keys():
            parent[root(index)] = root(definer[name])
    groups: dict[int, list[int]] = {}
    for index in range(len(units)):
        groups.setdefault(root(index), []).append(index)
    return list(groups.values())


def _piece(shared, units, lines: list[str], starts: list[int]) -> Piece:
    spans = sorted(set(shared) | {(first, last) for first, last, _, _ in units})
    numbers: list[int] = []
    seen = 0
    for first, last in spans:
        for number in range(max(first, seen + 1), last + 1):
            numbers.append(number)
        seen = max(seen, last)
    text, own_starts, position = [], [], 0
    for number in numbers:
        line = lines[number - 1]
        line = line if line.endswith(("\n", "\r")) else line + "\n"
        text.append(line)
        own_starts.append(position)
        position += len(line)
    return Piece("".join(text), numbers, [starts[n - 1] for n in numbers], own_starts,
                 [starts[n] for n in numbers])
