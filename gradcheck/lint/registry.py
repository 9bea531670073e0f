"""The rules the linter knows, seen through ``lint_rules`` (imported only when needed).

``GC000`` belongs to the front end: it marks a file that could not be checked at all
(a syntax error, bytes that are not UTF-8, an unreadable, refused or missing path).
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass

IO_ERROR_CODE = "GC000"
IO_ERROR_NAME = "file-not-checked"

_IO_ERROR_DOC = """\
## What it does
Reports a file that gradcheck could not check: it does not parse, it is not UTF-8,
or it cannot be read (a missing path, a permission problem, a broken notebook, a
directory that cannot be listed). Inputs without a bound are refused rather than read:
a device or a FIFO (also behind a symlink) and a file over the 16 MiB limit.

## Why is this bad?
A file that is not checked can hide any of the other findings, so the run exits with
status 2 instead of pretending the tree is clean.

## Fix safety
There is no automatic fix: repair the file or exclude it.
"""


@dataclass(frozen=True)
class RuleInfo:
    """What the front end needs to know about one rule."""

    code: str
    name: str
    summary: str
    doc: str
    fix_safety: str = ""


def all_rules() -> list[RuleInfo]:
    """Every rule, GC000 first, then the analysis rules in code order.

    >>> all_rules()[0].code
    'GC000'
    """
    import lint_rules

    infos = [RuleInfo(IO_ERROR_CODE, IO_ERROR_NAME, "the file could not be checked (syntax error, not UTF-8, unreadable, refused)", _IO_ERROR_DOC)]
    for rule in sorted(getattr(lint_rules, "RULES", ()), key=lambda r: r.CODE):
        infos.append(
            RuleInfo(
                code=rule.CODE,
                name=rule.NAME,
                summary=str(getattr(rule, "MESSAGE", "")),
                doc=inspect.cleandoc(rule.__doc__ or ""),
                fix_safety=str(getattr(rule, "FIX_SAFETY", "")),
            )
        )
    return infos


def find_rule(code_or_name: str) -> RuleInfo:
    """The rule whose code or kebab-case name is ``code_or_name`` (case-insensitive).

    >>> find_rule("gc000").name
    'file-not-checked'
    """
    wanted = code_or_name.strip().lower()
    for info in all_rules():
        if wanted in (info.code.lower(), info.name.lower()):
            return info
    known = ", ".join(f"{r.code} ({r.name})" for r in all_rules())
    raise KeyError(f"unknown rule {code_or_name!r}; known rules: {known}")
