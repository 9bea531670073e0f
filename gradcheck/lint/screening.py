"""Settle a file without the rules when it cannot hold a finding, cheapest test first.

Most files of a large tree never spell a backward call, so no rule can fire on them.
For a Python file that is decided on its raw bytes, and the bytes are decoded only when
something else needs the text: bytes that may not be UTF-8 (reported as GC000), a file
named on the command line (its syntax errors are reported) or a ``noqa`` comment that
may name an unknown GC code (a warning). Notebooks are always decoded: their JSON may
escape a letter. What the bytes cannot settle goes to the text prefilter, and what that
cannot settle goes to the rules (:func:`gradcheck.lint.runner.process`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gradcheck.lint.document import Document, DocumentError, parse
from gradcheck.lint.noqa import scan, warnings_for
from gradcheck.lint.reading import ReadError, read_bounded
from gradcheck.lint.result import FileResult


@dataclass(frozen=True)
class Job:
    """One file to check, as handed to a worker process."""

    path: str
    display: str
    codes: frozenset[str]
    data: bytes | None  # None: whoever screens the job reads the file
    notebook: bool
    write: bool  # write fixes back to ``path`` (False for stdin and --diff)
    explicit: bool = False  # named on the command line or stdin: syntax errors always count


def cells(document: Document) -> list[tuple[int, int]] | None:
    """A notebook's ``(first program line, cell number)`` pairs; None for a Python file."""
    if document.notebook is None:
        return None
    return [(cell.first_line, cell.number) for cell in document.notebook.cells]


def _may_name_a_code(data: bytes) -> bool:
    """Whether the bytes may hold a ``noqa`` comment naming a GC code (any letter case)."""
    # NOTE: one lower() and two 4- and 2-byte searches beat searching every case spelling
    lowered = data.lower()
    return b"noqa" in lowered and b"gc" in lowered


def _settle(job: Job, data: bytes, document: Document, known: set[str]) -> FileResult:
    """The result of a file no rule can fire on: its syntax error when the user named it,
    and warnings for unknown codes in its ``noqa`` comments."""
    from gradcheck.lint.checker import syntax_errors

    program = document.text
    # NOTE: only a file the user named is parsed here, as ruff reports its syntax errors;
    # a directory walk keeps the text shortcut (a skipped file cannot hold a finding)
    findings = syntax_errors(program, job.display) if job.explicit else []
    named = _may_name_a_code(program.encode() if job.notebook else data)
    warnings = warnings_for(scan(program), known, program) if named else []
    return FileResult(job.display, findings, warnings, cells(document))


def settle_bytes(job: Job, data: bytes, known: set[str]) -> FileResult | None:
    """The result of a Python file decided on its bytes alone, else None (the text is needed).

    >>> job = Job("a.py", "a.py", frozenset({"GC002"}), None, False, False)
    >>> settle_bytes(job, b"x = 1\\n", {"GC002"}).findings
    []
    >>> settle_bytes(job, b"loss.backward()\\n", {"GC002"}) is None
    True
    """
    from lint_rules import prefilter

    if job.notebook or (job.codes and prefilter.could_have_findings_in_bytes(data)):
        return None
    if job.explicit or _may_name_a_code(data):
        return None  # the text is needed: a syntax check, or noqa comments to read
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None  # the text path says where the bytes stop being UTF-8
    return FileResult(job.display)


def screen(job: Job, known: set[str], fixing: bool) -> Job | FileResult:
    """Read ``job``'s file and settle it without the rules when a prefilter can (a result);
    else the job, its bytes loaded, for the rules. Cheap: runs anywhere."""
    from gradcheck.lint.checker import io_error
    from lint_rules.prefilter import could_have_findings

    data = job.data
    if data is None:
        try:
            data = read_bounded(job.path)
        except ReadError as error:
            return FileResult(job.display, [io_error(str(error))])
    quick = settle_bytes(job, data, known)
    if quick is None:
        try:
            document = parse(data, notebook=job.notebook)
        except DocumentError as error:
            quick = FileResult(job.display, [io_error(str(error))])
        else:
            if job.codes and could_have_findings(document.text):
                return job if job.data is not None else dataclasses.replace(job, data=data)
            quick = _settle(job, data, document, known)
    if fixing and job.path == "-":
        quick.output = data  # stdin with --fix echoes the text it left alone
    return quick
