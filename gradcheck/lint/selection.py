"""Turn ``select`` / ``ignore`` lists of codes, names and prefixes into a set of codes."""
from __future__ import annotations

from collections.abc import Iterable

from gradcheck.lint.registry import IO_ERROR_CODE, RuleInfo


class SelectorError(ValueError):
    """A selector names no rule; the message says which one and what is valid."""


def expand(selector: str, rules: list[RuleInfo], *, origin: str = "--select") -> set[str]:
    """The codes one selector stands for: ``ALL``, a code, a code prefix or a rule name.

    >>> from gradcheck.lint.registry import RuleInfo
    >>> rules = [RuleInfo("GC001", "a-b", "", ""), RuleInfo("GC002", "c-d", "", "")]
    >>> sorted(expand("GC00", rules))
    ['GC001', 'GC002']
    """
    text = selector.strip()
    upper = text.upper()
    if upper == "ALL":
        return {rule.code for rule in rules}
    by_name = {rule.name.lower(): rule.code for rule in rules}
    if text.lower() in by_name:
        return {by_name[text.lower()]}
    matched = {rule.code for rule in rules if upper and rule.code.startswith(upper)}
    if not matched:
        known = ", ".join(f"{r.code} ({r.name})" for r in rules)
        raise SelectorError(
            f"{origin}: unknown rule selector {selector!r}; use a code, a code prefix, "
            f"a rule name or ALL (known rules: {known})"
        )
    return matched


def expand_all(selectors: Iterable[str], rules: list[RuleInfo], *, origin: str) -> set[str]:
    """The union of :func:`expand` over ``selectors``.

    >>> from gradcheck.lint.registry import RuleInfo
    >>> sorted(expand_all(["GC001", "c-d"], [RuleInfo("GC001", "a-b", "", ""),
    ...                                       RuleInfo("GC002", "c-d", "", "")], origin="x"))
    ['GC001', 'GC002']
    """
    codes: set[str] = set()
    for selector in selectors:
        codes |= expand(selector, rules, origin=origin)
    return codes


def resolve(
    rules: list[RuleInfo],
    *,
    select: Iterable[str] | None,
    extend_select: Iterable[str] = (),
    ignore: Iterable[str] = (),
    origin: str = "",
) -> frozenset[str]:
    """The analysis codes that run (GC000 always reports and is never in the result).

    >>> from gradcheck.lint.registry import RuleInfo
    >>> rules = [RuleInfo("GC001", "a-b", "", ""), RuleInfo("GC002", "c-d", "", "")]
    >>> sorted(resolve(rules, select=None, ignore=["c-d"]))
    ['GC001']
    """
    def label(key: str) -> str:
        return f"--{key}" if origin == "--" else f"{origin} {key}".strip()

    chosen = (
        {r.code for r in rules}
        if select is None
        else expand_all(select, rules, origin=label("select"))
    )
    chosen |= expand_all(extend_select, rules, origin=label("extend-select"))
    chosen -= expand_all(ignore, rules, origin=label("ignore"))
    chosen.discard(IO_ERROR_CODE)
    return frozenset(chosen)
