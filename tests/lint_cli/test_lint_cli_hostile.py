"""Hostile input: every case ends in a clear message and exit 2, never a traceback, a
silent pass or a dead run, and the other files of the run are still reported."""
from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from urllib.parse import unquote, urlsplit

import pytest

from gradcheck import exitcodes


def _assert_no_clean_claim(run) -> None:
    assert "All checks passed!" not in run.stderr + run.stdout
    assert "Traceback" not in run.stderr + run.stdout


# ----- crashes and limits become GC000 ------------------------------------------------------
@pytest.mark.parametrize("jobs", ["1", "2", "2, screening in the pool"])
def test_a_worker_killed_by_a_segfault_costs_one_file_not_the_run(project, kit, fake_rules,
                                                                  monkeypatch, jobs):
    monkeypatch.setattr("gradcheck.lint.runner.PARALLEL_MIN_BYTES", 0)  # a pool with -j 2
    if "screening" in jobs:
        monkeypatch.setattr("gradcheck.lint.runner.SCREEN_IN_POOL_BYTES", 0)
        jobs = "2"
    kit.write(project, {"a.py": "BUG\n", "b.py": "SEGV\n", "c.py": "BUG\n", "d.py": "BUG\n"})
    run = kit.run_cli(["lint", "--no-cache", "--jobs", jobs])
    assert run.exit_code == exitcodes.ERROR
    assert re.search(r"^b\.py:1:1: GC000 not checked: the parser crashed .*SIGSEGV", run.stdout,
                     re.MULTILINE), run.stdout
    for name in ("a.py", "c.py", "d.py"):
        assert f"{name}:1:1: GC009" in run.stdout


def test_a_50000_deep_attribute_chain_is_gc000_in_a_real_process(project, kit):
    # CPython's parser refuses this (libcst's native parser used to segfault on it)
    kit.write(project, {"deep.py": "loss.backward()\nopt.step()\nx" + ".a" * 50_000 + "\n",
                        "bad.py": kit.MISSING_ZERO_GRAD})
    run = kit.run_subprocess(["lint", "--no-cache", "."], cwd=project)
    out = run.stdout.decode()
    assert run.returncode == exitcodes.ERROR, run.stderr
    assert "deep.py:3:1: GC000 syntax error" in out and "nested too deeply" in out
    assert f"bad.py:{kit.STEP_LINE}:5: GC002" in out


def test_a_chain_that_would_crash_python_3_10s_parser_is_refused_first(project, kit, monkeypatch):
    # Python 3.10's parser segfaults on postfix chains of ~150,000 levels (3.11 refuses them):
    # the text is measured before it is parsed, on any version this test runs on.
    monkeypatch.setattr("lint_rules.check.OLD_PARSER", True)
    chain = "loss.backward()\nopt.step()\nx = (\n" + "+ 1\n" * 60_000 + ")\n"
    kit.write(project, {"deep.py": chain, "bad.py": kit.MISSING_ZERO_GRAD})
    run = kit.run_cli(["lint", "--no-cache"])
    assert run.exit_code == exitcodes.ERROR
    assert "deep.py:" in run.stdout and "3.10's parser would crash on it" in run.stdout
    assert f"bad.py:{kit.STEP_LINE}:5: GC002" in run.stdout


def test_pytest_gradcheck_lint_survives_the_deep_chain(project, kit):
    kit.write(project, {"deep.py": "loss.backward()\nopt.step()\nx" + ".a" * 50_000 + "\n",
                        "bad.py": kit.MISSING_ZERO_GRAD})
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-p", "no:randomly", "-q", "--gradcheck-lint", "-rA", "."],
        cwd=project, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "FAILED deep.py::gradcheck-lint" in run.stdout
    assert "FAILED bad.py::gradcheck-lint" in run.stdout


def test_an_exhausted_flow_budget_is_gc000_not_a_pass(project, kit, monkeypatch):
    monkeypatch.setattr("lint_rules.flow.BUDGET", 5)
    kit.write(project, {"a.py": kit.MISSING_ZERO_GRAD})
    run = kit.run_cli(["lint", "--no-cache"])
    assert run.exit_code == exitcodes.ERROR
    assert "GC000 not fully analysed: the flow analysis ran out of its budget" in run.stdout
    _assert_no_clean_claim(run)


def test_exit_zero_does_not_hide_an_unfinished_analysis(project, kit, monkeypatch):
    monkeypatch.setattr("lint_rules.flow.BUDGET", 5)
    kit.write(project, {"a.py": kit.MISSING_ZERO_GRAD})
    assert kit.run_cli(["lint", "--no-cache", "--exit-zero"]).exit_code == exitcodes.ERROR


def test_a_chain_too_deep_for_the_analysis_is_gc000(project, kit):
    # Python's parser takes a 2,000-deep attribute chain; the analysis names receivers
    # recursively and gives up on it, which must read as "not analysed", never as clean.
    deep = "for batch in data:\n    loss.backward()\n    x" + ".a" * 2_000 + ".step()\n"
    kit.write(project, {"a.py": deep, "b.py": kit.MISSING_ZERO_GRAD})
    run = kit.run_cli(["lint", "--no-cache"])
    assert run.exit_code == exitcodes.ERROR
    assert "a.py:3:1: GC000 not fully analysed: an expression is nested too deeply" in run.stdout
    assert f"b.py:{kit.STEP_LINE}:5: GC002" in run.stdout


def test_gc000_is_not_silenced_by_noqa_or_deselection(project, kit, monkeypatch):
    monkeypatch.setattr("lint_rules.flow.BUDGET", 5)
    kit.write(project, {"a.py": "# gradcheck: noqa: GC002\n" + kit.MISSING_ZERO_GRAD})
    run = kit.run_cli(["lint", "--no-cache", "--select", "GC002"])
    assert run.exit_code == exitcodes.ERROR and "GC000 not fully analysed" in run.stdout


# ----- --fix ---------------------------------------------------------------------------------
def test_fix_on_a_read_only_file_fixes_the_others(project, kit):
    kit.write(project, {"a.py": kit.MISSING_ZERO_GRAD, "b.py": kit.MISSING_ZERO_GRAD})
    locked = project / "a.py"
    locked.chmod(stat.S_IRUSR | stat.S_IRGRP)
    try:
        run = kit.run_cli(["lint", "--no-cache", "--fix"])
    finally:
        locked.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert run.exit_code == exitcodes.ERROR
    assert "a.py:1:1: GC000 cannot write the 1 fix: a.py is read-only" in run.stdout
    assert f"a.py:{kit.STEP_LINE}:5: GC002" in run.stdout  # still reported as it stands
    assert locked.read_text() == kit.MISSING_ZERO_GRAD
    assert "optimizer.zero_grad()" in (project / "b.py").read_text()
    assert sorted(p.name for p in project.iterdir()) == ["a.py", "b.py"]  # no temporary left


def test_a_failed_rename_leaves_the_file_whole(project, kit, monkeypatch):
    def refuse(source, target):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    kit.write(project, {"a.py": kit.MISSING_ZERO_GRAD})
    run = kit.run_cli(["lint", "--no-cache", "--fix"])
    assert run.exit_code == exitcodes.ERROR
    assert "GC000 cannot write the 1 fix: Permission denied" in run.stdout
    assert (project / "a.py").read_text() == kit.MISSING_ZERO_GRAD
    assert [p.name for p in project.iterdir()] == ["a.py"]


def test_fix_keeps_the_mode_and_writes_through_a_symlink(project, kit):
    kit.write(project, {"real.py": kit.MISSING_ZERO_GRAD})
    (project / "real.py").chmod(0o640)
    os.symlink("real.py", project / "link.py")
    assert kit.run_cli(["lint", "--no-cache", "--fix", "link.py"]).exit_code == exitcodes.CLEAN
    assert (project / "link.py").is_symlink()
    assert "optimizer.zero_grad()" in (project / "real.py").read_text()
    assert stat.S_IMODE((project / "real.py").stat().st_mode) == 0o640


# ----- usage errors ----------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["extend-exclude", ".gitignore"])
def test_a_bad_glob_range_is_a_usage_error(project, kit, where):
    files = {"a.py": kit.MISSING_ZERO_GRAD}
    if where == ".gitignore":
        files[".gitignore"] = "[z-a]*.py\n"
    else:
        files["pyproject.toml"] = '[tool.gradcheck.lint]\nextend-exclude = ["[z-a]"]\n'
    kit.write(project, files)
    run = kit.run_cli(["lint", "--no-cache", "."])
    assert run.exit_code == exitcodes.ERROR
    assert "'[z-a]" in run.stderr and "is not a valid glob (bad character range z-a)" in run.stderr
    assert where in run.stderr
    _assert_no_clean_claim(run)


def test_an_output_file_in_a_missing_directory_fails_before_the_run(project, kit):
    kit.write(project, {"a.py": kit.MISSING_ZERO_GRAD})
    target = project / "nonexistent" / "dir" / "x.sarif"
    run = kit.run_cli(["lint", "--no-cache", "--format", "sarif", "-o", str(target)])
    assert run.exit_code == exitcodes.ERROR
    assert "cannot write the report" in run.stderr and "does not exist" in run.stderr
    assert run.stdout == ""


@pytest.mark.parametrize("case", ["empty directory", "--select ''", "select = []"])
def test_nothing_to_check_is_not_all_checks_passed(project, kit, case):
    kit.write(project, {"a.py": kit.MISSING_ZERO_GRAD})
    args = ["lint", "--no-cache"]
    if case == "empty directory":
        (project / "empty").mkdir()
        args.append("empty")
    elif case == "--select ''":
        args += ["--select", ""]
    else:
        kit.write(project, {"pyproject.toml": "[tool.gradcheck.lint]\nselect = []\n"})
    run = kit.run_cli(args)
    assert run.exit_code == exitcodes.ERROR
    assert "nothing" in run.stderr
    _assert_no_clean_claim(run)


# ----- output --------------------------------------------------------------------------------
def test_sarif_uris_are_percent_encoded_uri_references(project, kit):
    names = ["my train ü%20.py", "a:b.py"]
    kit.write(project, {name: kit.MISSING_ZERO_GRAD for name in names})
    run = kit.run_cli(["lint", "--no-cache", "--format", "sarif"])
    uris = sorted(location["physicalLocation"]["artifactLocation"]["uri"]
                  for result in json.loads(run.stdout)["runs"][0]["results"]
                  for location in result["locations"])
    assert uris == ["a%3Ab.py", "my%20train%20%C3%BC%2520.py"]
    for uri in uris:
        assert urlsplit(uri).scheme == "" and re.fullmatch(r"[A-Za-z0-9%._~/-]+", uri)
        assert unquote(uri) in names


def test_statistics_marks_only_codes_this_run_could_fix(project, kit, fake_rules):
    kit.write(project, {"a.py": "BUG\n"})  # the fake rule's fix is unsafe
    plain = kit.run_cli(["lint", "--no-cache", "--statistics"])
    assert re.search(r"^1\tGC009\t    fake-bug$", plain.stdout, re.MULTILINE), plain.stdout
    unsafe = kit.run_cli(["lint", "--no-cache", "--statistics", "--unsafe-fixes"])
    assert re.search(r"^1\tGC009\t\[\*\] fake-bug$", unsafe.stdout, re.MULTILINE)


@pytest.mark.parametrize("page", ["README.md", "docs/lint.md"])
def test_the_pre_commit_snippet_pins_no_made_up_tag(kit, page):
    text = (kit.REPO / page).read_text(encoding="utf-8")
    revs = re.findall(r"^\s*rev:\s*(\S+)", text, re.MULTILINE)
    assert revs, page
    tags = subprocess.run(["git", "tag"], cwd=kit.REPO, capture_output=True, text=True,
                          check=False).stdout.split()
    for rev in revs:
        # a real tag of this repository, or a placeholder for a commit sha
        assert rev in tags or rev == "<commit" or re.fullmatch(r"[0-9a-f]{40}", rev), rev
    assert "pre-commit autoupdate --freeze" in text
