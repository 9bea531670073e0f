"""``gradcheck lint``, ``gradcheck rule`` and ``gradcheck rules``: thin click commands.

They parse options, call :mod:`gradcheck.lint.runner`, print, and exit with a code from
:mod:`gradcheck.exitcodes`. Everything heavier is imported inside the commands, so
``gradcheck lint --help`` stays fast.
"""
from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable

import click

from gradcheck import exitcodes

STRICT_ENV = "GRADCHECK_LINT_STRICT"  # the same switch makes the rules re-raise their errors

# the same names as gradcheck.lint.formats.FORMATS, repeated so --help never imports lint_rules
_FORMATS = ("text", "json", "sarif", "github", "junit")


def _split(values: tuple[str, ...]) -> tuple[str, ...]:
    """``("GC001,GC002", "GC004")`` -> ``("GC001", "GC002", "GC004")``."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def _fail(message: str) -> None:
    click.echo(f"gradcheck: error: {message}", err=True)
    sys.exit(exitcodes.ERROR)


def _check_writable(output_file: str) -> None:
    """Fail before the run, not after it, when the report could not be written."""
    directory = os.path.dirname(os.path.abspath(output_file))
    if not os.path.isdir(directory):
        _fail(f"cannot write the report to {output_file}: the directory {directory} does not "
              "exist; create it or choose another --output-file")
    if not os.access(directory, os.W_OK):
        _fail(f"cannot write the report to {output_file}: the directory {directory} is not "
              "writable")


def never_a_traceback(command: Callable[..., None]) -> Callable[..., None]:
    """Turn whatever escapes ``command`` into a message and exit status 2 (130 on Ctrl-C):
    a traceback with status 1 would read as "findings" in CI.

    ``GRADCHECK_LINT_STRICT=1`` lets the exception through, for debugging.
    """
    @functools.wraps(command)
    def guarded(*args, **kwargs) -> None:
        try:
            command(*args, **kwargs)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except KeyboardInterrupt:
            click.echo("gradcheck: interrupted", err=True)
            sys.exit(exitcodes.INTERRUPTED)
        except Exception as error:  # noqa: BLE001  (the point: nothing escapes as a traceback)
            if os.environ.get(STRICT_ENV) == "1":
                raise
            _fail(f"internal error ({type(error).__name__}: {error}); this is a bug in "
                  f"gradcheck: please report it with the command line ({STRICT_ENV}=1 shows "
                  "the traceback)")

    return guarded


def _command_line(config: tuple[str, ...], exclude: tuple[str, ...],
                  extend_exclude: tuple[str, ...]):
    """``--config`` (one file, any number of ``KEY = VALUE``) and the excludes."""
    from pathlib import Path

    from gradcheck.lint.config import CommandLine, parse_override

    files, table = [], {}
    for value in config:
        # ruff's rule: an existing file is a configuration file, anything else an override
        if os.path.isfile(value) or "=" not in value:
            files.append(Path(value))
        else:
            table.update(parse_override(value))
    if len(files) > 1:
        _fail(f"--config names {len(files)} files ({', '.join(map(str, files))}); give one "
              "configuration file, plus any number of 'KEY = VALUE' overrides")
    return CommandLine(root=Path.cwd(), file=files[0] if files else None,
                       table=tuple(table.items()),
                       exclude=_split(exclude) if exclude else None,
                       extend_exclude=_split(extend_exclude))


def _conflicts(flags: dict[str, bool]) -> None:
    given = [name for name, value in flags.items() if value]
    if len(given) > 1:
        _fail(f"{' and '.join(given)} cannot be used together; choose one")


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
@click.option("--add-noqa", is_flag=True,
              help="Add a '# noqa: CODE' comment to the line of each finding.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--preview", is_flag=True,
              help="Also report the forms of rules whose precision is not yet established.")
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only: no summary, no warnings.")
@click.option("--config", multiple=True, metavar="PATH | 'KEY = VALUE'",
              help="A pyproject.toml to use for every file (no search for others), or a "
                   "[tool.gradcheck.lint] key to override, in TOML.")
@click.option("--exclude", multiple=True, metavar="PATTERNS",
              help="Patterns to skip, replacing the configured 'exclude' (gitignore syntax, "
                   "relative to the current directory, comma-separated).")
@click.option("--extend-exclude", multiple=True, metavar="PATTERNS",
              help="Patterns to skip in addition to the configured ones.")
@click.option("--show-files", is_flag=True, help="List the files that would be checked; exit.")
@click.option("--show-settings", is_flag=True,
              help="Print the settings resolved for the first file; exit.")
@click.option("-w", "--watch", is_flag=True, help="Check again whenever a file changes.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write .gradcheck_cache/.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Worker processes (default: the number of CPU cores).")
@click.option("--stdin-filename", metavar="PATH",
              help="The name of the file read from stdin ('-'), for config and output.")
@never_a_traceback
def lint_command(paths: tuple[str, ...], select: tuple[str, ...], extend_select: tuple[str, ...],
                 ignore: tuple[str, ...], fmt: str, output_file: str | None, fix: bool,
                 diff: bool, unsafe_fixes: bool, add_noqa: bool, exit_zero: bool, preview: bool,
                 statistics: bool, quiet: bool, config: tuple[str, ...],
                 exclude: tuple[str, ...], extend_exclude: tuple[str, ...], show_files: bool,
                 show_settings: bool, watch: bool, no_cache: bool, jobs: int | None,
                 stdin_filename: str | None) -> None:
    """Check PATHS (default: .) for training-loop gradient bugs.

    Directories are searched for .py and .ipynb files, honouring .gitignore. Use - to
    read from stdin. Exit status: 0 clean, 1 findings, 2 error.
    """
    from gradcheck.lint.config import ConfigError
    from gradcheck.lint.formats import STATISTICS_FORMATS
    from gradcheck.lint.reading import ReadError, read_stream
    from gradcheck.lint.runner import LintOptions
    from gradcheck.lint.session import Output, UsageError
    from gradcheck.lint.settings import Overrides

    if select and not _split(select):
        _fail("--select names no rule, so nothing would be checked; give codes, prefixes or "
              "names (e.g. --select GC002), or ALL, or leave the option out to run every rule")
    _conflicts({"--fix": fix, "--add-noqa": add_noqa})
    _conflicts({"--diff": diff, "--add-noqa": add_noqa})
    _conflicts({"--show-files": show_files, "--show-settings": show_settings, "--watch": watch})
    if statistics and fmt not in STATISTICS_FORMATS:
        _fail(f"--statistics prints text or json; --format {fmt} has no statistics form")
    targets = list(paths) or (["-"] if stdin_filename else ["."])
    if "-" in targets and (watch or add_noqa):
        _fail(f"{'--watch' if watch else '--add-noqa'} works on files, not on stdin ('-'); "
              "name the files instead")
    if output_file and not (show_files or show_settings):
        _check_writable(output_file)
    try:
        command_line = _command_line(config, exclude, extend_exclude)
        stdin_data = read_stream(sys.stdin.buffer) if "-" in targets else None
    except (ConfigError, ReadError) as error:
        _fail(str(error))
        return
    options = LintOptions(
        paths=targets,
        overrides=Overrides(_split(select) if select else None, _split(extend_select),
                            _split(ignore), True if preview else None),
        fix=fix, diff=diff, unsafe_fixes=unsafe_fixes, use_cache=not no_cache, jobs=jobs,
        stdin_data=stdin_data, stdin_filename=stdin_filename, add_noqa=add_noqa,
        command_line=command_line,
    )
    output = Output(fmt, output_file, statistics, quiet, exit_zero)
    try:
        if show_files or show_settings:
            sys.exit(_show(options, show_files, {"fix": fix, "unsafe-fixes": unsafe_fixes,
                                                 "output-format": fmt, "jobs": jobs,
                                                 "cache": not no_cache}))
        if watch:
            sys.exit(_watch(options, output))
        from gradcheck.lint.session import run_once

        sys.exit(run_once(options, output))
    except (UsageError, ConfigError) as error:
        _fail(str(error))


def _show(options, files: bool, run: dict[str, object]) -> int:
    """``--show-files`` / ``--show-settings``: print, and exit 0 (2 when a path is wrong)."""
    from gradcheck.lint.session import emit
    from gradcheck.lint.show import list_files, settings_text

    listing = list_files(options)
    for path, message in listing.errors:
        emit(f"gradcheck: error: {path}: {message}", err=True)
    if files:
        emit("".join(f"{path}\n" for path in listing.files), nl=False)
    else:
        text = settings_text(options, run)
        if text is None:
            _fail(f"no Python files or notebooks found under {', '.join(options.paths)}")
        emit(text, nl=False)
    return exitcodes.ERROR if listing.errors else exitcodes.CLEAN


def _watch(options, output) -> int:
    """``--watch``: run, then run again on every change; usage errors do not end the loop."""
    from gradcheck.lint import watch
    from gradcheck.lint.session import UsageError, emit, run_once

    def run() -> int:
        if sys.stdout.isatty():
            emit("\x1b[2J\x1b[H", nl=False)  # a clear screen for each run, as ruff does
        try:
            return run_once(options, output)
        except UsageError as error:
            emit(f"gradcheck: error: {error}", err=True)
            return exitcodes.ERROR

    return watch.watch(run, lambda: watch.state(options.paths, options.command_line),
                       lambda text: emit(text, err=True))


@click.command("rule")
@click.argument("rule")
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text",
              show_default=True)
@never_a_traceback
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
@never_a_traceback
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
