"""Where findings point: Python's tree counts UTF-8 bytes and splits lines its own way; the
linter must report the characters and lines an editor shows, and fix at those offsets."""
from __future__ import annotations

import pytest

from lint_rules import check_source
from lint_rules.testing import apply_fixes

LOOP = ["import torch", "for batch in data:", "    loss = model(batch)", "    loss.backward()",
        "    optimizer.step()"]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_lines_count_every_kind_of_line_ending(newline: str) -> None:
    source = newline.join(LOOP) + newline
    (finding,) = check_source(source)
    assert (finding.code, finding.line, finding.column, finding.end_column) == ("GC002", 5, 5, 21)
    fixed = apply_fixes(source, [finding])
    assert fixed == newline.join(LOOP + ["    optimizer.zero_grad()"]) + newline


def test_columns_are_characters_not_utf8_bytes() -> None:
    # "é" and "😀" take 2 and 4 bytes; the step starts at character 41 of its line
    line = '    tag = "é😀"; log = "ß"; other = 1; optimizer.step()'
    source = "\n".join(LOOP[:4] + [line]) + "\n"
    (finding,) = check_source(source)
    assert finding.column == line.index("optimizer") + 1
    assert finding.end_column == len(line) + 1
    fixed = apply_fixes(source, [finding])
    assert fixed.splitlines()[-1] == line + "; optimizer.zero_grad()"


def test_tabs_count_as_one_column() -> None:
    source = "\n".join(line.replace("    ", "\t") for line in LOOP) + "\n"
    (finding,) = check_source(source)
    assert (finding.line, finding.column) == (5, 2)
