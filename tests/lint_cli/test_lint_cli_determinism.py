"""Same input, same output, byte for byte: whatever the hash seed, ``-j`` or cache state.

The corpus is ``fixtures/lint/`` (with ``wild/``), the golden fix cases and the issue's
OOM-tolerant loop. Each factor varies across the runs below (a Latin square rather than the
full product, to keep the cost to a few processes); every run must print exactly what the
first printed, on stdout (JSON findings with their fix edits, or the ``--diff`` of every
fix) and on stderr (warnings and summary).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# the reproduction, a fixture of its own
OOM_TOLERANT_LOOP = (Path(__file__).resolve().parents[2] / "fixtures" / "lint" / "shapes"
                     / "good_oom_tolerant_loop.py").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, kit):
    root = tmp_path_factory.mktemp("determinism")
    shutil.copytree(kit.FIXTURES, root / "lint")
    for case in sorted((kit.REPO / "tests" / "lint_cli" / "fix_cases").glob("*.before")):
        shutil.copy(case, root / f"{case.stem}.py")
    (root / "oom_tolerant.py").write_text(OOM_TOLERANT_LOOP, encoding="utf-8")
    return root


def _run(root, seed: int, jobs: int, cache: str | None, *args: str) -> tuple[bytes, bytes]:
    command = [sys.executable, "-c", "from gradcheck.cli import main; main()", "lint",
               "-j", str(jobs), *args, "."]
    if cache is None:
        command.insert(4, "--no-cache")
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    # NOTE: the cache lives at the project root; a pyproject.toml per cache state puts it there
    cwd = root if cache is None else root.parent / cache
    if cache is not None and not cwd.exists():
        shutil.copytree(root, cwd)
        (cwd / "pyproject.toml").write_text("[tool.gradcheck.lint]\n", encoding="utf-8")
    run = subprocess.run(command, cwd=cwd, env=env, capture_output=True, timeout=300, check=False)
    assert run.returncode in (1, 2), run.stderr.decode()
    return run.stdout, run.stderr.replace(str(cwd).encode(), b"<root>")


# (hash seed, -j, cache): None is --no-cache; the first run with a cache name writes it
# (cold), the later ones read it (warm, written under another seed and -j)
RUNS = [(0, 1, None), (1, 2, None), (2, 1, "cache"), (3, 2, "cache"), (4, 1, "cache")]


def test_json_findings_and_fixes_are_the_same_byte_for_byte(corpus):
    outputs = [_run(corpus, seed, jobs, cache, "--format", "json")
               for seed, jobs, cache in RUNS]
    first_stdout, first_stderr = outputs[0]
    assert first_stdout.count(b'"code": "GC0') > 40  # a real corpus of findings with fixes
    assert first_stdout.count(b'"edits"') > 20
    for (seed, jobs, cache), (stdout, stderr) in zip(RUNS[1:], outputs[1:]):
        assert stdout == first_stdout, f"PYTHONHASHSEED={seed} -j {jobs} cache={cache}"
        assert stderr == first_stderr, f"PYTHONHASHSEED={seed} -j {jobs} cache={cache}"


def test_unsafe_fix_diffs_are_the_same_byte_for_byte(corpus):
    runs = [(0, 1, None), (5, 2, None), (6, 2, "diff-cache"), (7, 1, "diff-cache")]
    outputs = [_run(corpus, seed, jobs, cache, "--diff", "--unsafe-fixes")
               for seed, jobs, cache in runs]
    assert outputs[0][0].count(b"\n+++ b/") > 20
    for (seed, jobs, cache), output in zip(runs[1:], outputs[1:]):
        assert output == outputs[0], f"PYTHONHASHSEED={seed} -j {jobs} cache={cache}"
