"""The Hugging Face callback on a real ``Trainer`` (a tiny model on the CPU): the three bugs
caught at their lines, the Trainer's own ``gradient_accumulation_steps`` silent."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")

from gradcheck.integrations.huggingface import GradcheckTrainerCallback
from gradcheck.runtime import GradGuardError
from gradcheck.runtime.session import GuardSession


class TinyRegressor(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def forward(self, x, labels=None):
        prediction = self.layer(x)
        return {"loss": torch.nn.functional.mse_loss(prediction, labels), "logits": prediction}


class NeverZeroes(transformers.TrainerCallback):
    def on_train_begin(self, args, state, control, model=None, **kwargs):
        model.zero_grad = lambda *args, **kwargs: None  # the reset the loop relies on, gone


class ZeroBeforeStep(transformers.TrainerCallback):
    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        model.zero_grad()  # marker: wiped_gradients


class ZeroEveryMicroBatch(transformers.TrainerCallback):
    def on_substep_end(self, args, state, control, model=None, **kwargs):
        model.zero_grad()  # marker: discarded_accumulation


def train(tmp_path, callbacks=(), accumulate=1, steps=4):
    torch.manual_seed(0)
    rows = [{"x": torch.randn(4), "labels": torch.randn(1)} for _ in range(steps * accumulate * 2)]
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path), max_steps=steps, per_device_train_batch_size=2,
        gradient_accumulation_steps=accumulate, use_cpu=True, report_to=[], save_strategy="no",
        logging_strategy="no", disable_tqdm=True, remove_unused_columns=False,
    )
    trainer = transformers.Trainer(model=TinyRegressor(), args=args, train_dataset=rows,
                                   callbacks=list(callbacks))
    trainer.train()


def marker_line(name):
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if f"marker: {name}" in line)


@pytest.mark.parametrize("accumulate", [1, 4])
def test_the_trainers_own_accumulation_is_silent(tmp_path, accumulate):
    callback = GradcheckTrainerCallback(action="raise")
    train(tmp_path, [callback], accumulate=accumulate)
    assert callback.report == ""


def test_a_loop_without_resets_is_stale(tmp_path):
    with pytest.raises(GradGuardError, match="stale gradients"):
        train(tmp_path, [GradcheckTrainerCallback(), NeverZeroes()], accumulate=2)


def test_zeroing_before_the_optimizer_step_is_reported_at_its_line(tmp_path):
    pattern = rf"test_runtime_huggingface.py:{marker_line('wiped_gradients')}: zero_grad"
    with pytest.raises(GradGuardError, match=pattern):
        train(tmp_path, [GradcheckTrainerCallback(), ZeroBeforeStep()])


def test_zeroing_every_micro_batch_is_reported_at_its_line(tmp_path):
    callback = GradcheckTrainerCallback(action="warn")
    with pytest.warns(Warning):
        train(tmp_path, [callback, ZeroEveryMicroBatch()], accumulate=4)
    line = marker_line("discarded_accumulation")
    assert re.search(rf"test_runtime_huggingface.py:{line}: discarded_accumulation in \w+ .* "
                     r"at zero_grad\(\), 4 times", callback.report), callback.report


def test_gradcheck_run_reads_gradient_accumulation_steps_without_the_callback(tmp_path):
    session = GuardSession(action="raise").install()  # what `gradcheck run` does
    try:
        train(tmp_path, accumulate=4)
        with pytest.raises(GradGuardError, match="discarded"):
            train(tmp_path, [ZeroEveryMicroBatch()], accumulate=4)
    finally:
        session.finish()
