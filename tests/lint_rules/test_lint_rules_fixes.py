"""Fixes are exact text edits: they keep CRLF, tabs, BOM offsets and every untouched byte,
and the fixed source lints clean for the fixed rule."""
from __future__ import annotations

from pathlib import Path

import pytest

from lint_rules import EVERY_FORM, check_source
from lint_rules.testing import apply_fixes, rule_cases

FIXABLE = [c for c in rule_cases() if getattr(c.example, "expected_fixed", None)]
# Fixes that move or insert whole lines (the others rewrite a line that holds `a; b`; their
# own tests are in test_lint_rules_shared_line.py).
WHOLE_LINE = [c for c in FIXABLE if ";" not in c.example.code]
GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "lint"


def _fixed(source: str, code: str) -> str:
    return apply_fixes(source, [f for f in check_source(source, strict=True, select=EVERY_FORM) if f.code == code])


def _tabs(text: str) -> str:
    out = []
    for line in text.splitlines(keepends=True):
        body = line.lstrip(" ")
        out.append("\t" * ((len(line) - len(body)) // 4) + body)
    return "".join(out)


@pytest.mark.parametrize("case", FIXABLE, ids=[c.id for c in FIXABLE])
@pytest.mark.parametrize(
    "variant",
    [
        pytest.param(lambda s: s.replace("\r\n", "\n").replace("\n", "\r\n"), id="crlf"),
        pytest.param(lambda s: _tabs(s.replace("\r\n", "\n")), id="tabs"),
        pytest.param(lambda s: s.replace("\r\n", "\n"), id="lf"),
    ],
)
def test_fix_keeps_line_endings_and_indentation(case, variant) -> None:
    source, expected = variant(case.example.code), variant(case.example.expected_fixed)
    assert _fixed(source, case.rule.CODE) == expected


@pytest.mark.parametrize("case", FIXABLE, ids=[c.id for c in FIXABLE])
def test_fix_offsets_count_a_leading_bom(case) -> None:
    source = "\ufeff" + case.example.code
    findings = [f for f in check_source(source, strict=True, select=EVERY_FORM) if f.code == case.rule.CODE]
    assert [f.line for f in findings] == list(case.example.expected_lines)
    assert apply_fixes(source, findings) == "\ufeff" + case.example.expected_fixed


@pytest.mark.parametrize("case", WHOLE_LINE, ids=[c.id for c in WHOLE_LINE])
def test_fix_moves_lines_with_their_trailing_whitespace(case) -> None:
    source = "".join(line.rstrip("\r\n") + "  \t" + line[len(line.rstrip("\r\n")):]
                     for line in case.example.code.splitlines(keepends=True))
    fixed = _fixed(source, case.rule.CODE)
    assert not [f for f in check_source(fixed, strict=True, select=EVERY_FORM) if f.code == case.rule.CODE]
    before = sorted(line.strip() for line in source.splitlines())
    after = sorted(line.strip() for line in fixed.splitlines())
    # a move keeps the same statements, maybe re-indented (unless it swaps the receiver)
    if case.rule.CODE in ("GC001", "GC003") and "model.zero_grad()" not in source:
        assert before == after
    # every original line that was not edited survives byte for byte, trailing blanks included
    kept = [line for line in source.splitlines() if "zero_grad" not in line and "p.grad" not in line
            and "+=" not in line and "total =" not in line and "for p in" not in line
            and "for opt in" not in line]  # a moved `for` that resets is re-indented
    for line in kept:
        assert line in fixed.splitlines()


def test_straight_line_fix_is_safe_and_loop_carried_fix_is_not() -> None:
    straight = "loss.backward()\noptimizer.zero_grad()\noptimizer.step()\n"
    carried = ("for i, x in enumerate(data):\n    optimizer.zero_grad()\n    model(x).backward()\n"
               "    if i % 4 == 0:\n        optimizer.step()\n")
    assert check_source(straight, select=EVERY_FORM)[0].fix.safe is True
    assert check_source(carried, select=EVERY_FORM)[0].fix.safe is False


def test_a_zero_sharing_its_line_moves_within_that_line() -> None:
    source = "loss.backward(); optimizer.zero_grad(); optimizer.step()\n"
    (finding,) = check_source(source, select=EVERY_FORM)
    assert finding.code == "GC001" and finding.fix is not None
    assert finding.fix.apply(source) == "loss.backward(); optimizer.step(); optimizer.zero_grad()\n"


@pytest.mark.skipif(not GOLDEN.is_dir(), reason="golden fixtures not present")
def test_fixing_every_bad_golden_fixture_lints_clean() -> None:
    fixed_any = 0
    for path in sorted(GOLDEN.glob("bad_*.py")):
        source = path.read_text(encoding="utf-8")
        findings = check_source(source, path.name, strict=True, select=EVERY_FORM)
        assert findings, path.name
        fixable = [f for f in findings if f.fix is not None]
        fixed = apply_fixes(source, fixable)
        compile(fixed, path.name, "exec")
        left = {(f.code, f.line) for f in check_source(fixed, path.name, strict=True, select=EVERY_FORM)}
        unfixed = {(f.code, f.line) for f in findings if f.fix is None}
        assert len(left) <= len(unfixed), f"{path.name}: {left} remain after fixing"
        fixed_any += bool(fixable)
    assert fixed_any >= 20


@pytest.mark.parametrize("word", ["é", "🙂", "日本語", "e\u0301", "plain"])
def test_columns_and_fixes_count_characters_not_utf8_bytes(word: str) -> None:
    # Non-ASCII text earlier on the same line: columns are in characters and the fix lands
    # right after `loss`, whatever the UTF-8 width of what precedes it.
    line = f"    note = '{word}'; running_loss += loss  # {word}\n"
    source = "for x, y in loader:\n    loss = criterion(model(x), y)\n    loss.backward()\n" + line
    (finding,) = [f for f in check_source(source, strict=True, select=EVERY_FORM) if f.code == "GC004"]
    assert (finding.line, finding.column) == (4, line.index("running_loss") + 1)
    assert finding.end_column == line.index("  #") + 1
    fixed = apply_fixes(source, [finding])
    assert fixed.splitlines()[3] == f"    note = '{word}'; running_loss += loss.detach()  # {word}"


@pytest.mark.parametrize("word", ["é", "🙂", "日本語"])
def test_a_fix_after_a_non_ascii_line_keeps_every_other_character(word: str) -> None:
    source = (f"for x, y in loader:  # {word}\n    loss = criterion(model(x), y)  # {word}\n"
              f"    loss.backward(); print('{word}')\n    optimizer.step()  # {word}{word}\n")
    (finding,) = [f for f in check_source(source, strict=True, select=EVERY_FORM) if f.code == "GC002"]
    assert (finding.line, finding.column, finding.end_column) == (4, 5, 21)
    assert _fixed(source, "GC002") == source + "    optimizer.zero_grad()\n"


LOOP_BODY = "    for x, y in loader:\n        loss_fn(model(x), y).backward()\n        {opt}.step()\n"


@pytest.mark.parametrize(("head", "opt", "safe"), [
    # built here with an optimizer class: evidence
    ("def train(model, loader):\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n",
     "optimizer", True),
    # annotated as an optimizer, whatever its name: evidence
    ("def train(model, loader, o: torch.optim.Optimizer):\n", "o", True),
    ("def train(model, loader, o: 'Optional[Optimizer]'):\n", "o", True),
    # reset somewhere else in the file: evidence
    ("def warm_up(optimizer):\n    optimizer.zero_grad()\n\n"
     "def train(model, loader, optimizer):\n", "optimizer", True),
    # only the parameter's name says it is an optimizer: the fix needs --unsafe-fixes
    ("def train(model, loader, optimizer):\n", "optimizer", False),
])
def test_a_reset_is_a_safe_fix_only_with_evidence_of_zero_grad(head: str, opt: str, safe: bool) -> None:
    source = "import torch\n\n" + head + LOOP_BODY.format(opt=opt)
    (finding,) = [f for f in check_source(source, select=EVERY_FORM) if f.code == "GC002"]
    assert finding.fix is not None and finding.fix.safe is safe
    assert f"{opt}.zero_grad()" in finding.fix.apply(source)


def test_an_annotation_makes_an_unusual_name_an_optimizer() -> None:
    source = ("def train(model, loader, o: torch.optim.Optimizer, sched):\n"
              "    for x, y in loader:\n"
              "        loss_fn(model(x), y).backward()\n"
              "        o.step()\n"
              "        sched.step()\n")
    assert [(f.code, f.line) for f in check_source(source, select=EVERY_FORM)] == [("GC002", 4)]
    assert check_source(source.replace("o: torch.optim.Optimizer", "o"), select=EVERY_FORM) == []
