"""``--fix``, ``--diff`` and ``--unsafe-fixes`` against golden before/after files.

Each ``fix_cases/NAME.before`` must become ``NAME.after`` byte for byte, also when the file
uses CRLF or CR-only line endings or starts with a UTF-8 BOM; a second ``--fix`` changes nothing.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck import exitcodes

CASES = Path(__file__).parent / "fix_cases"
NAMES = sorted(path.stem for path in CASES.glob("*.before"))
UNSAFE = {"gc001_loop_carried", "gc003_move_into_loop", "gc004_loss_item"}
VARIANTS = {
    "lf": lambda data: data,
    "crlf": lambda data: data.replace(b"\n", b"\r\n"),
    "bom": lambda data: b"\xef\xbb\xbf" + data,
    "bom-crlf": lambda data: b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n"),
    "cr": lambda data: data.replace(b"\n", b"\r"),
}


def _case(name: str, variant: str) -> tuple[bytes, bytes]:
    convert = VARIANTS[variant]
    return (convert((CASES / f"{name}.before").read_bytes()),
            convert((CASES / f"{name}.after").read_bytes()))


def test_there_is_a_case_per_fix_shape():
    assert {"gc001_straight_line", "gc001_loop_carried", "gc002_insert_after_step",
            "gc003_move_into_loop", "gc004_loss_item", "gc002_tabs_trailing_space"} <= set(NAMES)
    assert b"\t" in (CASES / "gc002_tabs_trailing_space.before").read_bytes()
    assert b"  \n" in (CASES / "gc002_tabs_trailing_space.before").read_bytes()


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("name", NAMES)
def test_fix_gives_the_golden_bytes_and_is_idempotent(project, kit, name, variant):
    before, after = _case(name, variant)
    target = project / "train.py"
    target.write_bytes(before)
    run = kit.run_cli(["lint", "--no-cache", "--fix", "--unsafe-fixes", "train.py"])
    assert target.read_bytes() == after
    assert run.exit_code == exitcodes.CLEAN
    assert "fixed" in run.stderr
    again = kit.run_cli(["lint", "--no-cache", "--fix", "--unsafe-fixes", "train.py"])
    assert target.read_bytes() == after
    assert again.exit_code == exitcodes.CLEAN and "All checks passed!" in again.stderr


@pytest.mark.parametrize("name", NAMES)
def test_unsafe_fixes_need_the_flag(project, kit, name):
    before, after = _case(name, "lf")
    target = project / "train.py"
    target.write_bytes(before)
    run = kit.run_cli(["lint", "--no-cache", "--fix", "train.py"])
    if name in UNSAFE:
        assert target.read_bytes() == before
        assert run.exit_code == exitcodes.FINDINGS
        assert "--unsafe-fixes" in run.stderr
    else:
        assert target.read_bytes() == after
        assert run.exit_code == exitcodes.CLEAN


@pytest.mark.parametrize("name", NAMES)
def test_diff_prints_a_patch_and_writes_nothing(project, kit, name):
    before, after = _case(name, "lf")
    target = project / "train.py"
    target.write_bytes(before)
    run = kit.run_cli(["lint", "--no-cache", "--diff", "--unsafe-fixes", "train.py"])
    assert target.read_bytes() == before
    assert run.exit_code == exitcodes.FINDINGS
    assert run.stdout.startswith("--- a/train.py\n+++ b/train.py\n@@ ")
    for hunk in run.stdout.split("\n@@ ")[1:]:
        body = hunk.split("\n", 1)[1].splitlines(keepends=True)
        old_side = "".join(line[1:] for line in body if line[:1] in " -")
        new_side = "".join(line[1:] for line in body if line[:1] in " +")
        assert old_side in before.decode() and new_side in after.decode()


def test_diff_is_empty_and_exit_0_on_clean_code(project, kit):
    kit.write(project, {"ok.py": kit.CLEAN_LOOP})
    run = kit.run_cli(["lint", "--no-cache", "--diff"])
    assert run.stdout == "" and run.exit_code == exitcodes.CLEAN


def test_fix_keeps_unfixable_findings_and_reports_them(project, kit, fake_rules):
    kit.write(project, {"a.py": "x = BUG\ny = BUG\n"})
    run = kit.run_cli(["lint", "--no-cache", "--fix"])
    assert (project / "a.py").read_text() == "x = BUG\ny = BUG\n"  # the fake fix is unsafe
    assert run.exit_code == exitcodes.FINDINGS and run.stdout.count("GC009") == 2
    run = kit.run_cli(["lint", "--no-cache", "--fix", "--unsafe-fixes"])
    assert (project / "a.py").read_text() == "x = OK\ny = OK\n"
    assert run.exit_code == exitcodes.CLEAN and "2 fixed" in run.stderr


def test_overlapping_fixes_are_applied_over_several_passes(project, kit):
    from gradcheck.lint.document import Document
    from gradcheck.lint.fixes import fix_document
    from lint_rules.finding import Edit, Finding, Fix

    def lint(document: Document) -> list[Finding]:
        text = document.program
        if "aaa" not in text:
            return []
        start = text.index("aaa")
        both = [Finding(1, start + 1, "GC009", "x", "m",
                        fix=Fix("shrink", (Edit(start, start + 3, "a"),))),
                Finding(1, start + 2, "GC009", "x", "m",
                        fix=Fix("shrink", (Edit(start + 1, start + 3, "a"),)))]
        return both

    document, applied, remaining = fix_document(Document("aaaaaaa\n"), lint, unsafe=False)
    # 7 -> 5 -> 3 -> 1: the second, overlapping fix waits for the next pass each time
    assert document.program == "a\n" and applied == 3 and remaining == []


GBK_TRAINER = """# -*- coding: gbk -*-
# 训练: one update per batch
import torch


def train(model, loader, optimizer):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)  # 均方误差
        loss.backward()
        optimizer.step()
"""


def test_a_declared_encoding_is_read_and_a_fix_written_back_in_it(project, kit):
    target = project / "train.py"
    target.write_bytes(GBK_TRAINER.encode("gbk"))
    run = kit.run_cli(["lint", "--no-cache", "--fix", "--unsafe-fixes", "train.py"])
    fixed = target.read_bytes()
    assert fixed != GBK_TRAINER.encode("gbk") and "fixed" in run.stderr
    text = fixed.decode("gbk")  # still the file's own encoding, comments intact
    assert "# 训练" in text and "# 均方误差" in text
    assert text.count("optimizer.zero_grad()") == 1
    again = kit.run_cli(["lint", "--no-cache", "--fix", "--unsafe-fixes", "train.py"])
    assert target.read_bytes() == fixed and again.exit_code == exitcodes.CLEAN


def test_bytes_that_are_not_in_the_declared_encoding_are_named(project, kit):
    (project / "train.py").write_bytes(b"# coding: ascii\nname = '\xe9'\n")
    run = kit.run_cli(["lint", "--no-cache", "train.py"])
    assert run.exit_code == exitcodes.ERROR
    assert "GC000 not valid ascii, the encoding its coding declaration names" in run.stdout
    assert "byte 0xe9 at offset 24" in run.stdout


TWO_RESETS_IN_A_TRY = """import torch


def train(model, loader, optimizer, opt_d, accelerator):
    model.train()
    for batch in loader:
        loss = model(batch)
        try:
            optimizer.zero_grad()
            model.zero_grad()
        except RuntimeError:
            pass
        with accelerator.accumulate(model):
            opt_d.step()
        optimizer.step()
        loss.backward()
"""


def test_fixes_that_would_empty_a_block_together_are_applied_one_at_a_time(project, kit):
    # each GC001 fix moves one reset out of the `try`; applied in one pass they left it empty
    target = project / "train.py"
    target.write_text(TWO_RESETS_IN_A_TRY)
    kit.run_cli(["lint", "--no-cache", "--fix", "--unsafe-fixes", "train.py"])
    fixed = target.read_text()
    compile(fixed, "train.py", "exec")
    assert fixed != TWO_RESETS_IN_A_TRY
    again = kit.run_cli(["lint", "--no-cache", "--fix", "--unsafe-fixes", "train.py"])
    assert target.read_text() == fixed and "fixed" not in again.stderr
