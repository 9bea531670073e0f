"""Which files a run checks: walk directories for ``.py`` and ``.ipynb`` files.

Honours ``.gitignore`` files (those of the walked tree and of its ancestors up to the
repository root) and the ``exclude`` settings. A file named explicitly is always checked,
as in ruff.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from gradcheck.lint.config import ConfigFinder
from gradcheck.lint.gitignore import IgnoreFile, is_ignored

SUFFIXES = (".py", ".ipynb")


@dataclass
class Discovery:
    """The files to lint, in a stable order, and the paths that do not exist."""

    files: list[Path] = field(default_factory=list)
    missing: list[Path] = field(default_factory=list)
    explicit: set[Path] = field(default_factory=set)  # files named as such, as given


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
    """A directory walk on plain strings: pathlib costs too much per entry on big trees."""

    def __init__(self, finder: ConfigFinder) -> None:
        self.finder = finder
        self._excludes: dict[int, IgnoreFile] = {}

    def _exclude_file(self, directory: str) -> IgnoreFile:
        config = self.finder.for_directory(Path(directory))
        key = id(config)
        if key not in self._excludes:
            self._excludes[key] = IgnoreFile(config.root.absolute(), list(config.exclude))
        return self._excludes[key]

    def walk(self, directory: str, stack: list[IgnoreFile], out: list[str]) -> None:
        gitignore = os.path.join(directory, ".gitignore")
        if os.path.isfile(gitignore):
            stack = stack + [IgnoreFile.read(Path(gitignore))]
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError:
            return  # unreadable directory: nothing to lint in it
        exclude = self._exclude_file(directory)
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = not is_dir and entry.is_file()
            except OSError:
                continue
            if not is_dir and not (is_file and entry.name.endswith(SUFFIXES)):
                continue
            if exclude.decide(entry.path, is_dir):
                continue
            if is_ignored(stack, entry.path, is_dir):
                continue
            if is_dir:
                self.walk(entry.path, stack, out)
            else:
                out.append(entry.path)


def is_excluded(path: Path, finder: ConfigFinder) -> bool:
    """Whether a directory walk would skip ``path`` under its ``exclude`` settings (the
    file itself or a directory between it and its configuration's root).

    >>> from pathlib import Path
    >>> is_excluded(Path("build/x.py"), ConfigFinder(Path(".")))
    True
    """
    absolute = path.absolute()
    config = finder.for_file(absolute)
    root = config.root.absolute()
    try:
        parts = absolute.relative_to(root).parts
    except ValueError:
        return False  # outside its configuration's tree: no pattern is relative to it
    patterns = IgnoreFile(root, list(config.exclude))
    for depth in range(1, len(parts) + 1):
        if patterns.decide_relative("/".join(parts[:depth]), depth < len(parts)):
            return True
    return False


def discover(paths: list[Path], finder: ConfigFinder) -> Discovery:
    """Expand ``paths`` into the files to lint.

    >>> from pathlib import Path
    >>> discover([Path("no/such/file.py")], ConfigFinder(Path("."))).missing
    [PosixPath('no/such/file.py')]
    """
    result = Discovery()
    seen: set[str] = set()  # absolute paths, as strings: pathlib costs too much per file
    walker = _Walker(finder)
    for given in paths:
        if given.is_dir():
            absolute = given.absolute()
            found: list[str] = []
            walker.walk(str(absolute), _ancestor_ignores(absolute), found)
            cut = len(str(absolute)) + 1
            for path in found:
                if path not in seen:
                    seen.add(path)
                    result.files.append(given / path[cut:])
        elif given.exists():
            result.explicit.add(given)
            key = str(given.absolute())
            if key not in seen:
                seen.add(key)
                result.files.append(given)
        else:
            result.missing.append(given)
    return result
