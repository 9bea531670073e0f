"""``--add-noqa``: a ``# noqa: CODE`` comment on the line of each finding, as ruff adds them.

The comment goes where :mod:`gradcheck.lint.noqa` reads it, the finding's line: appended
after two spaces, or merged into a ``noqa`` comment already there (``# noqa: E501`` becomes
``# noqa: E501, GC002``). A line whose end lies inside a string, or that continues with a
backslash, cannot take a comment: it is left alone with a warning. GC000 is never
silenced, so it gets no comment. A second run finds nothing to add.
"""
from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gradcheck.lint.document import Document
from gradcheck.lint.noqa import LINE_NOQA
from gradcheck.lint.registry import IO_ERROR_CODE
from gradcheck.lint.result import FileResult
from gradcheck.lint.screening import Job, cells
from gradcheck.lint.writing import write_atomically
from lint_rules.finding import Edit, Finding

_TRAILING_BLANKS = re.compile(r"[ \t]*\Z")


@dataclass
class _Lines:
    """What the tokenizer says about each line: its comment, and whether it can end in one."""

    comments: dict[int, tuple[int, str]] = field(default_factory=dict)  # line -> (column, text)
    open_ends: set[int] = field(default_factory=set)  # lines that end inside a token


def _scan(text: str) -> _Lines | None:
    lines = _Lines()
    skip = {tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                lines.comments[token.start[0]] = (token.start[1], token.string)
            elif token.type not in skip and token.end[0] > token.start[0]:
                lines.open_ends.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        return None
    return lines


def _merged(comment: str, codes: list[str]) -> str:
    """``comment`` with ``codes`` added to its ``noqa`` directive, or a directive appended."""
    match = LINE_NOQA.search(comment)
    if match is None:
        return f"{comment}  # noqa: {', '.join(codes)}"
    if match.group("codes") is None:  # a bare "# noqa" already covers every code
        return comment
    return comment[: match.end("codes")] + ", " + ", ".join(codes) + comment[match.end("codes"):]


@dataclass
class Additions:
    """The edits that add the comments, how many lines get one, and why others cannot."""

    edits: list[Edit] = field(default_factory=list)
    count: int = 0
    warnings: list[tuple[int, str]] = field(default_factory=list)


def noqa_additions(document: Document, findings: list[Finding]) -> Additions:
    """The edits that silence ``findings`` with ``noqa`` comments on their lines.

    >>> from lint_rules.finding import Finding
    >>> doc = Document("opt.step()  # step\\n")
    >>> added = noqa_additions(doc, [Finding(1, 1, "GC002", "missing-zero-grad", "m")])
    >>> doc.with_edits(added.edits).program
    'opt.step()  # step  # noqa: GC002\\n'
    """
    by_line: dict[int, list[str]] = {}
    for finding in findings:
        if finding.code != IO_ERROR_CODE and finding.code not in by_line.get(finding.line, []):
            by_line.setdefault(finding.line, []).append(finding.code)
    additions = Additions()
    if not by_line:
        return additions
    text = document.text  # the LF view: one "\n" per line, whatever the file's endings
    lines = _scan(text)
    if lines is None:
        return additions  # does not tokenize: such a file has a GC000 instead
    starts = [0] + [match.end() for match in re.finditer("\n", text)]
    for line, codes in sorted(by_line.items()):
        codes = sorted(codes)
        start = starts[line - 1]
        end = starts[line] - 1 if line < len(starts) else len(text)
        if line in lines.comments:
            column, comment = lines.comments[line]
            edit = Edit(start + column, start + column + len(comment), _merged(comment, codes))
        elif line in lines.open_ends or text[start:end].rstrip(" \t").endswith("\\"):
            additions.warnings.append((line, "cannot add a noqa comment: the line ends inside a "
                                             "string or continues with a backslash"))
            continue
        else:
            blanks = _TRAILING_BLANKS.search(text, start, end)
            cut = blanks.start() if blanks else end
            edit = Edit(cut, end, f"  # noqa: {', '.join(codes)}")
        additions.edits.append(document.endings.edit(edit))
        additions.count += 1
    return additions


def add_noqa(job: Job, document: Document, lint: Callable[[Document], list],
              warnings: list[tuple[int, str]]) -> FileResult:
    """``--add-noqa`` on one file: write the comments, report what they could not silence."""
    from gradcheck.lint.checker import io_error

    findings = lint(document)
    additions = noqa_additions(document, findings)
    extra = list(additions.warnings)
    if not additions.edits:
        return FileResult(job.display, findings, warnings + extra, cells(document))
    try:
        edited = document.with_edits(additions.edits)
    except ValueError as error:  # a notebook edit on a magic line
        extra.append((0, f"cannot add noqa comments: {error}"))
        return FileResult(job.display, findings, warnings + extra, cells(document))
    problem = write_atomically(Path(job.path), edited.to_bytes())
    if problem is not None:
        error = io_error(f"cannot add the noqa comments: {problem}; the file is unchanged")
        return FileResult(job.display, [error, *findings], warnings + extra, cells(document))
    remaining = lint(edited)
    return FileResult(job.display, remaining, warnings + extra, cells(edited),
                      noqa_added=additions.count)
