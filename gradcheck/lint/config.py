"""``[tool.gradcheck.lint]`` in ``pyproject.toml``, found by walking up from each file.

As in ruff, the closest ``pyproject.toml`` that has the section wins; a ``pyproject.toml``
without it is skipped. Paths in ``exclude`` and ``per-file-ignores`` are relative to the
directory of the file that declares them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", ".mypy_cache", ".ruff_cache",
    ".pytest_cache", ".gradcheck_cache", "build", "dist", "__pycache__", "node_modules",
    "site-packages",
)
_LIST_KEYS = ("select", "extend-select", "ignore", "exclude", "extend-exclude")
VALID_KEYS = _LIST_KEYS + ("per-file-ignores",)


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
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()


def _load_toml(path: Path) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:
            raise ConfigError(
                f"{path}: reading pyproject.toml on Python 3.10 needs 'tomli'; "
                "install it with: pip install tomli"
            ) from None
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{path}: cannot read it as TOML: {error}") from None


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


def parse_table(table: Any, root: Path, source: Path | None) -> FileConfig:
    """Validate one ``[tool.gradcheck.lint]`` table.

    >>> from pathlib import Path
    >>> parse_table({"ignore": ["GC004"]}, Path("."), None).ignore
    ('GC004',)
    """
    where = f"{source or 'configuration'}: [tool.gradcheck.lint]"
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
    exclude = values.get("exclude", DEFAULT_EXCLUDES) + values.get("extend-exclude", ())
    return FileConfig(
        root=root,
        source=source,
        select=values.get("select"),
        extend_select=values.get("extend-select", ()),
        ignore=values.get("ignore", ()),
        exclude=exclude,
        per_file_ignores=per_file_ignores,
    )


class ConfigFinder:
    """Find (and remember) the configuration that governs each directory."""

    def __init__(self, fallback_root: Path) -> None:
        self._by_dir: dict[Path, FileConfig] = {}
        self._fallback = FileConfig(root=fallback_root)

    def for_directory(self, directory: Path) -> FileConfig:
        """The closest configuration at or above ``directory`` (absolute path)."""
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

    @staticmethod
    def _read(pyproject: Path) -> FileConfig | None:
        if not pyproject.is_file():
            return None
        # NOTE: a cheap text test first, so unrelated pyproject files are never parsed
        try:
            if "gradcheck" not in pyproject.read_text(encoding="utf-8", errors="replace"):
                return None
        except OSError:
            return None
        data = _load_toml(pyproject)
        table = data.get("tool", {}).get("gradcheck", {})
        if not isinstance(table, dict) or "lint" not in table:
            return None
        return parse_table(table["lint"], pyproject.parent, pyproject)
