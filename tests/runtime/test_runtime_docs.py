"""Every code block of docs/runtime.md runs and prints exactly what the page says.

``pycon`` blocks run as doctests; ``console`` blocks run each ``$ command`` with bash from the
repository root and compare its output (stdout and stderr together) with the lines under it.
A block of any other kind would be an example nobody runs, so there must be none.
"""
from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "runtime.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks():
    text = PAGE.read_text(encoding="utf-8")
    return [pytest.param(m.group(1), m.group(2), id=f"line{text[:m.start()].count(chr(10)) + 1}")
            for m in FENCE.finditer(text)]


def console_steps(block):
    """(command, expected output) for each ``$ `` line of a console block."""
    steps = []
    for line in block.splitlines(keepends=True):
        if line.startswith("$ "):
            steps.append([line[2:].rstrip("\n"), ""])
        else:
            steps[-1][1] += line
    return steps


@pytest.mark.parametrize("language, block", blocks())
def test_every_example_runs_and_prints_what_the_page_says(language, block):
    assert language in ("pycon", "console"), f"a ```{language} block that no test runs"
    pytest.importorskip("torch")
    if language == "pycon":
        test = doctest.DocTestParser().get_doctest(block, {}, PAGE.name, str(PAGE), 0)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        cwd = os.getcwd()
        try:
            os.chdir(ROOT)
            runner.run(test)
        finally:
            os.chdir(cwd)
        assert runner.failures == 0 and runner.tries > 0
        return
    environment = {**os.environ,
                   "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    for command, expected in console_steps(block):
        run = subprocess.run(["bash", "-c", command], cwd=ROOT, env=environment, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300,
                             check=False)
        assert run.stdout == expected, f"$ {command}\n{run.stdout}"
