"""The runnable examples in the front end's docstrings stay true."""
from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "gradcheck.lint", "gradcheck.lint.cache", "gradcheck.lint.checker", "gradcheck.lint.config",
    "gradcheck.lint.document", "gradcheck.lint.endings", "gradcheck.lint.files", "gradcheck.lint.fixes",
    "gradcheck.lint.formats", "gradcheck.lint.gitignore", "gradcheck.lint.noqa",
    "gradcheck.lint.noqa_adding", "gradcheck.lint.notebook", "gradcheck.lint.reading",
    "gradcheck.lint.registry", "gradcheck.lint.result", "gradcheck.lint.runner",
    "gradcheck.lint.screening", "gradcheck.lint.selection", "gradcheck.lint.settings",
    "gradcheck.lint.show", "gradcheck.lint.watch", "gradcheck.lint.workers",
    "lint_rules.prefilter",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, project):
    module = importlib.import_module(name)
    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0
    assert tried > 0, f"{name} has no examples"
