"""Which files a run checks: walk directories for ``.py`` and ``.ipynb`` files.

Honours ``.gitignore`` files (those of the walked tree and of its ancestors up to the
repository root) and the ``exclude`` settings. A file named explicitly is always checked,
as in ruff.
"""
from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from gradcheck.lint.config import ConfigFinder
from gradcheck.lint.gitignore import IgnoreFile, is_ignored

SUFFIXES = (".py", ".ipynb")


@dataclass
class Discovery:
    """The files to lint, in a stable order; the paths that do not exist; and the paths that
    could not be looked at (a directory without search or read permission), with why."""

    files: list[Path] = field(default_factory=list)
    missing: list[Path] = field(default_factory=list)
    explicit: set[Path] = field(default_factory=set)  # files named as such, as given
    errors: list[tuple[Path, str]] = field(default_factory=list)


def unlisted(reason: str) -> str:
    """The message for a directory whose entries could not be listed."""
    return (f"cannot list this directory: {reason}; the files in it were not checked (give "
            "read and search permission, or exclude it)")


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
        self._excludes: dict[int, list[IgnoreFile]] = {}
        command_line = finder.command_line
        self._command_line = [IgnoreFile(command_line.root.absolute(), list(command_line.patterns))
                              ] if command_line.patterns else []

    def _exclude_files(self, directory: str) -> list[IgnoreFile]:
        """The exclude patterns that apply in ``directory``: its configuration's, relative
        to that configuration's root, and the command line's, relative to its directory."""
        config = self.finder.for_directory(Path(directory))
        key = id(config)
        if key not in self._excludes:
            own = IgnoreFile(config.root.absolute(), list(config.patterns))
            self._excludes[key] = [own, *self._command_line]
        return self._excludes[key]

    def walk(self, top: str, stack: list[IgnoreFile], out: list[str],
             errors: list[tuple[str, str]]) -> None:
        """Append the files under ``top`` to ``out`` in sorted depth-first order, and each
        directory that cannot be listed to ``errors``. A loop, not recursion: a tree deeper
        than Python's recursion limit is still walked."""
        pending: list[tuple[str, list[IgnoreFile]]] = [(top, stack)]
        while pending:
            directory, ignores = pending.pop()
            gitignore = os.path.join(directory, ".gitignore")
            if os.path.isfile(gitignore):
                ignores = ignores + [IgnoreFile.read(Path(gitignore))]
            try:
                entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
            except OSError as error:
                errors.append((directory, unlisted(error.strerror or str(error))))
                continue
            excludes = self._exclude_files(directory)
            subdirectories = []
            for entry in entries:
                kind = self._kind(entry, errors)
                if kind is None:
                    continue
                is_dir = kind == "directory"
                if any(exclude.decide(entry.path, is_dir) for exclude in excludes):
                    continue
                if is_ignored(ignores, entry.path, is_dir):
                    continue
                if is_dir:
                    subdirectories.append((entry.path, ignores))
                else:
                    out.append(entry.path)
            pending.extend(reversed(subdirectories))  # popped in name order

    @staticmethod
    def _kind(entry: os.DirEntry, errors: list[tuple[str, str]]) -> str | None:
        """"directory", "file" for a ``.py``/``.ipynb`` name that is not a directory (a
        device, a FIFO or a dangling symlink too: reading it reports what it is), else None.

        NOTE: symlinked directories are not followed (no loops, as in ruff and git)."""
        try:
            if entry.is_dir(follow_symlinks=False):
                return "directory"
            if not entry.name.endswith(SUFFIXES):
                return None
            return None if entry.is_dir() else "file"
        except OSError as error:
            errors.append((entry.path, f"cannot read: {error.strerror or error}"))
            return None


def is_excluded(path: Path, finder: ConfigFinder) -> bool:
    """Whether a directory walk would skip ``path`` under its ``exclude`` settings (the
    file itself or a directory between it and its configuration's root).

    >>> from pathlib import Path
    >>> is_excluded(Path("build/x.py"), ConfigFinder(Path(".")))
    True
    """
    absolute = path.absolute()
    config = finder.for_file(absolute)
    command_line = finder.command_line
    sources = [(config.root.absolute(), config.patterns),
               (command_line.root.absolute(), command_line.patterns)]
    for root, lines in sources:
        try:
            parts = absolute.relative_to(root).parts
        except ValueError:
            continue  # outside this root: no pattern is relative to it
        patterns = IgnoreFile(root, list(lines))
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
        try:
            mode = os.stat(given).st_mode
        except OSError as error:
            if error.errno in (errno.ENOENT, errno.ENOTDIR):
                result.missing.append(given)
            else:  # e.g. a parent directory without search permission
                result.errors.append((given, f"cannot read: {error.strerror or error}"))
            continue
        if stat.S_ISDIR(mode):
            absolute = given.absolute()
            found: list[str] = []
            errors: list[tuple[str, str]] = []
            walker.walk(str(absolute), _ancestor_ignores(absolute), found, errors)
            cut = len(str(absolute)) + 1
            for path in found:
                if path not in seen:
                    seen.add(path)
                    result.files.append(given / path[cut:])
            for path, message in errors:
                if path not in seen:
                    seen.add(path)
                    result.errors.append((given / path[cut:] if len(path) > len(str(absolute))
                                          else given, message))
        else:
            result.explicit.add(given)
            key = str(given.absolute())
            if key not in seen:
                seen.add(key)
                result.files.append(given)
    return result
