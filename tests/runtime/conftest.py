"""Helpers for the runtime tests: load a fixture script with ``torch`` bound to real PyTorch or
to the reference engine, and run its pieces.

Test modules cannot import each other (``--import-mode=importlib``), so what they share lives
here, as fixtures.
"""
from __future__ import annotations

import contextlib
import runpy
from pathlib import Path
from typing import Any

import pytest

from gradcheck.ref.alias import as_torch

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runtime"


def torch_is(framework: str) -> contextlib.AbstractContextManager:
    """Within the block, ``import torch`` (and its submodules) gives ``framework``."""
    if framework == "torch":
        pytest.importorskip("torch")
        return contextlib.nullcontext()
    return as_torch()


def load_fixture(stem: str, framework: str) -> dict[str, Any]:
    """Run ``fixtures/runtime/<stem>.py`` under ``framework`` and return ``make()``'s pieces."""
    with torch_is(framework):
        namespace = runpy.run_path(str(FIXTURES / f"{stem}.py"), run_name=f"fixture_{stem}")
        return namespace["make"]()


@pytest.fixture(params=["torch", "ref"])
def torch(request):
    """Real torch, or the reference engine under torch's name (the runtime treats both alike).

    Any runtime test taking a ``torch`` argument runs once per framework.
    """
    if request.param == "ref":
        return pytest.importorskip("gradcheck.ref")
    return pytest.importorskip("torch")


@pytest.fixture
def fixture_setup():
    """``fixture_setup(stem, framework)`` -> the fixture's ``make()`` dict."""
    return load_fixture


@pytest.fixture
def framework_context():
    """``framework_context(name)`` -> context manager binding ``torch`` to that framework."""
    return torch_is


def make_generated_loop(bug: str, k: int, optimizer_name: str, width: int, seed: int):
    """A small torch training loop with one planted bug (or none), and 2k+1 batches for it.

    ``bug`` is "correct", "no_zero_grad", "zero_between" (reset between backward and step),
    "zero_each_micro_batch" (reset before every backward), "unscaled" (loss not divided by k)
    or "double_step" (step() twice on the same gradients).
    """
    torch = pytest.importorskip("torch")
    import numpy as np

    torch.manual_seed(width)
    model = torch.nn.Sequential(torch.nn.Linear(width, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}[optimizer_name]
    opt = cls(model.parameters(), lr=0.05)
    seen = [0]

    def loss_fn(m, batch):
        x, y = batch
        return ((m(x) - y) ** 2).mean()

    def step(batch):
        if bug == "zero_each_micro_batch":
            opt.zero_grad()
        scale = 1 if bug == "unscaled" else k
        (loss_fn(model, batch) / scale).backward()
        seen[0] += 1
        if seen[0] % k == 0:
            if bug == "zero_between":
                opt.zero_grad()
            opt.step()
            if bug == "double_step":
                opt.step()
            if bug not in ("no_zero_grad", "zero_each_micro_batch"):
                opt.zero_grad()

    rng = np.random.default_rng(seed)
    batches = [(torch.tensor(rng.standard_normal((4, width)), dtype=torch.float32),
                torch.tensor(rng.standard_normal((4, 1)), dtype=torch.float32))
               for _ in range(2 * k + 1)]
    return model, opt, step, loss_fn, batches


@pytest.fixture(scope="session")
def generated_loop():
    """``generated_loop(bug, k, optimizer_name, width, seed)`` -> model, opt, step, loss_fn,
    batches (session-scoped so hypothesis can call it once per example)."""
    return make_generated_loop
