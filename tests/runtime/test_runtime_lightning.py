"""The Lightning callback on a real ``Trainer``: the three bugs caught at their lines, Lightning's
own accumulation silent, in automatic and manual optimization."""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pl = pytest.importorskip("lightning.pytorch")

from gradcheck.integrations.lightning import GradcheckCallback
from gradcheck.runtime import GradGuardError, GradGuardWarning
from gradcheck.runtime.session import GuardSession


class Regression(pl.LightningModule):
    def __init__(self, manual=None):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)
        self.manual = manual  # None: automatic optimization; else the manual loop's bug
        self.automatic_optimization = manual is None

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        if self.manual is None:
            return loss
        opt = self.optimizers()
        if self.manual == "correct":
            opt.zero_grad()
        self.manual_backward(loss)
        if self.manual == "zero_between":
            opt.zero_grad()  # marker: manual wiped_gradients
        opt.step()
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


class NeverZeroes(Regression):
    def optimizer_zero_grad(self, epoch, batch_idx, optimizer):
        pass  # the override that forgets optimizer.zero_grad()


class ZeroBeforeStep(pl.Callback):
    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        optimizer.zero_grad()  # marker: wiped_gradients


class ZeroEveryMicroBatch(pl.Callback):
    def on_before_backward(self, trainer, pl_module, loss):
        trainer.optimizers[0].zero_grad()  # marker: discarded_accumulation


def fit(module, callbacks=(), accumulate=1, steps=4):
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(steps * accumulate * 2, 4),
                                          torch.randn(steps * accumulate * 2, 1))
    trainer = pl.Trainer(
        max_steps=steps, accumulate_grad_batches=accumulate, accelerator="cpu", devices=1,
        logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, callbacks=list(callbacks),
    )
    trainer.fit(module, torch.utils.data.DataLoader(data, batch_size=2))
    return trainer


def marker_line(name):
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if f"marker: {name}" in line)


def test_lightning_own_accumulation_is_silent():
    callback = GradcheckCallback(action="raise")
    fit(Regression(), [callback], accumulate=4)
    assert callback.report == ""


def test_a_module_that_never_zeroes_is_stale():
    with pytest.raises(GradGuardError, match="stale gradients"):
        fit(NeverZeroes(), [GradcheckCallback()], accumulate=3)


def test_a_callback_zeroing_before_the_step_is_reported_at_its_line():
    with pytest.raises(GradGuardError, match=rf":{marker_line('wiped_gradients')}: zero_grad"):
        fit(Regression(), [GradcheckCallback(), ZeroBeforeStep()])


def test_a_callback_zeroing_every_micro_batch_is_reported_at_its_line(capsys):
    callback = GradcheckCallback(action="warn")
    with pytest.warns(Warning):
        fit(Regression(), [callback, ZeroEveryMicroBatch()], accumulate=4)
    line = marker_line("discarded_accumulation")
    assert re.search(rf"test_runtime_lightning.py:{line}: discarded_accumulation in SGD .* "
                     r"at zero_grad\(\), 4 times", callback.report), callback.report
    # the window's first three micro-batches, the third one dropped inside step(closure)
    assert "discarded gradients of 3 backward pass(es)" in callback.report
    assert callback.report in capsys.readouterr().err


@pytest.mark.parametrize("manual, kind", [
    ("correct", None), ("no_zero", "stale gradients"), ("zero_between", "manual wiped"),
])
def test_manual_optimization(manual, kind):
    callback = GradcheckCallback(action="warn")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit(Regression(manual=manual), [callback])
    assert any(w.category is GradGuardWarning for w in caught) is (kind is not None)
    if kind is None:
        assert callback.report == ""
    elif kind == "manual wiped":
        assert f":{marker_line(kind)}: wiped_gradients" in callback.report
    else:
        assert kind in callback.report


def test_gradcheck_run_reads_accumulate_grad_batches_without_the_callback():
    session = GuardSession(action="raise").install()  # what `gradcheck run` does
    try:
        fit(Regression(), accumulate=4)
        with pytest.raises(GradGuardError, match="stale"):
            fit(NeverZeroes(), accumulate=4)
    finally:
        session.finish()


def test_without_the_callback_a_reset_through_lightnings_wrapper_is_reported_at_its_line():
    """LightningOptimizer subclasses the optimizer's class: its zero_grad() is not the one the
    guard put on the optimizer, so the session watches the class's zero_grad() too."""
    session = GuardSession(action="warn").install()  # what `gradcheck run` does
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit(Regression(manual="zero_between"))
    finally:
        report = session.finish()
    line = marker_line("manual wiped_gradients")
    assert re.search(rf"test_runtime_lightning.py:{line}: wiped_gradients in SGD .* at "
                     r"zero_grad\(\), 4 times", report), report
