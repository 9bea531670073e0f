"""The pytest plugin (``pytest --gradcheck-lint``) and the pre-commit hooks, run for real."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml  # pre-commit's own dependency


def _pytest(project: Path, *args: str) -> subprocess.CompletedProcess:
    # A real pytest process: pytester needs a root-level conftest to enable it.
    return subprocess.run(
        # other plugins are switched off: they only slow the child's start-up down
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:gradcheck-device",
         "-p", "no:gradcheck", "-p", "no:hypothesispytest", "-p", "no:xdist", "-q", *args],
        cwd=project, capture_output=True, text=True, timeout=120, check=False)


def test_pytest_gradcheck_lint_makes_one_item_per_file(project, kit):
    kit.write(project, {"train_bad.py": kit.MISSING_ZERO_GRAD, "train_ok.py": kit.CLEAN_LOOP,
                        "test_math.py": "def test_add():\n    assert 1 + 1 == 2\n"})
    run = _pytest(project, "--gradcheck-lint", "-rA", ".")
    assert run.returncode == 1, run.stdout
    assert "FAILED train_bad.py::gradcheck-lint" in run.stdout
    assert "PASSED train_ok.py::gradcheck-lint" in run.stdout
    assert "PASSED test_math.py::gradcheck-lint" in run.stdout
    assert "PASSED test_math.py::test_add" in run.stdout
    assert f"train_bad.py:{kit.STEP_LINE}:5: GC002" in run.stdout


def test_pytest_without_the_flag_collects_no_lint_items(project, kit):
    kit.write(project, {"train_bad.py": kit.MISSING_ZERO_GRAD,
                        "test_math.py": "def test_add():\n    assert 1 + 1 == 2\n"})
    run = _pytest(project, "-rA", ".")
    assert run.returncode == 0 and "gradcheck-lint" not in run.stdout


def test_lint_items_can_be_selected_by_marker(project, kit):
    kit.write(project, {"train_ok.py": kit.CLEAN_LOOP,
                        "test_math.py": "def test_add():\n    assert 1 + 1 == 2\n"})
    run = _pytest(project, "--gradcheck-lint", "-m", "gradcheck_lint", "-rA", ".")
    assert "test_add" not in run.stdout and "2 passed" in run.stdout


def test_pytest_plugin_honours_exclude_and_per_file_ignores(project, kit):
    kit.write(project, {
        "pyproject.toml": ("[tool.gradcheck.lint]\nextend-exclude = [\"fixtures/\"]\n"
                           "[tool.gradcheck.lint.per-file-ignores]\n"
                           "\"scripts/*\" = [\"missing-zero-grad\"]\n"),
        "fixtures/bad.py": kit.MISSING_ZERO_GRAD,
        "scripts/ignored.py": kit.MISSING_ZERO_GRAD,
        "site-packages/generated.py": kit.MISSING_ZERO_GRAD,  # a default exclude
        "train_bad.py": kit.MISSING_ZERO_GRAD,
    })
    run = _pytest(project, "--gradcheck-lint", "-rA", ".")
    assert "FAILED train_bad.py::gradcheck-lint" in run.stdout, run.stdout
    assert "PASSED scripts/ignored.py::gradcheck-lint" in run.stdout
    assert "fixtures/bad.py" not in run.stdout and "site-packages" not in run.stdout
    assert "1 failed, 1 passed" in run.stdout


def test_pytest_plugin_exclude_replaces_the_defaults(project, kit):
    kit.write(project, {"pyproject.toml": "[tool.gradcheck.lint]\nexclude = [\"old_*.py\"]\n",
                        "old_loop.py": kit.MISSING_ZERO_GRAD,
                        "site-packages/loop.py": kit.MISSING_ZERO_GRAD})
    run = _pytest(project, "--gradcheck-lint", "-rA", ".")
    assert "old_loop.py" not in run.stdout
    assert "FAILED site-packages/loop.py::gradcheck-lint" in run.stdout


def test_pytest_plugin_reports_a_bad_configuration_as_a_usage_error(project, kit):
    kit.write(project, {"pyproject.toml": "[tool.gradcheck.lint]\nexclude = \"build\"\n",
                        "a.py": kit.CLEAN_LOOP})
    run = _pytest(project, "--gradcheck-lint", ".")
    assert run.returncode == 4  # pytest's usage-error status
    assert "exclude must be a list of strings" in run.stderr
    assert "Traceback" not in run.stderr + run.stdout


def test_is_excluded_agrees_with_the_directory_walk(project, kit):
    from pathlib import Path

    from gradcheck.lint.config import ConfigFinder
    from gradcheck.lint.files import discover, is_excluded

    kit.write(project, {
        "pyproject.toml": "[tool.gradcheck.lint]\nextend-exclude = [\"data/\", \"**/gen_*.py\", \"/top.py\"]\n",
        "a.py": "", "top.py": "", "sub/top.py": "", "data/x.py": "", "sub/data/y.py": "",
        "sub/gen_z.py": "", "sub/keep.py": "", "build/b.py": "", "nested/build/c.py": "",
    })
    finder = ConfigFinder(project)
    walked = {p.as_posix() for p in discover([Path(".")], finder).files}
    every = {p.relative_to(project).as_posix() for p in project.rglob("*.py")}
    assert walked == {p for p in every if not is_excluded(Path(p), finder)}
    assert walked == {"a.py", "sub/top.py", "sub/keep.py"}


def test_hook_manifest(kit):
    hooks = {hook["id"]: hook for hook in yaml.safe_load(
        (kit.REPO / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"gradcheck-lint", "gradcheck-lint-fix"}
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["types_or"] == ["python", "jupyter"]
        assert hook["entry"].startswith("gradcheck lint")
    assert "--fix" in hooks["gradcheck-lint-fix"]["entry"]
    assert "--fix" not in hooks["gradcheck-lint"]["entry"]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _snapshot(repo: Path, target: Path) -> Path:
    """Commit this working tree (tracked and untracked, minus ignored files) to a new repo.

    ``pre-commit try-repo`` only carries *tracked* uncommitted changes, so new files would
    be missing before the next commit; a snapshot tests exactly what is on disk.
    """
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=repo, capture_output=True, check=True).stdout.decode()
    for relative in filter(None, listed.split("\0")):
        source = repo / relative
        if source.is_file():
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / relative)
    _git(target, "init", "-q")
    _git(target, "add", "-A")
    _git(target, "-c", "user.name=gradcheck-test", "-c", "user.email=test@example.invalid",
         "commit", "-q", "-m", "snapshot")
    return target


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_pre_commit_try_repo_fails_on_bad_and_passes_on_good(tmp_path, kit):
    pre_commit = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))
    if not Path(pre_commit).exists():
        pytest.skip("needs pre-commit")
    user = tmp_path / "user-repo"
    user.mkdir()
    _git(user, "init", "-q")
    kit.write(user, {"good.py": kit.CLEAN_LOOP, "bad.py": kit.MISSING_ZERO_GRAD})
    _git(user, "add", ".")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}

    snapshot = _snapshot(kit.REPO, tmp_path / "gradcheck-snapshot")

    def try_repo(*files: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [pre_commit, "try-repo", str(snapshot), "gradcheck-lint", "--files", *files],
            cwd=user, env=env, capture_output=True, text=True, timeout=600, check=False)

    bad = try_repo("bad.py")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "GC002" in bad.stdout and "Failed" in bad.stdout
    good = try_repo("good.py")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout
