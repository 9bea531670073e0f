"""Check one document: run the rules, turn failures into GC000, honour ``# noqa``."""
from __future__ import annotations

import ast
import dataclasses
import warnings as warning_filters
from dataclasses import dataclass, field

import lint_rules
from gradcheck.lint import noqa
from gradcheck.lint import notebook as nb
from gradcheck.lint.document import Document
from gradcheck.lint.registry import IO_ERROR_CODE, IO_ERROR_NAME
from lint_rules.check import not_analysed
from lint_rules.finding import Finding, LintSyntaxError


def io_error(message: str, line: int = 1, column: int = 1) -> Finding:
    """A GC000 finding: the file could not be checked.

    >>> io_error("not valid UTF-8").code
    'GC000'
    """
    return Finding(line=line, column=column, code=IO_ERROR_CODE, rule=IO_ERROR_NAME,
                   message=message, end_line=line, end_column=column)


def syntax_errors(program: str, path: str) -> list[Finding]:
    """A GC000 finding when ``program`` does not parse, else ``[]`` (an AST-only compile,
    much cheaper than the rules' own parse).

    >>> [(f.code, f.line) for f in syntax_errors("x = 1\\ndef f(:\\n    pass\\n", "a.py")]
    [('GC000', 2)]
    >>> syntax_errors("x = 1\\n", "a.py")
    []
    """
    try:
        with warning_filters.catch_warnings():
            warning_filters.simplefilter("ignore")  # SyntaxWarning for odd escapes is not ours
            compile(program, path, "exec", ast.PyCF_ONLY_AST)
    except SyntaxError as error:
        return [io_error(f"syntax error: cannot parse {path}: {error.msg}",
                         error.lineno or 1, error.offset or 1)]
    except (ValueError, RecursionError, MemoryError) as error:
        return [io_error(f"syntax error: cannot parse {path}: {error}")]
    return []


@dataclass
class Outcome:
    """The findings that survive suppression, and ``(line, text)`` warnings."""

    findings: list[Finding]
    warnings: list[tuple[int, str]] = field(default_factory=list)
    depends: dict[str, str] = field(default_factory=dict)  # other modules read -> their digests


def check_document(document: Document, path: str, codes: frozenset[str], known: set[str]) -> Outcome:
    """Lint ``document`` with the rules in ``codes``; never raises for any input.

    >>> from gradcheck.lint.document import Document
    >>> check_document(Document("def f(:\\n  loss.backward(); opt.step()\\n"), "a.py",
    ...                frozenset({"GC002"}), {"GC002"}).findings[0].code
    'GC000'
    """
    outcome = _check(document, path, codes, known)
    if document.notebook is not None:
        outcome.findings = [_cell_columns(document.notebook, f) for f in outcome.findings]
    return outcome


def _cell_columns(notebook: nb.Notebook, finding: Finding) -> Finding:
    """``finding`` with columns counted in its cell's own text, where IPython's dedent of an
    indented cell makes them differ from the program's, and with no fix offered that could
    not be written back into the cells."""
    if finding.fix is not None and not nb.takes(notebook, finding.fix.edits):
        finding = dataclasses.replace(finding, fix=None)
    start = notebook.column_shift(finding.line)
    end = notebook.column_shift(finding.end_line) if finding.end_line else 0
    if not start and not end:
        return finding
    return dataclasses.replace(finding, column=finding.column + start,
                               end_column=finding.end_column + end if finding.end_column else 0)


def _check(document: Document, path: str, codes: frozenset[str], known: set[str]) -> Outcome:
    # NOTE: the rules, the syntax check and noqa comments read the LF view, where a lone CR
    # or a CRLF is one "\n": lines and columns stay the file's own, and only fix edits need
    # mapping back (Endings.finding) so --fix keeps each line's ending byte for byte
    endings = document.endings
    source = endings.text
    suppressions = noqa.scan(source)
    warnings = noqa.warnings_for(suppressions, known, source)
    if suppressions.whole_file or not codes:
        return Outcome(syntax_errors(source, path), warnings)  # comments never hide a syntax error
    depends: dict[str, str] = {}
    try:
        found = lint_rules.check_source(source, path, select=set(codes), depends=depends)
    except LintSyntaxError as error:
        return Outcome([io_error(f"syntax error: {error.message}", error.line, error.column)], warnings)
    except Exception as error:  # noqa: BLE001  (a bug in a rule must not end the run)
        return Outcome([not_analysed(error)], warnings)
    # GC000 (the file was not fully analysed) is neither deselected nor silenced by a comment:
    # a file that was not checked is not a clean file
    not_checked = [f for f in found if f.code == IO_ERROR_CODE]
    kept = [f for f in found if f.code in codes and f.code != IO_ERROR_CODE]
    if suppressions.by_line or suppressions.file_codes:
        kept = noqa.unsuppressed(kept, suppressions, source)
    return Outcome([endings.finding(f) for f in sorted(not_checked + kept)], warnings, depends)
