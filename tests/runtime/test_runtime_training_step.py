"""check_training_step on the runtime fixtures (torch and the engine) and on generated loops."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradcheck.runtime import TrainingStepError, check_training_step

# buggy fixture -> (kind, first batch it shows up at)
BUGS = {
    "bug_stale_missing_zero_grad": ("stale_gradients", 1),
    "bug_wiped_zero_between_backward_and_step": ("wiped_gradients", 0),
    "bug_wiped_model_zero_grad": ("wiped_gradients", 0),
    "bug_discarded_accumulation": ("discarded_accumulation", 1),
    "bug_unscaled_accumulation": ("unscaled_accumulation", 1),
}
CORRECT = ["correct_plain", "correct_accumulation", "correct_gan", "correct_lbfgs_closure",
           "correct_amp_scaler"]
FRAMEWORKS = ["torch", "ref"]


def _check(setup, model, optimizer, **kwargs):
    return check_training_step(
        setup["step"], model, optimizer, setup["batches"],
        accumulation_steps=setup["accumulation_steps"], loss_fn=setup["loss_fn"], **kwargs,
    )


def _values(model):
    return [np.array(p.detach().numpy(), copy=True) for p in model.parameters()]


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("stem", sorted(BUGS))
def test_each_buggy_fixture_is_flagged_with_its_kind_and_batch(fixture_setup, stem, framework):
    setup = fixture_setup(stem, framework)
    (model, optimizer), = setup["pairs"]
    report = _check(setup, model, optimizer, raise_on_failure=False)
    kind, batch = BUGS[stem]
    assert report.kinds == {kind}, report.summary()
    assert min(p.batch for p in report.problems) == batch
    assert {p.parameter for p in report.problems} <= {n for n, _ in model.named_parameters()}
    assert report.passed is (kind == "unscaled_accumulation")  # that one is only a warning


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("stem", CORRECT)
def test_each_correct_fixture_passes_silently(fixture_setup, stem, framework):
    setup = fixture_setup(stem, framework)
    for model, optimizer in setup["pairs"]:
        report = _check(setup, model, optimizer)
        assert report.problems == [] and report.passed
        assert report.steps >= len(setup["batches"]) // setup["accumulation_steps"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_model_optimizer_and_grads_are_restored(fixture_setup, framework):
    setup = fixture_setup("correct_accumulation", framework)
    (model, optimizer), = setup["pairs"]
    before = _values(model)
    _check(setup, model, optimizer)
    assert all(np.array_equal(a, b) for a, b in zip(before, _values(model)))
    assert all(p.grad is None for p in model.parameters())
    assert len(optimizer.state) == 0  # Adam's moments from the check are gone


def test_failure_raises_an_assertion_error_with_the_report(fixture_setup):
    setup = fixture_setup("bug_stale_missing_zero_grad", "torch")
    (model, optimizer), = setup["pairs"]
    with pytest.raises(TrainingStepError) as info:
        _check(setup, model, optimizer)
    assert isinstance(info.value, AssertionError)
    assert "stale_gradients" in str(info.value) and "batch 1" in str(info.value)
    assert info.value.report.kinds == {"stale_gradients"}


def test_a_step_that_raises_names_the_batch():
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = _values(model)

    def step(batch):
        if batch == 2:
            raise KeyError("label")
        opt.zero_grad()
        model(torch.ones(1, 2)).sum().backward()
        opt.step()

    with pytest.raises(RuntimeError, match="KeyError on batch 2"):
        check_training_step(step, model, opt, [0, 1, 2, 3])
    assert all(np.array_equal(a, b) for a, b in zip(before, _values(model)))


def test_clear_errors_for_bad_inputs():
    torch = pytest.importorskip("torch")
    empty = torch.nn.Sequential()
    other = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(other.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="no trainable parameters"):
        check_training_step(lambda b: None, empty, opt, [1])
    with pytest.raises(ValueError, match="batches is empty"):
        check_training_step(lambda b: None, other, opt, [])
    with pytest.raises(ValueError, match="accumulation_steps"):
        check_training_step(lambda b: None, other, opt, [1], accumulation_steps=0)
    with pytest.raises(ValueError, match="never ran"):
        check_training_step(lambda b: None, other, opt, [1, 2])


def test_non_finite_gradients_are_reported_by_batch():
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(batch):
        opt.zero_grad()
        (model(torch.full((1, 2), batch)).sum() * batch).backward()
        opt.step()

    with pytest.raises(FloatingPointError, match="batch 1"):
        check_training_step(step, model, opt, [1.0, float("inf")])


EXPECTED_KIND = {"correct": None, "no_zero_grad": "stale_gradients",
                 "zero_between": "wiped_gradients", "zero_each_micro_batch":
                 "discarded_accumulation", "unscaled": "unscaled_accumulation",
                 "double_step": "update_mismatch"}


@given(
    bug=st.sampled_from(sorted(EXPECTED_KIND)), k=st.integers(1, 3), optimizer_name=st.sampled_from(["sgd", "adam"]),
    width=st.integers(1, 4), seed=st.integers(0, 2**16),
)
def test_generated_loops_are_classified(generated_loop, bug, k, optimizer_name, width, seed):
    if k == 1 and bug in ("zero_each_micro_batch", "unscaled"):
        bug = "correct"  # with one micro-batch these loops are right
    model, opt, step, loss_fn, batches = generated_loop(bug, k, optimizer_name, width, seed)
    report = check_training_step(step, model, opt, batches, accumulation_steps=k,
                                 loss_fn=loss_fn, raise_on_failure=False)
    kind = EXPECTED_KIND[bug]
    assert report.kinds == (set() if kind is None else {kind}), report.summary()
    if kind is not None:
        first = {"stale_gradients": 2 * k - 1, "wiped_gradients": k - 1}.get(kind, k - 1)
        assert min(p.batch for p in report.problems) == first


def test_an_overflowing_pass_that_a_scaler_skips_is_not_an_error():
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(scale):  # what GradScaler does: skip step() when the scaled gradients overflow
        opt.zero_grad()
        (model(torch.ones(1, 2)).sum() * scale).backward()
        if all(torch.isfinite(p.grad).all() for p in model.parameters()):
            opt.step()

    report = check_training_step(step, model, opt, [1.0, float("inf"), 1.0])
    assert report.passed and report.steps == 2
