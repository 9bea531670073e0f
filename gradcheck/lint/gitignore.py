"""gitignore-style patterns: negation, directory-only patterns, anchoring and ``**``.

Implemented here (rather than with ``pathspec``) so the linter needs no extra dependency.
The same matcher serves ``.gitignore`` files and the ``exclude`` settings.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path


class PatternError(ValueError):
    """A pattern that cannot be compiled (e.g. the range ``[z-a]``); names it and where."""


@dataclass(frozen=True)
class Pattern:
    """One compiled line of a gitignore file."""

    regex: re.Pattern[str]
    negated: bool
    directory_only: bool


def _translate_glob(glob: str) -> str:
    """Regex for a gitignore glob, where ``*`` and ``?`` never cross a ``/``."""
    out, i = [], 0
    while i < len(glob):
        char = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("/.*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            close = glob.find("]", i + 2)
            if close == -1:
                out.append(re.escape(char))
                i += 1
            else:
                body = glob[i + 1 : close].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = close + 1
        elif char == "\\" and i + 1 < len(glob):
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


def compile_pattern(line: str) -> Pattern | None:
    """Compile one gitignore line; None for blank lines and comments. PatternError when
    the line is not a valid glob (git matches nothing with it; we say so instead).

    >>> compile_pattern("build/").directory_only
    True
    """
    text = line.rstrip("\n").rstrip("\r")
    # NOTE: trailing spaces are ignored unless escaped with a backslash
    while text.endswith(" ") and not text.endswith("\\ "):
        text = text[:-1]
    if not text or text.startswith("#"):
        return None
    negated = text.startswith("!")
    if negated or text.startswith(("\\!", "\\#")):
        text = text[1:]
    directory_only = text.endswith("/")
    text = text.rstrip("/")
    if not text:
        return None
    anchored = "/" in text
    text = text.lstrip("/")
    body = _translate_glob(text)
    prefix = "" if anchored else "(?:.*/)?"
    try:
        regex = re.compile(f"{prefix}{body}\\Z", re.DOTALL)
    except re.error as error:
        raise PatternError(f"the pattern {line.strip()!r} is not a valid glob ({error.msg}); "
                           "fix or remove it") from None
    return Pattern(regex, negated, directory_only)


class IgnoreFile:
    """The patterns of one ignore source, relative to the directory ``base``."""

    def __init__(self, base: Path, lines: list[str], source: Path | None = None) -> None:
        self.base = base
        self._prefix = _posix(str(base)).rstrip("/") + "/"
        self.patterns = []
        for number, line in enumerate(lines, 1):
            try:
                pattern = compile_pattern(line)
            except PatternError as error:
                raise PatternError(f"{source}:{number}: {error}" if source else str(error)) from None
            if pattern is not None:
                self.patterns.append(pattern)
        self._runs = _runs(self.patterns)

    @classmethod
    def read(cls, path: Path) -> IgnoreFile:
        """Load ``path`` (a ``.gitignore``); unreadable files count as empty."""
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            lines = []
        return cls(path.parent, lines, path)

    def decide(self, path: Path | str, is_dir: bool) -> bool | None:
        """True if ignored, False if re-included by ``!``, None if no pattern matches.

        >>> from pathlib import Path
        >>> IgnoreFile(Path("/r"), ["*.log", "!keep.log"]).decide(Path("/r/a/keep.log"), False)
        False
        """
        text = _posix(str(path))
        if not text.startswith(self._prefix):
            return None
        return self.decide_relative(text[len(self._prefix):], is_dir)

    def decide_relative(self, relative: str, is_dir: bool) -> bool | None:
        """:meth:`decide` for a ``/``-separated path relative to ``base``."""
        # the last matching pattern decides: search the runs from the last one back
        for negated, for_directories, for_files in reversed(self._runs):
            regex = for_directories if is_dir else for_files
            if regex is not None and regex.match(relative):
                return not negated
        return None


def _runs(patterns: list[Pattern]) -> list[tuple[bool, re.Pattern[str] | None, re.Pattern[str] | None]]:
    """Consecutive patterns of the same polarity joined into one regex each:
    ``(negated, regex for directories, regex for files)``.

    Which pattern of a run matches never matters, only whether one does and which run
    is last; one alternation per run saves a Python call per pattern and path (a
    ``.gitignore`` of a hundred lines costs as much as one of a few).
    """
    return [(group[0].negated, _joined([p.regex for p in group]),
             _joined([p.regex for p in group if not p.directory_only]))
            for group in _groups(patterns)]


def _groups(patterns: list[Pattern]) -> list[list[Pattern]]:
    groups: list[list[Pattern]] = []
    for pattern in patterns:
        if groups and groups[-1][0].negated == pattern.negated:
            groups[-1].append(pattern)
        else:
            groups.append([pattern])
    return groups


def _joined(regexes: list[re.Pattern[str]]) -> re.Pattern[str] | None:
    if not regexes:
        return None
    return re.compile("|".join(f"(?:{regex.pattern})" for regex in regexes), re.DOTALL)


def _posix(path: str) -> str:
    return path if os.sep == "/" else path.replace(os.sep, "/")


def is_ignored(stack: list[IgnoreFile], path: Path | str, is_dir: bool) -> bool:
    """Deeper ignore files override shallower ones, as git does.

    >>> from pathlib import Path
    >>> stack = [IgnoreFile(Path("/r"), ["*.py"]), IgnoreFile(Path("/r/keep"), ["!*.py"])]
    >>> is_ignored(stack, "/r/keep/a.py", False), is_ignored(stack, "/r/b.py", False)
    (False, True)
    """
    for ignore_file in reversed(stack):
        verdict = ignore_file.decide(path, is_dir)
        if verdict is not None:
            return verdict
    return False
