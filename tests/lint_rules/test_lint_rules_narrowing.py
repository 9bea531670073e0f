"""Hollowing out irrelevant functions before the analysis must never change a finding."""
import ast
from pathlib import Path

import pytest

import lint_rules.check as check_module
from lint_rules import check_source
from lint_rules.narrowing import hollow
from lint_rules.testing import rule_cases

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = sorted((ROOT / "fixtures").rglob("*.py"))


def _signature(findings):
    return [(f.line, f.column, f.code, f.pattern, f.message, f.fix) for f in findings]


def _without_narrowing(monkeypatch, source: str):
    with monkeypatch.context() as patch:
        patch.setattr(check_module, "hollow", lambda tree, text: None)
        return check_source(source, strict=True)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_fixture_findings_and_fixes_are_unchanged(path: Path, monkeypatch) -> None:
    source = path.read_text(encoding="utf-8")
    assert _signature(check_source(source, strict=True)) == _signature(
        _without_narrowing(monkeypatch, source))


def test_rule_examples_are_unchanged(monkeypatch) -> None:
    for case in rule_cases():
        code = case.example.code
        assert _signature(check_source(code, strict=True)) == _signature(
            _without_narrowing(monkeypatch, code)), case.id


HELPERS = '''\
import torch


def describe(model):
    """A long helper with nothing to do with training."""
    parts = []
    for name, module in model.named_children():
        parts.append(f"{name}: {module}")
    return "\\n".join(parts)
'''

LOOP = '''\
def train(model, optimizer, loader):
    for x, y in loader:
        loss = (model(x) - y).pow(2).mean()
        loss.backward()
        optimizer.step()
'''


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_positions_after_a_hollowed_helper_are_exact(newline: str) -> None:
    source = HELPERS + "\n\n" + LOOP
    source = source.replace("\n", newline)
    assert _hollowed_functions(source) == ["describe"]
    (finding,) = check_source(source)
    assert (finding.code, finding.line) == ("GC002", source.split(newline).index(
        "        optimizer.step()") + 1)
    assert finding.fix is not None
    fixed = finding.fix.apply(source)
    assert "optimizer.zero_grad()" in fixed and fixed.startswith(source[:200])


def test_tab_indented_and_decorated_bodies_stay_parseable() -> None:
    source = (
        "class Trainer:\n"
        "\tdef name(self):\n"
        "\t\t@staticmethod\n"
        "\t\tdef inner():\n"
        "\t\t\treturn 1\n"
        "\t\treturn 'x'\n"
        "\n"
        "\tdef fit(self, loader):\n"
        "\t\tfor batch in loader:\n"
        "\t\t\tself.model(batch).sum().backward()\n"
        "\t\t\tself.optimizer.step()\n"
    )
    assert _hollowed_functions(source) == ["name"]  # with the decorated function inside it
    assert [(f.line, f.code) for f in check_source(source)] == [(11, "GC002")]


def _hollowed_functions(source: str) -> list[str]:
    """Names of the functions whose body ``hollow`` replaced by ``...``."""
    tree = ast.parse(source)
    before = {id(n): n.body for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    hollow(tree, source)
    return [n.name for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef) and n.body is not before[id(n)]]
