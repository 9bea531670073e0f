"""``check_source``: parse once, analyse once, let every selected rule report."""
from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from lint_rules.finding import Edit, Finding, Fix, LintSyntaxError
from lint_rules.prefilter import could_have_findings
from lint_rules.rules import RULES

if TYPE_CHECKING:
    import libcst as cst

STRICT_ENV = "GRADCHECK_LINT_STRICT"
_BOM = "\ufeff"


def check_source(
    source: str,
    path: str = "<string>",
    *,
    select: Iterable[str] | None = None,
    strict: bool | None = None,
) -> list[Finding]:
    """Lint one module's text; findings sorted by (line, column).

    ``source`` is the decoded text *without* a byte-order mark (the CLI strips it and puts it
    back when writing fixes); a leading BOM is tolerated and fix offsets then count it.
    ``select`` holds rule codes or names (None: every rule). A source that does not parse
    raises LintSyntaxError; an internal analysis error yields no findings, unless ``strict``
    (or the environment variable GRADCHECK_LINT_STRICT=1) asks for it to be raised.

    >>> [f.code for f in check_source("for b in data:\\n    model(b).backward()\\n    opt.step()\\n")]
    ['GC002']
    """
    if not could_have_findings(source):
        return []
    shift = 1 if source.startswith(_BOM) else 0
    text = source[shift:]
    tree = _parse(text, path)
    try:
        findings = _run(tree, text, _selected(select))
    except Exception:
        if strict if strict is not None else os.environ.get(STRICT_ENV) == "1":
            raise
        import logging  # only on this rare path: keeps `import lint_rules` fast

        logging.getLogger(__name__).debug("analysis of %s failed", path, exc_info=True)
        return []
    return [_shifted(f, shift) for f in findings] if shift else findings


def _parse(text: str, path: str) -> cst.Module:
    # libcst takes a while to import; `import lint_rules` (and the CLI on files the prefilter
    # skips) must not pay for it.
    import libcst as cst

    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise _located(text, path, exc.message, exc.raw_line, exc.raw_column + 1) from None
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        # Too deeply nested for the parser, or a tree libcst refuses to build.
        raise LintSyntaxError(f"cannot parse {path}: {exc}", 1, 1) from None


def _located(text: str, path: str, message: str, line: int, column: int) -> LintSyntaxError:
    """The error to report when libcst rejects ``text``.

    libcst names the token where its parser gave up, which is often the line after the
    mistake (a missing colon shows up on the indented line below). CPython's own compiler
    names the offending token, so on this rare path we ask it for the position and wording.
    """
    try:
        compile(text, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return LintSyntaxError(f"cannot parse {path}: {exc.msg}", exc.lineno or 1, exc.offset or 1)
    except (ValueError, RecursionError, MemoryError) as exc:  # e.g. a null byte (Python 3.11)
        return LintSyntaxError(f"cannot parse {path}: {exc}", 1, 1)
    # Valid Python that this libcst version cannot parse: report libcst's own position.
    return LintSyntaxError(f"cannot parse {path}: {message}", max(line, 1), max(column, 1))


def _selected(select: Iterable[str] | None) -> tuple:
    if select is None:
        return RULES
    wanted = {s.strip().upper() for s in select} | {s.strip().lower() for s in select}
    return tuple(r for r in RULES if r.CODE in wanted or r.NAME in wanted)


def _run(tree: cst.Module, text: str, rules: tuple) -> list[Finding]:
    if not rules:
        return []
    from lint_rules.source import SourceText

    analysis = analyse(tree, SourceText(text, tree))
    seen: dict[tuple, Finding] = {}
    for rule in rules:
        for finding in rule.check(analysis):
            seen.setdefault((finding.code, finding.line, finding.column), finding)
    return sorted(seen.values(), key=lambda f: (f.line, f.column, f.code))


def analyse(tree: cst.Module, text) -> object:
    """The flow analysis of one parsed module (its modules load on first use: they need libcst)."""
    from lint_rules.analysis import analyse as analyse_module

    return analyse_module(tree, text)


def _shifted(finding: Finding, shift: int) -> Finding:
    if finding.fix is None:
        return finding
    edits = tuple(Edit(e.start + shift, e.end + shift, e.replacement) for e in finding.fix.edits)
    fix = Fix(finding.fix.description, edits, finding.fix.safe)
    return Finding(finding.line, finding.column, finding.code, finding.rule, finding.message,
                   finding.end_line, finding.end_column, finding.severity, fix)
