"""A content-hash cache of lint results in ``.gradcheck_cache/``.

An entry is keyed by the file's bytes, its kind (Python or notebook) and the rules that
run on it; the cache file itself is named after the gradcheck version and a fingerprint
of the rule sources, so upgrading or editing the rules starts a fresh cache.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from lint_rules.finding import Edit, Finding, Fix

CACHE_DIR = ".gradcheck_cache"
_MAX_ENTRIES = 200_000
# NOTE: SHA-256, not BLAKE2: CPUs with SHA instructions hash twice as fast with it, and
# every file of a run is hashed (46 MB for torch's sources). Part of the cache's name.
_KEY_FORMAT = "sha256-128"


def rules_fingerprint() -> str:
    """The gradcheck version plus the size and mtime of every rule source file."""
    import lint_rules
    from gradcheck import __version__

    parts = [__version__, _KEY_FORMAT]
    root = Path(lint_rules.__file__).parent
    for dirpath, _, names in sorted(os.walk(root)):
        for name in sorted(names):
            if name.endswith(".py"):
                stat = os.stat(os.path.join(dirpath, name))
                parts.append(f"{name}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.blake2b("|".join(parts).encode(), digest_size=8).hexdigest()


def entry_key(data: bytes, notebook: bool, codes: frozenset[str], explicit: bool = False,
              root: str = "") -> str:
    """The cache key of one file's bytes under one rule selection.

    ``explicit`` files (named on the command line) are also checked for syntax errors
    the directory walk skips, so their results are stored apart. ``root`` is the current
    directory when it holds the file: imports are resolved from there too.

    >>> entry_key(b"x", False, frozenset({"GC001"})) == entry_key(b"x", True, frozenset({"GC001"}))
    False
    """
    digest = hashlib.sha256(data)
    digest.update(b"\0ipynb\0" if notebook else b"\0py\0")
    digest.update(",".join(sorted(codes)).encode())
    if explicit:
        digest.update(b"\0explicit\0")
    if root:
        digest.update(b"\0root\0" + root.encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:32]


def finding_to_dict(finding: Finding) -> dict[str, Any]:
    """A JSON-able form of ``finding`` (inverse of :func:`finding_from_dict`).

    >>> from lint_rules.finding import Finding
    >>> f = Finding(1, 2, "GC002", "missing-zero-grad", "m")
    >>> finding_from_dict(finding_to_dict(f)) == f
    True
    """
    fix = finding.fix
    return {
        "line": finding.line, "column": finding.column, "code": finding.code,
        "rule": finding.rule, "message": finding.message, "end_line": finding.end_line,
        "end_column": finding.end_column, "severity": finding.severity, "pattern": finding.pattern,
        "fix": None if fix is None else {
            "description": fix.description, "safe": fix.safe,
            "edits": [[e.start, e.end, e.replacement] for e in fix.edits],
        },
    }


def finding_from_dict(data: dict[str, Any]) -> Finding:
    """Rebuild a :class:`Finding` stored by :func:`finding_to_dict`."""
    fix = data["fix"]
    return Finding(
        line=data["line"], column=data["column"], code=data["code"], rule=data["rule"],
        message=data["message"], end_line=data["end_line"], end_column=data["end_column"],
        severity=data["severity"], pattern=data.get("pattern", ""),
        fix=None if fix is None else Fix(
            fix["description"], tuple(Edit(*e) for e in fix["edits"]), fix["safe"]),
    )


class Cache:
    """Load once, look up per file, save once (atomically) at the end of a run."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / f"lint-{rules_fingerprint()}.json"
        self.directory = directory
        self._dirty = False
        try:
            self._entries: dict[str, Any] = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self._entries = {}

    def get(self, key: str) -> Any | None:
        """The stored value for ``key``, or None."""
        return self._entries.get(key)

    def put(self, key: str, value: Any) -> None:
        """Remember ``value`` (JSON-able) for ``key``."""
        if self._entries.get(key) != value:
            self._entries[key] = value
            self._dirty = True

    def save(self) -> None:
        """Write the cache; failures (read-only trees) are ignored, as ruff does."""
        if not self._dirty:
            return
        if len(self._entries) > _MAX_ENTRIES:
            self._entries = dict(list(self._entries.items())[-_MAX_ENTRIES:])
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            marker = self.directory / ".gitignore"
            if not marker.exists():
                marker.write_text("# created by gradcheck\n*\n", encoding="utf-8")
            import tempfile  # only when something changed: it costs a few ms to import

            handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(self._entries, out, separators=(",", ":"))
            os.replace(temporary, self.path)
        except OSError:
            return
