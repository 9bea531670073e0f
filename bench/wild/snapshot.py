"""Source files out of a git snapshot: one pinned commit, written under a directory.

Snapshots may lack large blobs (and Git LFS content), which makes ``git archive`` fail for
the whole commit, so blobs are read one by one with ``git cat-file --batch``: a blob that
is absent is counted and skipped, never fatal.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

SUFFIXES = (".py", ".ipynb")
SYMLINK_MODE = "120000"


def mirror_git_dir(mirror: Path, checkout_name: str) -> Path:
    """The git directory of ``MIRROR/<owner>+<name>/repo`` (bare, or a work tree's .git)."""
    base = mirror / checkout_name / "repo"
    return base / ".git" if (base / ".git").is_dir() else base


def source_blobs(git_dir: Path, commit: str) -> list[tuple[str, str]]:
    """``(blob sha, path)`` of every ``.py``/``.ipynb`` file of ``commit``, symlinks left out."""
    listing = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-z", "--full-tree", commit],
        capture_output=True, text=True, check=True,
    ).stdout
    blobs = []
    for entry in filter(None, listing.split("\0")):
        meta, path = entry.split("\t", 1)
        mode, kind, sha = meta.split()
        if kind == "blob" and mode != SYMLINK_MODE and path.endswith(SUFFIXES) and _safe(path):
            blobs.append((sha, path))
    return blobs


def _safe(path: str) -> bool:
    parts = path.split("/")
    return not path.startswith("/") and ".." not in parts and ".git" not in parts


def extract(git_dir: Path, commit: str, target: Path) -> tuple[int, int]:
    """Write the source files of ``commit`` under ``target``; return (written, absent)."""
    blobs = source_blobs(git_dir, commit)
    request = "".join(f"{sha}\n" for sha, _ in blobs).encode()
    output = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
                            input=request, capture_output=True, check=True).stdout
    target.mkdir(parents=True, exist_ok=True)
    written = absent = offset = 0
    for _, path in blobs:
        # Each answer is "<sha> blob <size>\n<content>\n", or "<sha> missing\n".
        header_end = output.index(b"\n", offset)
        header = output[offset:header_end].split()
        offset = header_end + 1
        if header[-1] == b"missing":
            absent += 1
            continue
        size = int(header[2])
        destination = target / path
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(output[offset:offset + size])
        offset += size + 1
        written += 1
    return written, absent
