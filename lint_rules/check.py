"""``check_source``: parse once, analyse once, let every selected rule report."""
from __future__ import annotations

import ast
import dataclasses
import os
import re
import sys
import warnings
from collections.abc import Iterable
from typing import NamedTuple

from lint_rules.finding import (
    NOT_CHECKED_CODE,
    NOT_CHECKED_NAME,
    PREVIEW,
    AnalysisIncomplete,
    Edit,
    Finding,
    Fix,
    LintSyntaxError,
)
from lint_rules.narrowing import deepest_position, hollow
from lint_rules.pieces import PIECE_LINES, split
from lint_rules.prefilter import could_have_findings
from lint_rules.proof import proven
from lint_rules.rules import RULES

STRICT_ENV = "GRADCHECK_LINT_STRICT"
_BOM = "\ufeff"
EVERY_FORM = (PREVIEW,)  # as ``select``: every rule, with the forms still in preview


def check_source(
    source: str,
    path: str = "<string>",
    *,
    select: Iterable[str] | None = None,
    strict: bool | None = None,
    project=None,
    depends: dict[str, str] | None = None,
) -> list[Finding]:
    """Lint one module's text; findings sorted by (line, column).

    ``source`` is the decoded text *without* a byte-order mark (the CLI strips it and puts it
    back when writing fixes); a leading BOM is tolerated and fix offsets then count it.
    ``select`` holds rule codes or names (None: every rule). A source that does not parse
    raises LintSyntaxError. A file the analysis cannot finish (a budget or depth limit, an
    internal error in a rule) yields one GC000 finding saying why, never a silent pass;
    ``strict`` (or the environment variable GRADCHECK_LINT_STRICT=1) raises internal errors
    instead, for debugging.

    Calls into other modules of the project are followed (``project.py``): ``project`` says
    where they are; by default, when ``path`` names a file on disk, the project around it.
    ``depends``, when given, receives the modules the analysis read, with their digests.
    A form of a rule still in preview (``Rule.PREVIEW``) is reported only when ``select``
    also holds ``"PREVIEW"``.

    >>> [f.code for f in check_source("for b in data:\\n    model(b).backward()\\n    opt.step()\\n")]
    ['GC002']
    """
    if not could_have_findings(source):
        return []
    shift = 1 if source.startswith(_BOM) else 0
    text = source[shift:]
    rules = _selected(select)
    if strict is None:
        strict = os.environ.get(STRICT_ENV) == "1"
    preview = any(s.strip().upper() == PREVIEW for s in select or ())
    if project is None and path != "<string>" and os.path.isfile(path):
        from lint_rules.project import Project

        project = Project.around(path)
    if project is not None:
        project.used.clear()
        project.reads = 0
    where = _Where(path, project)
    pieces = split(text) if text.count("\n") > PIECE_LINES else None
    if pieces is None:
        findings = _check_text(text, where, rules, strict)
    else:
        # a very large module, analysed a group of related functions at a time
        seen: dict[tuple, Finding] = {}
        for piece in pieces:
            for finding in _check_text(piece.text, where, rules, strict):
                finding = piece.finding(finding)
                seen.setdefault((finding.code, finding.line, finding.column), finding)
        findings = sorted(seen.values(), key=lambda f: (f.line, f.column, f.code))
    if depends is not None and project is not None:
        depends.update(project.used)
    if not preview:
        findings = [f for f in findings if not _in_preview(f)]
    return [_shifted(f, shift) for f in findings] if shift else findings


def _in_preview(finding: Finding) -> bool:
    rule = next((r for r in RULES if r.CODE == finding.code), None)
    return rule is not None and finding.pattern in rule.PREVIEW


class _Where(NamedTuple):
    """The file being checked: its name for messages, and the project around it."""

    path: str
    project: object = None


def _check_text(text: str, where: _Where, rules: tuple, strict: bool) -> list[Finding]:
    findings = _unproven(text, where, rules, strict)
    if not any(f.fix for f in findings):
        return findings
    # The proof weighs every rule, so that a fix of one selected rule cannot trade its
    # finding for another rule's.
    everything = findings if rules == RULES else _unproven(text, where, RULES, strict)
    lint = lambda fixed: _unproven(fixed, where, RULES, strict)
    kept = {_place(f): f.fix for f in proven(text, everything, lint)}
    return [f if kept.get(_place(f)) is f.fix else dataclasses.replace(f, fix=None)
            for f in findings]


def _place(finding: Finding) -> tuple:
    return finding.code, finding.line, finding.column


def _unproven(text: str, where: _Where, rules: tuple, strict: bool) -> list[Finding]:
    path = where.path
    tree = _parse(text, path)
    # Functions that cannot take part in a finding lose their bodies: nothing walks them.
    hollow(tree, text)
    try:
        return _run(tree, text, rules, where)
    except Exception as exc:  # noqa: BLE001  (a limit or a bug must not end the run)
        if strict and not isinstance(exc, AnalysisIncomplete):
            raise  # a bug, shown for debugging; a known limit is reported the same either way
        import logging  # only on this rare path: keeps `import lint_rules` fast

        logging.getLogger(__name__).debug("analysis of %s failed", path, exc_info=True)
        return [not_analysed(exc)]


def not_analysed(error: BaseException) -> Finding:
    """The GC000 finding for a file whose analysis stopped on ``error``: where, why, and
    what the user can do about it.

    >>> not_analysed(AnalysisIncomplete("the flow analysis ran out of its budget", 7, 5)).message
    'not fully analysed: the flow analysis ran out of its budget (findings in this file may be missing); split the function that starts here into smaller ones, or exclude the file'
    """
    if isinstance(error, AnalysisIncomplete):
        reason, line, column = error.reason, error.line, error.column
        advice = "split the function that starts here into smaller ones, or exclude the file"
    elif isinstance(error, RecursionError):
        reason, line, column = "it is nested too deeply for the analysis", 1, 1
        advice = "split the most deeply nested expression or block, or exclude the file"
    else:
        reason = f"internal error in the rules ({type(error).__name__}: {error})"
        line, column = 1, 1
        advice = ("please report it with this file; GRADCHECK_LINT_STRICT=1 shows the "
                  "traceback")
    message = f"not fully analysed: {reason} (findings in this file may be missing); {advice}"
    return Finding(line, column, NOT_CHECKED_CODE, NOT_CHECKED_NAME, message, line, column)


def _parse(text: str, path: str) -> ast.Module:
    """Python's own tree of ``text``; its parser's verdict (wording and position) on errors."""
    if OLD_PARSER and _crashes_old_parser(text):
        line, column = deepest_position(text)
        raise LintSyntaxError(f"cannot parse {path}: an expression is nested too deeply (Python "
                              "3.10's parser would crash on it; 3.11 and later refuse it)",
                              line, column)
    try:
        with warnings.catch_warnings():
            # Invalid escape sequences and the like are the user's business, not the linter's.
            warnings.simplefilter("ignore")
            return ast.parse(text, path)
    except SyntaxError as exc:
        raise LintSyntaxError(f"cannot parse {path}: {exc.msg}", exc.lineno or 1,
                              exc.offset or 1) from None
    except ValueError as exc:  # a null byte (Python 3.11)
        raise LintSyntaxError(f"cannot parse {path}: {exc}", 1, 1) from None
    except (RecursionError, MemoryError):
        line, column = deepest_position(text)
        raise LintSyntaxError(f"cannot parse {path}: an expression is nested too deeply "
                              "(Python's own parser cannot compile it either)", line, column) from None


# NOTE: Python 3.10's parser has no guard on its C stack: a postfix or operator chain of a
# hundred thousand levels (`x.a.a...`, `1+1+...`, 2 characters a level at the least)
# segfaults it. 3.11 and later refuse such text with an error instead.
OLD_PARSER = sys.version_info < (3, 11)
OLD_PARSER_LIMIT = 100_000  # characters in one logical line
_STRINGS_AND_COMMENTS = re.compile(
    r'[rRbBuUfF]{0,2}(?:"""[\s\S]*?"""|' r"'''[\s\S]*?'''"
    r'''|"(?:[^"\\\r\n]|\\.)*"|'(?:[^'\\\r\n]|\\.)*')|#[^\r\n]*''')
_BRACKET_OR_LINE_END = re.compile(r"[()\[\]{}]|\r\n|\r|\n")


def _crashes_old_parser(text: str) -> bool:
    """Whether one logical line (brackets and backslashes join physical lines) is long enough
    to hold a chain that overflows Python 3.10's parser.

    >>> _crashes_old_parser("x" + ".a" * 60_000), _crashes_old_parser("y = 1\\n" * 60_000)
    (True, False)
    """
    if len(text) <= OLD_PARSER_LIMIT:
        return False
    code = _STRINGS_AND_COMMENTS.sub('""', text)
    depth, start = 0, 0
    for match in _BRACKET_OR_LINE_END.finditer(code):
        token = match.group()
        if token in "([{":
            depth += 1
        elif token in ")]}":
            depth = max(depth - 1, 0)
        elif depth == 0 and code[match.start() - 1:match.start()] != "\\":
            if match.start() - start > OLD_PARSER_LIMIT:
                return True
            start = match.end()
    return len(code) - start > OLD_PARSER_LIMIT


def _selected(select: Iterable[str] | None) -> tuple:
    """The rules ``select`` names; ``"PREVIEW"`` alone (``EVERY_FORM``) is every rule."""
    if select is None:
        return RULES
    wanted = {s.strip().upper() for s in select} | {s.strip().lower() for s in select}
    if wanted == {PREVIEW, PREVIEW.lower()}:
        return RULES
    return tuple(r for r in RULES if r.CODE in wanted or r.NAME in wanted)


def _run(tree: ast.Module, text: str, rules: tuple, where: _Where) -> list[Finding]:
    if not rules:
        return []
    from lint_rules import syntax
    from lint_rules.source import SourceText

    seen: dict[tuple, Finding] = {}
    try:
        analysis = analyse(tree, SourceText(text), where.project, where.path)
        for rule in rules if not analysis.other_framework else ():
            for finding in rule.check(analysis):
                seen.setdefault((finding.code, finding.line, finding.column), finding)
        for gave_up in analysis.incomplete:
            finding = not_analysed(gave_up)
            seen.setdefault((finding.code, finding.line, finding.column), finding)
    except RecursionError:
        line, column = deepest_position(text)
        raise AnalysisIncomplete("an expression is nested too deeply for the analysis",
                                 line, column) from None
    finally:
        syntax.forget_trees()
    return sorted(seen.values(), key=lambda f: (f.line, f.column, f.code))


def analyse(tree: ast.Module, text, project=None, path: str | None = None) -> object:
    """The flow analysis of one parsed module (its modules load on first use)."""
    from lint_rules.analysis import analyse as analyse_module

    return analyse_module(tree, text, project, path)


def _shifted(finding: Finding, shift: int) -> Finding:
    if finding.fix is None:
        return finding
    edits = tuple(Edit(e.start + shift, e.end + shift, e.replacement) for e in finding.fix.edits)
    fix = Fix(finding.fix.description, edits, finding.fix.safe)
    return Finding(finding.line, finding.column, finding.code, finding.rule, finding.message,
                   finding.end_line, finding.end_column, finding.severity, fix)
