"""accelerate: ``accelerator.accumulate`` with ``gradient_accumulation_steps`` is silent; the three
bugs are caught, by ``guard`` and by a ``gradcheck run`` session that reads ``k`` from accelerate."""
from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
accelerate = pytest.importorskip("accelerate")

from gradcheck.runtime import GradGuardError, guard
from gradcheck.runtime.session import GuardSession


@pytest.fixture
def accelerator():
    yield accelerate.Accelerator(cpu=True, gradient_accumulation_steps=4)
    accelerate.state.AcceleratorState._reset_state(reset_partial_state=True)
    accelerate.state.GradientState._reset_state()


def loop(accelerator, bug=None, wrap=lambda optimizer: optimizer, batches=8):
    """A training loop in accelerate's documented form; returns the optimizer ``wrap`` gave."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = wrapped = wrap(torch.optim.SGD(model.parameters(), lr=0.1))
    data = torch.utils.data.TensorDataset(torch.randn(2 * batches, 4), torch.randn(2 * batches, 1))
    model, optimizer, loader = accelerator.prepare(model, optimizer,
                                                   torch.utils.data.DataLoader(data, batch_size=2))
    for x, y in loader:
        with accelerator.accumulate(model):
            loss = torch.nn.functional.mse_loss(model(x), y)
            if bug == "zero-every-micro-batch":
                model.zero_grad()  # marker: discarded_accumulation
            accelerator.backward(loss)
            if bug == "zero-between":
                optimizer.zero_grad()  # marker: wiped_gradients
            optimizer.step()
            if bug != "no-zero-grad":
                optimizer.zero_grad()
    return wrapped


def test_accumulate_is_silent_under_guard(accelerator):
    optimizer = loop(accelerator, wrap=lambda opt: guard(opt, accumulation_steps=4))
    assert optimizer.findings == []


@pytest.mark.parametrize("bug, kind", [
    ("no-zero-grad", "stale"), ("zero-between", "no backward"),
    ("zero-every-micro-batch", "discarded"),
])
def test_bugs_are_caught_under_guard(accelerator, bug, kind):
    with pytest.raises(GradGuardError, match=kind):
        loop(accelerator, bug, wrap=lambda opt: guard(opt, accumulation_steps=4))


def test_a_session_reads_gradient_accumulation_steps_from_accelerate(accelerator):
    session = GuardSession(action="warn").install()  # what `gradcheck run` does
    try:
        loop(accelerator)
        assert len(session.tally) == 0
        with pytest.warns(Warning):
            loop(accelerator, "zero-every-micro-batch")
    finally:
        session.finish()
    (finding, count, _), = session.tally.counts.values()
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "marker: discarded" in text)
    assert (finding.kind, finding.call, count) == ("discarded_accumulation", "zero_grad()", 2)
    assert finding.location == f"tests/runtime/test_runtime_accelerate.py:{line}"
