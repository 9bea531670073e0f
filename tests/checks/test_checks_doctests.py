"""Every public function of the checker documents one runnable example; run them all."""
import doctest
import importlib
import warnings

import pytest

MODULES = [
    "gradcheck.checks",
    "gradcheck.checks.numeric",
    "gradcheck.checks.result",
    "gradcheck.checks.fast",
    "gradcheck.checks.miss",
    "gradcheck.checks.ladder",
    "gradcheck.checks.arguments",
    "gradcheck.checks.errors",
    "gradcheck.checks.verdict",
    "gradcheck.checks.sweep",
    "gradcheck.checks.compress",
    "gradcheck.checks.screen",
    "gradcheck.checks.analytic",
    "gradcheck.checks.planted",
    "gradcheck.checks.adapters",
    "gradcheck.checks.check",
    "gradcheck.strategies",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    if name == "gradcheck.checks.check":
        pytest.importorskip("torch")  # check_gradgrad's example uses torch
    module = importlib.import_module(name)
    with warnings.catch_warnings():
        # .example() in the strategies' docs warns that it is meant for interactive use
        warnings.simplefilter("ignore")
        failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert attempted > 0 and failed == 0
