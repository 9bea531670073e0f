"""Helpers for the runtime tests: load a fixture script with ``torch`` bound to real PyTorch or
to the reference engine, and run its pieces.

Test modules cannot import each other (``--import-mode=importlib``), so what they share lives
here, as fixtures.
"""
from __future__ import annotations

import contextlib
import importlib
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runtime"

# torch's module names a fixture may import, mapped onto the engine's
_ALIASES = {
    "torch": "gradcheck.ref",
    "torch.nn": "gradcheck.ref.nn",
    "torch.nn.functional": "gradcheck.ref.nn.functional",
    "torch.optim": "gradcheck.ref.optim",
    "torch.utils": "gradcheck.ref.utils",
    "torch.utils.data": "gradcheck.ref.utils.data",
}


@contextlib.contextmanager
def torch_is(framework: str) -> Iterator[None]:
    """Within the block, ``import torch`` (and its submodules) gives ``framework``."""
    if framework == "torch":
        pytest.importorskip("torch")
        yield
        return
    saved = {name: sys.modules.get(name) for name in _ALIASES}
    try:
        for name, target in _ALIASES.items():
            sys.modules[name] = importlib.import_module(target)
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def load_fixture(stem: str, framework: str) -> dict[str, Any]:
    """Run ``fixtures/runtime/<stem>.py`` under ``framework`` and return ``make()``'s pieces."""
    with torch_is(framework):
        namespace = runpy.run_path(str(FIXTURES / f"{stem}.py"), run_name=f"fixture_{stem}")
        return namespace["make"]()


@pytest.fixture
def fixture_setup():
    """``fixture_setup(stem, framework)`` -> the fixture's ``make()`` dict."""
    return load_fixture


@pytest.fixture
def framework_context():
    """``framework_context(name)`` -> context manager binding ``torch`` to that framework."""
    return torch_is
