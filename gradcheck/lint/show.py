"""``--show-files`` and ``--show-settings``: what a run would check, and with which settings.

As in ruff, neither lints anything: ``--show-files`` lists the files a run would check (the
walk, ``.gitignore``, ``exclude`` and the command line applied), ``--show-settings`` prints
the settings resolved for the first of them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gradcheck.lint.config import ConfigFinder, FileConfig
from gradcheck.lint.files import Discovery, discover
from gradcheck.lint import reading
from gradcheck.lint.registry import all_rules
from gradcheck.lint.runner import LintOptions, display_path
from gradcheck.lint.settings import Settings


@dataclass
class Listing:
    """The files a run would check (as displayed), and the paths it could not look at."""

    files: list[str]
    errors: list[tuple[str, str]]


def _discovery(options: LintOptions) -> tuple[ConfigFinder, Discovery]:
    finder = ConfigFinder(Path.cwd(), options.command_line)
    return finder, discover([Path(p) for p in options.paths if p != "-"], finder)


def list_files(options: LintOptions) -> Listing:
    """The files ``options`` would check, sorted as the report sorts them.

    >>> list_files(LintOptions(paths=["no_such_file.py"])).errors
    [('no_such_file.py', 'no such file or directory')]
    """
    _, found = _discovery(options)
    files = [display_path(path) for path in found.files]
    if options.stdin_data is not None or "-" in options.paths:
        files.append(options.stdin_filename or "-")
    errors = [(display_path(p), reading.missing(str(p))) for p in found.missing]
    errors += [(display_path(path), message) for path, message in found.errors]
    return Listing(sorted(files), sorted(errors))


def _toml_value(value) -> str:
    if isinstance(value, tuple):
        value = list(value)
    return json.dumps(value, ensure_ascii=False)


def _config_lines(config: FileConfig) -> list[str]:
    return [
        f"select = {_toml_value(config.select) if config.select is not None else '(every rule)'}",
        f"extend-select = {_toml_value(config.extend_select)}",
        f"ignore = {_toml_value(config.ignore)}",
        f"exclude = {_toml_value(config.exclude)}",
        f"extend-exclude = {_toml_value(config.extend_exclude)}",
        "per-file-ignores = {"
        + ", ".join(f"{_toml_value(glob)} = {_toml_value(codes)}"
                    for glob, codes in config.per_file_ignores) + "}",
    ]


def settings_text(options: LintOptions, run: dict[str, object]) -> str | None:
    """The settings of the first file a run would check (None: there is none). ``run``
    holds the options that are not configuration (format, fix...), printed as given.
    """
    finder, found = _discovery(options)
    candidates = sorted(found.files, key=display_path)
    if candidates:
        target = candidates[0]
    elif options.stdin_data is not None or "-" in options.paths:
        target = Path(options.stdin_filename or "stdin.py")
    else:
        return None
    config = finder.for_file(target)
    codes = Settings(all_rules(), options.overrides, finder).codes_for(target)
    command_line = finder.command_line
    source = display_path(config.source) if config.source else "(none: the defaults)"
    lines = [
        f"Resolved settings for: {display_path(target)}",
        f"Settings path: {source}",
        f"Project root: {display_path(config.root.absolute())}",
        "",
        "# what runs on this file: configuration, command line and per-file ignores applied",
        f"rules = {_toml_value(sorted(codes))}",
        "",
        "# the configuration's [tool.gradcheck.lint] (with --config KEY = VALUE applied)",
        *_config_lines(config),
        "",
        "# the command line",
        f"command-line-select = {_toml_value(options.overrides.select or '(not given)')}",
        f"command-line-extend-select = {_toml_value(options.overrides.extend_select)}",
        f"command-line-ignore = {_toml_value(options.overrides.ignore)}",
        f"command-line-exclude = {_toml_value(command_line.exclude or '(not given)')}",
        f"command-line-extend-exclude = {_toml_value(command_line.extend_exclude)}",
        *(f"{key} = {_toml_value(value)}" for key, value in run.items()),
        f"max-file-size = {_toml_value(reading.size_text(reading.MAX_FILE_BYTES))}",
    ]
    return "\n".join(lines) + "\n"
