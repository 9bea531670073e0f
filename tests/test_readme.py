"""The README's two opening commands are the contract with a new user and with CI."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _opening_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```(?:bash|sh|console)?\n(.*?)```", text, flags=re.S)
    return [block.strip() for block in blocks[:2]]


def test_readme_opens_with_install_and_lint_then_install_and_test():
    install_and_lint, install_and_test = _opening_commands()
    assert install_and_lint.startswith("pip install") and "gradcheck lint fixtures/" in install_and_lint
    assert install_and_test.startswith("pip install") and "pytest" in install_and_test


def test_ci_runs_exactly_the_readme_test_command():
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert _opening_commands()[1] in ci_lines


def test_ci_fails_fast_on_errors():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "set -euo pipefail" in ci


def test_main_job_reports_exactly_the_golden_findings():
    """`gradcheck lint fixtures/` (the README's first command) reports every expected finding."""
    import subprocess
    import sys

    expected = set()
    for path in sorted((ROOT / "fixtures").rglob("*.expected")):
        source = path.with_suffix(".py").relative_to(ROOT).as_posix()
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                position, code = line.split()[:2]
                expected.add(f"{source}:{position}: {code}")
    run = subprocess.run(
        [sys.executable, "-m", "gradcheck", "lint", "--no-cache", "fixtures/"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 1, run.stderr
    reported = {" ".join(line.split()[:2]) for line in run.stdout.splitlines() if line}
    assert reported == expected
