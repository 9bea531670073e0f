"""The ``gradcheck lint`` front end: discovery, configuration, cache, formats, fixes.

The work happens in :func:`gradcheck.lint.runner.lint_paths`; the click commands in
:mod:`gradcheck.lint.cli` only parse options and print. Nothing heavy is imported here.

>>> from gradcheck.lint import LintOptions, lint_paths
>>> lint_paths(LintOptions(paths=["no_such_path.py"], use_cache=False)).has_errors
True
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {"lint_paths": "gradcheck.lint.runner", "LintOptions": "gradcheck.lint.runner",
            "Overrides": "gradcheck.lint.settings", "Report": "gradcheck.lint.result"}
__all__ = ["LintOptions", "Overrides", "Report", "lint_paths"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gradcheck.lint' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
