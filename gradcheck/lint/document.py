"""A file as the linter sees it: the program text to check, and how edits go back to bytes.

Python files and notebooks keep a UTF-8 BOM (removed before checking, put back on write);
a Python file that declares another encoding (PEP 263, ``# -*- coding: gbk -*-``) is read
and written back in it, as Python reads it;
Python files also keep their line endings byte for byte: the rules read an LF view of the
program (:attr:`Document.endings`), and their edits are mapped back to the file's own text.
"""
from __future__ import annotations

import codecs
import io
import tokenize
from dataclasses import dataclass, field

from gradcheck.lint import notebook as nb
from gradcheck.lint.endings import Endings
from lint_rules.finding import Edit

BOM = "\ufeff"


class DocumentError(ValueError):
    """The bytes cannot be turned into a program (not in their encoding, not a notebook)."""


@dataclass
class Document:
    """One file's program text plus what is needed to write edits back."""

    program: str  # the file's own text (its line endings as they are)
    bom: bool = False
    notebook: nb.Notebook | None = None
    encoding: str = "utf-8"  # what the file declares (PEP 263); notebooks are always UTF-8
    _endings: Endings | None = field(default=None, repr=False, compare=False)

    @property
    def endings(self) -> Endings:
        """The LF view of :attr:`program` that the rules and ``noqa`` comments read."""
        if self._endings is None:
            self._endings = Endings.of(self.program)
        return self._endings

    @property
    def text(self) -> str:
        """:attr:`program` with every line ending as ``\\n`` (same lines, same columns)."""
        return self.endings.text

    def with_edits(self, edits: list[Edit]) -> Document:
        """A new document with ``edits`` (offsets into :attr:`program`) applied."""
        if self.notebook is not None:
            edited = parse(nb.apply_edits(self.notebook, edits).encode("utf-8"), notebook=True)
            edited.bom = self.bom
            return edited
        text = self.program
        for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
            text = text[: edit.start] + edit.replacement + text[edit.end :]
        return Document(text, self.bom, encoding=self.encoding)

    def to_bytes(self) -> bytes:
        """The file's bytes for this document."""
        text = nb.dump(self.notebook) if self.notebook is not None else self.program
        return ((BOM if self.bom else "") + text).encode(self.encoding)


def parse(data: bytes, *, notebook: bool) -> Document:
    """Decode a file's bytes.

    >>> parse(b"\\xef\\xbb\\xbfx = 1\\r\\n", notebook=False).program
    'x = 1\\r\\n'
    """
    encoding = "utf-8" if notebook else declared_encoding(data)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        where = f"byte 0x{data[error.start]:02x} at offset {error.start}"
        if encoding == "utf-8":
            raise DocumentError(f"not valid UTF-8 ({where}); save the file as UTF-8") from None
        raise DocumentError(
            f"not valid {encoding}, the encoding its coding declaration names ({where}); "
            "correct the declaration, or save the file as UTF-8 and remove it") from None
    bom = text.startswith(BOM)
    if bom:
        text = text[1:]
    if not notebook:
        return Document(text, bom, encoding=encoding)
    try:
        parsed = nb.load(text)
    except nb.NotebookError as error:
        raise DocumentError(str(error)) from None
    return Document(parsed.program, bom, parsed)


def declared_encoding(data: bytes) -> str:
    """The codec a PEP 263 declaration in the first two lines names, else UTF-8; a
    declaration Python would reject counts as none (the bytes are then read as UTF-8).

    >>> declared_encoding(b"# -*- coding: gbk -*-\\nx = 1\\n"), declared_encoding(b"x = 1\\n")
    ('gbk', 'utf-8')
    """
    if b"coding" not in data[:400]:
        return "utf-8"
    try:
        found, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        return "utf-8"
    name = codecs.lookup(found).name
    return "utf-8" if name in ("utf-8", "utf-8-sig") else name
