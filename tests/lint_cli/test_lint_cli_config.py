"""``[tool.gradcheck.lint]``: discovery walking up, keys, per-file ignores, excludes."""
from __future__ import annotations

import json

import pytest

from gradcheck import exitcodes


def _codes(run) -> set[tuple[str, str]]:
    return {(r["path"], r["code"]) for r in json.loads(run.stdout)}


def _tree(project, kit, config: str) -> None:
    kit.write(project, {
        "pyproject.toml": f"[project]\nname = 'demo'\n\n[tool.gradcheck.lint]\n{config}\n",
        "src/pkg/loop.py": kit.MISSING_ZERO_GRAD,
        "src/pkg/zero.py": kit.ZERO_BETWEEN,
        "tests/test_loop.py": kit.MISSING_ZERO_GRAD,
    })


def test_config_is_found_walking_up_from_each_file(project, kit, monkeypatch):
    _tree(project, kit, 'ignore = ["GC002"]')
    monkeypatch.chdir(project / "src" / "pkg")  # the config is two levels up
    run = kit.run_cli(["lint", "--no-cache", "--format", "json", "."])
    assert _codes(run) == {("zero.py", "GC001")}


def test_nearest_config_wins(project, kit):
    _tree(project, kit, 'ignore = ["GC002"]')
    kit.write(project, {"src/pkg/pyproject.toml": "[tool.gradcheck.lint]\nselect = [\"GC002\"]\n"})
    run = kit.run_cli(["lint", "--no-cache", "--format", "json"])
    # zero.py zeroes (too early) on every iteration, so it has no GC002
    assert _codes(run) == {("src/pkg/loop.py", "GC002")}


def test_pyproject_without_the_section_is_skipped(project, kit):
    _tree(project, kit, 'ignore = ["GC002"]')
    kit.write(project, {"src/pyproject.toml": "[tool.black]\nline-length = 80\n"})
    run = kit.run_cli(["lint", "--no-cache", "--format", "json", "src"])
    assert _codes(run) == {("src/pkg/zero.py", "GC001")}


def test_command_line_select_overrides_config_select(project, kit):
    _tree(project, kit, 'select = ["GC001"]')
    run = kit.run_cli(["lint", "--no-cache", "--format", "json", "--select", "GC002", "src"])
    assert _codes(run) == {("src/pkg/loop.py", "GC002")}


def test_per_file_ignores(project, kit):
    _tree(project, kit, '[tool.gradcheck.lint.per-file-ignores]\n"tests/*" = ["missing-zero-grad"]')
    run = kit.run_cli(["lint", "--no-cache", "--format", "json"])
    paths = {path for path, _ in _codes(run)}
    assert "tests/test_loop.py" not in paths and "src/pkg/loop.py" in paths


@pytest.mark.parametrize("given", [".", "./tests/../tests", "tests/./test_loop.py", "tests"])
def test_per_file_ignores_match_however_the_path_is_spelled(project, kit, given):
    _tree(project, kit, '[tool.gradcheck.lint.per-file-ignores]\n"tests/*" = ["missing-zero-grad"]')
    kit.write(project, {".hidden/tests/x.py": kit.MISSING_ZERO_GRAD})
    run = kit.run_cli(["lint", "--no-cache", "--format", "json", given, ".hidden"])
    paths = {path for path, _ in _codes(run)}
    source = {"src/pkg/loop.py", "src/pkg/zero.py"} if given == "." else set()
    assert paths == {".hidden/tests/x.py"} | source


def test_exclude_and_extend_exclude(project, kit):
    _tree(project, kit, 'extend-exclude = ["tests/"]')
    run = kit.run_cli(["lint", "--no-cache", "--format", "json"])
    assert {path for path, _ in _codes(run)} == {"src/pkg/loop.py", "src/pkg/zero.py"}
    _tree(project, kit, 'exclude = ["zero.py"]')
    run = kit.run_cli(["lint", "--no-cache", "--format", "json"])
    assert {path for path, _ in _codes(run)} == {"src/pkg/loop.py", "tests/test_loop.py"}


@pytest.mark.parametrize("config, named", [
    ('selekt = ["GC001"]', "selekt"),
    ('per_file_ignores = {}', "per-file-ignores"),
    ('select = "GC001"', "select"),
    ('ignore = ["GC404"]', "GC404"),
    ('select = [1]', "1"),
    ('[tool.gradcheck.lint.per-file-ignores]\n"tests/*" = ["nope"]', "nope"),
])
def test_bad_config_is_a_clear_error(project, kit, config, named):
    _tree(project, kit, config)
    run = kit.run_cli(["lint", "--no-cache"])
    assert run.exit_code == exitcodes.ERROR
    assert named in run.stderr and "pyproject.toml" in run.stderr
    assert "Traceback" not in run.stderr


def test_invalid_toml_is_a_clear_error(project, kit):
    kit.write(project, {"pyproject.toml": "[tool.gradcheck.lint\n", "a.py": "x = 1\n"})
    run = kit.run_cli(["lint", "--no-cache"])
    assert run.exit_code == exitcodes.ERROR and "TOML" in run.stderr


def test_gitignore_and_default_excludes(project, kit):
    kit.write(project, {
        ".gitignore": "generated/\n*_tmp.py\n!keep_tmp.py\n",
        "generated/loop.py": kit.MISSING_ZERO_GRAD,
        "scratch_tmp.py": kit.MISSING_ZERO_GRAD,
        "keep_tmp.py": kit.MISSING_ZERO_GRAD,
        ".venv/lib/loop.py": kit.MISSING_ZERO_GRAD,
        "build/loop.py": kit.MISSING_ZERO_GRAD,
        "node_modules/x/loop.py": kit.MISSING_ZERO_GRAD,
        "lib/site-packages/loop.py": kit.MISSING_ZERO_GRAD,
        "__pycache__/loop.py": kit.MISSING_ZERO_GRAD,
        "src/loop.py": kit.MISSING_ZERO_GRAD,
        "notes.txt": kit.MISSING_ZERO_GRAD,
    })
    (project / ".git").mkdir()
    run = kit.run_cli(["lint", "--no-cache", "--format", "json"])
    assert {path for path, _ in _codes(run)} == {"keep_tmp.py", "src/loop.py"}
    # a file named on the command line is linted even when ignored, as in ruff
    run = kit.run_cli(["lint", "--no-cache", "--format", "json", "scratch_tmp.py"])
    assert {path for path, _ in _codes(run)} == {"scratch_tmp.py"}


def test_parent_gitignore_applies_inside_the_repository(project, kit, monkeypatch):
    kit.write(project, {".gitignore": "vendored/\n", "pkg/vendored/loop.py": kit.MISSING_ZERO_GRAD,
                        "pkg/loop.py": kit.MISSING_ZERO_GRAD})
    (project / ".git").mkdir()
    monkeypatch.chdir(project / "pkg")
    run = kit.run_cli(["lint", "--no-cache", "--format", "json", "."])
    assert {path for path, _ in _codes(run)} == {"loop.py"}


def test_preview_is_a_boolean_key() -> None:
    from pathlib import Path

    import pytest

    from gradcheck.lint.config import ConfigError, parse_table

    assert parse_table({"preview": True}, Path("."), None).preview is True
    assert parse_table({}, Path("."), None).preview is False
    with pytest.raises(ConfigError, match="preview must be true or false"):
        parse_table({"preview": "yes"}, Path("."), None)
