"""The public API the CLI builds on: check_source, RULES, rule_by_code_or_name."""
from __future__ import annotations

import inspect
import re

import pytest

import lint_rules
from lint_rules import RULES, LintSyntaxError, check_source, rule_by_code_or_name

BUGGY = (
    "import torch\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "\n"
    "def once(loss):\n"
    "    inner = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    loss.backward()\n"
    "    inner.zero_grad()\n"
    "    inner.step()\n"
    "\n"
    "total = 0\n"
    "for x in data:\n"
    "    loss = model(x)\n"
    "    loss.backward()\n"
    "    opt.step()\n"
    "    total += loss\n"
)


def test_findings_are_sorted_and_carry_the_contract_fields() -> None:
    findings = check_source(BUGGY, "train.py")
    assert [(f.line, f.code) for f in findings] == [(7, "GC001"), (14, "GC002"), (15, "GC004")]
    assert findings == sorted(findings, key=lambda f: (f.line, f.column))
    gc002 = findings[1]
    assert (gc002.column, gc002.end_line, gc002.end_column) == (5, 14, 15)
    assert gc002.rule == "missing-zero-grad" and gc002.severity == "error"
    assert "`opt.step()` (line 14)" in gc002.message and "line 13" in gc002.message


def test_select_limits_the_rules_by_code_or_name() -> None:
    assert [f.code for f in check_source(BUGGY, select={"GC002"})] == ["GC002"]
    assert [f.code for f in check_source(BUGGY, select=["loss-accumulated-with-graph"])] == ["GC004"]
    assert check_source(BUGGY, select=set()) == []


@pytest.mark.parametrize(
    "source, line",
    [("for x in y\n    loss.backward()\n    opt.step()\n", 1), ("loss.backward()\nopt.step(\n", 2),
     ("loss.backward()\n\x00opt.step()\n", 1)],
)
def test_unparsable_source_raises_lint_syntax_error_with_a_position(source: str, line: int) -> None:
    with pytest.raises(LintSyntaxError) as info:
        check_source(source, "bad.py")
    assert info.value.line == line and info.value.column >= 1
    assert "bad.py" in info.value.message


@pytest.mark.parametrize("depth", [201, 5000])
def test_brackets_nested_deeper_than_python_allows_are_a_syntax_error(depth: int) -> None:
    # Thousands of nested brackets would overflow the native parser's stack.
    source = f"for x in y:\n    loss = {'(' * depth}x{')' * depth}\n    loss.backward()\n    opt.step()\n"
    with pytest.raises(LintSyntaxError) as info:
        check_source(source, "deep.py", strict=True)
    assert info.value.line == 2 and "nested" in info.value.message


def test_deep_but_valid_nesting_is_linted_or_reported_without_crashing() -> None:
    brackets = f"    loss = {'(' * 150}x{')' * 150}\n"
    unary = f"    loss = {'-' * 600}x\n"
    tail = "    loss.backward()\n    opt.step()\n"
    assert [f.code for f in check_source("for x in y:\n" + brackets + tail, strict=True)] == ["GC002"]
    # Too deep for libcst to compute positions at the default recursion limit: then no
    # findings, but never an exception, even when strict.
    codes = [f.code for f in check_source("for x in y:\n" + unary + tail, strict=True)]
    assert codes in (["GC000"], ["GC002"])


def test_source_without_trigger_words_is_skipped_without_parsing() -> None:
    # Not valid Python, but the prefilter answers first, so nothing is parsed.
    assert check_source("def broken(:\n    return model(x)\n") == []


def test_an_internal_error_is_gc000_unless_strict(monkeypatch) -> None:
    import lint_rules.check as check_module

    def explode(*args, **kwargs):
        raise ZeroDivisionError("analysis bug")

    monkeypatch.setattr(check_module, "analyse", explode)
    monkeypatch.delenv(check_module.STRICT_ENV, raising=False)
    assert [f.code for f in check_source(BUGGY)] == ["GC000"]
    with pytest.raises(ZeroDivisionError):
        check_source(BUGGY, strict=True)
    monkeypatch.setenv(check_module.STRICT_ENV, "1")
    with pytest.raises(ZeroDivisionError):
        check_source(BUGGY)


def test_rule_lookup_by_code_or_name() -> None:
    assert rule_by_code_or_name("GC003").NAME == "zero-grad-outside-loop"
    assert rule_by_code_or_name("zero-grad-between-backward-and-step").CODE == "GC001"
    with pytest.raises(KeyError, match="GC999.*known rules: GC001"):
        rule_by_code_or_name("GC999")


def test_rules_carry_codes_names_docs_and_fix_safety() -> None:
    assert [r.CODE for r in RULES] == ["GC001", "GC002", "GC003", "GC004"]
    for rule in RULES:
        assert re.fullmatch(r"[a-z]+(-[a-z]+)+", rule.NAME)
        assert rule.MESSAGE and rule.FIX_SAFETY in ("safe", "unsafe", "mixed", "none")
        doc = inspect.cleandoc(rule.__doc__)
        headings = re.findall(r"^## (.+)$", doc, flags=re.MULTILINE)
        assert headings == ["What it does", "Why is this bad?", "Known problems", "Precision",
                            "Example", "Use instead", "Fix safety"], rule.CODE
        # CodeQL states a query's precision; a rule states its own, measured on held-out code
        precision = doc.split("## Precision", 1)[1].split("##", 1)[0]
        assert re.search(r"\d+ real bugs? and (\d+|no) false alarms?|\d+%", precision), rule.CODE


def test_the_package_does_not_import_heavy_or_gradcheck_modules() -> None:
    import subprocess
    import sys

    code = (
        "import sys, lint_rules; "
        "bad = [m for m in ('gradcheck', 'numpy', 'torch', 'libcst') if m in sys.modules]; "
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert lint_rules.__all__


@pytest.mark.parametrize(
    "module",
    ["lint_rules", "lint_rules.check", "lint_rules.source", "lint_rules.events",
     "lint_rules.summaries", "lint_rules.rules", "lint_rules.testing", "lint_rules.docs",
     "lint_rules.syntax", "lint_rules.rebinding"],
)
def test_docstring_examples_run(module: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0 and result.attempted >= 1


def test_a_form_in_preview_reports_only_when_preview_is_selected() -> None:
    from lint_rules.rules.gc004_loss_accumulated_with_graph import LossAccumulatedWithGraph

    assert LossAccumulatedWithGraph.PREVIEW == frozenset({"append"})
    source = ("outputs, total = [], 0\nfor x in loader:\n    opt.zero_grad()\n    loss = model(x)\n"
              "    loss.backward()\n    opt.step()\n    outputs.append({'loss': loss})\n")
    assert check_source(source) == []
    assert check_source(source, select=["GC004"]) == []
    assert [f.pattern for f in check_source(source, select=["GC004", "PREVIEW"])] == ["append"]
    summed = source.replace("outputs.append({'loss': loss})", "total += loss")
    assert [(f.code, f.pattern) for f in check_source(summed)] == [("GC004", "sum")]


def test_gradients_handed_over_by_reference_report_only_with_preview() -> None:
    # `alias` held 2 real bugs against 6 false alarms on held-out code (A3C workers written
    # for torch 1, where `zero_grad()` zeroed the handed-over tensors in place)
    from lint_rules.rules.gc002_missing_zero_grad import MissingZeroGrad

    assert "alias" in MissingZeroGrad.PREVIEW
    source = ("import torch\n\n\ndef work(shared, local, optimizer, batches):\n"
              "    for x, y in batches:\n"
              "        optimizer.zero_grad()\n"
              "        torch.nn.functional.mse_loss(local(x), y).backward()\n"
              "        for sp, lp in zip(shared.parameters(), local.parameters()):\n"
              "            sp._grad = lp.grad\n"
              "        optimizer.step()\n")
    assert check_source(source) == []
    assert [(f.code, f.pattern) for f in check_source(source, select=["GC002", "PREVIEW"])] == \
        [("GC002", "alias")]
