"""Helpers for the ``gradcheck lint`` front-end tests: run the CLI, write small projects."""
from __future__ import annotations

import inspect
import os
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

import lint_rules
from lint_rules.finding import Edit, Finding, Fix, LintSyntaxError

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "lint"

# Small programs on which the real rules agree with the bug shapes.
MISSING_ZERO_GRAD = textwrap.dedent(
    """\
    import torch

    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(10)]

    for x, y in data:
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
    """
)
CLEAN_LOOP = MISSING_ZERO_GRAD.replace(
    "    loss.backward()\n", "    optimizer.zero_grad()\n    loss.backward()\n"
)
ZERO_BETWEEN = MISSING_ZERO_GRAD.replace(
    "    optimizer.step()\n", "    optimizer.zero_grad()\n    optimizer.step()\n"
)
STEP_LINE = MISSING_ZERO_GRAD.splitlines().index("    optimizer.step()") + 1
ZERO_LINE = ZERO_BETWEEN.splitlines().index("    optimizer.zero_grad()") + 1


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str


def run_cli(args: list[str], input: bytes | str | None = None) -> Run:
    """Invoke ``gradcheck`` in-process with click's CliRunner (stdout and stderr apart)."""
    from gradcheck.cli import main

    if "mix_stderr" in inspect.signature(CliRunner.__init__).parameters:
        runner = CliRunner(mix_stderr=False)
    else:  # click >= 8.2 always keeps stderr apart
        runner = CliRunner()
    result = runner.invoke(main, args, input=input, catch_exceptions=False)
    return Run(result.exit_code, result.stdout, result.stderr)


def run_subprocess(args: list[str], cwd: Path, input: bytes | None = None,
                   env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``gradcheck`` as a real process (the module has no ``__main__`` guard)."""
    command = [sys.executable, "-c", "from gradcheck.cli import main; main()", *args]
    return subprocess.run(command, cwd=cwd, input=input, capture_output=True, timeout=120,
                          env={**os.environ, **(env or {})}, check=False)


def _drop_file_permission_override() -> None:
    """In a child about to exec: give up root's CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, in
    the bounding set too (root regains every capability in it at exec), so file modes apply
    to this root process as they do to any user."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    pr_capbset_drop, cap_dac_override, cap_dac_read_search = 24, 1, 2
    for capability in (cap_dac_override, cap_dac_read_search):
        if libc.prctl(pr_capbset_drop, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()  # _LINUX_CAPABILITY_VERSION_3
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    keep = ~((1 << cap_dac_override) | (1 << cap_dac_read_search)) & 0xFFFFFFFF
    data[0].effective &= keep
    data[0].permitted &= keep
    data[0].inheritable &= keep
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def run_where_modes_apply(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run ``gradcheck`` in a process that file modes bind: as is for an ordinary user; for
    root (tests run as root in CI), without the capabilities that let root ignore them.
    Skips when neither is possible (root on a platform without Linux capabilities)."""
    if os.geteuid() != 0:
        return run_subprocess(args, cwd)
    if not sys.platform.startswith("linux"):
        pytest.skip("root ignores file modes here and cannot give that up")
    command = [sys.executable, "-c", "from gradcheck.cli import main; main()", *args]
    try:
        return subprocess.run(command, cwd=cwd, capture_output=True, timeout=120, check=False,
                              preexec_fn=_drop_file_permission_override)
    except subprocess.SubprocessError as error:  # the capability calls were refused
        pytest.skip(f"cannot drop root's file-permission override here: {error}")


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    """Create ``files`` (relative path -> text or bytes) under ``root``."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8", newline="")
    return root


def expected_findings(stem: str) -> list[tuple[int, int, str]]:
    """``(line, column, code)`` from a fixture's golden ``.expected`` file."""
    rows = []
    for line in (FIXTURES / f"{stem}.expected").read_text(encoding="utf-8").splitlines():
        if line.strip():
            position, code = line.split()[:2]
            row, column = position.split(":")
            rows.append((int(row), int(column), code))
    return rows


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project directory that is also the working directory."""
    root = tmp_path / "project"
    root.mkdir()
    monkeypatch.chdir(root)
    return root


class FakeRule:
    """Stands in for a rule class in tests that need behaviour the real rules never show."""

    def __init__(self, code: str, name: str) -> None:
        self.CODE, self.NAME, self.MESSAGE = code, name, f"fake {name}"
        self.__doc__ = f"## What it does\nFake rule {name}."
        self.FIX_SAFETY = "unsafe"


@pytest.fixture
def fake_rules(monkeypatch: pytest.MonkeyPatch):
    """Replace the rules with one that flags every ``BUG`` word with an unsafe fix to ``OK``,
    raises for ``CRASH``, kills its process with SIGSEGV for ``SEGV`` and reports a syntax error for ``SYNTAX``."""
    calls: list[str] = []

    def check_source(source: str, path: str = "<string>", *, select=None, **_) -> list[Finding]:
        calls.append(path)
        if "CRASH" in source:
            raise RuntimeError("boom")
        if "SEGV" in source:  # what libcst's native parser does on some hostile input
            os.kill(os.getpid(), signal.SIGSEGV)
        if "SYNTAX" in source:
            raise LintSyntaxError("invalid syntax", 1, source.index("SYNTAX") + 1)
        findings = []
        start = source.find("BUG")
        while start != -1:
            line = source.count("\n", 0, start) + 1
            column = start - (source.rfind("\n", 0, start) + 1) + 1
            fix = Fix("replace BUG with OK", (Edit(start, start + 3, "OK"),), safe=False)
            findings.append(Finding(line, column, "GC009", "fake-bug", "a fake bug", line,
                                    column + 3, fix=fix))
            start = source.find("BUG", start + 3)
        return [f for f in findings if select is None or f.code in select]

    monkeypatch.setattr(lint_rules, "check_source", check_source, raising=False)
    monkeypatch.setattr(lint_rules, "RULES", (FakeRule("GC009", "fake-bug"),), raising=False)
    monkeypatch.setattr("lint_rules.prefilter.could_have_findings", lambda source: True)
    monkeypatch.setattr("lint_rules.prefilter.could_have_findings_in_bytes", lambda data: True)
    return calls


class Kit:
    """The helpers above, handed to tests as the ``kit`` fixture (test files cannot import
    each other or this conftest under ``--import-mode=importlib``)."""

    REPO = REPO
    FIXTURES = FIXTURES
    MISSING_ZERO_GRAD = MISSING_ZERO_GRAD
    CLEAN_LOOP = CLEAN_LOOP
    ZERO_BETWEEN = ZERO_BETWEEN
    STEP_LINE = STEP_LINE
    ZERO_LINE = ZERO_LINE
    run_cli = staticmethod(run_cli)
    run_subprocess = staticmethod(run_subprocess)
    run_where_modes_apply = staticmethod(run_where_modes_apply)
    write = staticmethod(write)
    expected_findings = staticmethod(expected_findings)


@pytest.fixture(scope="session")
def kit() -> type[Kit]:
    return Kit
