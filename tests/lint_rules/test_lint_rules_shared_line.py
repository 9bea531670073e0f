"""Fixes for statements that share a line (`a; b; c`), made on libcst's tree of that line."""
from __future__ import annotations

import pytest

from lint_rules import check_source
from lint_rules.testing import apply_fixes

HEAD = "import torch\n\nfor x, y in loader:\n    loss = loss_fn(model(x), y)\n"


def _fixed(source: str) -> str:
    findings = check_source(source)
    assert findings and all(f.fix is not None for f in findings), findings
    fixed = apply_fixes(source, findings)
    compile(fixed, "<fixed>", "exec")
    assert check_source(fixed) == [], "the fixed program still has findings"
    return fixed


@pytest.mark.parametrize(("line", "expected"), [
    # the brief's one-liner: the reset goes after the step, the comment stays where it was
    ("    loss.backward(); optimizer.zero_grad(); optimizer.step()  # all in one\n",
     "    loss.backward(); optimizer.step(); optimizer.zero_grad()  # all in one\n"),
    # each position keeps its own semicolon spacing, including a trailing one
    ("    loss.backward() ;optimizer.zero_grad(); optimizer.step();\n",
     "    loss.backward() ;optimizer.step(); optimizer.zero_grad();\n"),
    # columns are counted in characters although Python's tree counts UTF-8 bytes
    ('    tag = "é"; loss.backward(); optimizer.zero_grad(); optimizer.step()\n',
     '    tag = "é"; loss.backward(); optimizer.step(); optimizer.zero_grad()\n'),
])
def test_a_reset_is_moved_within_its_line(line: str, expected: str) -> None:
    assert _fixed(HEAD + line + "    log(loss)\n") == HEAD + expected + "    log(loss)\n"


def test_a_reset_is_taken_out_of_a_shared_line_and_put_after_the_step() -> None:
    source = HEAD + "    loss.backward(); optimizer.zero_grad()  # reset\n    optimizer.step()\n"
    assert _fixed(source) == HEAD + (
        "    loss.backward()  # reset\n    optimizer.step()\n    optimizer.zero_grad()\n")


def test_a_missing_reset_joins_the_step_on_its_line() -> None:
    source = HEAD + "    loss.backward()\n    optimizer.step(); scheduler.step()  # both\n"
    assert _fixed(source) == HEAD + (
        "    loss.backward()\n    optimizer.step(); optimizer.zero_grad(); scheduler.step()  # both\n")


def test_tabs_and_crlf_are_kept() -> None:
    source = (HEAD.replace("    ", "\t") + "\tloss.backward(); optimizer.zero_grad(); optimizer.step()\n"
              ).replace("\n", "\r\n")
    expected = (HEAD.replace("    ", "\t") + "\tloss.backward(); optimizer.step(); optimizer.zero_grad()\n"
                ).replace("\n", "\r\n")
    assert _fixed(source) == expected


@pytest.mark.parametrize("body", [
    # a compound statement's header shares the line: no fix rather than a guess
    "for x, y in loader: loss_fn(model(x), y).backward(); optimizer.zero_grad(); optimizer.step()\n",
    # the step spans lines
    "for x, y in loader:\n    loss_fn(model(x), y).backward(); optimizer.zero_grad(); optimizer.step(\n    )\n",
    # a line long enough to hold a chain that libcst's native parser cannot take
    "for x, y in loader:\n    loss_fn(model(x), y).backward(); optimizer.zero_grad(); optimizer.step()"
    + "; z = 1" * 300 + "\n",
])
def test_lines_that_are_not_plain_statement_lines_get_a_finding_without_a_fix(body: str) -> None:
    (finding,) = check_source("import torch\n\n" + body)
    assert finding.code == "GC001" and finding.fix is None


def test_trailing_blanks_after_a_comment_survive_the_rewrite() -> None:
    source = HEAD + "    loss.backward(); optimizer.zero_grad(); optimizer.step()  # one  \t\n"
    assert _fixed(source) == HEAD + "    loss.backward(); optimizer.step(); optimizer.zero_grad()  # one  \t\n"
