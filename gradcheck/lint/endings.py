"""Line endings: the rules read LF text; findings and fixes go back to the file's own endings.

Python ends a line at ``\\r\\n``, a lone ``\\r`` or ``\\n`` (its tokenizer counts lines that
way), and nothing else: a form feed, ``\\v`` or U+2028 is an ordinary character inside a
line, although ``str.splitlines`` splits on them. Turning each ending into one ``\\n``
keeps every line number and column, so only offsets (the edits of fixes) need mapping
back, and an inserted line takes the ending of the line it lands on.
"""
from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass

from lint_rules.finding import Edit, Finding

_ENDING = re.compile(r"\r\n?|\n")
_LINE = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+\Z")


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` as Python counts them, each with its own ending.

    >>> split_lines("a\\rb\\x0cc\\r\\nd\\ne")
    ['a\\r', 'b\\x0cc\\r\\n', 'd\\n', 'e']
    """
    return _LINE.findall(text)


@dataclass(frozen=True)
class Endings:
    """How one text's line endings differ from LF, and how to map LF positions back.

    >>> endings = Endings.of("a\\r\\nb\\rc\\n")
    >>> endings.text
    'a\\nb\\nc\\n'
    >>> endings.original_offset(2), endings.ending_at(2)
    (3, '\\r')
    """

    text: str  # the text with every line ending turned into "\n"
    newlines: tuple[int, ...] = ()  # offsets of the "\n"s of ``text``, in order
    kinds: tuple[str, ...] = ()  # the original ending of each of them
    crlf: tuple[int, ...] = ()  # offsets of the "\n"s that stand for "\r\n"

    @classmethod
    def of(cls, text: str) -> Endings:
        """The LF view of ``text`` (no copy when it already is LF-only)."""
        if "\r" not in text:
            return cls(text)
        kinds = tuple(match.group() for match in _ENDING.finditer(text))
        lf_text = _ENDING.sub("\n", text)
        newlines = tuple(match.start() for match in re.finditer("\n", lf_text))
        crlf = tuple(at for at, kind in zip(newlines, kinds) if kind == "\r\n")
        return cls(lf_text, newlines, kinds, crlf)

    @property
    def is_lf(self) -> bool:
        """Whether the original text uses only ``\\n``."""
        return not self.kinds

    def original_offset(self, offset: int) -> int:
        """The offset in the original text of a position in :attr:`text`.

        A position just before a ``\\n`` that stands for ``\\r\\n`` maps to before the ``\\r``.
        """
        return offset + bisect_left(self.crlf, offset)

    def ending_at(self, offset: int) -> str:
        """The original ending of the line holding ``offset`` (the last line has none of its
        own: the one before it counts)."""
        if not self.kinds:
            return "\n"
        line = bisect_left(self.newlines, offset)
        return self.kinds[min(line, len(self.kinds) - 1)]

    def edit(self, edit: Edit) -> Edit:
        """``edit`` (on :attr:`text`) as an edit of the original text."""
        ending = self.ending_at(edit.start)
        replacement = edit.replacement.replace("\n", ending) if ending != "\n" else edit.replacement
        return Edit(self.original_offset(edit.start), self.original_offset(edit.end), replacement)

    def finding(self, finding: Finding) -> Finding:
        """``finding`` with its fix's edits mapped to the original text (lines and columns
        are the same in both)."""
        import dataclasses

        if self.is_lf or finding.fix is None:
            return finding
        fix = dataclasses.replace(finding.fix, edits=tuple(map(self.edit, finding.fix.edits)))
        return dataclasses.replace(finding, fix=fix)
