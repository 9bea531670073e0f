"""Run the docstring examples of the core engine modules so they cannot drift."""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import gradcheck.ref


def _core_modules() -> list:
    return [f"gradcheck.ref.{info.name}" for info in pkgutil.iter_modules(gradcheck.ref.__path__)
            if not info.ispkg]


@pytest.mark.parametrize("name", _core_modules())
def test_core_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
