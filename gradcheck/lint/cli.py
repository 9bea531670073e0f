"""``gradcheck lint``, ``gradcheck rule`` and ``gradcheck rules``: thin click commands.

They parse options, call :mod:`gradcheck.lint.runner`, print, and exit with a code from
:mod:`gradcheck.exitcodes`. Everything heavier is imported inside the commands, so
``gradcheck lint --help`` stays fast.
"""
from __future__ import annotations

import os
import sys

import click

from gradcheck import exitcodes

# the same names as gradcheck.lint.formats.FORMATS, repeated so --help never imports lint_rules
_FORMATS = ("text", "json", "sarif", "github", "junit")


def _split(values: tuple[str, ...]) -> tuple[str, ...]:
    """``("GC001,GC002", "GC004")`` -> ``("GC001", "GC002", "GC004")``."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def _fail(message: str) -> None:
    click.echo(f"gradcheck: error: {message}", err=True)
    sys.exit(exitcodes.ERROR)


def _summary(report, fixing: bool, diff: bool, unsafe: bool) -> str:
    """The one-line summary printed on stderr."""
    from gradcheck.lint.fixes import applicable

    remaining = len(report.findings)
    broken = sum(1 for result in report.results if result.has_error)
    parts = []
    if diff:
        parts.append(f"Would fix {report.fixed} error{'s' * (report.fixed != 1)}."
                     if report.fixed else "No errors would be fixed.")
    elif remaining or report.fixed:
        total = remaining + (report.fixed if fixing else 0)
        fixed = f" ({report.fixed} fixed, {remaining} remaining)" if fixing else ""
        parts.append(f"Found {total} error{'s' * (total != 1)}{fixed}.")
        fixable = sum(1 for _, f in report.findings if applicable(f, unsafe))
        hidden = sum(1 for _, f in report.findings if f.fix is not None) - fixable
        if fixable and not fixing:
            parts.append(f"[*] {fixable} fixable with --fix.")
        if hidden:
            parts.append(f"{hidden} more fixable with --unsafe-fixes.")
    else:
        parts.append("All checks passed!")
    if broken:
        parts.append(f"{broken} file{'s' * (broken != 1)} could not be checked (GC000).")
    return " ".join(parts)


def _check_writable(output_file: str) -> None:
    """Fail before the run, not after it, when the report could not be written."""
    directory = os.path.dirname(os.path.abspath(output_file))
    if not os.path.isdir(directory):
        _fail(f"cannot write the report to {output_file}: the directory {directory} does not "
              "exist; create it or choose another --output-file")
    if not os.access(directory, os.W_OK):
        _fail(f"cannot write the report to {output_file}: the directory {directory} is not "
              "writable")


@click.command("lint")
@click.argument("paths", nargs=-1, type=str)
@click.option("--select", multiple=True, metavar="CODES",
              help="Rules to run, by code, prefix or name, comma-separated (default: all).")
@click.option("--extend-select", multiple=True, metavar="CODES",
              help="Rules to run in addition to the selected ones.")
@click.option("--ignore", multiple=True, metavar="CODES", help="Rules to skip.")
@click.option("--format", "--output-format", "fmt", type=click.Choice(_FORMATS),
              default="text", show_default=True, help="Output format.")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False),
              help="Write the findings to this file instead of stdout.")
@click.option("--fix", is_flag=True, help="Apply safe fixes in place.")
@click.option("--diff", is_flag=True, help="Print fixes as a unified diff; write nothing.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes marked unsafe.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only: no summary, no warnings.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write .gradcheck_cache/.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Worker processes (default: the number of CPU cores).")
@click.option("--stdin-filename", metavar="PATH",
              help="The name of the file read from stdin ('-'), for config and output.")
def lint_command(paths: tuple[str, ...], select: tuple[str, ...], extend_select: tuple[str, ...],
                 ignore: tuple[str, ...], fmt: str, output_file: str | None, fix: bool,
                 diff: bool, unsafe_fixes: bool, exit_zero: bool, statistics: bool, quiet: bool,
                 no_cache: bool, jobs: int | None, stdin_filename: str | None) -> None:
    """Check PATHS (default: .) for training-loop gradient bugs.

    Directories are searched for .py and .ipynb files, honouring .gitignore. Use - to
    read from stdin. Exit status: 0 clean, 1 findings, 2 error.
    """
    from gradcheck import __version__
    from gradcheck.lint.config import ConfigError
    from gradcheck.lint.formats import render, render_statistics
    from gradcheck.lint.gitignore import PatternError
    from gradcheck.lint.registry import all_rules
    from gradcheck.lint.runner import LintOptions, lint_paths
    from gradcheck.lint.selection import SelectorError
    from gradcheck.lint.settings import Overrides

    if select and not _split(select):
        _fail("--select names no rule, so nothing would be checked; give codes, prefixes or "
              "names (e.g. --select GC002), or ALL, or leave the option out to run every rule")
    if output_file:
        _check_writable(output_file)
    targets = list(paths) or (["-"] if stdin_filename else ["."])
    stdin_data = sys.stdin.buffer.read() if "-" in targets else None
    options = LintOptions(
        paths=targets,
        overrides=Overrides(_split(select) if select else None, _split(extend_select),
                            _split(ignore)),
        fix=fix, diff=diff, unsafe_fixes=unsafe_fixes, use_cache=not no_cache, jobs=jobs,
        stdin_data=stdin_data, stdin_filename=stdin_filename,
    )
    try:
        report = lint_paths(options)
    except (ConfigError, SelectorError, PatternError) as error:
        _fail(str(error))
        return
    if not report.results:
        _fail(f"no Python files or notebooks found under {', '.join(targets)}, so nothing was "
              "checked; name a file or a directory that holds some (excluded and "
              ".gitignore'd files are skipped)")
    for result in report.results:
        for line, text in result.warnings if not quiet else ():
            where = f"{result.display}:{line}" if line else result.display
            click.echo(f"warning: {where}: {text}", err=True)
    stdin_fixed = fix and not diff and stdin_data is not None
    if stdin_fixed:
        for result in report.results:
            if result.output is not None:
                sys.stdout.flush()
                sys.stdout.buffer.write(result.output)
                sys.stdout.buffer.flush()
    if diff:
        click.echo("".join(result.diff for result in report.results), nl=False)
    else:
        if statistics:
            text = render_statistics(report, unsafe_fixes)
        else:
            color = (fmt == "text" and output_file is None and sys.stdout.isatty()
                     and "NO_COLOR" not in os.environ)
            text = render(report, fmt, rules=all_rules(), version=__version__, color=color,
                          unsafe=unsafe_fixes)
        if output_file:
            try:
                with open(output_file, "w", encoding="utf-8") as handle:
                    handle.write(text)
            except OSError as error:
                _fail(f"cannot write the report to {output_file}: {error.strerror or error}")
        else:
            click.echo(text, nl=False, err=stdin_fixed)
    if not quiet:
        click.echo(_summary(report, fix, diff, unsafe_fixes), err=True)
    if report.has_errors:
        sys.exit(exitcodes.ERROR)
    if exit_zero:
        sys.exit(exitcodes.CLEAN)
    if diff:
        sys.exit(exitcodes.FINDINGS if report.fixed else exitcodes.CLEAN)
    sys.exit(exitcodes.FINDINGS if report.findings else exitcodes.CLEAN)


@click.command("rule")
@click.argument("rule")
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text",
              show_default=True)
def rule_command(rule: str, fmt: str) -> None:
    """Print the documentation of RULE (a code such as GC001, or a name)."""
    import json

    from gradcheck.lint.registry import find_rule

    try:
        info = find_rule(rule)
    except KeyError as error:
        _fail(error.args[0])
        return
    if fmt == "json":
        click.echo(json.dumps({"code": info.code, "name": info.name, "summary": info.summary,
                               "fix_safety": info.fix_safety, "explanation": info.doc}, indent=2))
    else:
        click.echo(f"# {info.name} ({info.code})\n\n{info.summary}\n\n{info.doc}")
    sys.exit(exitcodes.CLEAN)


@click.command("rules")
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text",
              show_default=True)
def rules_command(fmt: str) -> None:
    """List every rule: code, name and summary."""
    import json

    from gradcheck.lint.registry import all_rules

    rules = all_rules()
    if fmt == "json":
        click.echo(json.dumps([{"code": r.code, "name": r.name, "summary": r.summary}
                               for r in rules], indent=2))
    else:
        width = max(len(r.name) for r in rules)
        for r in rules:
            click.echo(f"{r.code}  {r.name:<{width}}  {r.summary}")
    sys.exit(exitcodes.CLEAN)
