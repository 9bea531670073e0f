"""Run the docstring examples of nn, optim and utils.data so the docs cannot drift."""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

PACKAGES = ("gradcheck.ref.nn", "gradcheck.ref.optim", "gradcheck.ref.utils")


def _modules():
    names = []
    for package in PACKAGES:
        root = importlib.import_module(package)
        names.append(package)
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            names.append(info.name)
    return names


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"


def test_docs_training_loop_runs_and_learns():
    """The example loop in docs/engine.md ("An example training loop") runs as written and
    reduces the loss."""
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "engine.md"
    if not doc.exists():
        pytest.skip("docs/engine.md is not part of this checkout")
    section = doc.read_text().split("### An example training loop", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict = {}
    exec(compile(code, str(doc), "exec"), namespace)  # noqa: S102 - our own documentation
    torch, model, criterion = namespace["torch"], namespace["model"], namespace["criterion"]
    with torch.no_grad():
        final = criterion(model(namespace["x"]), namespace["y"]).item()
    assert final < 0.3, f"the documented loop should learn the sign task, final loss {final}"
