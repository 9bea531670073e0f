"""Check one document: run the rules, turn failures into GC000, honour ``# noqa``."""
from __future__ import annotations

from dataclasses import dataclass, field

import lint_rules
from gradcheck.lint import noqa
from gradcheck.lint.document import Document
from gradcheck.lint.registry import IO_ERROR_CODE, IO_ERROR_NAME
from lint_rules.finding import Finding, LintSyntaxError


def io_error(message: str, line: int = 1, column: int = 1) -> Finding:
    """A GC000 finding: the file could not be checked.

    >>> io_error("not valid UTF-8").code
    'GC000'
    """
    return Finding(line=line, column=column, code=IO_ERROR_CODE, rule=IO_ERROR_NAME,
                   message=message, end_line=line, end_column=column)


@dataclass
class Outcome:
    """The findings that survive suppression, and ``(line, text)`` warnings."""

    findings: list[Finding]
    warnings: list[tuple[int, str]] = field(default_factory=list)


def check_document(document: Document, path: str, codes: frozenset[str], known: set[str]) -> Outcome:
    """Lint ``document`` with the rules in ``codes``; never raises for any input.

    >>> from gradcheck.lint.document import Document
    >>> check_document(Document("def f(:\\n  loss.backward(); opt.step()\\n"), "a.py",
    ...                frozenset({"GC002"}), {"GC002"}).findings[0].code
    'GC000'
    """
    source = document.program
    suppressions = noqa.scan(source)
    warnings = noqa.warnings_for(suppressions, known)
    if suppressions.whole_file or not codes:
        return Outcome([], warnings)
    try:
        found = lint_rules.check_source(source, path, select=set(codes))
    except LintSyntaxError as error:
        return Outcome([io_error(f"syntax error: {error.message}", error.line, error.column)], warnings)
    except RecursionError:
        return Outcome([io_error("the file is nested too deeply to analyse")], warnings)
    except Exception as error:  # noqa: BLE001  (a bug in a rule must not end the run)
        return Outcome([io_error(f"internal error in the rules ({type(error).__name__}: {error}); "
                                 "please report it")], warnings)
    kept = [f for f in found if f.code in codes and not suppressions.suppresses(f.line, f.code)]
    return Outcome(sorted(kept), warnings)
