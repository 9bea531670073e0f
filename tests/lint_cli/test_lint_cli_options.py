"""Every ``gradcheck lint`` option through click's CliRunner, on the real rules."""
from __future__ import annotations

import json

import pytest

from gradcheck import exitcodes


@pytest.fixture
def tree(project, kit):
    return kit.write(project, {
        "train_bad.py": kit.MISSING_ZERO_GRAD,
        "train_zero.py": kit.ZERO_BETWEEN,
        "train_ok.py": kit.CLEAN_LOOP,
        "model.py": "import torch\n\nclass Net(torch.nn.Module):\n    pass\n",
    })


def test_findings_exit_1_and_print_path_line_col_code(tree, kit):
    run = kit.run_cli(["lint", "--no-cache"])
    assert run.exit_code == exitcodes.FINDINGS
    lines = run.stdout.splitlines()
    assert any(line.startswith(f"train_bad.py:{kit.STEP_LINE}:5: GC002") for line in lines)
    assert any(line.startswith(f"train_zero.py:{kit.ZERO_LINE}:5: GC001") for line in lines)
    assert not any(line.startswith(("train_ok.py", "model.py")) for line in lines)
    assert "Found" in run.stderr and "Found" not in run.stdout


def test_clean_tree_exits_0_with_summary_on_stderr(tree, kit):
    run = kit.run_cli(["lint", "--no-cache", "train_ok.py", "model.py"])
    assert run.exit_code == exitcodes.CLEAN
    assert run.stdout == ""
    assert "All checks passed!" in run.stderr


@pytest.mark.parametrize("selector", ["GC001", "zero-grad-between-backward-and-step", "gc001"])
def test_select_by_code_or_name(tree, selector, kit):
    run = kit.run_cli(["lint", "--no-cache", "--select", selector])
    codes = {line.split()[1] for line in run.stdout.splitlines()}
    assert codes == {"GC001"}


def test_select_comma_list_and_prefix_and_all(tree, kit):
    for selectors in (["--select", "GC001,GC002"], ["--select", "GC00"], ["--select", "ALL"]):
        run = kit.run_cli(["lint", "--no-cache", *selectors])
        assert {line.split()[1] for line in run.stdout.splitlines()} == {"GC001", "GC002"}


def test_ignore_and_extend_select(tree, kit):
    run = kit.run_cli(["lint", "--no-cache", "--ignore", "missing-zero-grad"])
    assert {line.split()[1] for line in run.stdout.splitlines()} == {"GC001"}
    run = kit.run_cli(["lint", "--no-cache", "--select", "GC001", "--extend-select", "GC002"])
    assert {line.split()[1] for line in run.stdout.splitlines()} == {"GC001", "GC002"}
    run = kit.run_cli(["lint", "--no-cache", "--ignore", "GC001,GC002"])
    assert run.exit_code == exitcodes.CLEAN and run.stdout == ""


@pytest.mark.parametrize("option", ["--select", "--ignore", "--extend-select"])
def test_unknown_rule_is_a_usage_error_naming_it(tree, option, kit):
    run = kit.run_cli(["lint", "--no-cache", option, "GC999"])
    assert run.exit_code == exitcodes.ERROR
    assert "GC999" in run.stderr and option in run.stderr and "GC001" in run.stderr
    assert "Traceback" not in run.stderr + run.stdout


@pytest.mark.parametrize("args", [["--format", "xml"], ["--jobs", "0"], ["--jobs", "many"]])
def test_bad_option_values_exit_2(tree, args, kit):
    run = kit.run_cli(["lint", *args])
    assert run.exit_code == exitcodes.ERROR
    assert args[1] in run.stderr


def test_exit_zero_keeps_output_but_exits_0(tree, kit):
    run = kit.run_cli(["lint", "--no-cache", "--exit-zero"])
    assert run.exit_code == exitcodes.CLEAN
    assert "GC002" in run.stdout


def test_statistics_counts_per_code(tree, kit):
    run = kit.run_cli(["lint", "--no-cache", "--statistics"])
    rows = [line.split("\t") for line in run.stdout.splitlines()]
    counts = {row[1]: int(row[0]) for row in rows}
    assert counts == {"GC001": 1, "GC002": 1}
    assert run.exit_code == exitcodes.FINDINGS


def test_quiet_prints_findings_only(tree, kit):
    run = kit.run_cli(["lint", "--no-cache", "--quiet"])
    assert run.stderr == ""
    assert "GC002" in run.stdout


@pytest.mark.parametrize("jobs", ["1", "2", "2, screening in the pool"])
def test_jobs_do_not_change_the_result(tree, jobs, monkeypatch, kit):
    monkeypatch.setattr("gradcheck.lint.runner.PARALLEL_MIN_BYTES", 0)
    if "screening" in jobs:
        monkeypatch.setattr("gradcheck.lint.runner.SCREEN_IN_POOL_BYTES", 0)
        jobs = "2"
    run = kit.run_cli(["lint", "--no-cache", "--jobs", jobs, "--format", "json"])
    assert sorted((r["path"], r["line"], r["code"]) for r in json.loads(run.stdout)) == [
        ("train_bad.py", kit.STEP_LINE, "GC002"), ("train_zero.py", kit.ZERO_LINE, "GC001")]


def test_output_file(tree, kit):
    run = kit.run_cli(["lint", "--no-cache", "--format", "json", "-o", "out.json"])
    assert run.stdout == ""
    assert {r["code"] for r in json.loads((tree / "out.json").read_text())} == {"GC001", "GC002"}


def test_stdin_with_stdin_filename(tree, kit):
    run = kit.run_cli(["lint", "--no-cache", "-", "--stdin-filename", "pkg/loop.py"],
                  input=kit.MISSING_ZERO_GRAD)
    assert run.exit_code == exitcodes.FINDINGS
    assert run.stdout.startswith(f"pkg/loop.py:{kit.STEP_LINE}:5: GC002")


def test_stdin_without_filename_and_clean_input(tree, kit):
    run = kit.run_cli(["lint", "--no-cache", "-"], input=kit.CLEAN_LOOP)
    assert run.exit_code == exitcodes.CLEAN and run.stdout == ""
    run = kit.run_cli(["lint", "--no-cache", "-"], input=kit.MISSING_ZERO_GRAD)
    assert run.stdout.startswith(f"-:{kit.STEP_LINE}:5: GC002")


def test_stdin_fix_prints_the_fixed_source(tree, kit):
    run = kit.run_cli(["lint", "--no-cache", "--fix", "-", "--stdin-filename", "t.py"],
                  input=kit.MISSING_ZERO_GRAD)
    assert "optimizer.step()\n    optimizer.zero_grad()\n" in run.stdout
    assert run.exit_code == exitcodes.CLEAN


def test_rule_and_rules_commands(tree, kit):
    run = kit.run_cli(["rules"])
    assert run.exit_code == 0
    codes = [line.split()[0] for line in run.stdout.splitlines()]
    assert codes == ["GC000", "GC001", "GC002", "GC003", "GC004"]
    for selector in ("GC003", "zero-grad-outside-loop"):
        run = kit.run_cli(["rule", selector])
        assert run.exit_code == 0
        assert run.stdout.startswith("# zero-grad-outside-loop (GC003)")
        assert "What it does" in run.stdout and "Why is this bad?" in run.stdout
    data = json.loads(kit.run_cli(["rule", "GC001", "--format", "json"]).stdout)
    assert data["name"] == "zero-grad-between-backward-and-step"
    names = [r["name"] for r in json.loads(kit.run_cli(["rules", "--format", "json"]).stdout)]
    assert "missing-zero-grad" in names


def test_unknown_rule_command_exits_2(tree, kit):
    run = kit.run_cli(["rule", "GC777"])
    assert run.exit_code == exitcodes.ERROR
    assert "GC777" in run.stderr and "GC001" in run.stderr
