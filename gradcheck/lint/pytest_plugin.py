"""``pytest --gradcheck-lint``: every Python file of the session becomes a lint test item.

Teams that only run pytest still get the training-loop rules; a file with findings fails
with the same ``path:line:col: CODE message`` lines the CLI prints. The configuration is
honoured as in a directory walk: ``exclude`` / ``extend-exclude`` files get no item, and
``per-file-ignores`` apply.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck.lint.config import ConfigError, ConfigFinder, FileConfig

_MARKER = "gradcheck_lint"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register ``--gradcheck-lint``."""
    group = parser.getgroup("gradcheck-lint", "training-loop lint (gradcheck)")
    group.addoption("--gradcheck-lint", action="store_true", default=False,
                    help="Lint every collected .py/.ipynb file with gradcheck's rules.")


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``gradcheck_lint`` marker so ``-m gradcheck_lint`` selects lint items."""
    config.addinivalue_line("markers", f"{_MARKER}: a gradcheck lint check of one file")
    if config.getoption("gradcheck_lint", default=False):
        _finder(config).for_directory(Path(config.rootpath).absolute())  # fail early, cleanly


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """With ``--gradcheck-lint``, add a lint item for each ``.py`` / ``.ipynb`` file."""
    if not parent.config.getoption("gradcheck_lint"):
        return None
    if file_path.suffix not in (".py", ".ipynb"):
        return None
    if _excluded(parent.config, file_path):
        return None
    return LintFile.from_parent(parent, path=file_path)


class _CheckedFinder(ConfigFinder):
    """A ConfigFinder whose configuration errors end the session as usage errors."""

    def for_directory(self, directory: Path) -> FileConfig:
        try:
            return super().for_directory(directory)
        except ConfigError as error:
            raise pytest.UsageError(f"gradcheck-lint: {error}") from None


def _finder(config: pytest.Config) -> _CheckedFinder:
    finder = getattr(config, "_gradcheck_lint_finder", None)
    if finder is None:  # one finder per session: each pyproject.toml is read once
        finder = _CheckedFinder(Path.cwd())
        config._gradcheck_lint_finder = finder  # type: ignore[attr-defined]
    return finder


def _excluded(config: pytest.Config, path: Path) -> bool:
    from gradcheck.lint.files import is_excluded

    return is_excluded(path, _finder(config))


class LintFindings(Exception):
    """Raised by a lint item whose file has findings; its text is the report."""


class LintFile(pytest.File):
    """One file, collected once more, as a container for its lint item."""

    def collect(self):
        yield LintItem.from_parent(self, name="gradcheck-lint")


class LintItem(pytest.Item):
    """Passes when ``gradcheck lint`` finds nothing in the file."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_marker(_MARKER)

    def runtest(self) -> None:
        from gradcheck.lint.formats import render_text
        from gradcheck.lint.runner import LintOptions, lint_paths

        report = lint_paths(LintOptions(paths=[str(self.path)], jobs=1))
        if report.findings:
            raise LintFindings(render_text(report).rstrip("\n"))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, LintFindings):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"gradcheck-lint {self.path.name}"
