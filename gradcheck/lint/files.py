"""Which files a run checks: walk directories for ``.py`` and ``.ipynb`` files.

Honours ``.gitignore`` files (those of the walked tree and of its ancestors up to the
repository root) and the ``exclude`` settings. A file named explicitly is always checked,
as in ruff.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from gradcheck.lint.config import ConfigFinder, FileConfig
from gradcheck.lint.gitignore import IgnoreFile, is_ignored

SUFFIXES = (".py", ".ipynb")


@dataclass
class Discovery:
    """The files to lint, in a stable order, and the paths that do not exist."""

    files: list[Path] = field(default_factory=list)
    missing: list[Path] = field(default_factory=list)


def _ancestor_ignores(directory: Path) -> list[IgnoreFile]:
    """The ``.gitignore`` files above ``directory`` up to the enclosing git repository."""
    found: list[IgnoreFile] = []
    if (directory / ".git").exists():
        return found  # the walk starts at a repository root
    for parent in directory.parents:
        candidate = parent / ".gitignore"
        if candidate.is_file():
            found.append(IgnoreFile.read(candidate))
        if (parent / ".git").exists():
            return list(reversed(found))
    return []  # not inside a repository: ancestors' ignore files do not apply


class _Walker:
    def __init__(self, finder: ConfigFinder, respect_gitignore: bool) -> None:
        self.finder = finder
        self.respect_gitignore = respect_gitignore
        self._excludes: dict[int, IgnoreFile] = {}

    def _exclude_file(self, config: FileConfig) -> IgnoreFile:
        key = id(config)
        if key not in self._excludes:
            self._excludes[key] = IgnoreFile(config.root.absolute(), list(config.exclude))
        return self._excludes[key]

    def _skipped(self, path: Path, is_dir: bool, stack: list[IgnoreFile]) -> bool:
        exclude = self._exclude_file(self.finder.for_directory(path.parent))
        if exclude.decide(path, is_dir):
            return True
        return self.respect_gitignore and is_ignored(stack, path, is_dir)

    def walk(self, directory: Path, stack: list[IgnoreFile], out: list[Path]) -> None:
        if self.respect_gitignore and (directory / ".gitignore").is_file():
            stack = stack + [IgnoreFile.read(directory / ".gitignore")]
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError:
            return  # unreadable directory: nothing to lint in it
        for entry in entries:
            path = directory / entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = not is_dir and entry.is_file()
            except OSError:
                continue
            if is_dir:
                if not self._skipped(path, True, stack):
                    self.walk(path, stack, out)
            elif is_file and entry.name.endswith(SUFFIXES) and not self._skipped(path, False, stack):
                out.append(path)


def discover(paths: list[Path], finder: ConfigFinder, *, respect_gitignore: bool = True) -> Discovery:
    """Expand ``paths`` into the files to lint.

    >>> from pathlib import Path
    >>> discover([Path("no/such/file.py")], ConfigFinder(Path("."))).missing
    [PosixPath('no/such/file.py')]
    """
    result = Discovery()
    seen: set[Path] = set()
    walker = _Walker(finder, respect_gitignore)
    for given in paths:
        if given.is_dir():
            absolute = given.absolute()
            stack = _ancestor_ignores(absolute) if respect_gitignore else []
            found: list[Path] = []
            walker.walk(absolute, stack, found)
            files = [given / path.relative_to(absolute) for path in found]
        elif given.exists():
            files = [given]
        else:
            result.missing.append(given)
            continue
        for path in files:
            key = path.absolute()
            if key not in seen:
                seen.add(key)
                result.files.append(path)
    return result
