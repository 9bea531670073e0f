"""Every code block of docs/runtime.md runs and prints what the page says.

The conventions are the docs test's (``tests/test_docs.py``): a ``python`` block runs statement
by statement, and a ``print`` line ending in ``# prints: TEXT`` must print TEXT; a ``console``
block runs each ``$ command`` with bash, and the lines under it are its
output (stdout and stderr together). Shown output matches with runs of whitespace counted as one
space and ``...`` standing for any text. Any other kind of block would be an example nobody
runs, so there must be none. Console commands run, as there, in a scratch copy of
``fixtures/``.

Where the project's docs test is present it runs these blocks already, so this one steps aside
rather than run every example twice.
"""
from __future__ import annotations

import ast
import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "runtime.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)
PRINTS = re.compile(r"#\s*prints:\s*(.*)$")


def blocks():
    text = PAGE.read_text(encoding="utf-8")
    return [pytest.param(m.group(1), m.group(2), id=f"line{text[:m.start()].count(chr(10)) + 1}")
            for m in FENCE.finditer(text)]


def matches(shown, actual):
    pieces = [re.escape(" ".join(piece.split())) for piece in " ".join(shown.split()).split("...")]
    return re.fullmatch(".*?".join(pieces), " ".join(actual.split()), re.DOTALL) is not None


def run_python(block):
    """Each statement's output, by its last line; runs in the repository root."""
    namespace, printed = {"__name__": "__main__"}, {}
    cwd = os.getcwd()
    try:
        os.chdir(ROOT)
        for node in ast.parse(block).body:
            output = io.StringIO()
            with contextlib.redirect_stdout(output):
                exec(compile(ast.Module([node], []), "<block>", "exec"), namespace)  # noqa: S102
            printed[node.end_lineno] = printed.get(node.end_lineno, "") + output.getvalue()
    finally:
        os.chdir(cwd)
    return printed


def console_steps(block):
    """(command, shown output) for each ``$ `` line of a console block."""
    steps = []
    for line in block.splitlines(keepends=True):
        if line.startswith("$ "):
            steps.append([line[2:].rstrip("\n"), ""])
        else:
            steps[-1][1] += line
    return steps


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    root = tmp_path_factory.mktemp("runtime-docs")
    shutil.copytree(ROOT / "fixtures", root / "fixtures")
    return root


@pytest.mark.parametrize("language, block", blocks())
def test_every_example_runs_and_prints_what_the_page_says(language, block, sandbox):
    assert language in ("python", "console"), f"a ```{language} block that no test runs"
    if (ROOT / "tests" / "test_docs.py").exists():
        pytest.skip("tests/test_docs.py runs every block of docs/runtime.md")
    pytest.importorskip("torch")
    if language == "python":
        printed = run_python(block)
        claims = {number: PRINTS.search(line).group(1)
                  for number, line in enumerate(block.splitlines(), 1) if PRINTS.search(line)}
        assert claims, "a python block that shows nothing it prints"
        for number, claim in claims.items():
            assert matches(claim, printed.get(number, "")), (number, printed.get(number))
        return
    environment = {**os.environ,
                   "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    for command, shown in console_steps(block):
        run = subprocess.run(["bash", "-c", command], cwd=sandbox, env=environment, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300,
                             check=False)
        assert matches(shown, run.stdout), f"$ {command}\n{run.stdout}"
