"""Every public docstring example in gradcheck.runtime runs and shows what it claims."""
from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["adapter", "autostart", "channel", "consistency", "counters", "devices", "distributed", "exchange",
           "findings", "guard", "imports", "launch", "ledger", "messages", "parity", "patches",
           "replay", "report", "scaling", "scenarios", "semantics", "session", "training_step"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"gradcheck.runtime.{name}")
    if name == "launch":
        pytest.importorskip("torch")  # its example runs a script under a guard session
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0, f"gradcheck.runtime.{name} has no runnable example"
