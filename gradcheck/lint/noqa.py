"""Suppression comments: ``# noqa``, ``# noqa: GC001, GC002`` and ``# gradcheck: noqa``.

Matching is case-insensitive, as in ruff (``# NOQA``, ``# noqa:gc001``). Comments are found
with a regex scan first, which is cheap but cannot tell a comment from ``"# noqa"`` inside a
string literal; when a finding would be silenced by a line comment, the file is tokenized
to confirm the ``noqa`` really is a comment. Files without findings are never tokenized.
"""
from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

from lint_rules.finding import Finding

LINE_NOQA = re.compile(
    r"#\s*noqa(?![\w-])(?:\s*:\s*(?P<codes>[A-Za-z]+[0-9]+(?:\s*[,\s]\s*[A-Za-z]+[0-9]+)*))?",
    re.IGNORECASE,
)
_FILE_NOQA = re.compile(
    r"^[ \t]*#\s*gradcheck\s*:\s*noqa(?![\w-])(?:\s*:\s*(?P<codes>[A-Za-z0-9,\s]+))?\s*$",
    re.IGNORECASE | re.MULTILINE,
)
# the start of a file-level comment anywhere on a line: a literal "#" first lets the regex
# engine skip ahead, where _FILE_NOQA (anchored at line starts) tries every character
_FILE_NOQA_ANYWHERE = re.compile(r"#\s*gradcheck\s*:\s*noqa", re.IGNORECASE)
_CODE = re.compile(r"[A-Za-z]+[0-9]+")
# every case of the letters "qa": a plain substring test that no spelling of noqa escapes
_TAILS = ("qa", "qA", "Qa", "QA")
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
    if not any(tail in source for tail in _TAILS):
        return Suppressions()
    whole_file, file_codes = False, set()
    file_comments = _FILE_NOQA.finditer(source) if _FILE_NOQA_ANYWHERE.search(source) else ()
    for match in file_comments:
        codes = match.group("codes")
        if codes and _CODE.findall(codes):
            file_codes.update(code.upper() for code in _CODE.findall(codes))
        else:
            whole_file = True
    by_line: dict[int, frozenset[str] | None] = {}
    line, counted = 1, 0
    for match in LINE_NOQA.finditer(source):
        line += source.count("\n", counted, match.start())
        counted = match.start()
        line_start = source.rfind("\n", 0, match.start()) + 1
        line_end = source.find("\n", match.start())
        if _FILE_NOQA.match(source[line_start : line_end if line_end != -1 else len(source)]):
            continue
        by_line[line] = _line_codes(match)
    return Suppressions(whole_file, frozenset(file_codes), by_line)


def _line_codes(match: re.Match[str]) -> frozenset[str] | None:
    codes = match.group("codes")
    return None if not codes else frozenset(code.upper() for code in _CODE.findall(codes))


def _comment_noqa(source: str, lines: set[int]) -> dict[int, frozenset[str] | None] | None:
    """The line ``noqa`` comments on ``lines`` found by the tokenizer (so never inside a
    string); None when ``source`` does not tokenize."""
    found: dict[int, frozenset[str] | None] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            line = token.start[0]
            if token.type != tokenize.COMMENT or line not in lines:
                continue
            if _FILE_NOQA.match(token.line.rstrip("\r\n")):
                continue
            match = LINE_NOQA.search(token.string)
            if match is not None:
                found[line] = _line_codes(match)
    except (tokenize.TokenError, SyntaxError):
        return None
    return found


def unsuppressed(findings: list[Finding], suppressions: Suppressions, source: str) -> list[Finding]:
    """The findings of ``source`` that its comments do not silence.

    >>> from lint_rules.finding import Finding
    >>> f = Finding(1, 1, "GC002", "missing-zero-grad", "m")
    >>> [x.code for x in unsuppressed([f], scan('s = "# noqa"\\n'), 's = "# noqa"\\n')]
    ['GC002']
    """
    silenced = {id(f) for f in findings if suppressions.suppresses(f.line, f.code)}
    if not silenced:
        return findings
    by_line = suppressions.by_line or {}
    to_confirm = {f.line for f in findings if id(f) in silenced and f.line in by_line
                  and not (suppressions.whole_file or f.code in suppressions.file_codes)}
    confirmed = _comment_noqa(source, to_confirm) if to_confirm else {}
    if confirmed is None:  # cannot tokenize: trust the regex scan
        confirmed = {line: by_line[line] for line in to_confirm}
    checked = Suppressions(suppressions.whole_file, suppressions.file_codes, confirmed)
    return [f for f in findings if not checked.suppresses(f.line, f.code)]


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


def warnings_for(suppressions: Suppressions, known: set[str], source: str | None = None) -> list[tuple[int, str]]:
    """``(line, text)`` warnings for the unknown ``GC`` codes in ``# noqa`` comments.

    With ``source``, a line code is only reported when the tokenizer confirms it sits in a
    comment (so ``"# noqa: GC999"`` in a string or docstring is not a comment's typo).

    >>> warnings_for(scan("# gradcheck: noqa: GC9\\n"), {"GC001"})[0][0]
    0
    >>> warnings_for(scan('s = "# noqa: GC9"\\n'), {"GC001"}, 's = "# noqa: GC9"\\n')
    []
    """
    unknown = unknown_codes(suppressions, known)
    lines = {line for line, _ in unknown if line}
    if source is not None and lines:
        confirmed = _comment_noqa(source, lines)
        if confirmed is not None:
            unknown = [(line, code) for line, code in unknown
                       if not line or code in (confirmed.get(line) or ())]
    return [
        (line, f"unknown rule code {code} in a noqa comment (known: {', '.join(sorted(known))})")
        for line, code in unknown
    ]
