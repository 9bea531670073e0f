"""Output formats: text, json, sarif (2.1.0), github (workflow commands) and junit."""
from __future__ import annotations

import json
from collections import Counter

from gradcheck.lint.fixes import applicable
from gradcheck.lint.registry import RuleInfo
from gradcheck.lint.result import FileResult, Report
from lint_rules.finding import Finding

FORMATS = ("text", "json", "sarif", "github", "junit")
# the schema URI that SARIF 2.1.0 consumers (GitHub code scanning) expect in "$schema"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def location(result: FileResult, finding: Finding) -> str:
    """``path:line:col`` or, in a notebook, ``path:cell N:line:col``.

    >>> from lint_rules.finding import Finding
    >>> location(FileResult("a.py"), Finding(3, 5, "GC001", "r", "m"))
    'a.py:3:5'
    """
    cell, line = result.locate(finding.line)
    where = f"cell {cell}:{line}" if cell is not None else str(line)
    return f"{result.display}:{where}:{finding.column}"


def _lines(result: FileResult, finding: Finding) -> tuple[int | None, int, int]:
    """``(cell or None, line, end line)``, lines counted within the cell in a notebook."""
    cell, line = result.locate(finding.line)
    _, end_line = result.locate(finding.end_line or finding.line)
    return cell, line, end_line


def _fix_dict(finding: Finding) -> dict | None:
    fix = finding.fix
    if fix is None:
        return None
    return {
        "message": fix.description,
        "applicability": "safe" if fix.safe else "unsafe",
        "edits": [{"start": e.start, "end": e.end, "content": e.replacement} for e in fix.edits],
    }


def _record(result: FileResult, finding: Finding) -> dict:
    cell, line, end_line = _lines(result, finding)
    return {
        "path": result.display,
        "cell": cell,
        "line": line,
        "column": finding.column,
        "end_line": end_line,
        "end_column": finding.end_column or finding.column,
        "code": finding.code,
        "rule": finding.rule,
        "pattern": finding.pattern,
        "message": finding.message,
        "severity": finding.severity,
        "fix": _fix_dict(finding),
    }


def render_text(report: Report, *, color: bool = False, unsafe: bool = False) -> str:
    """One ``location: CODE message`` line per finding; ``[*]`` marks one ``--fix`` repairs."""
    lines = []
    for result, finding in report.findings:
        code = finding.code
        mark = " [*]" if applicable(finding, unsafe) else ""
        where = location(result, finding)
        if color:
            where = f"\x1b[1m{where}\x1b[0m"
            code = f"\x1b[1;31m{code}\x1b[0m"
        lines.append(f"{where}: {code}{mark} {finding.message}")
    return "\n".join(lines) + ("\n" if lines else "")


def render_json(report: Report) -> str:
    """A JSON list with one object per finding.

    >>> render_json(Report([]))
    '[]\\n'
    """
    return json.dumps([_record(r, f) for r, f in report.findings], indent=2) + "\n"


def sarif_uri(path: str) -> str:
    """``path`` as the ``uri-reference`` SARIF wants: percent-encoded, ``/``-separated, and
    a ``file://`` URI when absolute (so ``a:b.py`` cannot read as a scheme).

    >>> sarif_uri("my train ü%20.py"), sarif_uri("a:b.py")
    ('my%20train%20%C3%BC%2520.py', 'a%3Ab.py')
    """
    from pathlib import PurePath, PurePosixPath, PureWindowsPath
    from urllib.parse import quote

    for flavour in (PurePosixPath, PureWindowsPath):
        candidate = flavour(path)
        if candidate.is_absolute() and isinstance(PurePath(path), flavour):
            return candidate.as_uri()
    return quote(path, safe="/")


def render_sarif(report: Report, rules: list[RuleInfo], version: str) -> str:
    """A SARIF 2.1.0 log that GitHub code scanning accepts."""
    results = []
    for result, finding in report.findings:
        cell, line, end_line = _lines(result, finding)
        region = {
            "startLine": line,
            "startColumn": finding.column,
            "endLine": end_line,
            "endColumn": finding.end_column or finding.column,
        }
        text = finding.message if cell is None else f"cell {cell}: {finding.message}"
        entry = {
            "ruleId": finding.code,
            "level": _SARIF_LEVEL.get(finding.severity, "error"),
            "message": {"text": text},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": sarif_uri(result.display)},
                "region": region,
            }}],
        }
        if cell is not None:
            # NOTE: regions count lines within the cell; the cell is named in the message,
            # in a logical location and in the property bag (SARIF has no notebook field)
            entry["locations"][0]["logicalLocations"] = [{"name": f"cell {cell}"}]
            entry["properties"] = {"cell": cell}
        results.append(entry)
    driver = {
        "name": "gradcheck",
        "version": version,
        "rules": [{
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": rule.doc},
            "help": {"text": rule.doc, "markdown": rule.doc},
        } for rule in rules],
    }
    log = {"version": "2.1.0", "$schema": SARIF_SCHEMA,
           "runs": [{"tool": {"driver": driver}, "results": results}]}
    return json.dumps(log, indent=2) + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(report: Report) -> str:
    """GitHub Actions workflow commands: one ``::error`` annotation per finding.

    In a notebook, ``line`` counts within the cell and the title and message name the cell.
    """
    lines = []
    for result, finding in report.findings:
        cell, line, end_line = _lines(result, finding)
        in_cell = f" in cell {cell}" if cell is not None else ""
        title = _escape_property(f"gradcheck ({finding.code}){in_cell}")
        where = f"cell {cell}, line {line}" if cell is not None else f"line {line}"
        level = "warning" if finding.severity == "warning" else "error"
        lines.append(
            f"::{level} title={title},file={_escape_property(result.display)},"
            f"line={line},col={finding.column},"
            f"endLine={end_line},"
            f"endColumn={finding.end_column or finding.column}::"
            + _escape_data(f"{where}: {finding.code} {finding.message}")
        )
    return "\n".join(lines) + ("\n" if lines else "")


def render_junit(report: Report) -> str:
    """JUnit XML: a test suite per file with findings, a test case per finding."""
    from xml.etree import ElementTree

    total = len(report.findings)
    root = ElementTree.Element("testsuites", name="gradcheck", tests=str(max(total, 1)),
                               failures=str(total), errors="0")
    if not total:
        suite = ElementTree.SubElement(root, "testsuite", name="gradcheck", tests="1",
                                       failures="0", errors="0")
        ElementTree.SubElement(suite, "testcase", name="No findings", classname="gradcheck")
    for result in report.results:
        if not result.findings:
            continue
        suite = ElementTree.SubElement(root, "testsuite", name=result.display,
                                       tests=str(len(result.findings)),
                                       failures=str(len(result.findings)), errors="0")
        for finding in result.findings:
            where = location(result, finding)
            case = ElementTree.SubElement(suite, "testcase", name=f"{finding.code} {where}",
                                          classname=result.display, file=result.display,
                                          line=str(result.locate(finding.line)[1]))
            failure = ElementTree.SubElement(case, "failure", message=finding.message,
                                             type=finding.code)
            failure.text = f"{where}: {finding.code} {finding.message}"
    ElementTree.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(root, "unicode") + "\n"


STATISTICS_FORMATS = ("text", "json")


def _statistics(report: Report, unsafe: bool) -> list[tuple[str, str, int, bool]]:
    """``(code, name, count, fixable)`` per code, most frequent first."""
    counts = Counter(f.code for _, f in report.findings)
    names = {f.code: f.rule for _, f in report.findings}
    fixable = {f.code for _, f in report.findings if applicable(f, unsafe)}
    return [(code, names[code], count, code in fixable)
            for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]


def render_statistics(report: Report, unsafe: bool = False, fmt: str = "text") -> str:
    """Counts per code, most frequent first, as ``ruff --statistics`` prints them; ``[*]``
    marks a code that ``--fix`` can repair (only unsafe fixes: with ``--unsafe-fixes``).
    ``fmt="json"`` gives ruff's JSON form: a list of ``{code, name, count, fixable}``.

    >>> render_statistics(Report([]), fmt="json")
    '[]\\n'
    """
    rows = _statistics(report, unsafe)
    if fmt == "json":
        return json.dumps([{"code": code, "name": name, "count": count, "fixable": fixable}
                           for code, name, count, fixable in rows], indent=2) + "\n"
    width = max((len(str(row[2])) for row in rows), default=1)
    lines = [f"{count:>{width}}\t{code}\t{'[*] ' if fixable else '    '}{name}"
             for code, name, count, fixable in rows]
    return "\n".join(lines) + ("\n" if lines else "")


def render(report: Report, fmt: str, *, rules: list[RuleInfo], version: str,
           color: bool = False, unsafe: bool = False) -> str:
    """Render ``report`` in ``fmt`` (one of :data:`FORMATS`).

    >>> render(Report([]), "github", rules=[], version="0")
    ''
    """
    if fmt == "json":
        return render_json(report)
    if fmt == "sarif":
        return render_sarif(report, rules, version)
    if fmt == "github":
        return render_github(report)
    if fmt == "junit":
        return render_junit(report)
    return render_text(report, color=color, unsafe=unsafe)
