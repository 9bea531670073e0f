"""The gitignore matcher agrees with ``git check-ignore`` on the same patterns and paths."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradcheck.lint.gitignore import IgnoreFile, compile_pattern

PATTERNS = [
    "*.log", "!keep.log", "build/", "/top_only.py", "docs/**/generated", "a/**", "**/cache",
    "x[0-9].py", "# a comment", "\\#hash.py", "trailing.py   ", "nested/dir/file.py", "tmp*/",
    "*.ipynb_checkpoints", "weird?name.py",
]
PATHS = [
    ("debug.log", False), ("src/debug.log", False), ("keep.log", False), ("src/keep.log", False),
    ("build", True), ("src/build", True), ("lib/build", False), ("top_only.py", False),
    ("src/top_only.py", False), ("docs/generated", True), ("docs/x/y/generated", True),
    ("a/b.py", False), ("cache", True), ("deep/er/cache", True), ("x1.py", False),
    ("xa.py", False), ("#hash.py", False), ("trailing.py", False), ("nested/dir/file.py", False),
    ("other/nested/dir/file.py", False), ("tmp1", True), ("tmp2", False),
    ("weirdXname.py", False), ("weird/name.py", False), ("plain.py", False),
]


def _ours(root: Path, relative: str, is_dir: bool) -> bool:
    ignore_file = IgnoreFile(root, PATTERNS)
    path = root / relative
    # git ignores a path when it or any parent directory is ignored
    parents = [p for p in reversed(path.relative_to(root).parents) if str(p) != "."]
    if any(ignore_file.decide(root / parent, True) for parent in parents):
        return True
    return bool(ignore_file.decide(path, is_dir))


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_matches_git_check_ignore(tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".gitignore").write_text("\n".join(PATTERNS) + "\n")
    for relative, is_dir in PATHS:
        target = tmp_path / relative
        if is_dir:
            target.mkdir(parents=True, exist_ok=True)
    queries = [relative + ("/" if is_dir else "") for relative, is_dir in PATHS]
    out = subprocess.run(["git", "check-ignore", "--no-index", "-v", "-n", "--stdin"],
                         cwd=tmp_path, input="\n".join(queries) + "\n", capture_output=True,
                         text=True, check=False)
    git_says = {}
    for line in out.stdout.splitlines():
        source, path = line.split("\t")
        git_says[path.rstrip("/")] = bool(source.strip(":")) and not source.split(":")[2].startswith("!")
    for relative, is_dir in PATHS:
        assert _ours(tmp_path, relative, is_dir) == git_says[relative], relative


def test_comments_and_blank_lines_are_not_patterns():
    assert compile_pattern("# comment") is None
    assert compile_pattern("   ") is None
    assert compile_pattern("\\#not-a-comment") is not None


def _last_match(ignore_file: IgnoreFile, relative: str, is_dir: bool) -> bool | None:
    """git's rule read literally: the last pattern that matches decides."""
    verdict = None
    for pattern in ignore_file.patterns:
        if (is_dir or not pattern.directory_only) and pattern.regex.match(relative):
            verdict = not pattern.negated
    return verdict


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.sampled_from(PATTERNS + ["!*.py", "!build/", "*", "!a", "b/", "**"]),
                      max_size=8),
       parts=st.lists(st.sampled_from(["a", "b", "build", "x1.py", "keep.log", "cache",
                                       "top_only.py", "docs", "generated"]),
                      min_size=1, max_size=4),
       is_dir=st.booleans())
def test_joined_pattern_runs_decide_as_the_last_matching_pattern(lines, parts, is_dir):
    ignore_file = IgnoreFile(Path("/r"), lines)
    relative = "/".join(parts)
    assert ignore_file.decide("/r/" + relative, is_dir) == _last_match(ignore_file, relative,
                                                                       is_dir)
