"""Jupyter notebooks: code cells joined into one program, and written back after fixes.

Each IPython magic or shell line is replaced by a placeholder statement of the *same
length*, so a character offset in the program is also an offset in the cell's own text.
That keeps fixes exact and lets them be split back into cells.

A cell whose first line is indented runs in Jupyter: IPython removes that line's leading
whitespace from every line that starts with it. The program does the same, moving the
removed whitespace to the end of the line so lengths still match; findings in such a cell
have their columns moved back, and fixes there are left to the user.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from gradcheck.lint.endings import split_lines
from lint_rules.finding import Edit

# `%magic`, `%%cell_magic`, `!shell`, `x = !shell`, `x = %magic`, `obj?` / `obj??` help, and
# help asked the other way round, `?obj` / `??obj` (a line starting with `?` is no Python).
# NOTE: a magic name follows `%` directly, so a `% x` continuation line stays Python
# NOTE: `! cmd` (a space after the `!`) is a shell escape too; no Python line starts with `!`
# NOTE: `pip install x` without `%` is IPython's automagic for `%pip`; two names in a row
# are never Python, so reading it as a magic cannot hide a statement
_MAGIC = re.compile(
    r"^[ \t]*(?:%{1,2}[A-Za-z_]|!(?!=)|[\w.,\s]+=[ \t]*(?:%[A-Za-z_]|!(?!=))"
    r"|[\w.]+\?{1,2}[ \t]*$|\?{1,2}[\w.*]+[ \t]*$"
    r"|(?:pip|conda|mamba)[ \t]+(?:install|uninstall)[ \t])"
)


# IPython's automagics that notebooks use bare (`cd ..`, `cd data`, `mv a b`): the line is read
# as the magic only where its second word cannot continue Python (no operator, bracket or
# keyword follows the name) and the line is no Python statement alone: `cd / data` divides,
# and `env = Env(world,` opens a call that the next lines close
_AUTOMAGIC = re.compile(
    r"^[ \t]*(?:cd|ls|pwd|mkdir|cat|rm|cp|mv|rmdir)[ \t]+"
    r"(?![=(\[,):+*%<>!&|^@]|(?:and|or|if|else|in|is|not|for)\b)\S.*$"
)


def _automagic(line: str) -> bool:
    if not _AUTOMAGIC.match(line):
        return False
    try:
        compile(line.strip(), "<cell line>", "exec")
    except SyntaxError:
        return True
    return False


class NotebookError(ValueError):
    """The file is not a notebook this linter can read."""


@dataclass(frozen=True)
class Cell:
    """One code cell: its index in ``cells``, its number among code cells, and its span."""

    index: int
    number: int
    start: int
    text: str
    first_line: int  # 1-based program line of the cell's first line
    magic_spans: tuple[tuple[int, int], ...]  # program offsets of placeholder lines
    dedent: int = 0  # how much leading whitespace IPython removes from the dedented lines
    dedented: frozenset[int] = frozenset()  # 0-based indexes of those lines in the cell


@dataclass
class Notebook:
    """A parsed notebook: the JSON document and the program built from its code cells."""

    data: dict
    cells: list[Cell]
    program: str
    indent: int | None
    trailing_newline: bool

    def column_shift(self, line: int) -> int:
        """How far right of its program column a 1-based program ``line``'s text stands in
        its cell (the whitespace IPython removes from an indented cell)."""
        for cell in reversed(self.cells):
            if cell.first_line <= line:
                return cell.dedent if line - cell.first_line in cell.dedented else 0
        return 0


def _placeholder(line: str, at_margin: bool = False) -> str:
    """A statement as long as ``line`` (same indentation) that means nothing; with
    ``at_margin``, at column 0 (the lines of a `%%cell` magic: their indentation is not
    Python's, and a placeholder indented under nothing would not parse)."""
    body = line.rstrip("\r\n")
    ending = line[len(body):]
    if not body.strip():
        return line
    stripped = body.lstrip(" \t")
    indent = body[: len(body) - len(stripped)]
    if at_margin:
        return "0" + " " * (len(body) - 1) + ending
    return indent + "0" + " " * (len(stripped) - 1) + ending


def _magic_lines(lines: list[str], whole_cell: bool) -> tuple[set[int], set[int]]:
    """Indexes of the lines that are IPython's, not Python's (magics and shell escapes,
    with the lines a trailing backslash continues them onto), and of those whose
    indentation is not Python's (a `%%cell` magic's body, a continuation)."""
    if whole_cell:
        every = set(range(len(lines)))
        return every, every
    found: set[int] = set()
    continuations: set[int] = set()
    continued = False
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    for i, line in enumerate(lines):
        if continued or i == first:
            # the first line stands inside nothing: IPython drops its indentation (` ! pip`)
            continuations.add(i)
        if continued or _MAGIC.match(line) or _automagic(line):
            found.add(i)
            continued = line.rstrip("\r\n").endswith("\\")
        else:
            continued = False
    return found, continuations


def _ipython_dedent(lines: list[str]) -> tuple[list[str], int, frozenset[int]]:
    """The lines as IPython runs them when the first non-blank one is indented, each still
    as long as before (the removed whitespace moves before the line ending), the width
    removed and which lines lost it. A line that a backslash continues keeps its indentation
    (whitespace after the backslash would end the continuation), and so does the cell."""
    first = next((line for line in lines if line.strip()), "")
    prefix = first[: len(first) - len(first.lstrip(" \t"))]
    if not prefix:
        return lines, 0, frozenset()
    out, moved = [], set()
    for i, line in enumerate(lines):
        body = line.rstrip("\r\n")
        if not body.startswith(prefix):
            out.append(line)
            continue
        if body.endswith("\\"):
            return lines, 0, frozenset()
        out.append(body[len(prefix):] + " " * len(prefix) + line[len(body):])
        moved.add(i)
    return out, len(prefix), frozenset(moved)


def _cell_source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def load(raw: str) -> Notebook:
    """Parse notebook JSON text into a :class:`Notebook`.

    >>> nb = load('{"cells": [{"cell_type": "code", "source": ["%time x = 1\\\\n", "y = 2"]}]}')
    >>> nb.program
    '0          \\ny = 2\\n'
    """
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as error:
        raise NotebookError(f"not valid notebook JSON: {error.msg} at line {error.lineno}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise NotebookError("not a notebook: the JSON has no 'cells' list")
    cells, parts, offset, line = [], [], 0, 1
    for index, cell in enumerate(data["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        text = _cell_source(cell)
        if text and not text.endswith("\n"):
            text += "\n"
        lines = split_lines(text)  # Python's lines: a form feed or U+2028 does not end one
        whole_cell_magic = bool(lines) and lines[0].lstrip().startswith("%%")
        dedent, dedented = 0, frozenset()
        if not whole_cell_magic:
            lines, dedent, dedented = _ipython_dedent(lines)
        magic, margin = _magic_lines(lines, whole_cell_magic)
        program_text = "".join(_placeholder(ln, i in margin) if i in magic else ln
                               for i, ln in enumerate(lines))
        starts = [offset]
        for ln in lines:
            starts.append(starts[-1] + len(ln))
        spans = tuple((starts[i], starts[i + 1]) for i in sorted(magic))
        cells.append(Cell(index, len(cells) + 1, offset, text, line, spans, dedent, dedented))
        parts.append(program_text)
        offset += len(text)
        line += len(lines)
    indent = _detect_indent(raw)
    return Notebook(data, cells, "".join(parts), indent, raw.endswith("\n"))


def _detect_indent(raw: str) -> int | None:
    match = re.search(r"\n( +)\S", raw)
    return len(match.group(1)) if match else None


def apply_edits(notebook: Notebook, edits: list[Edit]) -> str:
    """The notebook JSON text after ``edits`` (offsets into the program), formatting kept.

    Raises NotebookError if an edit crosses a cell boundary, touches a magic line or lies in
    a cell IPython dedents.
    """
    per_cell: dict[int, list[Edit]] = {}
    for edit in edits:
        per_cell.setdefault(_cell_taking(notebook, edit).index, []).append(edit)
    for cell in notebook.cells:
        if cell.index not in per_cell:
            continue
        text = cell.text
        for edit in sorted(per_cell[cell.index], key=lambda e: (e.start, e.end), reverse=True):
            start, end = edit.start - cell.start, edit.end - cell.start
            text = text[:start] + edit.replacement + text[end:]
        _store_source(notebook.data["cells"][cell.index], text)
    return dump(notebook)


def _cell_taking(notebook: Notebook, edit: Edit) -> Cell:
    """The cell an edit goes into; NotebookError when none can take it."""
    for cell in notebook.cells:
        # NOTE: an insertion on a cell boundary belongs to the cell before it: it continues
        # that cell's last statement (Jupyter runs each cell on its own)
        if cell.start <= edit.start and edit.end <= cell.start + len(cell.text):
            break
    else:
        raise NotebookError("a fix spans two notebook cells")
    if any(_overlaps(edit, span) for span in cell.magic_spans):
        raise NotebookError("a fix touches an IPython magic line")
    if cell.dedent:
        # the program's lines there are not the cell's: the offsets would land elsewhere
        raise NotebookError("an edit in a cell whose indentation IPython removes "
                            "(its lines are not the program's)")
    return cell


def takes(notebook: Notebook, edits: tuple[Edit, ...] | list[Edit]) -> bool:
    """Whether :func:`apply_edits` can write these edits back into the cells."""
    try:
        for edit in edits:
            _cell_taking(notebook, edit)
    except NotebookError:
        return False
    return True


def _overlaps(edit: Edit, span: tuple[int, int]) -> bool:
    start, end = span
    if edit.start == edit.end:  # an insertion only collides strictly inside the line
        return start < edit.start < end
    return edit.start < end and start < edit.end


def _store_source(cell: dict, text: str) -> None:
    original = _cell_source(cell)
    if not original.endswith("\n") and text.endswith("\n"):
        text = text[:-1]  # the program added a newline the cell did not have
    if isinstance(cell.get("source"), list):
        cell["source"] = text.splitlines(keepends=True)
    else:
        cell["source"] = text


def dump(notebook: Notebook) -> str:
    """Serialise like Jupyter does: the detected indent, non-ASCII kept as is.

    >>> text = '{\\n "cells": []\\n}\\n'
    >>> dump(load(text)) == text
    True
    """
    text = json.dumps(notebook.data, indent=notebook.indent, ensure_ascii=False)
    return text + "\n" if notebook.trailing_newline else text
