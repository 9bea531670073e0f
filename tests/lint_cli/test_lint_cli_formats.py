"""Output formats: json fields, SARIF 2.1.0 structure, GitHub annotations, JUnit XML."""
from __future__ import annotations

import json
from xml.etree import ElementTree

import pytest


@pytest.fixture
def tree(project, kit):
    return kit.write(project, {"loop.py": kit.MISSING_ZERO_GRAD, "ok.py": kit.CLEAN_LOOP})


def test_json_objects_have_the_documented_fields(tree, kit):
    run = kit.run_cli(["lint", "--no-cache", "--format", "json"])
    (record,) = json.loads(run.stdout)
    assert set(record) >= {"path", "line", "column", "end_line", "end_column", "code", "rule",
                           "message", "severity", "fix"}
    assert record["path"] == "loop.py"
    assert (record["line"], record["column"], record["code"]) == (kit.STEP_LINE, 5, "GC002")
    assert record["rule"] == "missing-zero-grad"
    assert record["end_line"] >= record["line"] and record["end_column"] > 1
    assert record["severity"] in {"error", "warning"}
    fix = record["fix"]
    assert fix["applicability"] in {"safe", "unsafe"}
    source = (tree / "loop.py").read_text()
    edit = fix["edits"][0]
    assert 0 <= edit["start"] <= edit["end"] <= len(source) and "zero_grad" in edit["content"]


def test_json_is_an_empty_list_when_clean(tree, kit):
    run = kit.run_cli(["lint", "--no-cache", "--format", "json", "ok.py"])
    assert json.loads(run.stdout) == [] and run.exit_code == 0


def test_sarif_has_the_structure_code_scanning_needs(tree, kit):
    run = kit.run_cli(["lint", "--no-cache", "--format", "sarif"])
    log = json.loads(run.stdout)
    assert log["version"] == "2.1.0" and "sarif" in log["$schema"]
    (sarif_run,) = log["runs"]
    driver = sarif_run["tool"]["driver"]
    assert driver["name"] == "gradcheck"
    rule_ids = [rule["id"] for rule in driver["rules"]]
    assert rule_ids == ["GC000", "GC001", "GC002", "GC003", "GC004"]
    for rule in driver["rules"]:
        assert rule["name"] and rule["help"]["text"]
    (result,) = sarif_run["results"]
    assert result["ruleId"] == "GC002" and result["level"] == "error"
    assert result["message"]["text"]
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "loop.py"
    assert location["region"]["startLine"] == kit.STEP_LINE
    assert location["region"]["startColumn"] == 5


def test_github_annotations(tree, kit):
    run = kit.run_cli(["lint", "--no-cache", "--format", "github"])
    (line,) = run.stdout.splitlines()
    assert line.startswith(f"::error title=gradcheck (GC002),file=loop.py,line={kit.STEP_LINE},col=5,")
    assert "::" in line[2:] and "GC002" in line.rsplit("::", 1)[1]


def test_github_escapes_newlines_and_percent(kit):
    from gradcheck.lint.formats import render_github
    from gradcheck.lint.result import FileResult, Report
    from lint_rules.finding import Finding

    report = Report([FileResult("a,b.py", [Finding(1, 1, "GC001", "r", "50% done\nnext")])])
    out = render_github(report)
    assert "file=a%2Cb.py" in out and "50%25 done%0Anext" in out and out.count("\n") == 1


def test_junit_is_valid_xml_with_one_failure_per_finding(tree, kit):
    run = kit.run_cli(["lint", "--no-cache", "--format", "junit"])
    root = ElementTree.fromstring(run.stdout)
    assert root.tag == "testsuites" and root.get("failures") == "1"
    failures = root.findall(".//failure")
    assert len(failures) == 1 and failures[0].get("type") == "GC002"
    assert root.find("testsuite").get("name") == "loop.py"


def test_junit_when_clean(tree, kit):
    root = ElementTree.fromstring(kit.run_cli(["lint", "--no-cache", "--format", "junit",
                                              "ok.py"]).stdout)
    assert root.get("failures") == "0" and not root.findall(".//failure")


def test_text_colour_only_on_a_tty(tree, kit):
    run = kit.run_cli(["lint", "--no-cache"])
    assert "\x1b[" not in run.stdout  # CliRunner's stdout is not a terminal

    from gradcheck.lint.formats import render_text
    from gradcheck.lint.runner import LintOptions, lint_paths

    report = lint_paths(LintOptions(paths=["loop.py"], use_cache=False))
    assert "\x1b[1m" in render_text(report, color=True)
