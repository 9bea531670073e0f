"""``check_source``: parse once, analyse once, let every selected rule report."""
from __future__ import annotations

import ast
import os
import warnings
from collections.abc import Iterable

from lint_rules.analysis import analyse
from lint_rules.finding import Edit, Finding, Fix, LintSyntaxError
from lint_rules.prefilter import could_have_findings
from lint_rules.rules import RULES
from lint_rules.source import SourceText

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


def _parse(text: str, path: str) -> ast.Module:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text, filename=path)
    except SyntaxError as exc:
        raise LintSyntaxError(f"cannot parse {path}: {exc.msg}", exc.lineno or 1, exc.offset or 1) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise LintSyntaxError(f"cannot parse {path}: {exc}", 1, 1) from None


def _selected(select: Iterable[str] | None) -> tuple:
    if select is None:
        return RULES
    wanted = {s.strip().upper() for s in select} | {s.strip().lower() for s in select}
    return tuple(r for r in RULES if r.CODE in wanted or r.NAME in wanted)


def _run(tree: ast.Module, text: str, rules: tuple) -> list[Finding]:
    if not rules:
        return []
    analysis = analyse(tree, SourceText(text))
    seen: dict[tuple, Finding] = {}
    for rule in rules:
        for finding in rule.check(analysis):
            seen.setdefault((finding.code, finding.line, finding.column), finding)
    return sorted(seen.values(), key=lambda f: (f.line, f.column, f.code))


def _shifted(finding: Finding, shift: int) -> Finding:
    if finding.fix is None:
        return finding
    edits = tuple(Edit(e.start + shift, e.end + shift, e.replacement) for e in finding.fix.edits)
    fix = Fix(finding.fix.description, edits, finding.fix.safe)
    return Finding(finding.line, finding.column, finding.code, finding.rule, finding.message,
                   finding.end_line, finding.end_column, finding.severity, fix)
