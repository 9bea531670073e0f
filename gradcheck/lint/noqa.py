"""Suppression comments: ``# noqa``, ``# noqa: GC001, GC002`` and ``# gradcheck: noqa``.

Comments are found with a line scan, not a tokenizer, so a ``# noqa`` inside a string
literal also counts (ruff is stricter here; it has never mattered for these rules).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_LINE_NOQA = re.compile(
    r"#\s*noqa(?![\w-])(?:\s*:\s*(?P<codes>[A-Za-z]+[0-9]+(?:\s*[,\s]\s*[A-Za-z]+[0-9]+)*))?",
    re.IGNORECASE,
)
_FILE_NOQA = re.compile(
    r"^[ \t]*#\s*gradcheck\s*:\s*noqa(?![\w-])(?:\s*:\s*(?P<codes>[A-Za-z0-9,\s]+))?\s*$",
    re.IGNORECASE | re.MULTILINE,
)
_CODE = re.compile(r"[A-Za-z]+[0-9]+")
_SPELLINGS = ("noqa", "NOQA", "NoQA", "Noqa")  # what the comment regexes below accept in practice
OWN_PREFIX = "GC"


@dataclass(frozen=True)
class Suppressions:
    """What the comments of one file suppress."""

    whole_file: bool = False
    file_codes: frozenset[str] = frozenset()
    by_line: dict[int, frozenset[str] | None] | None = None  # None value: bare noqa

    def suppresses(self, line: int, code: str) -> bool:
        """Whether a finding with ``code`` on ``line`` (1-based) is silenced."""
        if self.whole_file or code in self.file_codes:
            return True
        if not self.by_line or line not in self.by_line:
            return False
        codes = self.by_line[line]
        return codes is None or code in codes


def scan(source: str) -> Suppressions:
    """Collect the suppression comments of ``source``.

    >>> scan("x = 1  # noqa: GC001\\n").suppresses(1, "GC001")
    True
    """
    # NOTE: plain substring tests first; a case-insensitive regex over every file is slow
    if not any(spelling in source for spelling in _SPELLINGS):
        return Suppressions()
    whole_file, file_codes = False, set()
    for match in _FILE_NOQA.finditer(source):
        codes = match.group("codes")
        if codes and _CODE.findall(codes):
            file_codes.update(code.upper() for code in _CODE.findall(codes))
        else:
            whole_file = True
    by_line: dict[int, frozenset[str] | None] = {}
    line, counted = 1, 0
    for match in _LINE_NOQA.finditer(source):
        line += source.count("\n", counted, match.start())
        counted = match.start()
        line_start = source.rfind("\n", 0, match.start()) + 1
        line_end = source.find("\n", match.start())
        if _FILE_NOQA.match(source[line_start : line_end if line_end != -1 else len(source)]):
            continue
        codes = match.group("codes")
        by_line[line] = None if not codes else frozenset(
            code.upper() for code in _CODE.findall(codes)
        )
    return Suppressions(whole_file, frozenset(file_codes), by_line)


def unknown_codes(suppressions: Suppressions, known: set[str]) -> list[tuple[int, str]]:
    """``(line, code)`` for each code in our namespace (``GC...``) that names no rule.

    Codes of other tools (``E501``, ``F401``) share ``# noqa`` comments and are left alone.
    Line 0 stands for a file-level comment.

    >>> unknown_codes(scan("x  # noqa: GC999, E501\\n"), {"GC001"})
    [(1, 'GC999')]
    """
    found = [(0, code) for code in sorted(suppressions.file_codes)]
    for line, codes in sorted((suppressions.by_line or {}).items()):
        found.extend((line, code) for code in sorted(codes or ()))
    return [(line, code) for line, code in found
            if code.startswith(OWN_PREFIX) and code not in known]


def warnings_for(suppressions: Suppressions, known: set[str]) -> list[tuple[int, str]]:
    """``(line, text)`` warnings for the unknown ``GC`` codes in ``# noqa`` comments.

    >>> warnings_for(scan("# gradcheck: noqa: GC9\\n"), {"GC001"})[0][0]
    0
    """
    return [
        (line, f"unknown rule code {code} in a noqa comment (known: {', '.join(sorted(known))})")
        for line, code in unknown_codes(suppressions, known)
    ]
