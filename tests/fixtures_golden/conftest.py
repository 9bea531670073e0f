"""Shared helpers for the golden lint fixtures: discovery, `.expected` parsing, and running a
fixture with ``torch`` bound either to real PyTorch or to the reference engine ``gradcheck.ref``.

Test modules cannot import each other (``--import-mode=importlib``), so everything they share
is exposed here as pytest fixtures or through ``pytest_generate_tests``.
"""

from __future__ import annotations

import contextlib
import re
import runpy
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gradcheck.ref.alias import as_torch

FIXTURE_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "lint"
CODES = ("GC001", "GC002", "GC003", "GC004")
BACKENDS = ("ref", "torch")

_RUNNABLE_TRAIN = re.compile(r"^def train\([^)]*\) -> dict:", re.MULTILINE)
_EXPECTED_LINE = re.compile(r"^(\d+):(\d+) (GC\d{3})(?: (.*))?$")


@dataclass(frozen=True)
class ExpectedFinding:
    """One line of a `.expected` file: where, which code, and optionally the exact message."""

    line: int
    column: int
    code: str
    message: str | None = None

    @property
    def key(self) -> tuple[int, int, str]:
        return (self.line, self.column, self.code)

    def render(self) -> str:
        head = f"{self.line}:{self.column} {self.code}"
        return head if self.message is None else f"{head} {self.message}"


def fixture_paths() -> list[Path]:
    """Every fixture program, sorted by name."""
    return sorted(FIXTURE_DIR.glob("*.py"))


def expected_path(fixture: Path) -> Path:
    return fixture.with_suffix(".expected")


def parse_expected(text: str, where: str = "<expected>") -> list[ExpectedFinding]:
    """Parse `LINE:COL CODE [message]` lines; blank lines are ignored, anything else is an error."""
    out = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        match = _EXPECTED_LINE.match(raw.rstrip("\r"))
        if match is None:
            raise ValueError(
                f"{where}:{number}: {raw!r} is not `LINE:COL CODE [message]`; "
                "write it like `42:9 GC001`"
            )
        line, column, code, message = match.groups()
        out.append(ExpectedFinding(int(line), int(column), code, message))
    return out


def one_line(message: str) -> str:
    """Messages are stored on one line; a multi-line message keeps its breaks as a visible `\\n`."""
    return message.replace("\r\n", "\n").replace("\n", "\\n")


def is_runnable(fixture: Path) -> bool:
    """A runnable fixture defines `def train(...) -> dict` and calls it under `__main__`."""
    text = fixture.read_text(encoding="utf-8")
    return bool(_RUNNABLE_TRAIN.search(text)) and 'if __name__ == "__main__":' in text


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "golden_fixture" in metafunc.fixturenames:
        paths = fixture_paths()
        metafunc.parametrize("golden_fixture", paths, ids=[p.stem for p in paths])
    if "runnable_fixture" in metafunc.fixturenames:
        paths = [p for p in fixture_paths() if is_runnable(p)]
        metafunc.parametrize("runnable_fixture", paths, ids=[p.stem for p in paths])
    if "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", BACKENDS)


def run_fixture(fixture: Path | str, backend: str, **kwargs: Any) -> dict:
    """Execute a runnable fixture on `backend` ("ref" or "torch") and return `train(**kwargs)`.

    The module body and `train()` both run inside the binding, so imports made lazily inside
    `train()` see the same `torch`.
    """
    path = fixture if isinstance(fixture, Path) else FIXTURE_DIR / f"{fixture}.py"
    if backend == "torch":
        pytest.importorskip("torch")
        binding: contextlib.AbstractContextManager = contextlib.nullcontext()
    elif backend == "ref":
        binding = as_torch()
    else:
        raise ValueError(f"backend {backend!r} is unknown; use 'ref' or 'torch'")
    with binding as engine:
        namespace = runpy.run_path(str(path), run_name=f"gradcheck_fixture_{path.stem}")
        if engine is not None:
            assert namespace["torch"] is engine, f"{path.stem} did not get the engine as torch"
        observations = namespace["train"](**kwargs)
    assert isinstance(observations, dict), f"{path.stem}.train() must return a dict"
    return observations


@pytest.fixture
def run() -> Callable[..., dict]:
    """`run(name, backend, **kwargs)` -> the observations dict returned by the fixture's train()."""
    return run_fixture


@pytest.fixture(scope="session")
def golden() -> Any:
    """This module, so tests can reach the parsing helpers without importing a conftest."""
    return sys.modules[__name__]
