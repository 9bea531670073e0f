"""``.gradcheck_cache/``: a warm run answers from the cache and never calls the rules."""
from __future__ import annotations

import json

import pytest

import lint_rules


@pytest.fixture
def counted(monkeypatch):
    """Count the real rules' ``check_source`` calls (in-process, --jobs 1)."""
    monkeypatch.setattr("gradcheck.lint.workers.can_contain", lambda: False)  # no child process
    calls: list[str] = []
    real = lint_rules.check_source

    def counting(source, path="<string>", *, select=None, **options):
        calls.append(path)
        return real(source, path, select=select, **options)

    monkeypatch.setattr(lint_rules, "check_source", counting)
    return calls


def test_second_run_does_not_reparse(project, kit, counted):
    kit.write(project, {"a.py": kit.MISSING_ZERO_GRAD, "b.py": kit.ZERO_BETWEEN,
                        "c.py": kit.CLEAN_LOOP})
    first = kit.run_cli(["lint", "--jobs", "1", "--format", "json"])
    assert sorted(counted) == ["a.py", "b.py", "c.py"]
    second = kit.run_cli(["lint", "--jobs", "1", "--format", "json"])
    assert sorted(counted) == ["a.py", "b.py", "c.py"]  # no new calls
    assert json.loads(second.stdout) == json.loads(first.stdout)
    assert second.exit_code == first.exit_code == 1
    assert list((project / ".gradcheck_cache").glob("lint-*.json"))


def test_changed_bytes_and_changed_settings_miss(project, kit, counted):
    kit.write(project, {"a.py": kit.MISSING_ZERO_GRAD, "b.py": kit.CLEAN_LOOP})
    kit.run_cli(["lint", "--jobs", "1"])
    (project / "a.py").write_text(kit.MISSING_ZERO_GRAD + "# edited\n")
    kit.run_cli(["lint", "--jobs", "1"])
    assert sorted(counted) == ["a.py", "a.py", "b.py"]
    kit.run_cli(["lint", "--jobs", "1", "--select", "GC002"])
    assert len(counted) == 5  # a new selection is a new key for both files


def test_no_cache_neither_reads_nor_writes(project, kit, counted):
    kit.write(project, {"a.py": kit.MISSING_ZERO_GRAD})
    kit.run_cli(["lint", "--no-cache", "--jobs", "1"])
    kit.run_cli(["lint", "--no-cache", "--jobs", "1"])
    assert counted == ["a.py", "a.py"]
    assert not (project / ".gradcheck_cache").exists()


def test_cached_fixable_findings_are_still_fixed(project, kit):
    kit.write(project, {"a.py": kit.MISSING_ZERO_GRAD})
    kit.run_cli(["lint"])
    run = kit.run_cli(["lint", "--fix"])
    assert run.exit_code == 0 and "zero_grad()" in (project / "a.py").read_text().split("step()")[-1]


def test_a_corrupt_cache_is_ignored(project, kit):
    kit.write(project, {"a.py": kit.MISSING_ZERO_GRAD})
    kit.run_cli(["lint"])
    for path in (project / ".gradcheck_cache").glob("lint-*.json"):
        path.write_text("{not json")
    assert kit.run_cli(["lint"]).exit_code == 1


def test_the_cache_lives_at_the_project_root(project, kit):
    kit.write(project, {"pyproject.toml": "[project]\nname = 'demo'\n",
                        "src/pkg/a.py": kit.MISSING_ZERO_GRAD})
    import os

    os.chdir(project / "src" / "pkg")  # the project fixture restores the directory
    assert kit.run_cli(["lint", "."]).exit_code == 1
    assert list((project / ".gradcheck_cache").glob("lint-*.json"))
    assert not (project / "src" / "pkg" / ".gradcheck_cache").exists()


def test_the_configuring_pyproject_wins_over_a_closer_plain_one(project, kit):
    kit.write(project, {"pyproject.toml": "[tool.gradcheck.lint]\nignore = []\n",
                        "sub/pyproject.toml": "[project]\nname = 'inner'\n",
                        "sub/a.py": kit.MISSING_ZERO_GRAD})
    import os

    os.chdir(project / "sub")
    kit.run_cli(["lint"])
    assert (project / ".gradcheck_cache").is_dir() and not (project / "sub" / ".gradcheck_cache").exists()


def test_without_a_pyproject_the_cache_is_in_the_current_directory(tmp_path, monkeypatch, kit):
    from gradcheck.lint.config import ConfigFinder

    work = tmp_path / "loose" / "dir"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    ancestors = [d for d in (work, *work.parents) if (d / "pyproject.toml").is_file()]
    if ancestors:
        pytest.skip("a pyproject.toml above the temporary directory")
    assert ConfigFinder(work).project_root(work) == work
    kit.write(work, {"a.py": kit.MISSING_ZERO_GRAD})
    kit.run_cli(["lint"])
    assert (work / ".gradcheck_cache").is_dir()
