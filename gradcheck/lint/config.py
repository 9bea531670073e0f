"""``[tool.gradcheck.lint]`` in ``pyproject.toml``, found by walking up from each file.

As in ruff, the closest ``pyproject.toml`` that has the section wins; a ``pyproject.toml``
without it is skipped. Paths in ``exclude`` and ``per-file-ignores`` are relative to the
directory of the file that declares them. The command line (:class:`CommandLine`) can name
one configuration file for every file (``--config PATH``, which turns the search off),
override keys (``--config "KEY = VALUE"``) and replace or extend the excludes; as in ruff,
the paths it gives, those of a ``--config`` file included, are relative to the current
directory.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", ".mypy_cache", ".ruff_cache",
    ".pytest_cache", ".gradcheck_cache", "build", "dist", "__pycache__", "node_modules",
    "site-packages",
)
_LIST_KEYS = ("select", "extend-select", "ignore", "exclude", "extend-exclude")
VALID_KEYS = _LIST_KEYS + ("per-file-ignores", "preview")


class ConfigError(ValueError):
    """A bad key or value in the configuration; the message names it and the fix."""


@dataclass(frozen=True)
class FileConfig:
    """The ``[tool.gradcheck.lint]`` table of one ``pyproject.toml`` (or the defaults)."""

    root: Path
    source: Path | None = None
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDES
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    preview: bool = False  # also report the forms of rules that are in preview

    @property
    def patterns(self) -> tuple[str, ...]:
        """Every exclude pattern, relative to :attr:`root`."""
        return self.exclude + self.extend_exclude


@dataclass(frozen=True)
class CommandLine:
    """Configuration given on the command line, layered over every file's configuration.

    ``file``: ``--config PATH``; ``table``: ``--config "KEY = VALUE"`` overrides (keys of
    ``[tool.gradcheck.lint]``); ``exclude`` replaces each configuration's ``exclude`` (None:
    keep it) and ``extend_exclude`` adds to them, both relative to ``root`` (the current
    directory).
    """

    root: Path = field(default_factory=Path.cwd)
    file: Path | None = None
    table: tuple[tuple[str, Any], ...] = ()
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()

    @property
    def patterns(self) -> tuple[str, ...]:
        """The command line's own exclude patterns, relative to :attr:`root`."""
        return (self.exclude or ()) + self.extend_exclude


def _toml():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:
            raise ConfigError(
                "reading TOML on Python 3.10 needs 'tomli'; install it with: pip install tomli"
            ) from None
    return tomllib


def _load_toml(path: Path) -> dict[str, Any]:
    from gradcheck.lint.reading import ReadError, read_bounded

    tomllib = _toml()
    try:
        return tomllib.loads(read_bounded(str(path)).decode("utf-8"))
    except ReadError as error:
        raise ConfigError(f"{path}: {error}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{path}: cannot read it as TOML: {error}") from None


def parse_override(text: str) -> dict[str, Any]:
    """One ``--config "KEY = VALUE"`` override as a table; ConfigError if it is not one.

    >>> parse_override('ignore = ["GC004"]')
    {'ignore': ['GC004']}
    """
    tomllib = _toml()
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(
            f"--config {text!r} is neither an existing file nor a TOML `KEY = VALUE` pair "
            f"({error}); give a path to a pyproject.toml or e.g. --config 'ignore = [\"GC004\"]'"
        ) from None
    return table


def _string_list(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list):
        raise ConfigError(f"{where} must be a list of strings, e.g. [\"GC001\"]; got {value!r}")
    for item in value:
        if not isinstance(item, str):
            raise ConfigError(f"{where} must contain only strings; got {item!r}")
    return tuple(value)


def _check_patterns(patterns: tuple[str, ...], where: str) -> None:
    from gradcheck.lint.gitignore import PatternError, compile_pattern

    for pattern in patterns:
        try:
            compile_pattern(pattern)
        except PatternError as error:
            raise ConfigError(f"{where}: {error}") from None


def parse_table(table: Any, root: Path, source: Path | None,
                label: str | None = None) -> FileConfig:
    """Validate one ``[tool.gradcheck.lint]`` table (``label`` names it in errors).

    >>> from pathlib import Path
    >>> parse_table({"ignore": ["GC004"]}, Path("."), None).ignore
    ('GC004',)
    """
    where = label or f"{source or 'configuration'}: [tool.gradcheck.lint]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    for key in table:
        if key not in VALID_KEYS:
            hint = f" (did you mean {key.replace('_', '-')!r}?)" if "_" in key else ""
            raise ConfigError(
                f"{where}: unknown key {key!r}{hint}; valid keys are {', '.join(VALID_KEYS)}"
            )
    values = {key: _string_list(table[key], f"{where} {key}") for key in _LIST_KEYS if key in table}
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(
            f"{where} per-file-ignores must be a table of glob = [codes], "
            f"e.g. {{\"tests/*\" = [\"GC002\"]}}; got {per_file!r}"
        )
    per_file_ignores = tuple(
        (glob, _string_list(codes, f"{where} per-file-ignores.{glob!r}"))
        for glob, codes in per_file.items()
    )
    if values.get("select") == ():
        raise ConfigError(f"{where} select is empty, so nothing would be checked; name the "
                          "rules to run (e.g. [\"GC\"]) or remove the key to run them all")
    for key in ("exclude", "extend-exclude"):
        _check_patterns(values.get(key, ()), f"{where} {key}")
    return FileConfig(
        root=root,
        source=source,
        select=values.get("select"),
        extend_select=values.get("extend-select", ()),
        ignore=values.get("ignore", ()),
        exclude=values.get("exclude", DEFAULT_EXCLUDES),
        extend_exclude=values.get("extend-exclude", ()),
        per_file_ignores=per_file_ignores,
        preview=_flag(table.get("preview", False), f"{where} preview"),
    )


def _flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where} must be true or false, got {value!r}")
    return value


class ConfigFinder:
    """Find (and remember) the configuration that governs each directory, with the command
    line's configuration layered over it."""

    def __init__(self, fallback_root: Path, command_line: CommandLine | None = None) -> None:
        self.command_line = command_line or CommandLine(root=fallback_root)
        self._by_dir: dict[Path, FileConfig] = {}
        overrides = dict(self.command_line.table)
        # validated on their own first, so an error names --config, not a pyproject.toml
        parse_table(overrides, fallback_root, None, label="--config")
        self._overrides = overrides
        self._fallback = self._layered({}, fallback_root, None)
        self._fixed = self._read_named(self.command_line.file) if self.command_line.file else None

    def _layered(self, table: dict[str, Any], root: Path, source: Path | None) -> FileConfig:
        config = parse_table({**table, **self._overrides}, root, source)
        if self.command_line.exclude is not None:
            config = dataclasses.replace(config, exclude=())  # --exclude replaces it
        return config

    def _read_named(self, path: Path) -> FileConfig:
        """The ``--config PATH`` file: any TOML file with a ``[tool.gradcheck.lint]`` table."""
        if not path.is_file():
            raise ConfigError(f"--config {path}: no such file; name a pyproject.toml that has a "
                              "[tool.gradcheck.lint] table")
        table = _load_toml(path).get("tool", {}).get("gradcheck", {})
        if not isinstance(table, dict) or "lint" not in table:
            raise ConfigError(f"--config {path}: the file has no [tool.gradcheck.lint] table; "
                              "add one, or name the pyproject.toml that has it")
        # NOTE: as in ruff, the paths of a --config file are relative to the current
        # directory, not to the file's: the file is usually kept out of the tree it governs
        return self._layered(table["lint"], self.command_line.root, path)

    def for_directory(self, directory: Path) -> FileConfig:
        """The closest configuration at or above ``directory`` (absolute path)."""
        if self._fixed is not None:
            return self._fixed
        cached = self._by_dir.get(directory)
        if cached is not None:
            return cached
        config = self._read(directory / "pyproject.toml")
        if config is None:
            parent = directory.parent
            config = self._fallback if parent == directory else self.for_directory(parent)
        self._by_dir[directory] = config
        return config

    def for_file(self, path: Path) -> FileConfig:
        """The configuration that governs the file at ``path``."""
        return self.for_directory(path.absolute().parent)

    def project_root(self, start: Path) -> Path:
        """Where the project's cache lives: the directory of the ``pyproject.toml`` that
        configures ``start`` (an absolute directory), else of the closest one, else ``start``.
        """
        config = self.for_directory(start)
        if config.source is not None:
            return config.root
        for directory in (start, *start.parents):
            if (directory / "pyproject.toml").is_file():
                return directory
        return start

    def _read(self, pyproject: Path) -> FileConfig | None:
        if not pyproject.is_file():
            return None
        from gradcheck.lint.reading import ReadError, read_bounded

        try:
            raw = read_bounded(str(pyproject))
        except ReadError as error:  # an unreadable configuration is not an absent one
            raise ConfigError(f"{pyproject}: {error}") from None
        # NOTE: a cheap byte test first, so unrelated pyproject files are never parsed
        if b"gradcheck" not in raw:
            return None
        tomllib = _toml()
        try:
            data = tomllib.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
            raise ConfigError(f"{pyproject}: cannot read it as TOML: {error}") from None
        table = data.get("tool", {}).get("gradcheck", {})
        if not isinstance(table, dict) or "lint" not in table:
            return None
        return self._layered(table["lint"], pyproject.parent, pyproject)
