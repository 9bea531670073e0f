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
