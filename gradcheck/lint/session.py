"""One ``gradcheck lint`` run as the terminal sees it: lint, print, and the exit code.

The click command (:mod:`gradcheck.lint.cli`) parses options into :class:`LintOptions` and
an :class:`Output`, then calls :func:`run_once` (once, or again on every change with
``--watch``). A usage error raises :class:`UsageError`; everything else becomes output.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import click

from gradcheck import exitcodes
from gradcheck.lint.result import Report
from gradcheck.lint.runner import LintOptions


class UsageError(ValueError):
    """The command line or the configuration is wrong; the message says how to fix it."""


@dataclass(frozen=True)
class Output:
    """How a run's report is shown."""

    fmt: str = "text"
    output_file: str | None = None
    statistics: bool = False
    quiet: bool = False
    exit_zero: bool = False


def emit(text: str | bytes, *, err: bool = False, nl: bool = True) -> None:
    """``click.echo`` (bytes go out as they are), but a reader that went away (``| head``)
    ends the output quietly, not with a traceback: the run still exits with its own status."""
    stream = sys.stderr if err else sys.stdout
    try:
        if isinstance(text, bytes):
            stream.flush()
            stream.buffer.write(text)
            stream.buffer.flush()
        else:
            click.echo(text, err=err, nl=nl)
    except BrokenPipeError:
        try:  # later writes and the final flush go nowhere instead of failing again
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
        except (OSError, ValueError):
            pass


def summary(report: Report, options: LintOptions) -> str:
    """The one-line summary printed on stderr."""
    from gradcheck.lint.fixes import applicable

    remaining = len(report.findings)
    broken = sum(1 for result in report.results if result.has_error)
    fixing, unsafe = options.fix, options.unsafe_fixes
    parts = []
    if options.add_noqa:
        added = report.noqa_added
        parts.append(f"Added {added} noqa directive{'s' * (added != 1)}.")
        if remaining - broken:
            parts.append(f"{remaining - broken} finding{'s' * (remaining - broken != 1)} "
                         "could not get one.")
    elif options.diff:
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


def _lint(options: LintOptions) -> Report:
    from gradcheck.lint.config import ConfigError
    from gradcheck.lint.gitignore import PatternError
    from gradcheck.lint.runner import lint_paths
    from gradcheck.lint.selection import SelectorError

    try:
        report = lint_paths(options)
    except (ConfigError, SelectorError, PatternError) as error:
        raise UsageError(str(error)) from None
    if not report.results:
        raise UsageError(
            f"no Python files or notebooks found under {', '.join(options.paths)}, so nothing "
            "was checked; name a file or a directory that holds some (excluded and "
            ".gitignore'd files are skipped)")
    return report


def _report_text(report: Report, options: LintOptions, output: Output) -> str:
    from gradcheck import __version__
    from gradcheck.lint.formats import render, render_statistics
    from gradcheck.lint.registry import all_rules

    if output.statistics:
        return render_statistics(report, options.unsafe_fixes, output.fmt)
    color = (output.fmt == "text" and output.output_file is None and sys.stdout.isatty()
             and "NO_COLOR" not in os.environ)
    return render(report, output.fmt, rules=all_rules(), version=__version__, color=color,
                  unsafe=options.unsafe_fixes)


def _write_report(text: str, path: str) -> None:
    try:
        # NOTE: surrogateescape writes a file name that is not UTF-8 back as its own bytes
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(text)
    except OSError as error:
        raise UsageError(f"cannot write the report to {path}: {error.strerror or error}") from None


def exit_status(report: Report, options: LintOptions, output: Output) -> int:
    """The run's exit status (ruff's convention; see :mod:`gradcheck.exitcodes`)."""
    if report.has_errors:
        return exitcodes.ERROR
    if output.exit_zero:
        return exitcodes.CLEAN
    if options.diff:
        return exitcodes.FINDINGS if report.fixed else exitcodes.CLEAN
    return exitcodes.FINDINGS if report.findings else exitcodes.CLEAN


def run_once(options: LintOptions, output: Output) -> int:
    """Lint ``options.paths``, print the report and the summary; the exit status."""
    report = _lint(options)
    for result in report.results:
        for line, text in result.warnings if not output.quiet else ():
            where = f"{result.display}:{line}" if line else result.display
            emit(f"warning: {where}: {text}", err=True)
    stdin_fixed = options.fix and not options.diff and options.stdin_data is not None
    if stdin_fixed:
        for result in report.results:
            if result.output is not None:
                emit(result.output)
    if options.diff:
        emit("".join(result.diff for result in report.results), nl=False)
    else:
        text = _report_text(report, options, output)
        if output.output_file:
            _write_report(text, output.output_file)
        else:
            emit(text, nl=False, err=stdin_fixed)
    if not output.quiet:
        emit(summary(report, options), err=True)
    return exit_status(report, options, output)
