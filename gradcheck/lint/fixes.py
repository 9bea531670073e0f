"""Apply rule fixes until none is left (idempotence), and show them as a unified diff."""
from __future__ import annotations

import ast
import warnings
from collections.abc import Callable

from gradcheck.lint.document import Document, DocumentError
from lint_rules.finding import Edit, Finding

MAX_PASSES = 10  # a fix that never converges must not hang the run


def applicable(finding: Finding, unsafe: bool) -> bool:
    """Whether ``finding`` has a fix that this run may apply.

    >>> from lint_rules.finding import Edit, Finding, Fix
    >>> unsafe = Finding(1, 1, "GC003", "r", "m", fix=Fix("d", (Edit(0, 0, "x"),), safe=False))
    >>> applicable(unsafe, unsafe=False), applicable(unsafe, unsafe=True)
    (False, True)
    """
    return finding.fix is not None and (finding.fix.safe or unsafe)


def non_overlapping_edits(findings: list[Finding], unsafe: bool) -> tuple[list[Edit], int]:
    """The edits of every applicable fix that does not collide with an earlier one.

    Colliding fixes wait for the next pass, when they are recomputed on the new text.
    """
    chosen: list[Edit] = []
    count = 0
    for finding in findings:
        if not applicable(finding, unsafe):
            continue
        edits = list(finding.fix.edits)  # type: ignore[union-attr]
        clashes = any(
            e.start < c.end and c.start < e.end or (e.start == c.start and e.end == c.end)
            for e in edits for c in chosen
        )
        if not clashes:
            chosen.extend(edits)
            count += 1
    return chosen, count


def fix_document(
    document: Document, lint: Callable[[Document], list[Finding]], *, unsafe: bool
) -> tuple[Document, int, list[Finding]]:
    """Fix ``document`` repeatedly; return it, the number of fixes applied, and what remains.

    >>> from gradcheck.lint.document import Document
    >>> fix_document(Document("x\\n"), lambda d: [], unsafe=False)[1]
    0
    """
    applied = 0
    findings = lint(document)
    for _ in range(MAX_PASSES):
        edits, count = non_overlapping_edits(findings, unsafe)
        if not edits:
            break
        try:
            candidate = document.with_edits(edits)
            if count > 1 and not _parses(candidate) and _parses(document):
                # fixes that are right alone can clash together (two that each move one
                # statement out of a block leave it empty): one this pass, the rest recomputed
                first = next(f for f in findings if applicable(f, unsafe))
                edits, count = list(first.fix.edits), 1  # type: ignore[union-attr]
                candidate = document.with_edits(edits)
        except (DocumentError, ValueError):
            break  # e.g. a notebook fix across cells: leave the finding to the user
        document, applied = candidate, applied + count
        findings = lint(document)
    return document, applied, findings


def _parses(document: Document) -> bool:
    """Whether the program parses (a notebook's cells are checked one by one elsewhere)."""
    if document.notebook is not None:
        return True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(document.text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    return True


def unified_diff(before: str, after: str, display: str) -> str:
    """A ``git diff``-style patch from ``before`` to ``after``.

    >>> print(unified_diff("a\\n", "b\\n", "f.py"), end="")
    --- a/f.py
    +++ b/f.py
    @@ -1 +1 @@
    -a
    +b
    """
    import difflib

    from gradcheck.lint.endings import split_lines

    lines = difflib.unified_diff(
        split_lines(before),  # Python's lines: a form feed does not end one
        split_lines(after),
        fromfile=f"a/{display}",
        tofile=f"b/{display}",
    )
    out = []
    for line in lines:
        ended = line.endswith(("\n", "\r"))  # a CR-only file's lines keep their own ending
        out.append(line if ended else line + "\n\\ No newline at end of file\n")
    return "".join(out)
