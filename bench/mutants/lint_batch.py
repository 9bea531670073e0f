"""Lint many source texts in one run of ``gradcheck lint``: one file per text in a temp dir.

One process start and one worker pool for thousands of files keeps a full harness run to
minutes. Each text gets a directory of its own and keeps its original file name, so a
rule that looks at the name (``test_*.py``) sees what it would see in the repository.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path


def lint_texts(texts: dict[str, tuple[str, str]], jobs: int | None = None,
               preview: bool = True) -> dict[str, list[dict]]:
    """Findings per key for ``{key: (file name, source)}``; keys must be path-safe. With
    ``preview`` (the default, so that a chosen original is silent under every form) the
    forms still in preview are reported too."""
    with tempfile.TemporaryDirectory(prefix="gradcheck-mutants-") as tmp:
        root = Path(tmp)
        where: dict[str, str] = {}
        for key, (name, source) in texts.items():
            folder = root / key
            folder.mkdir()
            (folder / name).write_text(source, encoding="utf-8")
            where[f"{key}/{name}"] = key
        command = [sys.executable, "-m", "gradcheck", "lint", "--format", "json", "--no-cache",
                   "--exit-zero", "--quiet", "."]
        if jobs:
            command[4:4] = ["--jobs", str(jobs)]
        if preview:
            command.insert(4, "--preview")
        run = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
        if run.returncode not in (0, 1, 2) or not run.stdout.strip().startswith("["):
            raise SystemExit(f"gradcheck lint failed (exit {run.returncode}):\n{run.stderr[-2000:]}")
        found: dict[str, list[dict]] = {key: [] for key in texts}
        for finding in json.loads(run.stdout):
            found[where[finding["path"].removeprefix("./")]].append(finding)
        return found
