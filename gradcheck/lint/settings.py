"""The rules that run on one file: command-line options layered over the file's config."""
from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path

from gradcheck.lint.config import ConfigFinder, FileConfig
from gradcheck.lint.registry import RuleInfo
from gradcheck.lint.selection import expand_all, resolve
from lint_rules.finding import PREVIEW


@dataclass(frozen=True)
class Overrides:
    """Rule selection given on the command line (None: not given, use the config)."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    preview: bool | None = None  # --preview (None: as the config says)


def _matches(glob: str, relative: str) -> bool:
    name = relative.rsplit("/", 1)[-1]
    glob = glob.rstrip("/") + "/**" if glob.endswith("/") else glob
    if glob.endswith("/**") and (relative + "/").startswith(glob[:-2]):
        return True
    return fnmatch.fnmatchcase(relative, glob) or fnmatch.fnmatchcase(name, glob)


class Settings:
    """Answers "which codes run on this file?", validating every selector up front."""

    def __init__(self, rules: list[RuleInfo], overrides: Overrides, finder: ConfigFinder) -> None:
        self.rules = rules
        self.overrides = overrides
        self.finder = finder
        self._base: dict[int, frozenset[str]] = {}
        self._per_file: dict[int, list[tuple[str, set[str]]]] = {}  # globs, codes expanded
        self._config_by_dir: dict[str, FileConfig] = {}
        self._roots: dict[int, str] = {}  # id(config) -> its root as a string, with a separator
        self._cwd = os.getcwd()
        # validate the command line once, even when no file is linted
        resolve(rules, select=overrides.select, extend_select=overrides.extend_select,
                ignore=overrides.ignore, origin="--")

    def _codes_for_config(self, config: FileConfig) -> frozenset[str]:
        key = id(config)
        if key not in self._base:
            origin = f"{config.source}: [tool.gradcheck.lint]" if config.source else ""
            select = self.overrides.select if self.overrides.select is not None else config.select
            self._base[key] = resolve(
                self.rules,
                select=select,
                extend_select=config.extend_select + self.overrides.extend_select,
                ignore=config.ignore + self.overrides.ignore,
                origin=origin,
            )
            self._per_file[key] = [
                (glob, expand_all(codes, self.rules, origin=f"{origin} per-file-ignores.{glob!r}"))
                for glob, codes in config.per_file_ignores
            ]
        return self._base[key]

    def _relative(self, absolute: str, config: FileConfig) -> str | None:
        """``absolute`` relative to ``config``'s root, ``/``-separated; None outside it."""
        root = self._roots.get(id(config))
        if root is None:
            root = self._roots[id(config)] = str(config.root.absolute()).rstrip(os.sep) + os.sep
        if absolute.startswith(root) and os.sep + "." not in absolute:
            return absolute[len(root):].replace(os.sep, "/")  # the common case, without pathlib
        try:  # "." and ".." components: leave them to pathlib's rules
            return Path(absolute).relative_to(config.root.absolute()).as_posix()
        except ValueError:
            return None

    def codes_for(self, path: Path) -> frozenset[str]:
        """The analysis codes to run on ``path`` (per-file ignores applied).

        >>> from pathlib import Path
        >>> from gradcheck.lint.registry import RuleInfo
        >>> s = Settings([RuleInfo("GC001", "a-b", "", "")], Overrides(), ConfigFinder(Path(".")))
        >>> sorted(s.codes_for(Path("x.py")))
        ['GC001']
        """
        text = str(path)
        absolute = text if os.path.isabs(text) else os.path.join(self._cwd, text)
        directory = os.path.dirname(absolute)
        config = self._config_by_dir.get(directory)
        if config is None:
            config = self._config_by_dir[directory] = self.finder.for_directory(Path(directory))
        codes = self._codes_for_config(config)
        if self.overrides.preview if self.overrides.preview is not None else config.preview:
            codes = codes | {PREVIEW}  # not a rule: it lets the rules' preview forms report
        if not config.per_file_ignores:
            return codes
        relative = self._relative(absolute, config) or Path(text).as_posix()
        dropped: set[str] = set()
        for glob, ignored in self._per_file[id(config)]:
            if _matches(glob, relative):
                dropped |= ignored
        return codes - dropped
